# mk/patchbench.mk: concurrent patches of one item. Included by the root
# Makefile.
#
#   make bench-patch [PATCHBENCH_CLIENTS=64] [PATCHBENCH_PATCHES=50]
#       starts DynamoDB Local and one uds-local over it, creates one item,
#       and has PATCHBENCH_CLIENTS clients at once each send
#       PATCHBENCH_PATCHES JSON Merge Patches of a member of its own
#       ({"m17": n}) without If-Match, a 503 sent again after its
#       Retry-After (cmd/uds-patchbench). It prints the patches a second
#       the item took and their latencies, the races lost (the item's
#       writes refused at the wire because another patch committed first)
#       and the DynamoDB calls per PATCH, as docs/performance.md reports
#       them, then GETs the item: a member missing or not at its last
#       value, or a version that does not count every patch once, fails
#       it. About a minute at the defaults; not part of make test or make
#       bench (make test runs it briefly: TestRunBriefly, 16 × 10).

PATCHBENCH_CLIENTS ?= 64
PATCHBENCH_PATCHES ?= 50

.PHONY: bench-patch

bench-patch: engine
	go build -o bin/uds-local ./cmd/uds-local
	go build -o bin/uds-patchbench ./cmd/uds-patchbench
	$(ENGINE) -- bin/uds-patchbench -uds-local bin/uds-local -clients $(PATCHBENCH_CLIENTS) -patches $(PATCHBENCH_PATCHES)
