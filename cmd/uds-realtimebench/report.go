package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/udsproject/uds/internal/localbench"
)

// goalP99 is issue 42's goal for the commit-to-delivery latency at p99.
const goalP99 = time.Second

// subscribers says how many subscriptions of each kind see one write of
// its namespace, with conns connections.
func subscribers(k kind, conns int) string {
	switch k {
	case sharedNamespace:
		return fmt.Sprintf("%d a write", conns)
	case sharedList:
		return fmt.Sprintf("about %d a write", conns*roomsEach/rooms)
	default:
		return "1 a write, the writer's own"
	}
}

// report writes the run's figures as Markdown, then what went wrong, if
// anything.
func report(w io.Writer, o options, r *result) {
	fmt.Fprintf(w, "%s, %s: one uds-local over %s, the app in quota mode %s, limits and namespace policies cached for %s. "+
		"%d WebSocket connections, each a caller of its own with %d subscriptions: namespace %s (shared, the whole namespace), "+
		"%d of the %d lists of %s (shared, by key), namespace %s (private: the caller's own items) and %d lists of its own in %s (private, by key). "+
		"%v writes a second through the HTTP API, each the creation of a new item, cycling over the four namespaces, by the connections' callers in turn; "+
		"%v of warm-up, then %v measured. Latency: from the write's 201 read by the writer to the change message read by the subscriber, of the writes acknowledged after the warm-up. "+
		"Load average before: %s.\n\n",
		time.Now().UTC().Format(time.DateOnly), localbench.Machine(), "the engine at UDS_DYNAMODB_ENDPOINT", o.mode, localbench.LimitsCacheTTL(),
		o.connections, subscriptionsEach, nsNews, roomsEach, rooms, nsRooms, nsNotes, drafts, nsDrafts,
		o.rate, o.warmup, o.duration, r.loadBefore)

	fmt.Fprintln(w, "| | |")
	fmt.Fprintln(w, "|---|---:|")
	row := func(name, format string, args ...any) {
		fmt.Fprintf(w, "| %s | %s |\n", name, fmt.Sprintf(format, args...))
	}
	row("connections × subscriptions, opened and subscribed in", "%d × %d, %.1f s", o.connections, subscriptionsEach, r.subscribeTime.Seconds())
	row("writes: sent / not acknowledged", "%d / %d", r.writes, r.writeErrors)
	row("write (POST) p50 / p99 ms", "%.1f / %.1f", localbench.Quantile(r.writeMs, 0.5), localbench.Quantile(r.writeMs, 0.99))
	row("deliveries: expected / received / missing", "%d / %d / **%d**", r.expected, r.received, r.missing)
	row("waited for them after the last write's answer", "%.1f s", r.waited.Seconds())
	row("changes received again / of no acknowledged write", "%d / %d", r.duplicates, r.unexpected)
	row("**commit-to-delivery p50 / p90 / p99 / max ms**", "**%s**", quantiles(r.latencyMs))
	for k := range kinds {
		row(fmt.Sprintf("… %s (%s): deliveries, p50 / p90 / p99 / max ms", k, subscribers(k, o.connections)), "%d, %s", len(r.byKind[k]), quantiles(r.byKind[k]))
	}
	row("deliveries read before the write's 201", "%d", r.beforeAck)
	row("of which to the row's instant (stream, poller, row written): writes, p50 / p90 / p99 / max ms", "%d, %s", len(r.toRowMs), quantiles(r.toRowMs))
	row("… key-value items (the data table's stream)", "%d, %s", len(r.toRowByTable[0]), quantiles(r.toRowByTable[0]))
	row("… list items (the list table's stream)", "%d, %s", len(r.toRowByTable[1]), quantiles(r.toRowByTable[1]))
	row("of which from the row's instant (item read, messages sent and read): deliveries, p50 / p90 / p99 / max ms", "%d, %s", len(r.fromRowMs), quantiles(r.fromRowMs))
	if r.noRow > 0 {
		row("measured writes whose row was not found", "%d", r.noRow)
	}
	p99 := time.Duration(localbench.Quantile(r.latencyMs, 0.99) * float64(time.Millisecond))
	verdict := "met"
	if p99 > goalP99 || len(r.latencyMs) == 0 || r.missing > 0 {
		verdict = "**missed**"
	}
	row(fmt.Sprintf("goal: p99 at most %v, every delivery received", goalP99), "%s", verdict)
	if r.rssBefore > 0 && r.rssAfter > 0 {
		row("server RSS before the connections / with them, MB", "%.1f / %.1f", mb(r.rssBefore), mb(r.rssAfter))
		row("server RSS per connection (10 subscriptions), KB", "%.1f", float64(r.rssAfter-r.rssBefore)/1024/float64(o.connections))
	}
	row("feed writer: batches / records a batch / p50 / p99 ms", "%s", batchesCell(r.batches))
	row("load average after (1, 5, 15 min)", "%s", r.loadAfter)

	examples := func(what string, n int, list []string) {
		if n == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s (%d), the first %d:\n", what, n, len(list))
		for _, e := range list {
			fmt.Fprintf(w, "- %s\n", e)
		}
	}
	examples("Deliveries missing", r.missing, r.missingExamples)
	examples("Changes of no acknowledged write (a write answered 503 may have been applied)", r.unexpected, r.unexpectedExamples)
	if r.writeErrors > 0 {
		fmt.Fprintf(w, "\nThe first write not acknowledged: %s\n", r.firstWriteError)
	}
	examples("Other messages from the server", len(r.others), r.others[:min(len(r.others), maxExamples)])
	examples("Connections that closed during the run", len(r.closes), r.closes[:min(len(r.closes), maxExamples)])
	if len(r.problems) > 0 {
		fmt.Fprintf(w, "\nThe server logged %d lines at WARN or ERROR; the first:\n%s\n", len(r.problems), r.problems[0])
	}
}

// quantiles gives p50, p90, p99 and the most of sorted latencies.
func quantiles(sorted []float64) string {
	if len(sorted) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", localbench.Quantile(sorted, 0.5), localbench.Quantile(sorted, 0.9),
		localbench.Quantile(sorted, 0.99), sorted[len(sorted)-1])
}

// batchesCell sums up the feed writer's batches.
func batchesCell(batches []localbench.Batch) string {
	if len(batches) == 0 {
		return "0"
	}
	records, ms := 0, make([]float64, len(batches))
	for i, b := range batches {
		records += b.Records
		ms[i] = b.LatencyMs
	}
	slices.Sort(ms)
	return fmt.Sprintf("%d / %.1f / %.0f / %.0f", len(batches), float64(records)/float64(len(batches)),
		localbench.Quantile(ms, 0.5), localbench.Quantile(ms, 0.99))
}

func mb(bytes int64) float64 { return float64(bytes) / (1 << 20) }
