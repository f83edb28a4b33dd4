// Command uds-loadbench measures the local server's throughput and latency
// under a mixed load: the first release beside the current tree in each
// quota mode, on one machine, one after another. docs/performance.md
// reports its figures; `make bench-load` runs it.
//
// The targets, in the order -targets names them, each a uds-local process
// of its own over a DynamoDB Local engine of its own, fresh: the command
// runs itself once per target under -with-dynamodb (scripts/with-dynamodb.sh,
// which starts the engine and stops it after), with -result-file, and
// prints the targets' results side by side. One engine for all would
// measure the later targets low: it slows as the earlier ones' tables and
// stream records pile up. Where UDS_DYNAMODB_ENDPOINT is set, that script
// starts none, and every target runs over the engine it names, on tables of
// its own (a name prefix per target). The targets:
//
//   - first: the first release, the commit -first-release names (121a5de:
//     usage accounting, before exact accounting), built from `git archive`
//     of that commit in a temporary directory, removed afterwards;
//   - strict: -uds-local with the app in quota mode strict, the default;
//   - streamed: -uds-local with the app switched to streamed (PUT
//     /admin/apps/{app}/quota-mode) before the load. A server that does
//     not answer that 200 ends the run there, after the report of the
//     targets measured before it. The server reads its tables' streams
//     and counts the streamed usage on the same cores;
//   - streamed-unread: streamed, the server reading no stream
//     (UDS_LOCAL_STREAMS=off): what a streamed write costs the API itself,
//     as deployed, where the expiry function reads the streams elsewhere.
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
// Beside the measured load, for the targets whose server keeps the
// changes feed (strict and streamed: the current server reading its
// tables' streams), a feed probe (feed.go) creates an item every 100 ms in
// a namespace of its own and a follower reads that namespace's feed from
// its cursor (limit 1000, again 20 ms after a page that left it up to
// date), and records for each create the time from its 201 to the first
// page that held it: the feed's commit-to-feed lag under the load. The
// probe's requests are not the load's: they are left out of its figures.
//
// It prints, as Markdown, a table with a column per target: requests a
// second, GET and POST latencies at p50 and p99 as the clients saw them
// (answers 2xx), the answers that were not 2xx by status, the DynamoDB
// calls and write units per request from the current servers' request
// lines (the first release writes none), the feed probe's lag at p50 and
// p99 (and its least and most), its writes and those that never appeared,
// the follower's reads, and the machine's load average before the run and
// after each target. It stops every server and engine
// it started before it returns.
//
// Usage:
//
//	go run ./cmd/uds-loadbench -uds-local bin/uds-local [-targets first,strict,streamed,streamed-unread] [-duration 20s] [-warmup 5s] [-clients 16] [-first-release 121a5de] [-with-dynamodb scripts/with-dynamodb.sh]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/internal/localbench"
	"github.com/udsproject/uds/pkg/config"
)

// options are the command's flags.
type options struct {
	udsLocal     string
	firstRelease string
	targets      []target
	duration     time.Duration
	warmup       time.Duration
	clients      int
	// withDynamoDB runs a command with an engine (scripts/with-dynamodb.sh).
	withDynamoDB string
	// resultFile, when set, has the command measure its one target over
	// the engine at UDS_DYNAMODB_ENDPOINT and write the result there.
	resultFile string
	// self is this command's binary, run once per target.
	self string
	// progress takes what the runs of the targets print (standard
	// error).
	progress io.Writer
	// sharedEngine is the engine every target runs over when
	// UDS_DYNAMODB_ENDPOINT names one; empty, each has its own.
	sharedEngine string
}

func main() {
	var o options
	flag.StringVar(&o.udsLocal, "uds-local", "bin/uds-local", "the current server binary (go build -o bin/uds-local ./cmd/uds-local), for the targets other than first")
	flag.StringVar(&o.firstRelease, "first-release", "121a5de", "the commit of the first release, built for the target first")
	targets := flag.String("targets", strings.Join(targetNames(), ","), "the targets, comma-separated, in the order they run: "+strings.Join(targetNames(), ", "))
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long the load is measured per target")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "how long the load runs unmeasured before, per target")
	flag.IntVar(&o.clients, "clients", 16, "concurrent clients, one per owner")
	flag.StringVar(&o.withDynamoDB, "with-dynamodb", "scripts/with-dynamodb.sh", "the script that runs each target with a fresh DynamoDB Local (or the engine UDS_DYNAMODB_ENDPOINT names)")
	flag.StringVar(&o.resultFile, "result-file", "", "measure the one target of -targets over the engine at UDS_DYNAMODB_ENDPOINT and write its result to this file, as JSON, instead of the report (how the command runs each target)")
	flag.Parse()
	err := parseOptions(&o, *targets)
	if o.resultFile != "" {
		localbench.Main("uds-loadbench", "bench-load", err, func(ctx context.Context, endpoint string, _ io.Writer) error {
			return measureInto(ctx, o, endpoint)
		})
		return
	}
	if err == nil {
		o.self, err = os.Executable()
	}
	o.sharedEngine, o.progress = os.Getenv(config.EnvDynamoDBEndpoint), os.Stderr
	localbench.Run("uds-loadbench", err, func(ctx context.Context, w io.Writer) error {
		return run(ctx, o, w)
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
	case o.resultFile != "" && len(o.targets) != 1:
		return fmt.Errorf("-result-file: want one target, got %d", len(o.targets))
	}
	return nil
}

// maxClients bounds -clients: every owner's seed items are written
// before the load, and a typo should not write millions.
const maxClients = 1000

// run measures every target in turn, each in a run of this command under
// o.withDynamoDB, and writes the report: also when a target fails, of
// those measured before it.
func run(ctx context.Context, o options, w io.Writer) error {
	before := localbench.LoadAverage()
	var results []*result
	for _, t := range o.targets {
		r, err := runTarget(ctx, o, t)
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

// runTarget runs this command for target t alone under o.withDynamoDB,
// with its result in a temporary file, and reads the result. What the run
// prints goes to o.progress.
func runTarget(ctx context.Context, o options, t target) (*result, error) {
	dir, err := os.MkdirTemp("", "uds-loadbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "result.json")
	cmd := localbench.Command(ctx, o.withDynamoDB, "--", o.self, "-result-file", file, "-targets", t.name,
		"-uds-local", o.udsLocal, "-first-release", o.firstRelease, "-clients", strconv.Itoa(o.clients),
		"-warmup", o.warmup.String(), "-duration", o.duration.String())
	cmd.Stdout, cmd.Stderr = o.progress, o.progress
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &r, nil
}

// measureInto measures the one target of o over the engine at endpoint
// and writes the result to o.resultFile.
func measureInto(ctx context.Context, o options, endpoint string) error {
	t, bin := o.targets[0], o.udsLocal
	if t == first {
		var remove func()
		var err error
		if bin, remove, err = buildRelease(ctx, o.firstRelease); err != nil {
			return fmt.Errorf("building the first release (%s): %w", o.firstRelease, err)
		}
		defer remove()
	}
	// The tables are new to every run, so that an engine kept from an
	// earlier one, or shared with the other targets, holds no item or
	// usage of the load's.
	prefix := "loadbench-" + strconv.FormatInt(time.Now().Unix(), 36) + "-" + t.name + "-"
	r, err := measure(ctx, o, t, bin, endpoint, prefix)
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(o.resultFile, b, 0o644)
}
