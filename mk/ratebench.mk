# mk/ratebench.mk: the rate limits across processes. Included by the root
# Makefile.
#
#   make bench-ratelimit [RATEBENCH_RATE=100/100] [RATEBENCH_DURATION=30s]
#                        [RATEBENCH_SERVERS=4] [RATEBENCH_FLAGS=...]
#       starts DynamoDB Local and RATEBENCH_SERVERS uds-local processes
#       over it (standing for warm Lambda containers) with the per-caller
#       limit RATEBENCH_RATE (R/B), and has callers send to them round-robin
#       for RATEBENCH_DURATION each: one at 3 times its limit, two at 90%
#       and 80% of it, one not limited. It prints the answers against
#       R × t + B, the limiter's DynamoDB writes per request (counted at
#       the wire, failed conditions included) and the latencies of requests
#       that found tokens at hand and that leased, as docs/performance.md
#       reports them, and says which requirement each met or missed.
#       RATEBENCH_FLAGS passes more flags to cmd/uds-ratebench (-over,
#       -steady; go run ./cmd/uds-ratebench -help). About 2.5 minutes at the
#       defaults; not part of make test or make bench.

RATEBENCH_RATE ?= 100/100
RATEBENCH_DURATION ?= 30s
RATEBENCH_SERVERS ?= 4
RATEBENCH_FLAGS ?=

.PHONY: bench-ratelimit

bench-ratelimit: engine
	go build -o bin/uds-local ./cmd/uds-local
	go build -o bin/uds-ratebench ./cmd/uds-ratebench
	$(ENGINE) -- bin/uds-ratebench -uds-local bin/uds-local -rate $(RATEBENCH_RATE) \
		-duration $(RATEBENCH_DURATION) -servers $(RATEBENCH_SERVERS) $(RATEBENCH_FLAGS)
