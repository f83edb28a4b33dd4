# mk/fuzz.mk: fuzz every parser of client input. Included by the root
# Makefile.
#
#   make fuzz [FUZZTIME=30s] [FUZZMINIMIZETIME=5s] [FUZZ_PACKAGES=./pkg/httpapi/] [FUZZFLAGS=-parallel=1]
#       runs each fuzz target (func FuzzXxx) of the module's packages, one
#       at a time, for FUZZTIME each (go test -fuzz). The targets are
#       listed by go test -list, so a new one is fuzzed without being named
#       here. Their seed corpora run in make test, as go test runs every
#       fuzz target's seeds. A target that fails leaves its failing input
#       under its package's testdata/fuzz/<target>/ (go test replays it from
#       there on every run until it is removed), and make fuzz goes on with
#       the other targets and fails at the end, naming them
#       (scripts/fuzz-target.sh runs one target; it runs a target again,
#       once, when Go's fuzzing coordinator reports its own deadline as the
#       target's failure without a failing input, a race of Go 1.26).
#       FUZZMINIMIZETIME bounds how long Go shrinks each input it keeps,
#       failing or new to coverage: at Go's default of a minute, a short run
#       spent most of its time shrinking rather than fuzzing. FUZZFLAGS
#       passes more flags to go test (-parallel=1 keeps the fuzzer to one
#       core).
#
# Fuzzing needs no DynamoDB engine: the targets run parsers, and the API
# over a store that holds nothing.

FUZZTIME ?= 30s
FUZZMINIMIZETIME ?= 5s
FUZZ_PACKAGES ?= ./...
FUZZFLAGS ?=

.PHONY: fuzz

fuzz:
	@if ! list=$$(go test -list '^Fuzz' $(FUZZ_PACKAGES)); then \
	  printf '%s\n' "$$list" >&2; echo "fuzz: the tests do not build" >&2; exit 1; \
	fi; \
	failed=; \
	while read -r pkg targets; do \
	  for target in $$targets; do \
	    echo "fuzz: $$pkg $$target for $(FUZZTIME)"; \
	    scripts/fuzz-target.sh "$$pkg" "$$target" "$(FUZZTIME)" "$(FUZZMINIMIZETIME)" $(FUZZFLAGS) || failed="$$failed $$pkg.$$target"; \
	  done; \
	done <<< "$$(printf '%s\n' "$$list" | awk '/^Fuzz/ { names = names " " $$1; next } /^ok/ { if (names != "") print $$2 names; names = "" }')"; \
	if [[ -n "$$failed" ]]; then \
	  echo "fuzz: failed:$$failed" >&2; \
	  echo "fuzz: each failing input is under its package's testdata/fuzz/<target>/; go test -run '<target>/<file>' <package> replays it" >&2; \
	  exit 1; \
	fi; \
	echo "fuzz: every target ran $(FUZZTIME) without a failure"
