# mk/realtimebench.mk: the realtime endpoint under load. Included by the
# root Makefile.
#
#   make bench-realtime [REALTIMEBENCH_DURATION=60s] [REALTIMEBENCH_FLAGS=...]
#       starts DynamoDB Local and one uds-local over it, opens 100
#       WebSocket connections to /rest/api/v1/realtime with 10
#       subscriptions each (whole namespaces and lists, shared and
#       private: cmd/uds-realtimebench/layout.go), writes 100 new items a
#       second through the HTTP API for 5 s of warm-up and then
#       REALTIMEBENCH_DURATION, and matches every delivery the protocol
#       calls for with the change received. It prints the
#       commit-to-delivery latency (from each write's 201 to each
#       subscriber's message) at p50, p90, p99 and its most, by kind of
#       subscription, the deliveries expected, received and missing, and
#       the server's resident memory per connection, as docs/performance.md
#       reports them; a delivery missing, a write not acknowledged or a
#       connection closed fails it. REALTIMEBENCH_FLAGS
#       passes more flags to cmd/uds-realtimebench (-connections, -rate,
#       -warmup, -grace, -quota-mode; go run ./cmd/uds-realtimebench
#       -help). About 2.5 minutes at the defaults (the private namespaces
#       take a minute to set up); not part of make test or make bench.

REALTIMEBENCH_DURATION ?= 60s
REALTIMEBENCH_FLAGS ?=

.PHONY: bench-realtime

bench-realtime: engine
	go build -o bin/uds-local ./cmd/uds-local
	go build -o bin/uds-realtimebench ./cmd/uds-realtimebench
	$(ENGINE) -- bin/uds-realtimebench -uds-local bin/uds-local -duration $(REALTIMEBENCH_DURATION) $(REALTIMEBENCH_FLAGS)
