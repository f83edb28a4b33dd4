// Command uds-ratebench measures the rate limits across processes: how
// closely several servers over one DynamoDB engine hold a caller to its
// limit together, and what the limiter costs in DynamoDB writes and
// latency. docs/performance.md reports its figures; `make
// bench-ratelimit` runs it.
//
// It starts -servers uds-local processes (standing for warm Lambda
// containers) over the engine at UDS_DYNAMODB_ENDPOINT, through a proxy
// that counts the limiter's writes at the wire, with the deployment's
// per-caller limit set to -rate (UDS_RATE_PER_CALLER) and the limits cache
// as deployed (UDS_LIMITS_CACHE_TTL, unless set, its default). After a
// warm-up, callers send for -duration each, every request a GET of one
// item, round-robin over the servers at an even pace:
//
//   - a caller at -over times its limit: the 2xx answered against the
//     most the limit allows, R × t + B;
//   - callers at each -steady fraction of the limit: their 429s;
//   - beside the first of them, a caller whose limit is lifted (an
//     override of -1) at the same rate: the latency of a request the
//     limiter does not see.
//
// It prints, as Markdown tables: the answers; the limiter's writes (those
// committed and those whose condition failed, which DynamoDB charges and
// the request lines cannot show) and write units per answered request,
// and per token leased once every process has leased (amortised over a
// steady load, every token leased serves a request); the servers'
// latencies of requests that found tokens at hand, that leased, and that
// were not limited; and each requirement met or missed. It stops every
// server it started before it returns.
//
// Usage:
//
//	scripts/with-dynamodb.sh -- go run ./cmd/uds-ratebench -uds-local bin/uds-local [-servers 4] [-rate 100/100] [-duration 30s] [-over 3] [-steady 0.9,0.8]
package main

import (
	"context"
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
	"github.com/udsproject/uds/pkg/uds"
)

// options are the command's flags.
type options struct {
	udsLocal string
	servers  int
	rate     uds.Rate
	duration time.Duration
	over     float64
	steady   []float64
}

func main() {
	var o options
	flag.StringVar(&o.udsLocal, "uds-local", "bin/uds-local", "the server binary (go build -o bin/uds-local ./cmd/uds-local)")
	flag.IntVar(&o.servers, "servers", 4, "server processes over the one engine")
	rate := flag.String("rate", "100/100", "the deployment's per-caller limit, R/B: requests a second and burst")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long each caller sends")
	flag.Float64Var(&o.over, "over", 3, "the overloading caller's rate, in multiples of its limit")
	steady := flag.String("steady", "0.9,0.8", "the steady callers' rates, fractions of their limit, comma-separated")
	flag.Parse()
	err := parseOptions(&o, *rate, *steady)
	localbench.Main("uds-ratebench", "bench-ratelimit", err, func(ctx context.Context, endpoint string, w io.Writer) error {
		return run(ctx, o, endpoint, w)
	})
}

func parseOptions(o *options, rate, steady string) error {
	rs, bs, ok := strings.Cut(rate, "/")
	r, err1 := strconv.ParseInt(rs, 10, 64)
	b, err2 := strconv.ParseInt(bs, 10, 64)
	o.rate = uds.Rate{PerSecond: r, Burst: b}
	if !ok || err1 != nil || err2 != nil || o.rate.Validate("rate") != nil {
		return fmt.Errorf("-rate: want R/B, whole numbers from 1 to %d, got %q", uds.MaxRatePerSecond, rate)
	}
	for _, f := range strings.Split(steady, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 || v > 1 {
			return fmt.Errorf("-steady: want fractions of the limit above 0 and at most 1, got %q", f)
		}
		o.steady = append(o.steady, v)
	}
	switch {
	case o.servers < 1:
		return fmt.Errorf("-servers: want at least 1, got %d", o.servers)
	case o.duration < time.Second:
		return fmt.Errorf("-duration: want at least 1s, got %v", o.duration)
	case o.over <= 0:
		return fmt.Errorf("-over: want a positive multiple, got %v", o.over)
	}
	return nil
}

// benchApp is the app the callers read from; benchItem its one item.
const (
	benchApp  = "5ca1ab1e-0000-4000-8000-00000000be4c"
	benchItem = "/data/" + benchApp + "/ratebench/item"
)

// caller is one caller's part of the run.
type caller struct {
	name    string
	subject string
	share   float64 // of the limit
	limited bool    // false: an override lifts the caller's limit
	// What the run gave: the caller's outcomes, and the limiter's writes
	// while it ran, and past its start (settle).
	outcomes        []localbench.Outcome
	leases, settled leaseCounts
}

func run(ctx context.Context, o options, endpoint string, w io.Writer) error {
	leases := newLeaseCounter(o.rate)
	proxy, err := localbench.StartProxy(endpoint, leases.count)
	if err != nil {
		return err
	}
	defer proxy.Close()

	logs := newServerLogs()
	env := append(localbench.Env(proxy.URL),
		config.EnvRatePerCaller+"="+strconv.FormatInt(o.rate.PerSecond, 10)+"/"+strconv.FormatInt(o.rate.Burst, 10),
		config.EnvRatePerApp+"=")
	fmt.Fprintf(os.Stderr, "uds-ratebench: starting %d servers over %s\n", o.servers, endpoint)
	fleet, err := startFleet(o.udsLocal, o.servers, env, logs)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stopFleet(fleet)
		}
	}()
	urls := make([]string, len(fleet))
	for i, s := range fleet {
		urls[i] = s.URL
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

	// Callers are new to every run, so that an engine kept from an
	// earlier one (the item is there already: 409) holds no state of
	// theirs.
	tag := strconv.FormatInt(time.Now().Unix(), 36)
	over := &caller{name: fmt.Sprintf("%g× its limit", o.over), subject: "over-" + tag, share: o.over, limited: true}
	callers := []*caller{over}
	for _, f := range o.steady {
		callers = append(callers, &caller{name: fmt.Sprintf("%g%% of its limit", f*100), subject: fmt.Sprintf("steady%g-%s", f*100, tag), share: f, limited: true})
	}
	free := &caller{name: fmt.Sprintf("not limited (override -1), at %g%% of the limit", o.steady[0]*100), subject: "free-" + tag, share: o.steady[0]}
	callers = append(callers, free)
	setup := "setup-" + tag
	for _, subject := range []string{setup, free.subject} {
		if err := localbench.Send(ctx, client, http.MethodPut, urls[0]+"/admin/apps/"+benchApp+"/users/"+subject+"/rate-limits", "", `{"perCaller": {"requestsPerSecond": -1}}`, http.StatusOK); err != nil {
			return err
		}
	}
	if err := localbench.Send(ctx, client, http.MethodPost, urls[0]+benchItem, setup, `{"data": {"bench": "rate limits"}}`, http.StatusCreated, http.StatusConflict); err != nil {
		return err
	}
	// The engine and the servers warm up first, on the setup caller's
	// requests. The caller not limited then runs beside the first steady
	// one, so that their latencies are measured on the same machine at
	// the same moment; the others run alone.
	fmt.Fprintf(os.Stderr, "uds-ratebench: warming up\n")
	drive(ctx, client, urls, benchItem, setup, o.steady[0]*float64(o.rate.PerSecond), min(o.duration, 5*time.Second))
	phases := [][]*caller{{over}, {callers[1], free}}
	for _, c := range callers[2 : len(callers)-1] {
		phases = append(phases, []*caller{c})
	}
	for _, phase := range phases {
		if err := runPhase(ctx, o, client, urls, leases, phase); err != nil {
			return err
		}
	}
	// Stopped, the servers have written every request line.
	stopped = true
	if err := stopFleet(fleet); err != nil {
		return err
	}
	report(w, o, callers, logs)
	return nil
}

// settle is the part of a caller's run left out of its amortised cost:
// the start, where every process leases for the first time.
func settle(d time.Duration) time.Duration { return (d / 6).Truncate(100 * time.Millisecond) }

// runPhase drives callers side by side for the run's duration, and
// counts the limiter's writes while they run: the one limited caller of
// a phase made them all.
func runPhase(ctx context.Context, o options, client *http.Client, urls []string, leases *leaseCounter, callers []*caller) error {
	before := leases.snapshot()
	settled := make(chan leaseCounts, 1)
	timer := time.AfterFunc(settle(o.duration), func() { settled <- leases.snapshot() })
	var wg sync.WaitGroup
	for _, c := range callers {
		fmt.Fprintf(os.Stderr, "uds-ratebench: %s: %g requests a second for %v\n", c.name, c.share*float64(o.rate.PerSecond), o.duration)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.outcomes = drive(ctx, client, urls, benchItem, c.subject, c.share*float64(o.rate.PerSecond), o.duration)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	end, start := leases.snapshot(), before
	if !timer.Stop() {
		start = <-settled
	}
	for _, c := range callers {
		if c.limited {
			c.leases, c.settled = end.minus(before), end.minus(start)
		}
	}
	return nil
}
