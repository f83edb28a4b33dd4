// Command uds-loadbench measures the local server's throughput and latency
// under a mixed load: the first release beside the current tree in each
// quota mode, on one machine, one after another. docs/performance.md
// reports its figures; `make bench-load` runs it.
//
// The targets, in the order -targets names them, each a uds-local process
// of its own over tables of its own (a name prefix per target) in the one
// DynamoDB engine at UDS_DYNAMODB_ENDPOINT:
//
//   - first: the first release, the commit -first-release names (121a5de:
//     usage accounting, before exact accounting), built from `git archive`
//     of that commit in a temporary directory, removed afterwards;
//   - strict: -uds-local with the app in quota mode strict, the default;
//   - streamed: -uds-local with the app switched to streamed (PUT
//     /admin/apps/{app}/quota-mode) before the load. A server that does
//     not answer that 200 ends the run there, after the report of the
//     targets measured before it.
//
// The servers cache limits and namespace policies as a deployment does
// (UDS_LIMITS_CACHE_TTL, unless set, its default of 30 s, which the first
// release has too), not as the local server does by default (not at all).
// For each target the app's default quota is set high (PUT
// /admin/apps/{app}/quota), so that every write runs the quota path and
// none is refused, and each of -clients owners gets 32 items of 1 KB
// (seedItems). Then -clients clients, one per owner (X-Uds-Subject, trusted by
// the local server with UDS_TRUST_SUBJECT_HEADER=1), each send one request
// at a time, alternately a GET of one of their owner's items and a POST of
// a new 1 KB key-value item: for -warmup unmeasured, then for -duration
// measured. One client per owner keeps an owner's writes from contending
// for its usage record: the load measures the cost of a request, not
// conflicts.
//
// It prints, as Markdown, a table with a column per target: requests a
// second, GET and POST latencies at p50 and p99 as the clients saw them
// (answers 2xx), the answers that were not 2xx by status, the DynamoDB
// calls and write units per request from the current servers' request
// lines (the first release writes none), and the machine's load average
// before the run and after each target. It stops every server it started
// before it returns.
//
// Usage:
//
//	scripts/with-dynamodb.sh -- go run ./cmd/uds-loadbench -uds-local bin/uds-local [-targets first,strict,streamed] [-duration 20s] [-warmup 5s] [-clients 16] [-first-release 121a5de]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/internal/localbench"
)

// options are the command's flags.
type options struct {
	udsLocal     string
	firstRelease string
	targets      []target
	duration     time.Duration
	warmup       time.Duration
	clients      int
}

func main() {
	var o options
	flag.StringVar(&o.udsLocal, "uds-local", "bin/uds-local", "the current server binary (go build -o bin/uds-local ./cmd/uds-local), for the targets strict and streamed")
	flag.StringVar(&o.firstRelease, "first-release", "121a5de", "the commit of the first release, built for the target first")
	targets := flag.String("targets", "first,strict,streamed", "the targets, comma-separated, in the order they run: first, strict, streamed")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long the load is measured per target")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "how long the load runs unmeasured before, per target")
	flag.IntVar(&o.clients, "clients", 16, "concurrent clients, one per owner")
	flag.Parse()
	err := parseOptions(&o, *targets)
	localbench.Main("uds-loadbench", "bench-load", err, func(ctx context.Context, endpoint string, w io.Writer) error {
		return run(ctx, o, endpoint, w)
	})
}

func parseOptions(o *options, targets string) error {
	for _, name := range strings.Split(targets, ",") {
		t, ok := targetNamed(strings.TrimSpace(name))
		if !ok {
			return fmt.Errorf("-targets: want names among %s, got %q", strings.Join(targetNames(), ", "), name)
		}
		if slices.Contains(o.targets, t) {
			return fmt.Errorf("-targets: %s named twice", t.name)
		}
		o.targets = append(o.targets, t)
	}
	switch {
	case o.duration < time.Second:
		return fmt.Errorf("-duration: want at least 1s, got %v", o.duration)
	case o.warmup < 0:
		return fmt.Errorf("-warmup: want 0 or more, got %v", o.warmup)
	case o.clients < 1 || o.clients > maxClients:
		return fmt.Errorf("-clients: want 1 to %d, got %d", maxClients, o.clients)
	case o.firstRelease == "" && slices.Contains(o.targets, first):
		return errors.New("-first-release: want a commit for the target first")
	}
	return nil
}

// maxClients bounds -clients: every owner's seed items are written
// before the load, and a typo should not write millions.
const maxClients = 1000

// run measures every target in turn and writes the report: also when a
// target fails, of those measured before it.
func run(ctx context.Context, o options, endpoint string, w io.Writer) error {
	before := loadAverage()
	bins := map[target]string{strict: o.udsLocal, streamed: o.udsLocal}
	if slices.Contains(o.targets, first) {
		bin, remove, err := buildRelease(ctx, o.firstRelease)
		if err != nil {
			return fmt.Errorf("building the first release (%s): %w", o.firstRelease, err)
		}
		defer remove()
		bins[first] = bin
	}
	// The tables are new to every run, so that an engine kept from an
	// earlier one holds no item or usage of the load's.
	tag := strconv.FormatInt(time.Now().Unix(), 36)
	var results []*result
	for _, t := range o.targets {
		r, err := measure(ctx, o, t, bins[t], endpoint, "loadbench-"+tag+"-"+t.name+"-")
		if err != nil {
			if len(results) > 0 {
				report(w, o, before, results)
			}
			return fmt.Errorf("%s: %w", t.name, err)
		}
		results = append(results, r)
	}
	report(w, o, before, results)
	return nil
}
