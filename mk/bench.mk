# mk/bench.mk: the benchmark gate. Included by the root Makefile.
#
#   make bench-check [BENCH_GATE_ROUNDS=7] [BENCH_GATE_TIME=500ms]
#       runs TestBenchmarkRatios (pkg/lambdahost/ratios_test.go): the rows
#       of BenchmarkItemVsFloor, BenchmarkListPage and BenchmarkPatchVsPut,
#       each for BENCH_GATE_ROUNDS rounds of BENCH_GATE_TIME in a changing
#       order, and prints each row's median ratio to its floor beside its
#       goal (requests 1.15, list pages 1.3, a patch to the PUT of what it
#       makes 1.3). It fails when a median is more than 10% over its goal.
#       About 45 seconds at the defaults; DynamoDB is a stub in these
#       benchmarks, so no engine is started.
#
# make test runs the same gate in report mode (bench-report, from
# test-bench): it prints the same table and a warning for each ratio past
# its limit, and does not fail, since one run on a busy machine can
# measure a ratio past it (docs/performance.md, "The benchmark gate").

BENCH_GATE_ROUNDS ?= 7
BENCH_GATE_TIME ?= 500ms
# Without the race detector, which slows some paths far more than others.
BENCH_GATE = go test -count=1 -v -run '^TestBenchmarkRatios$$' -benchtime $(BENCH_GATE_TIME) ./pkg/lambdahost/ \
	-bench-gate-rounds=$(BENCH_GATE_ROUNDS)

.PHONY: bench-check bench-report

bench-check:
	$(BENCH_GATE) -bench-gate=check

bench-report:
	$(BENCH_GATE) -bench-gate=report
