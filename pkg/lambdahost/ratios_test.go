package lambdahost_test

import (
	"flag"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

var (
	benchGate = flag.String("bench-gate", "", `run TestBenchmarkRatios: "report" prints the ratios and warns of any more than 10% over its goal; `+
		`"check" also fails on them`)
	benchGateRounds = flag.Int("bench-gate-rounds", 7, "rounds of every row in TestBenchmarkRatios; a row's ratio is the median of its rounds")
)

// gateMargin is how far over its goal a ratio may measure before the gate
// fails: single runs of these benchmarks scatter by about ±10% on a shared
// machine, so a ratio just over its goal is reported, not failed.
const gateMargin = 1.10

// The goals: requests at most 1.15 times their floor, with the request
// line and EMF record written; list pages at most 1.3 times the SDK's
// Query of the same answer; a patch at most 1.3 times the PUT of what it
// makes.
const (
	itemGoal  = 1.15
	listGoal  = 1.3
	patchGoal = 1.3
)

// ungatedListPages are the list rows whose floor leaves out work the page
// must do, so that their ratio measures that work rather than what UDS
// adds: they are measured and printed, with the reason, and never fail
// the gate.
var ungatedListPages = map[string]string{
	"1000x1KB-gzip":       "compresses the page, which the SDK's Query does not",
	"100x20KB-compressed": "inflates every value for a client without gzip, which the SDK's Query does not",
}

// gatedRatio is one row of the gate: a benchmark's loop, the ratio it
// reports and its goal (none for a row only reported).
type gatedRatio struct {
	name   string
	bench  func(*testing.B)
	metric string
	goal   float64
	// ungated says why a row has no goal.
	ungated string
}

func gateRows() []gatedRatio {
	var rows []gatedRatio
	// The quiet rows leave the request line and the EMF record out: they
	// show what observing costs, and the goal is for requests as served.
	for _, c := range itemVsFloorRows {
		if !c.quiet {
			rows = append(rows, gatedRatio{name: "ItemVsFloor/" + c.name, bench: c.bench, metric: "x-floor", goal: itemGoal})
		}
	}
	for _, c := range postPartRows {
		rows = append(rows, gatedRatio{name: "PostParts/" + c.name, bench: c.bench, metric: c.metric, ungated: c.why})
	}
	for _, c := range listPageRows {
		r := gatedRatio{name: "ListPage/" + c.name, bench: c.bench, metric: "x-sdk", goal: listGoal}
		if why, ok := ungatedListPages[c.name]; ok {
			r.goal, r.ungated = 0, why
		}
		rows = append(rows, r)
	}
	for _, c := range patchVsPutRows {
		rows = append(rows, gatedRatio{name: "PatchVsPut/" + c.name, bench: c.bench, metric: "x-put", goal: patchGoal})
	}
	return rows
}

// TestBenchmarkRatios is the benchmark gate (make bench-check; make test
// runs it to report). Each benchmark row already times its path and its
// floor alternately in one loop, so that what slows the machine slows
// both; the gate runs every row for several rounds, each round in a
// different order, and judges the median of each row's ratios against
// its goal. It judges ratios, never times.
func TestBenchmarkRatios(t *testing.T) {
	check := false
	switch *benchGate {
	case "":
		t.Skip("the benchmark gate runs with -bench-gate=report or -bench-gate=check (make bench-check)")
	case "report":
	case "check":
		check = true
	default:
		t.Fatalf("-bench-gate=%q: want report or check", *benchGate)
	}
	if raceEnabled() {
		t.Skip("the race detector slows some paths far more than others: the ratios would measure it")
	}
	if *benchGateRounds < 1 {
		t.Fatalf("-bench-gate-rounds=%d: want at least 1", *benchGateRounds)
	}
	rows := gateRows()
	ratios := make([][]float64, len(rows))
	for round := range *benchGateRounds {
		for k := range rows {
			i := (round + k) % len(rows)
			res := testing.Benchmark(rows[i].bench)
			ratio, ok := res.Extra[rows[i].metric]
			if res.N == 0 || !ok {
				t.Fatalf("%s: the benchmark failed (run it: go test -run '^$' -bench 'Benchmark%s' ./pkg/lambdahost/)", rows[i].name, rows[i].name)
			}
			ratios[i] = append(ratios[i], ratio)
		}
	}

	var out strings.Builder
	fmt.Fprintf(&out, "median of %d rounds each (min-max), against goal and limit (goal + %.0f%%):\n", *benchGateRounds, (gateMargin-1)*100)
	fmt.Fprintf(&out, "%-36s %-8s %7s %13s %6s %6s  %s\n", "row", "ratio", "median", "min-max", "goal", "limit", "verdict")
	var over []string
	for i, r := range rows {
		rs := slices.Sorted(slices.Values(ratios[i]))
		med := median(rs)
		goal, limit, verdict := "-", "-", "not gated: "+r.ungated
		if r.goal > 0 {
			var failed bool
			verdict, failed = judge(med, r.goal)
			goal, limit = fmt.Sprintf("%.2f", r.goal), fmt.Sprintf("%.3f", r.goal*gateMargin)
			if failed {
				over = append(over, fmt.Sprintf("%s %s %.3f is more than %.0f%% over its goal %.2f (limit %s)",
					r.name, r.metric, med, (gateMargin-1)*100, r.goal, limit))
			}
		}
		fmt.Fprintf(&out, "%-36s %-8s %7.3f %6.3f-%.3f %6s %6s  %s\n", r.name, r.metric, med, rs[0], rs[len(rs)-1], goal, limit, verdict)
	}
	t.Log("\n" + out.String())
	for _, o := range over {
		if check {
			t.Error(o)
		} else {
			t.Logf("warning: %s; make bench-check fails on it", o)
		}
	}
}

// judge says where a median ratio stands against its goal, and whether it
// fails the gate: only past the margin.
func judge(median, goal float64) (verdict string, failed bool) {
	switch {
	case median <= goal:
		return "at goal", false
	case median <= goal*gateMargin:
		return "over goal, within the margin", false
	default:
		return "OVER LIMIT", true
	}
}

// TestGateJudge checks the gate's verdicts on either side of a goal and of
// its limit, so that a gate which could never fail does not pass unseen.
func TestGateJudge(t *testing.T) {
	for _, c := range []struct {
		median, goal float64
		failed       bool
	}{
		{1.10, itemGoal, false}, {1.15, itemGoal, false}, {1.20, itemGoal, false}, {1.26, itemGoal, false},
		{1.27, itemGoal, true}, {1.45, listGoal, true}, {1.42, listGoal, false},
	} {
		if v, failed := judge(c.median, c.goal); failed != c.failed {
			t.Errorf("judge(%.2f, goal %.2f) = %q, failed %v; want failed %v", c.median, c.goal, v, failed, c.failed)
		}
	}
}

// median is the middle of sorted values, or the mean of the middle two.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// raceEnabled says whether the test binary was built with the race
// detector.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
