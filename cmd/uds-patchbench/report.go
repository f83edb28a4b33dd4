package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/udsproject/uds/internal/localbench"
)

// count is how many patch requests were answered status.
func (r *result) count(status int) int {
	n := 0
	for _, o := range r.outcomes {
		if o.Status == status {
			n++
		}
	}
	return n
}

// maxOthersShown bounds the answers other than 200 or 503 the report
// shows.
const maxOthersShown = 5

// others are the patch requests answered other than 200 or 503.
func (r *result) others() []localbench.Outcome {
	var o []localbench.Outcome
	for _, out := range r.outcomes {
		if out.Status != http.StatusOK && out.Status != http.StatusServiceUnavailable {
			o = append(o, out)
		}
	}
	return o
}

// latencies are the latencies of the requests answered status, sorted,
// in ms.
func (r *result) latencies(status int) []float64 {
	var l []float64
	for _, o := range r.outcomes {
		if o.Status == status {
			l = append(l, float64(o.Latency)/float64(time.Millisecond))
		}
	}
	slices.Sort(l)
	return l
}

// report prints the run's figures as Markdown, then the check of the item.
func report(w io.Writer, r *result) {
	fmt.Fprintf(w, "%s, %s, load average %s before the run and %s after it: %d clients × %d JSON Merge Patches of one item, each client its own member, one uds-local over one DynamoDB engine, quota mode strict.\n\n",
		time.Now().UTC().Format(time.DateOnly), localbench.Machine(), r.loadBefore, localbench.LoadAverage(), r.o.clients, r.o.patches)

	answered := r.count(http.StatusOK)
	ok := r.latencies(http.StatusOK)
	fmt.Fprintln(w, "| patches | answered 200 | 503, sent again | other | seconds | patches/s | request answered 200: p50 / p99 / most ms | patch to its 200, resends included: p50 / p99 / most ms |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---|---|")
	fmt.Fprintf(w, "| %d | %d | %d | %d | %.1f | %.1f | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f |\n",
		r.o.clients*r.o.patches, answered, r.count(http.StatusServiceUnavailable), len(r.others()),
		r.elapsed.Seconds(), float64(answered)/r.elapsed.Seconds(),
		localbench.Quantile(ok, 0.5), localbench.Quantile(ok, 0.99), localbench.Quantile(ok, 1),
		localbench.Quantile(r.completions, 0.5), localbench.Quantile(r.completions, 0.99), localbench.Quantile(r.completions, 1))

	fmt.Fprintln(w)
	fmt.Fprintln(w, "| item writes committed | lost races (conditions failed) | lost races per patch answered | other failed writes | item reads per patch answered | DynamoDB calls per PATCH, p50 / p99 / most |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---|")
	fmt.Fprintf(w, "| %d | %d | %.2f | %d | %.2f | %.0f / %.0f / %.0f |\n",
		r.wire.Committed, r.wire.Raced, per(r.wire.Raced, answered), r.wire.Failed, per(r.wire.Reads, answered),
		localbench.Quantile(r.calls, 0.5), localbench.Quantile(r.calls, 0.99), localbench.Quantile(r.calls, 1))

	others := r.others()
	for i, o := range others[:min(len(others), maxOthersShown)] {
		if i == 0 {
			fmt.Fprintf(w, "\n%d patch requests answered other than 200 or 503 (0: no answer); the first:\n", len(others))
		}
		fmt.Fprintf(w, "- %d after %.0f ms: %s\n", o.Status, float64(o.Latency)/float64(time.Millisecond), o.Problem)
	}

	fmt.Fprintln(w)
	if len(r.check) == 0 {
		fmt.Fprintf(w, "- met: every member of the %d clients present at its last value, version %d (the creation and each patch answered 200 once)\n", r.o.clients, r.version)
		return
	}
	for _, p := range r.check {
		fmt.Fprintf(w, "- MISSED: %s\n", p)
	}
}

// per is n per d, 0 of none.
func per(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}
