package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/udsproject/uds/internal/localbench"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// target is a server and mode the load is measured against.
type target struct {
	name string
	// mode is the app's quota mode, set before the load unless strict
	// (the default); the first release has none.
	mode uds.QuotaMode
	// streamsUnread has the server read none of its tables' streams
	// (UDS_LOCAL_STREAMS=off), as a deployment's API functions do not.
	streamsUnread bool
	// column is the target's column heading in the report, but for the
	// first release's, which names its commit.
	column string
}

var (
	first          = target{name: "first"}
	strict         = target{name: "strict", mode: uds.QuotaStrict, column: "strict"}
	streamed       = target{name: "streamed", mode: uds.QuotaStreamed, column: "streamed"}
	streamedUnread = target{name: "streamed-unread", mode: uds.QuotaStreamed, streamsUnread: true, column: "streamed, streams not read here"}
)

var allTargets = []target{first, strict, streamed, streamedUnread}

// keepsFeed says whether the target's server keeps the changes feed:
// the current server does when it reads its tables' streams.
func (t target) keepsFeed() bool { return t != first && !t.streamsUnread }

// envLocalStreams is cmd/uds-local's switch of its stream reading.
const envLocalStreams = "UDS_LOCAL_STREAMS"

// MarshalText gives a target's name: a result, as the run of one target
// writes it, names its target.
func (t target) MarshalText() ([]byte, error) { return []byte(t.name), nil }

// UnmarshalText takes a target's name.
func (t *target) UnmarshalText(name []byte) error {
	named, ok := targetNamed(string(name))
	if !ok {
		return fmt.Errorf("no target %q", name)
	}
	*t = named
	return nil
}

func targetNamed(name string) (target, bool) {
	for _, t := range allTargets {
		if t.name == name {
			return t, true
		}
	}
	return target{}, false
}

func targetNames() []string {
	names := make([]string, len(allTargets))
	for i, t := range allTargets {
		names[i] = t.name
	}
	return names
}

// benchApp is the app of the load.
const benchApp = "5ca1ab1e-0000-4000-8000-0000000010ad"

// result is what one target's load gave, as the run of that target
// writes it for the report (JSON).
type result struct {
	Target target `json:"target"`
	// Elapsed is the measured load's time, from its start until the
	// last client had its last answer.
	Elapsed time.Duration `json:"elapsed"`
	// Gets and Posts are the measured requests' outcomes.
	Gets  []localbench.Outcome `json:"gets"`
	Posts []localbench.Outcome `json:"posts"`
	// Lines are the server's request lines of the measured load's time
	// (none from the first release).
	Lines []requestLine `json:"lines"`
	// LoadAfter is the machine's load average once the load ended.
	LoadAfter string `json:"loadAfter"`
	// Problems are the server's lines at WARN and above once it served:
	// not what it says at start of its settings (streamed-unread's
	// server, that it counts no streamed usage).
	Problems []string `json:"problems"`
	// Feed is what the feed probe saw during the measured load (feed.go),
	// for the targets whose server keeps the changes feed.
	Feed *feedResult `json:"feed,omitempty"`
}

// requestLine is what the benchmark reads of a current server's request
// line.
type requestLine struct {
	Time       time.Time `json:"time"`
	Route      string    `json:"route"`
	Namespace  string    `json:"namespace"`
	Status     int       `json:"status"`
	Calls      int       `json:"dynamodbCalls"`
	Retries    int       `json:"dynamodbRetries"`
	WriteUnits float64   `json:"writeUnits"`
}

// requestLines gathers a server's request lines.
type requestLines struct {
	mu    sync.Mutex
	lines []requestLine
}

func (l *requestLines) add(line []byte) {
	var r requestLine
	if json.Unmarshal(line, &r) != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r)
}

// within returns the lines written from start to end.
func (l *requestLines) within(start, end time.Time) []requestLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var in []requestLine
	for _, r := range l.lines {
		if !r.Time.Before(start) && !r.Time.After(end) {
			in = append(in, r)
		}
	}
	return in
}

// measure starts target t's server (bin) over the engine, on tables named
// with prefix, prepares the app and its owners, runs the load, and stops
// the server.
func measure(ctx context.Context, o options, t target, bin, endpoint, prefix string) (*result, error) {
	env := append(localbench.Env(endpoint), config.EnvRatePerCaller+"=", config.EnvRatePerApp+"=")
	for _, table := range schema.Tables {
		env = append(env, table.EnvVar+"="+prefix+table.DefaultName)
	}
	// The first release listens where UDS_LISTEN_ADDR says and says so
	// only in text: it is given a free port.
	addr := ""
	if t == first {
		var err error
		if addr, err = localbench.FreeAddr(); err != nil {
			return nil, err
		}
		env = append(env, config.EnvListenAddr+"="+addr)
	}
	if t.streamsUnread {
		env = append(env, envLocalStreams+"=off")
	}
	var lines requestLines
	var batches localbench.Batches
	log := &localbench.Log{OnRequest: lines.add, OnLine: batches.Add}
	fmt.Fprintf(os.Stderr, "uds-loadbench: %s: starting %s over %s (tables %s*)\n", t.name, bin, endpoint, prefix)
	srv, err := localbench.Start(bin, env, addr, log)
	if err != nil {
		return nil, err
	}
	startup := len(log.Problems())
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.Stop()
		}
	}()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * o.clients}}
	owners := newOwners(o.clients)
	if err := prepare(ctx, client, srv.URL, t, owners); err != nil {
		return nil, err
	}
	if o.warmup > 0 {
		fmt.Fprintf(os.Stderr, "uds-loadbench: %s: warming up for %v\n", t.name, o.warmup)
		load(ctx, client, srv.URL, owners, o.warmup)
	}
	fmt.Fprintf(os.Stderr, "uds-loadbench: %s: %d clients for %v\n", t.name, o.clients, o.duration)
	// The feed probe runs beside the measured load, and its follower
	// goes on after it until the probe's last write appeared.
	var feed *feedResult
	var feedErr error
	feedDone := make(chan struct{})
	go func() {
		defer close(feedDone)
		if t.keepsFeed() {
			feed, feedErr = probeFeed(ctx, client, srv.URL, o.duration, rowInstants(endpoint, prefix+schema.Changes.DefaultName))
		}
	}()
	start := time.Now()
	gets, posts := load(ctx, client, srv.URL, owners, o.duration)
	end := time.Now()
	<-feedDone
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if feedErr != nil {
		return nil, feedErr
	}
	r := &result{Target: t, Elapsed: end.Sub(start), Gets: gets, Posts: posts, LoadAfter: localbench.LoadAverage(), Feed: feed}
	// Stopped, the server has written every request line.
	stopped = true
	if err := srv.Stop(); err != nil {
		return nil, err
	}
	r.Lines, r.Problems = lines.within(start, end), log.Problems()[startup:]
	if r.Feed != nil {
		r.Feed.Batches = batches.Within(start, end)
	}
	return r, nil
}

// prepare sets the app's default quota high, so that every write runs the
// quota path and none is refused, the app's quota mode unless strict, and
// writes each owner's seed items.
func prepare(ctx context.Context, client *http.Client, url string, t target, owners []*owner) error {
	admin := url + "/admin/apps/" + benchApp
	if err := localbench.Send(ctx, client, http.MethodPut, admin+"/quota", "", `{"limitBytes": 1000000000000, "limitItems": 1000000000}`, http.StatusOK); err != nil {
		return err
	}
	if t.mode != "" && t.mode != uds.QuotaStrict {
		body := `{"mode": "` + string(t.mode) + `"}`
		if err := localbench.Send(ctx, client, http.MethodPut, admin+"/quota-mode", "", body, http.StatusOK); err != nil {
			return fmt.Errorf("setting the quota mode %s: %w (does this server have the quota-mode route?)", t.mode, err)
		}
	}
	errs := make([]error, len(owners))
	var wg sync.WaitGroup
	for i, ow := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range seedItems {
				if errs[i] = localbench.Send(ctx, client, http.MethodPost, url+ow.seedPath(k), ow.subject, itemBody, http.StatusCreated); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// buildRelease builds commit's cmd/uds-local, from `git archive` of the
// commit (the module as it was, go.mod and all) in a temporary directory,
// and returns the binary and a function that removes the directory.
func buildRelease(ctx context.Context, commit string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "uds-loadbench-")
	if err != nil {
		return "", nil, err
	}
	remove := func() { _ = os.RemoveAll(dir) }
	src, bin := filepath.Join(dir, "src"), filepath.Join(dir, "uds-local")
	fmt.Fprintf(os.Stderr, "uds-loadbench: building %s's cmd/uds-local in %s\n", commit, dir)
	steps := []*exec.Cmd{
		exec.CommandContext(ctx, "git", "archive", "--format=tar", "--prefix=src/", "-o", filepath.Join(dir, "src.tar"), commit),
		exec.CommandContext(ctx, "tar", "-xf", filepath.Join(dir, "src.tar"), "-C", dir),
		exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/uds-local"),
	}
	// The release is its own module: a go.work around the temporary
	// directory must not pull it into another.
	steps[2].Dir, steps[2].Env = src, append(os.Environ(), "GOWORK=off")
	for _, step := range steps {
		if out, err := step.CombinedOutput(); err != nil {
			remove()
			return "", nil, fmt.Errorf("%s: %w\n%s", step, err, out)
		}
	}
	return bin, remove, nil
}
