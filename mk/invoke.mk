# mk/invoke.mk: run a UDS Lambda function on this machine, without Docker or
# SAM, and compare its cold start with a hello-world floor. Included by the
# root Makefile. cmd/lambda-invoke serves the Lambda Runtime API on a
# loopback port, starts a host-architecture bootstrap with the environment
# Lambda gives it, and delivers one API Gateway HTTP API (v2) event.
#
#   make invoke FN=kv EVENT=events/kv/01-create.json
#       build ./functions/$(FN) for this machine and invoke it with $(EVENT):
#       the response on stdout, the function's logs and
#       "init_duration_ms=… duration_ms=… status=…" on stderr. LOG_LEVEL
#       reaches the function as the stack passes it, UDS_LOG_LEVEL.
#
#   make invoke-floor [FUNCTIONS="kv list admin expiry"] [FLOOR_REPEAT=10]
#       $(FLOOR_REPEAT) cold starts of cmd/hello-lambda, cmd/hello-dynamodb
#       (the same plus the DynamoDB client every function builds at init)
#       and each function, then a table of min/median init durations and
#       the ratio of each median to both hello-world medians.
#
# Both run against the DynamoDB engine started by the root Makefile's
# $(INVOKE_ENGINE) target, whose endpoint is $(DDB_ENDPOINT) (passed to the
# function as UDS_DYNAMODB_ENDPOINT). With an empty DDB_ENDPOINT the
# function talks to real DynamoDB with the credentials of the environment.

FUNCTIONS ?= kv list admin expiry
FN ?=
EVENT ?=
# Prerequisite that starts the engine; empty to use an engine already running.
INVOKE_ENGINE ?= engine-up
DDB_ENDPOINT ?= $(UDS_DYNAMODB_ENDPOINT)
INVOKE_TIMEOUT ?= 30s
FLOOR_REPEAT ?= 10
# Read-only events, so repeated cold starts do not change the store. The
# floor ignores its event.
FLOOR_EVENT_hello ?= events/kv/08-get-missing.json
FLOOR_EVENT_hello-dynamodb ?= events/kv/08-get-missing.json
FLOOR_EVENT_kv ?= events/kv/08-get-missing.json
FLOOR_EVENT_list ?= events/list/12-get-missing.json
FLOOR_EVENT_admin ?= events/admin/03-user-quota.json
# A stream record the expiry function skips: its init, nothing else.
FLOOR_EVENT_expiry ?= events/expiry/03-removal-by-uds.json

HOST_BUILD_DIR := build/host
HOST_GO_BUILD_FLAGS := -tags lambda.norpc -trimpath -buildvcs=false -ldflags='-s -w'
# The host's platform, even when GOOS/GOARCH are exported for cross builds.
HOST_GO_ENV = CGO_ENABLED=0 GOOS=$$(go env GOHOSTOS) GOARCH=$$(go env GOHOSTARCH)

.PHONY: invoke invoke-floor

ifneq ($(filter invoke,$(MAKECMDGOALS)),)
ifeq ($(strip $(FN)),)
$(error usage: make invoke FN=<$(subst $(eval) ,|,$(FUNCTIONS))> EVENT=events/<function>/<NN>-<what>.json)
endif
ifeq ($(strip $(EVENT)),)
$(error usage: make invoke FN=$(FN) EVENT=events/$(FN)/<NN>-<what>.json)
endif
endif

invoke: $(INVOKE_ENGINE)
	$(HOST_GO_ENV) go build $(HOST_GO_BUILD_FLAGS) -o $(HOST_BUILD_DIR)/$(FN)/bootstrap ./functions/$(FN)
	UDS_DYNAMODB_ENDPOINT=$(DDB_ENDPOINT) $(if $(LOG_LEVEL),UDS_LOG_LEVEL=$(LOG_LEVEL)) go run ./cmd/lambda-invoke -bootstrap $(HOST_BUILD_DIR)/$(FN)/bootstrap -event $(EVENT) -timeout $(INVOKE_TIMEOUT)

invoke-floor: $(INVOKE_ENGINE)
	$(HOST_GO_ENV) go build $(HOST_GO_BUILD_FLAGS) -o $(HOST_BUILD_DIR)/hello/bootstrap ./cmd/hello-lambda
	$(HOST_GO_ENV) go build $(HOST_GO_BUILD_FLAGS) -o $(HOST_BUILD_DIR)/hello-dynamodb/bootstrap ./cmd/hello-dynamodb
	@set -e; for fn in $(FUNCTIONS); do \
	  echo "$(HOST_GO_ENV) go build $(HOST_GO_BUILD_FLAGS) -o $(HOST_BUILD_DIR)/$$fn/bootstrap ./functions/$$fn"; \
	  $(HOST_GO_ENV) go build $(HOST_GO_BUILD_FLAGS) -o $(HOST_BUILD_DIR)/$$fn/bootstrap ./functions/$$fn; \
	done
	go build -o $(HOST_BUILD_DIR)/lambda-invoke ./cmd/lambda-invoke
	@# One unmeasured round of every binary first: the first binary measured
	@# otherwise pays for the machine settling (about 10% in tests here).
	@printf '%s\n' $(foreach fn,hello hello-dynamodb $(FUNCTIONS),"$(fn) $(FLOOR_EVENT_$(fn))") | while read -r fn event; do \
	  UDS_DYNAMODB_ENDPOINT=$(DDB_ENDPOINT) $(HOST_BUILD_DIR)/lambda-invoke -quiet -repeat 3 -timeout $(INVOKE_TIMEOUT) \
	    -bootstrap $(HOST_BUILD_DIR)/$$fn/bootstrap -event "$$event" >/dev/null 2>&1 || true; \
	done
	@printf '%s\n' $(foreach fn,hello hello-dynamodb $(FUNCTIONS),"$(fn) $(FLOOR_EVENT_$(fn))") | { \
	  printf '%-15s %6s %12s %15s %13s %14s\n' function runs init_min_ms init_median_ms ratio_hello ratio_client; \
	  floor=; client=; \
	  while read -r fn event; do \
	    if [ -z "$$event" ]; then echo "invoke-floor: set FLOOR_EVENT_$$fn" >&2; exit 2; fi; \
	    out=$$(UDS_DYNAMODB_ENDPOINT=$(DDB_ENDPOINT) $(HOST_BUILD_DIR)/lambda-invoke -quiet -repeat $(FLOOR_REPEAT) \
	      -timeout $(INVOKE_TIMEOUT) -bootstrap $(HOST_BUILD_DIR)/$$fn/bootstrap -event "$$event" 2>&1 >/dev/null) || { \
	      printf '%s\n' "$$out" >&2; echo "invoke-floor: $$fn failed on $$event" >&2; exit 1; }; \
	    sum=$$(printf '%s\n' "$$out" | grep '^cold_starts='); \
	    runs=$$(printf '%s\n' "$$sum" | sed -n 's/^cold_starts=\([0-9]*\).*/\1/p'); \
	    min=$$(printf '%s\n' "$$sum" | sed -n 's/.* init_min_ms=\([0-9.]*\).*/\1/p'); \
	    med=$$(printf '%s\n' "$$sum" | sed -n 's/.* init_median_ms=\([0-9.]*\).*/\1/p'); \
	    if [ -z "$$floor" ]; then floor=$$med; elif [ -z "$$client" ]; then client=$$med; fi; \
	    ratio=$$(awk -v m="$$med" -v f="$$floor" 'BEGIN { if (f > 0) printf "%.2f", m / f; else print "-" }'); \
	    ratio2=$$(awk -v m="$$med" -v f="$$client" 'BEGIN { if (f > 0) printf "%.2f", m / f; else print "-" }'); \
	    printf '%-15s %6s %12s %15s %13s %14s\n' "$$fn" "$$runs" "$$min" "$$med" "$$ratio" "$$ratio2"; \
	  done; \
	}
