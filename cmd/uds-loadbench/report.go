package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/udsproject/uds/internal/localbench"
)

// latency is the p50 and p99, in ms, of the 2xx answers of one kind.
type latency struct {
	p50, p99 float64
}

func latencyOf(outcomes []localbench.Outcome) latency {
	var ms []float64
	for _, o := range outcomes {
		if ok(o.Status) {
			ms = append(ms, float64(o.Latency)/float64(time.Millisecond))
		}
	}
	slices.Sort(ms)
	return latency{p50: localbench.Quantile(ms, 0.5), p99: localbench.Quantile(ms, 0.99)}
}

func ok(status int) bool { return status >= 200 && status < 300 }

// failures are the answers that were not 2xx: how many of each status (0:
// none came), and what the first of each said.
type failures struct {
	count    int
	byStatus map[int]int
	first    map[int]string
}

func failuresOf(outcomes ...[]localbench.Outcome) failures {
	f := failures{byStatus: map[int]int{}, first: map[int]string{}}
	for _, kind := range outcomes {
		for _, o := range kind {
			if ok(o.Status) {
				continue
			}
			f.count++
			if f.byStatus[o.Status]++; f.byStatus[o.Status] == 1 {
				f.first[o.Status] = o.Problem
			}
		}
	}
	return f
}

// String gives the count, then the count of each status: "3 (503 × 2, no
// answer × 1)".
func (f failures) String() string {
	if f.count == 0 {
		return "0"
	}
	var parts []string
	for _, s := range f.statuses() {
		parts = append(parts, fmt.Sprintf("%s × %d", statusName(s), f.byStatus[s]))
	}
	return fmt.Sprintf("%d (%s)", f.count, strings.Join(parts, ", "))
}

func (f failures) statuses() []int {
	var s []int
	for status := range f.byStatus {
		s = append(s, status)
	}
	slices.Sort(s)
	return s
}

func statusName(status int) string {
	if status == 0 {
		return "no answer"
	}
	return fmt.Sprint(status)
}

// calls is what the request lines of one method say a request cost: the
// mean DynamoDB calls and write units, and the retries in all.
type calls struct {
	lines      int
	perRequest float64
	units      float64
	retries    int
}

func callsOf(lines []requestLine, method string) calls {
	var c calls
	for _, r := range lines {
		if !strings.HasPrefix(r.Route, method+" ") || r.Namespace == probeNamespace {
			continue
		}
		c.lines++
		c.perRequest += float64(r.Calls)
		c.units += r.WriteUnits
		c.retries += r.Retries
	}
	if c.lines > 0 {
		c.perRequest /= float64(c.lines)
		c.units /= float64(c.lines)
	}
	return c
}

// title is a target's column heading.
func title(o options, t target) string {
	if t == first {
		return "first release (" + o.firstRelease + ")"
	}
	return t.column
}

// report writes the results side by side as Markdown, then what the
// answers that were not 2xx said and the servers' warnings.
func report(w io.Writer, o options, before string, results []*result) {
	engine := "a fresh in-memory DynamoDB Local engine of its own"
	if o.sharedEngine != "" {
		engine = "the one DynamoDB engine at " + o.sharedEngine + ", tables of its own per target"
	}
	fmt.Fprintf(w, "%s, %s: one uds-local process per target over %s, targets one after another. "+
		"%d clients, one per owner, each sending one request at a time, alternately a GET of one of its owner's %d items of 1 KB and a POST of a new 1 KB key-value item; "+
		"the app's default quota set high, so that every write runs the quota path; limits and namespace policies cached for %s (UDS_LIMITS_CACHE_TTL). %v of warm-up, then %v measured per target. "+
		"Latencies as the clients saw them, of 2xx answers; DynamoDB calls from the current servers' request lines (the first release writes none). "+
		"Feed lag (the targets whose server keeps the changes feed): a probe creates an item every %v in namespace %s beside the load, a follower reads its feed "+
		"(limit 1000, again %v after a page that left it up to date), from each create's 201 to the first page that held it, split at the instant of the item's row in the changes table; the probe's requests are left out of the other rows. "+
		"Load average before the run: %s.\n\n",
		time.Now().UTC().Format(time.DateOnly), localbench.Machine(), engine, o.clients, seedItems, localbench.LimitsCacheTTL(), o.warmup, o.duration,
		probeInterval, probeNamespace, followInterval, before)

	row := func(name string, cell func(r *result) string) {
		fmt.Fprintf(w, "| %s |", name)
		for _, r := range results {
			fmt.Fprintf(w, " %s |", cell(r))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "| |")
	for _, r := range results {
		fmt.Fprintf(w, " %s |", title(o, r.Target))
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "|---|")
	for range results {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	row("requests/s", func(r *result) string {
		return fmt.Sprintf("%.0f", float64(len(r.Gets)+len(r.Posts))/r.Elapsed.Seconds())
	})
	row("requests: GET / POST", func(r *result) string { return fmt.Sprintf("%d / %d", len(r.Gets), len(r.Posts)) })
	latencyCell := func(outcomes []localbench.Outcome) string {
		l := latencyOf(outcomes)
		return fmt.Sprintf("%.1f / %.1f", l.p50, l.p99)
	}
	row("GET p50 / p99 ms", func(r *result) string { return latencyCell(r.Gets) })
	row("POST p50 / p99 ms", func(r *result) string { return latencyCell(r.Posts) })
	row("errors (not 2xx)", func(r *result) string { return failuresOf(r.Gets, r.Posts).String() })
	linesCell := func(r *result, cell func(get, post calls) string) string {
		if len(r.Lines) == 0 {
			return "—"
		}
		return cell(callsOf(r.Lines, "GET"), callsOf(r.Lines, "POST"))
	}
	row("DynamoDB calls per GET / POST", func(r *result) string {
		return linesCell(r, func(get, post calls) string { return fmt.Sprintf("%.2f / %.2f", get.perRequest, post.perRequest) })
	})
	row("write units per POST", func(r *result) string {
		return linesCell(r, func(_, post calls) string { return fmt.Sprintf("%.2f", post.units) })
	})
	row("DynamoDB retries (GET + POST)", func(r *result) string {
		return linesCell(r, func(get, post calls) string { return fmt.Sprint(get.retries + post.retries) })
	})
	feedCell := func(r *result, cell func(f *feedResult) string) string {
		if r.Feed == nil {
			return "—"
		}
		return cell(r.Feed)
	}
	row("feed lag p50 / p99 ms (probe)", func(r *result) string {
		return feedCell(r, func(f *feedResult) string {
			return fmt.Sprintf("%.0f / %.0f", localbench.Quantile(f.LagsMs, 0.5), localbench.Quantile(f.LagsMs, 0.99))
		})
	})
	row("of which to the row's instant p50 / p99 ms", func(r *result) string {
		return feedCell(r, func(f *feedResult) string {
			return fmt.Sprintf("%.0f / %.0f", localbench.Quantile(f.ToRowMs, 0.5), localbench.Quantile(f.ToRowMs, 0.99))
		})
	})
	row("of which from the row's instant p50 / p99 ms", func(r *result) string {
		return feedCell(r, func(f *feedResult) string {
			return fmt.Sprintf("%.0f / %.0f", localbench.Quantile(f.FromRowMs, 0.5), localbench.Quantile(f.FromRowMs, 0.99))
		})
	})
	row("feed lag min / max ms (probe)", func(r *result) string {
		return feedCell(r, func(f *feedResult) string {
			if len(f.LagsMs) == 0 {
				return "—"
			}
			return fmt.Sprintf("%.0f / %.0f", f.LagsMs[0], f.LagsMs[len(f.LagsMs)-1])
		})
	})
	row("feed probe: writes / not in the feed / write errors", func(r *result) string {
		return feedCell(r, func(f *feedResult) string { return fmt.Sprintf("%d / %d / %d", f.Writes, f.Missing, f.WriteErrors) })
	})
	row("feed's writer: batches / records a batch / p50 / p99 ms", func(r *result) string {
		return feedCell(r, func(f *feedResult) string {
			if len(f.Batches) == 0 {
				return "0"
			}
			records, ms := 0, make([]float64, len(f.Batches))
			for i, b := range f.Batches {
				records += b.Records
				ms[i] = b.LatencyMs
			}
			slices.Sort(ms)
			return fmt.Sprintf("%d / %.1f / %.0f / %.0f", len(f.Batches), float64(records)/float64(len(f.Batches)),
				localbench.Quantile(ms, 0.5), localbench.Quantile(ms, 0.99))
		})
	})
	row("feed follower: reads / errors / p50 / p99 ms", func(r *result) string {
		return feedCell(r, func(f *feedResult) string {
			ms := slices.Sorted(slices.Values(f.ReadMs))
			return fmt.Sprintf("%d / %d / %.1f / %.1f", f.Reads, f.ReadErrors, localbench.Quantile(ms, 0.5), localbench.Quantile(ms, 0.99))
		})
	})
	row("load average after (1, 5, 15 min)", func(r *result) string { return r.LoadAfter })

	for _, r := range results {
		f := failuresOf(r.Gets, r.Posts)
		for _, s := range f.statuses() {
			what := fmt.Sprintf("the first %d answer", s)
			if s == 0 {
				what = "the first request without an answer"
			}
			fmt.Fprintf(w, "\n%s, %s: %s\n", title(o, r.Target), what, strings.TrimSpace(f.first[s]))
		}
		if len(r.Problems) > 0 {
			fmt.Fprintf(w, "\n%s: the server logged %d lines at WARN or ERROR; the first:\n%s\n", title(o, r.Target), len(r.Problems), r.Problems[0])
		}
	}
}
