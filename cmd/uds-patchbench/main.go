// Command uds-patchbench measures concurrent patches of one item: how
// many PATCH requests a second one item takes when every client patches
// a member of its own, what they cost in retries, and that none is lost.
// docs/performance.md reports its figures; `make bench-patch` runs it.
//
// It starts one uds-local over the engine at UDS_DYNAMODB_ENDPOINT,
// through a proxy that counts the item's reads and writes at the wire, as
// the other benchmarks do (limits and namespace policies cached as
// deployed, the caller taken from X-Uds-Subject), with no rate limit and
// the app in its default quota mode, strict. It creates one item, {}, and
// then -clients clients at once each send -patches JSON Merge Patches in
// turn, client i setting its own member to the patch's number
// ({"m17": 0}, then {"m17": 1}, ...), without If-Match: the server
// applies each to the item as it is and commits on exactly that revision,
// reading again and trying again when another patch got in first. A patch
// answered 503 (every attempt lost its race) is sent again after its
// Retry-After delay, as a client does.
//
// It prints, as Markdown: the patches answered, the 503s, the patches a
// second the item took (those answered 200 over the time from the first
// sent to the last answered) and their latencies as the clients saw them
// (p50, p99, most), of each request and of each patch from its first
// send to its 200, resends and waits included; the item's writes at the wire, those that committed
// and those refused because another patch had committed first (a lost
// race: each is one more attempt of a patch), and its reads; and the
// DynamoDB calls of each PATCH (the server's request lines). Then it GETs
// the item: every client's member must be there at its last value and
// nothing else, and the version must count every patch answered 200
// once. A member missing or stale, a version off, a patch request
// answered other than 200 or 503, or a patch still answered 503 after
// maxResends fails it after the report.
//
// Usage:
//
//	scripts/with-dynamodb.sh -- go run ./cmd/uds-patchbench -uds-local bin/uds-local [-clients 64] [-patches 50]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/udsproject/uds/internal/localbench"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
)

// options are the command's flags.
type options struct {
	udsLocal         string
	clients, patches int
}

func main() {
	var o options
	flag.StringVar(&o.udsLocal, "uds-local", "bin/uds-local", "the server binary (go build -o bin/uds-local ./cmd/uds-local)")
	flag.IntVar(&o.clients, "clients", 64, "clients patching the item at once, each its own member")
	flag.IntVar(&o.patches, "patches", 50, "patches each client sends, one after another")
	flag.Parse()
	localbench.Main("uds-patchbench", "bench-patch", o.validate(), func(ctx context.Context, endpoint string, w io.Writer) error {
		return run(ctx, o, endpoint, w)
	})
}

func (o options) validate() error {
	switch {
	case o.clients < 1:
		return fmt.Errorf("-clients: want at least 1, got %d", o.clients)
	case o.patches < 1:
		return fmt.Errorf("-patches: want at least 1, got %d", o.patches)
	}
	return nil
}

// benchApp is the app of the patched item; its namespace has no policy
// (shared, no schema, no history).
const (
	benchApp       = "5ca1ab1e-0000-4000-8000-00000000fa7c"
	benchNamespace = "patchbench"
	benchSubject   = "patchbench"
)

// maxResends bounds how often one patch answered 503 is sent again: past
// it the run fails rather than wait on a server that never lets it in.
// Runs at the defaults have seen a patch take 20 resends (about 70 s).
const maxResends = 60

// result is what a run measured.
type result struct {
	o          options
	loadBefore string
	// outcomes are every patch request's, resends included.
	outcomes []localbench.Outcome
	// completions are each patch's time from its first send to its last
	// answer, resends and their waits included, sorted, in ms.
	completions []float64
	elapsed     time.Duration
	wire        itemCounts
	// calls are the DynamoDB calls of each PATCH, from the request lines.
	calls []float64
	// check is what the GET after the run found wrong, if anything.
	check []string
	// version is the item's version after the run.
	version int64
}

func run(ctx context.Context, o options, endpoint string, w io.Writer) error {
	r, err := measure(ctx, o, endpoint)
	if err != nil {
		return err
	}
	report(w, r)
	problems := r.check
	if n := len(r.others()); n > 0 {
		problems = append(problems, fmt.Sprintf("%d patch requests answered other than 200 or 503", n))
	}
	if n := o.clients*o.patches - r.count(http.StatusOK); n > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d patches never answered 200", n, o.clients*o.patches))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// measure runs the benchmark: the server, the item, the patches, and the
// GET that checks them.
func measure(ctx context.Context, o options, endpoint string) (*result, error) {
	r := &result{o: o, loadBefore: localbench.LoadAverage()}
	id := "item-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	counter := newItemCounter(benchApp + "|" + benchNamespace + "|" + id)
	proxy, err := localbench.StartProxy(endpoint, counter.count)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	var mu sync.Mutex
	log := &localbench.Log{OnRequest: func(line []byte) {
		var l struct {
			Route string `json:"route"`
			Calls int    `json:"dynamodbCalls"`
		}
		if json.Unmarshal(line, &l) == nil && strings.HasPrefix(l.Route, http.MethodPatch+" ") {
			mu.Lock()
			r.calls = append(r.calls, float64(l.Calls))
			mu.Unlock()
		}
	}}
	env := append(localbench.Env(proxy.URL), config.EnvRatePerCaller+"=", config.EnvRatePerApp+"=")
	fmt.Fprintf(os.Stderr, "uds-patchbench: starting %s over %s\n", o.udsLocal, endpoint)
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
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.clients + 1}}
	item := srv.URL + "/data/" + benchApp + "/" + benchNamespace + "/" + id
	if err := localbench.Send(ctx, client, http.MethodPost, item, benchSubject, `{"data": {}}`, http.StatusCreated); err != nil {
		return nil, err
	}

	fmt.Fprintf(os.Stderr, "uds-patchbench: %d clients × %d patches of one item\n", o.clients, o.patches)
	before := counter.snapshot()
	start := time.Now()
	outcomes, completions := make([][]localbench.Outcome, o.clients), make([][]float64, o.clients)
	var wg sync.WaitGroup
	for i := range o.clients {
		wg.Go(func() { outcomes[i], completions[i] = patchMember(ctx, client, item, i, o.patches) })
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	r.wire = counter.snapshot().minus(before)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r.outcomes = slices.Concat(outcomes...)
	r.completions = slices.Sorted(slices.Values(slices.Concat(completions...)))

	r.version, r.check, err = check(ctx, client, item, o, r.count(http.StatusOK))
	if err != nil {
		return nil, err
	}
	// Stopped, the server has written every request line.
	stopped = true
	if err := srv.Stop(); err != nil {
		return nil, err
	}
	slices.Sort(r.calls)
	return r, nil
}

// member is client i's member of the item.
func member(i int) string { return "m" + strconv.Itoa(i) }

// patchMember sends client i's patches one after another, each answered
// 503 again after its Retry-After delay, and returns every answer and
// each patch's time to its last, in ms.
func patchMember(ctx context.Context, client *http.Client, item string, i, patches int) ([]localbench.Outcome, []float64) {
	var outcomes []localbench.Outcome
	completions := make([]float64, 0, patches)
	for n := range patches {
		body := `{"` + member(i) + `": ` + strconv.Itoa(n) + `}`
		start := time.Now()
		for resends := 0; ; resends++ {
			o, retryAfter := patch(ctx, client, item, body)
			outcomes = append(outcomes, o)
			if o.Status != http.StatusServiceUnavailable || resends == maxResends || ctx.Err() != nil {
				break
			}
			select {
			case <-time.After(retryAfter):
			case <-ctx.Done():
			}
		}
		completions = append(completions, float64(time.Since(start))/float64(time.Millisecond))
	}
	return outcomes, completions
}

// patch sends one merge patch, and returns its outcome and the answer's
// Retry-After delay (1 s when it has none).
func patch(ctx context.Context, client *http.Client, item, body string) (localbench.Outcome, time.Duration) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, item, strings.NewReader(body))
	if err != nil {
		return localbench.Outcome{Problem: err.Error()}, 0
	}
	req.Header.Set("Content-Type", httpapi.MergePatchType)
	req.Header.Set(httpapi.SubjectHeader, benchSubject)
	o := localbench.DoRequest(client, req)
	s, err := strconv.Atoi(o.Header.Get("Retry-After"))
	if err != nil || s < 1 {
		s = 1
	}
	retryAfter := time.Duration(s) * time.Second
	return o, retryAfter
}

// check GETs the item after the run and says what is wrong with it: a
// member missing or not at its client's last patch, a member no client
// set, a version that does not count each of the patches answered 200
// once.
func check(ctx context.Context, client *http.Client, item string, o options, answered int) (version int64, problems []string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, item, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set(httpapi.SubjectHeader, benchSubject)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var got struct {
		Data    map[string]json.RawMessage `json:"data"`
		Version int64                      `json:"version"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("GET %s after the patches: %s", item, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return 0, nil, fmt.Errorf("GET %s after the patches: %w", item, err)
	}
	return got.Version, verify(got.Data, got.Version, o, answered), nil
}

// verify is check's judgement of the item's data and version.
func verify(data map[string]json.RawMessage, version int64, o options, answered int) []string {
	var missing, stale []string
	last := strconv.Itoa(o.patches - 1)
	for i := range o.clients {
		switch v, ok := data[member(i)]; {
		case !ok:
			missing = append(missing, member(i))
		case string(v) != last:
			stale = append(stale, member(i)+"="+string(v))
		}
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d members missing: %s", len(missing), o.clients, strings.Join(missing, ", ")))
	}
	if len(stale) > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d members not at their last value %s: %s", len(stale), o.clients, last, strings.Join(stale, ", ")))
	}
	if extra := len(data) - o.clients + len(missing); extra > 0 {
		problems = append(problems, fmt.Sprintf("%d members no client set", extra))
	}
	if want := int64(1 + answered); version != want {
		problems = append(problems, fmt.Sprintf("version %d, want %d: 1 for the creation and 1 for each of the %d patches answered 200", version, want, answered))
	}
	return problems
}
