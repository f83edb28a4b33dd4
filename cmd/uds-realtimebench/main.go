// Command uds-realtimebench measures the local server's realtime endpoint
// (/rest/api/v1/realtime, issue 42): the time from a write's
// acknowledgement to each subscriber's receipt of its change, with many
// connections subscribed while writes come at a steady rate, and what the
// open connections cost the server in memory. docs/performance.md reports
// its figures; `make bench-realtime` runs it.
//
// It starts one uds-local over the engine at UDS_DYNAMODB_ENDPOINT, on
// tables of its own (a name prefix per run), as the other benchmarks do
// (limits and namespace policies cached as deployed, the caller taken from
// X-Uds-Subject, no rate limit). It sets the app's quota high, so that no
// write is refused, and the quota mode -quota-mode; it makes two of the
// four namespaces of the layout (layout.go) private. Then it opens
// -connections WebSocket connections, each as a caller of its own, and
// sends each one's 10 subscriptions (to whole namespaces and to lists, in
// shared and private namespaces), and waits for every "subscribed". The
// server's resident memory (VmRSS of /proc/<pid>/status) is read before
// the first connection and once every subscription is in place.
//
// Then it writes through the HTTP API at -rate writes a second for -warmup
// and then -duration, each write the creation of a new item by one of the
// connections' callers, sent at its own instant whatever the answers to
// the earlier ones. For each write it notes the instant its 201 was read
// (the acknowledgement) and the version created; for each change message
// the instant it was read. After the last write it waits until every
// delivery the acknowledged writes call for has come, or none has come
// for -grace (a server far behind is waited for while it catches up, up to
// maxWait), and then matches them: each subscription that the protocol's
// rules say sees a write (its namespace, its list, and in a private
// namespace its caller's own items) must receive that item at that
// version. A delivery missing, a write not acknowledged, or a connection
// closed during the run fails it after the report.
//
// It prints, as Markdown: the writes and their latencies; the deliveries
// expected, received, missing, repeated and unexpected; the
// commit-to-delivery latency at p50, p90, p99 and its most, of all
// deliveries and by kind of subscription, of the writes acknowledged after
// the warm-up, and split at the instant of each write's row in the changes
// table (read once the server stopped: rows.go); the server's resident
// memory per connection; the feed writer's batches (the server's "changes
// batch" lines: the changes handler at work); and the machine's load
// average before and after.
//
// Usage:
//
//	scripts/with-dynamodb.sh -- go run ./cmd/uds-realtimebench -uds-local bin/uds-local [-connections 100] [-rate 100] [-duration 60s] [-warmup 5s] [-grace 15s] [-quota-mode strict]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/udsproject/uds/internal/localbench"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// options are the command's flags.
type options struct {
	udsLocal    string
	connections int
	rate        float64
	duration    time.Duration
	warmup      time.Duration
	grace       time.Duration
	mode        uds.QuotaMode
}

func main() {
	var o options
	flag.StringVar(&o.udsLocal, "uds-local", "bin/uds-local", "the server binary (go build -o bin/uds-local ./cmd/uds-local)")
	flag.IntVar(&o.connections, "connections", 100, "WebSocket connections, each a caller of its own with 10 subscriptions")
	flag.Float64Var(&o.rate, "rate", 100, "writes a second through the HTTP API")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "how long the writes are measured")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "how long the writes run before, their deliveries checked but not measured")
	flag.DurationVar(&o.grace, "grace", 15*time.Second, "after the last write, how long to wait for the next delivery before the ones not come are missing")
	mode := flag.String("quota-mode", string(uds.QuotaStrict), "the app's quota mode: strict or streamed")
	flag.Parse()
	err := parseOptions(&o, *mode)
	localbench.Main("uds-realtimebench", "bench-realtime", err, func(ctx context.Context, endpoint string, w io.Writer) error {
		return run(ctx, o, endpoint, w)
	})
}

func parseOptions(o *options, mode string) error {
	o.mode = uds.QuotaMode(mode)
	switch {
	case o.connections < 1 || o.connections > maxConnections:
		return fmt.Errorf("-connections: want 1 to %d, got %d", maxConnections, o.connections)
	case o.rate <= 0 || o.rate > maxRate:
		return fmt.Errorf("-rate: want more than 0 and at most %d, got %v", maxRate, o.rate)
	case o.duration < time.Second:
		return fmt.Errorf("-duration: want at least 1s, got %v", o.duration)
	case o.warmup < 0:
		return fmt.Errorf("-warmup: want 0 or more, got %v", o.warmup)
	case o.grace < time.Second:
		return fmt.Errorf("-grace: want at least 1s, got %v", o.grace)
	case o.mode != uds.QuotaStrict && o.mode != uds.QuotaStreamed:
		return fmt.Errorf("-quota-mode: want %s or %s, got %q", uds.QuotaStrict, uds.QuotaStreamed, mode)
	}
	return nil
}

// maxConnections bounds -connections: the server caps an app's
// subscriptions at 10,000 (10 a connection), and the bound keeps a typo
// from opening more connections than the machine has file descriptors.
const maxConnections = 1000

// maxRate bounds -rate: each write is a goroutine of its own.
const maxRate = 10000

// benchApp is the app of the run.
const benchApp = "5ca1ab1e-0000-4000-8000-00000000f1a5"

// result is what a run measured.
type result struct {
	tally
	// subscribeTime is how long opening every connection and having
	// every subscription answered took, waited how long the deliveries
	// took to come after the last write's answer.
	subscribeTime, waited time.Duration
	// rssBefore and rssAfter are the server's resident memory, in
	// bytes, before the first connection and once every subscription was
	// in place; 0 where /proc does not give it.
	rssBefore, rssAfter int64
	// batches are the server's "changes batch" lines of the writes'
	// time.
	batches []localbench.Batch
	// others are the messages that were neither a change nor an answer
	// to a subscribe, closes the connections that ended before the run
	// did, problems the server's lines at WARN and above once it served.
	others, closes, problems []string
	loadBefore, loadAfter    string
}

// run starts the server over the engine at endpoint, measures, stops the
// server and writes the report. Missing deliveries and failed writes are
// an error once the report is written.
func run(ctx context.Context, o options, endpoint string, w io.Writer) error {
	r, err := measure(ctx, o, endpoint)
	if err != nil {
		return err
	}
	report(w, o, r)
	var problems []string
	if r.missing > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d deliveries missing", r.missing, r.expected))
	}
	if r.writeErrors > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d writes not acknowledged", r.writeErrors, r.writes))
	}
	if len(r.closes) > 0 {
		problems = append(problems, fmt.Sprintf("%d connections closed during the run", len(r.closes)))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// measure runs the benchmark: the server, the connections, the writes.
func measure(ctx context.Context, o options, endpoint string) (*result, error) {
	r := &result{loadBefore: localbench.LoadAverage()}
	prefix := "rtbench-" + strconv.FormatInt(time.Now().Unix(), 36) + "-"
	env := append(localbench.Env(endpoint), config.EnvRatePerCaller+"=", config.EnvRatePerApp+"=")
	for _, table := range schema.Tables {
		env = append(env, table.EnvVar+"="+prefix+table.DefaultName)
	}
	var batches localbench.Batches
	log := &localbench.Log{OnLine: batches.Add}
	fmt.Fprintf(os.Stderr, "uds-realtimebench: starting %s over %s (tables %s*)\n", o.udsLocal, endpoint, prefix)
	srv, err := localbench.Start(o.udsLocal, env, "", log)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.Stop()
		}
	}()
	startup := len(log.Problems())
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	if err := prepare(ctx, client, srv.URL, o.mode); err != nil {
		return nil, err
	}

	pid := srv.PID()
	r.rssBefore = rss(pid)
	d, err := drive(ctx, o, client, srv.URL, func() {
		// A moment for the server to finish with the subscribes before
		// its memory is read.
		time.Sleep(time.Second)
		r.rssAfter = rss(pid)
	})
	if err != nil {
		return nil, err
	}
	r.loadAfter = localbench.LoadAverage()
	stopped = true
	if err := srv.Stop(); err != nil {
		return nil, err
	}
	rows, err := rowInstants(ctx, endpoint, prefix+schema.Changes.DefaultName)
	if err != nil {
		return nil, fmt.Errorf("reading the changes table: %w", err)
	}
	r.tally = match(d.acks, d.receipts, rows, d.writesStart.Add(o.warmup))
	r.subscribeTime, r.waited, r.others, r.closes = d.subscribeTime, d.waited, d.others, d.closes
	r.batches = batches.Within(d.writesStart, d.writesEnd)
	r.problems = log.Problems()[startup:]
	return r, nil
}

// driven is what drive saw.
type driven struct {
	subscribeTime          time.Duration
	acks                   []ack
	writesStart, writesEnd time.Time
	// waited is how long the deliveries took to come after the last
	// write's answer.
	waited time.Duration
	// receipts are each connection's changes received.
	receipts [][]receipt
	// others are the messages that were neither a change nor an answer
	// to a subscribe, closes the connections that ended before the run
	// did.
	others, closes []string
}

// drive opens the connections to the API at base and subscribes them,
// calls subscribed, writes, waits for the deliveries, and closes the
// connections.
func drive(ctx context.Context, o options, client *http.Client, base string, subscribed func()) (*driven, error) {
	d := &driven{}
	fmt.Fprintf(os.Stderr, "uds-realtimebench: opening %d connections of %d subscriptions each\n", o.connections, subscriptionsEach)
	start := time.Now()
	clients, err := connect(ctx, realtimeURL(base), o.connections)
	defer func() {
		for _, c := range clients {
			if c != nil {
				_ = c.close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	d.subscribeTime = time.Since(start)
	subscribed()

	fmt.Fprintf(os.Stderr, "uds-realtimebench: %v writes a second for %v, then %v measured\n", o.rate, o.warmup, o.duration)
	d.writesStart = time.Now()
	d.acks = writeLoad(ctx, client, base, benchApp, o.connections, o.rate, o.warmup+o.duration)
	d.writesEnd = time.Now()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	want := expectedDeliveries(d.acks, o.connections)
	fmt.Fprintf(os.Stderr, "uds-realtimebench: %d writes sent; waiting for %d deliveries, as long as a change comes every %v\n", len(d.acks), len(want), o.grace)
	d.waited = waitDeliveries(clients, want, o.grace)
	d.receipts = make([][]receipt, len(clients))
	for i, c := range clients {
		var others []string
		d.receipts[i], others = c.received()
		d.others = append(d.others, others...)
		if err := c.close(); err != nil {
			d.closes = append(d.closes, err.Error())
		}
	}
	clients = nil
	return d, nil
}

// prepare sets the app's default quota high, so that no write is refused,
// its quota mode unless strict, and the private namespaces' policies.
func prepare(ctx context.Context, client *http.Client, base string, mode uds.QuotaMode) error {
	admin := base + "/admin/apps/" + benchApp
	if err := localbench.Send(ctx, client, http.MethodPut, admin+"/quota", "", `{"limitBytes": 1000000000000, "limitItems": 1000000000}`, http.StatusOK); err != nil {
		return err
	}
	if mode != uds.QuotaStrict {
		if err := localbench.Send(ctx, client, http.MethodPut, admin+"/quota-mode", "", `{"mode": "`+string(mode)+`"}`, http.StatusOK); err != nil {
			return err
		}
	}
	errs := make([]error, len(privateNamespaces))
	var wg sync.WaitGroup
	for i, ns := range privateNamespaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = makePrivate(ctx, client, admin+"/namespaces/"+ns)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// makePrivate makes a namespace private: the change is announced (202),
// and the same request completes it (200) once it settled, after the
// Retry-After it gave (docs/policies.md).
func makePrivate(ctx context.Context, client *http.Client, policy string) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, policy, strings.NewReader(`{"access": "private"}`))
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return nil
		case http.StatusAccepted:
			wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil {
				wait = 5
			}
			fmt.Fprintf(os.Stderr, "uds-realtimebench: %s: the change to private is announced; completing it in %d s\n", policy, wait)
			select {
			case <-time.After(time.Duration(wait) * time.Second):
			case <-ctx.Done():
				return ctx.Err()
			}
		default:
			return fmt.Errorf("PUT %s: %d %s", policy, resp.StatusCode, strings.TrimSpace(string(body)))
		}
	}
	return fmt.Errorf("PUT %s: not private after 5 minutes", policy)
}

// connect opens n connections at once and subscribes each; on failure the
// connections opened are returned with the error, to be closed.
func connect(ctx context.Context, wsURL string, n int) ([]*client, error) {
	clients := make([]*client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(ctx, wsURL, i)
			if err != nil {
				errs[i] = err
				return
			}
			clients[i] = c
			errs[i] = c.subscribe(ctx, benchApp)
		}()
	}
	wg.Wait()
	return clients, errors.Join(errs...)
}

// maxWait bounds how long waitDeliveries waits in all.
const maxWait = 10 * time.Minute

// waitDeliveries waits until the clients have received every delivery of
// want, or no change came for grace, or maxWait passed, and returns how
// long it waited.
func waitDeliveries(clients []*client, want map[deliveryKey]bool, grace time.Duration) time.Duration {
	start := time.Now()
	seen, lastAt := 0, start
	for time.Since(lastAt) < grace && time.Since(start) < maxWait {
		wanted, all := 0, 0
		for _, c := range clients {
			w, a := c.count(want)
			wanted, all = wanted+w, all+a
		}
		if wanted == len(want) {
			break
		}
		if all > seen {
			seen, lastAt = all, time.Now()
		}
		time.Sleep(250 * time.Millisecond)
	}
	return time.Since(start)
}

// rss returns process pid's resident memory in bytes (VmRSS), 0 where
// /proc does not give it.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}
