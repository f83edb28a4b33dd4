package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/udsproject/uds/internal/localbench"
)

// Requirements the report checks.
const (
	// mostOver is how far past R × t + B an overloading caller may be
	// answered.
	mostOver = 1.10
	// mostUnitsPerRequest is the write units the limiter may add to a
	// request, amortised over a steady load.
	mostUnitsPerRequest = 0.05
)

// tally is a caller's answers.
type tally struct {
	sent, answered, refused, other int
}

func tallyOf(outcomes []localbench.Outcome) tally {
	t := tally{sent: len(outcomes)}
	for _, o := range outcomes {
		switch {
		case o.Status >= 200 && o.Status < 300:
			t.answered++
		case o.Status == 429:
			t.refused++
		default:
			t.other++
		}
	}
	return t
}

// latencies are request lines' latencies, sorted, in ms.
type latencies []float64

func latenciesOf(lines []requestLine, keep func(requestLine) bool) latencies {
	var l latencies
	for _, r := range lines {
		if keep(r) {
			l = append(l, r.LatencyMs)
		}
	}
	slices.Sort(l)
	return l
}

// at returns the q-quantile (nearest rank).
func (l latencies) at(q float64) float64 { return localbench.Quantile(l, q) }

// report prints the run's figures as Markdown, then each requirement met
// or missed.
func report(w io.Writer, o options, callers []*caller, logs *serverLogs) {
	fmt.Fprintf(w, "%s, %s: %d uds-local processes over one DynamoDB engine, per-caller limit %d/s with a burst of %d, limits cache %s, %v per caller, GET of one item round-robin over the processes.\n\n",
		time.Now().UTC().Format(time.DateOnly), localbench.Machine(), o.servers, o.rate.PerSecond, o.rate.Burst, localbench.LimitsCacheTTL(), o.duration)

	most := float64(o.rate.PerSecond)*o.duration.Seconds() + float64(o.rate.Burst)
	var verdicts []string
	verdict := func(ok bool, format string, args ...any) {
		mark := "met"
		if !ok {
			mark = "MISSED"
		}
		verdicts = append(verdicts, fmt.Sprintf("- %s: %s", mark, fmt.Sprintf(format, args...)))
	}

	fmt.Fprintln(w, "| caller | sent | answered 2xx | 429 | other | answered ÷ (R × t + B) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, c := range callers {
		t := tallyOf(c.outcomes)
		share := "—"
		if c.limited {
			share = fmt.Sprintf("%.3f", float64(t.answered)/most)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %s |\n", c.name, t.sent, t.answered, t.refused, t.other, share)
		switch {
		case !c.limited:
		case c.share > 1:
			verdict(float64(t.answered) <= mostOver*most, "%s: %d answered, at most %.0f (R × t + B = %.0f, +%.0f%%)", c.name, t.answered, mostOver*most, most, (mostOver-1)*100)
		default:
			verdict(t.refused == 0, "%s: %d refused, want none", c.name, t.refused)
		}
	}

	fmt.Fprintln(w)
	fmt.Fprintf(w, "| caller | leases committed | conditions failed | write units | per answered request | per answered request, request lines | past the first %v: per token leased |\n", settle(o.duration))
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range callers {
		if !c.limited {
			continue
		}
		t := tallyOf(c.outcomes)
		var lineUnits float64
		for _, r := range logs.of(c.subject) {
			lineUnits += r.WriteUnits
		}
		perToken := c.settled.Units / float64(max(c.settled.Tokens, 1))
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %.4f | %.4f | %.4f |\n", c.name, c.leases.Writes, c.leases.Failed, c.leases.Units,
			c.leases.Units/float64(max(t.answered, 1)), lineUnits/float64(max(t.answered, 1)), perToken)
		if c.share <= 1 {
			verdict(perToken <= mostUnitsPerRequest, "%s: %.4f write units per request amortised over a steady load (per token leased past the first %v), at most %.2f",
				c.name, perToken, settle(o.duration), mostUnitsPerRequest)
		}
		if c.leases.Errors > 0 {
			verdict(false, "%s: %d lease writes failed other than on their condition", c.name, c.leases.Errors)
		}
	}

	// The calls of a request that neither leased nor read its limits: the
	// fewest an unlimited caller's answered request made.
	var free *caller
	for _, c := range callers {
		if !c.limited {
			free = c
		}
	}
	base := 0
	for i, r := range logs.of(free.subject) {
		if i == 0 || r.Calls < base {
			base = r.Calls
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| requests answered 200 (servers' request lines) | count | p50 ms | p90 ms | p99 ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	row := func(name string, l latencies) {
		fmt.Fprintf(w, "| %s | %d | %.2f | %.2f | %.2f |\n", name, len(l), l.at(0.5), l.at(0.9), l.at(0.99))
	}
	for _, c := range callers {
		lines := logs.of(c.subject)
		if !c.limited {
			row(c.name, latenciesOf(lines, func(r requestLine) bool { return r.Status == 200 && r.Calls == base }))
			continue
		}
		row(c.name+": tokens at hand", latenciesOf(lines, func(r requestLine) bool {
			return r.Status == 200 && r.WriteUnits == 0 && r.Calls == base
		}))
		row(c.name+": leased", latenciesOf(lines, func(r requestLine) bool { return r.Status == 200 && r.WriteUnits > 0 }))
	}

	open := 0
	for _, c := range callers {
		for _, r := range logs.of(c.subject) {
			if r.RateLimiter == "open" {
				open++
			}
		}
	}
	verdict(open == 0, "%d requests let through unchecked (the limiter failing open)", open)
	fmt.Fprintln(w)
	fmt.Fprintln(w, strings.Join(verdicts, "\n"))
	if problems := logs.Problems(); len(problems) > 0 {
		fmt.Fprintf(w, "\nThe servers logged %d lines at WARN or ERROR; the first:\n%s\n", len(problems), problems[0])
	}
}
