package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/changes"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/ratelimit"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
	"github.com/udsproject/uds/pkg/streampoll"
	"github.com/udsproject/uds/pkg/uds"
)

// The changes feed's workload: writers create, update, delete, expire and
// batch key-value and list items of a shared and a private namespace
// concurrently, while readers follow the feed with small random limits,
// new readers start from the beginning and from cursors taken along the
// way, and the API's clock moves ahead now and then. The changes function
// reads the tables' streams through a poller that delivers batches late,
// twice and split; its DynamoDB client loses answers after commit, is
// throttled, answers 500 and resets; and it is killed midway through a
// batch now and then. The API's own client meets faults too, and some
// requests are killed. Then about half the items are removed (the last
// change of many, which each replica must see on its own), and every
// replica, and every cursor taken, read up to date, must
// hold exactly the items of its key space as GET answers them, and no
// replica may ever have seen an item at an older state after a newer one.
// `make test` runs it briefly; `make soak` runs it longer with these
// flags.
var (
	feedSeed     = flag.Uint64("feed-seed", 0, "the seed of TestChangesWorkload (0: one from the time, printed)")
	feedDuration = flag.Duration("feed-duration", 6*time.Second, "how long TestChangesWorkload's writers write, per quota mode")
	feedModes    = flag.String("feed-modes", "strict,streamed", "the quota modes TestChangesWorkload runs in")
)

const (
	feedShared  = "feed" // a shared namespace: one key space, every replica holds all of it
	feedPrivate = "mine" // a private namespace: a key space per caller
	feedWriters = 4
	feedUsers   = 3
	feedKVKeys  = 8 // key-value items k0.. per key space
	feedLists   = 2 // lists l0.. per key space
	feedSorts   = 5 // sort keys s0.. per list
	// feedMaxExpiry is the furthest ahead of the API's clock an item
	// expires; the end moves the clock past it.
	feedMaxExpiry = 8 * time.Second
	// feedMaxReaders bounds the readers following each mode's feeds
	// while the writers write; feedMaxCheckpoints the cursors kept per
	// feed, each of which a reader follows to the end.
	feedMaxReaders = 9
	// feedMinWrites is how many writes answered 2xx the writers make at
	// least, in up to four times the run's duration.
	feedMinWrites      = 80
	feedMaxCheckpoints = 6
)

// changesLogFaults are the changes function's own DynamoDB faults, more
// of them than the accounting function's (it makes few calls): answers
// lost after the rows were written, throttling, 500s and resets, which
// the SDK and LogChanges retry, and writes that land just before a read
// could pass their instant (under ChangesSettle/2), or after (longer than
// the settle time, while the readers read): LogChanges writes the latter
// again under a new instant.
var changesLogFaults = []faults.Rule{
	{Kind: faults.LostAfterCommit, Ops: []string{"BatchWriteItem"}, Rate: 0.08},
	{Kind: faults.Throttle, Rate: 0.08},
	{Kind: faults.ServerError, Rate: 0.04},
	{Kind: faults.Reset, Rate: 0.04},
	{Kind: faults.Delay, Ops: []string{"BatchWriteItem"}, Rate: 0.04, Delay: 800 * time.Millisecond},
	{Kind: faults.Delay, Ops: []string{"BatchWriteItem"}, Rate: 0.06, Delay: 2500 * time.Millisecond},
}

// changesAPIFaults are the API's: writes may land without their answer,
// and reads of the feed fail now and then (the reader asks again).
var changesAPIFaults = []faults.Rule{
	{Kind: faults.LostAfterCommit, Ops: writeOps, Rate: 0.02},
	{Kind: faults.Throttle, Rate: 0.02},
	{Kind: faults.ServerError, Rate: 0.01},
	{Kind: faults.Reset, Rate: 0.01},
}

// TestChangesWorkload checks the changes feed under concurrent writes of
// every kind and the stream's and DynamoDB's faults, in both quota modes.
func TestChangesWorkload(t *testing.T) {
	t.Parallel()
	seed := *feedSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()) % 1_000_000
	}
	t.Logf("seed %d (-feed-seed=%d repeats its choices), writers write %s per mode", seed, seed, *feedDuration)
	for i, m := range strings.Split(*feedModes, ",") {
		mode, err := uds.ParseQuotaMode(m)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%s/seed-%d", mode, seed+uint64(i)), func(t *testing.T) {
			t.Parallel()
			runChangesWorkload(t, mode, seed+uint64(i))
		})
	}
}

// feedWorkload is one mode's run: the API, the changes function's poller,
// the readers and what they saw.
type feedWorkload struct {
	t         *testing.T
	srv       *httptest.Server
	clock     *storetest.Clock
	apiFaults *faults.Transport
	logFaults *faults.Transport
	poller    *streampoll.Poller
	// killing says the changes function is killed midway through one
	// batch in ten; the end turns it off.
	killing atomic.Bool

	mu          sync.Mutex
	rng         *rand.Rand // the pump's and the spawner's draws, under mu
	readers     []*feedReader
	checkpoints map[string][]feedCheckpoint // by feedName
	// trace keeps, by feed and key, the writes sent and their answers,
	// shown for a key a replica gets wrong.
	trace map[string][]string
	plain *dynamodb.Client
	table string // the changes table
	// counts of what happened, for the log line.
	writes                                 map[string]int // "op status"
	batches, duplicates, records, kills    int
	pages, retries, tombstones, recreated  int
	fromScratch, fromCheckpoint, expiring  int
	advanced                               time.Duration
	logInjected, apiInjected               map[faults.Kind]int
	logCalls, apiCalls                     int
	finalPages, finalReaders, maxFinalPage int
	explained                              map[string]bool
	applied                                int // writes answered 2xx
	readTime, writeTime                    time.Duration
	reads, writesSent                      int
}

// feedCheckpoint is a cursor a reader took along the way and what its
// replica held then: a client resumes with both.
type feedCheckpoint struct {
	cursor             string
	items              map[string]map[string]any
	namespace, subject string
	reader             string
}

// feedReader is a client of one feed, holding its replica.
type feedReader struct {
	name      string
	namespace string
	subject   string
	items     map[string]map[string]any
	cursor    string
	pages     int
	rng       *rand.Rand
	// seen is, by key, what the reader's pages showed of it, for
	// messages.
	seen map[string][]string
}

// feedName names a feed: the namespace, and in the private one the key
// space.
func feedName(namespace, subject string) string {
	if namespace == feedPrivate {
		return namespace + "/" + subject
	}
	return namespace
}

func runChangesWorkload(t *testing.T, mode uds.QuotaMode, seed uint64) {
	ctx := context.Background()
	tables := storetest.NewStreamedTables(t)
	client, apiFT := storetest.FaultyClient(t, seed)
	clock := &storetest.Clock{}
	objects := blob.Objects{Bucket: blobtest.New(t)}
	st := store.New(client, tables, store.WithClock(clock.Now), store.WithPolicySettle(testSettle), store.WithObjects(objects))
	api := httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject:         httpapi.HeaderSubject,
		CursorSecret:    []byte("feed workload"),
		DeleteAllBudget: 3 * time.Second,
		RequestBudget:   4 * time.Second,
		Logger:          apitest.Logger(t),
		Now:             clock.Now,
		Limiter:         ratelimit.New(st, clock.Now),
		Bucket:          objects,
	})
	srv := httptest.NewServer(killable(api))
	t.Cleanup(srv.Close)
	w := &feedWorkload{t: t, srv: srv, clock: clock, apiFaults: apiFT, rng: rand.New(rand.NewPCG(seed, 99)),
		checkpoints: map[string][]feedCheckpoint{}, writes: map[string]int{}, trace: map[string][]string{},
		plain: storetest.Client(t), table: tables.Changes}
	w.killing.Store(true)

	// Setup, fault free: the mode, the private namespace.
	setup := &env{t: t, srv: srv, tables: tables, client: storetest.Client(t), clock: clock, st: st}
	if mode == uds.QuotaStreamed {
		setup.do("PUT", adminApps+"/quota-mode", `{"mode":"streamed"}`).expect(t, 200)
	}
	setup.setPolicy(t, feedShared, `{"access":"shared"}`)
	setup.setPolicy(t, feedPrivate, `{"access":"private"}`)
	var accounting *streamPump
	if mode == uds.QuotaStreamed {
		// The accounting function, the streams' other reader, as the
		// accounting workload runs it.
		accounting = startStreamPump(t, tables, seed)
	}
	w.startChangesPump(t, tables, seed)

	// The feeds' first readers: two of the shared one, one per caller of
	// the private one.
	for u := range feedUsers {
		if u < 2 {
			w.addReader(feedShared, "u"+strconv.Itoa(u), nil)
		}
		w.addReader(feedPrivate, "u"+strconv.Itoa(u), nil)
	}

	apiFT.Set(changesAPIFaults...)
	w.logFaults.Set(changesLogFaults...)
	stop := make(chan struct{})
	var writers, others, readers sync.WaitGroup
	for i := range feedWriters {
		writers.Add(1)
		go func() {
			defer writers.Done()
			w.write(i, "u"+strconv.Itoa(i%feedUsers), rand.New(rand.NewPCG(seed, uint64(i))), stop)
		}()
	}
	readerStop := make(chan struct{})
	startReader := func(r *feedReader) {
		readers.Add(1)
		go func() {
			defer readers.Done()
			w.follow(r, readerStop)
		}()
	}
	w.mu.Lock()
	for _, r := range w.readers {
		startReader(r)
	}
	w.mu.Unlock()
	others.Add(2)
	go func() {
		defer others.Done()
		w.moveClock(stop)
	}()
	go func() {
		defer others.Done()
		// Now and then a new reader: from the beginning, or from a
		// cursor taken along the way with its replica.
		for {
			select {
			case <-stop:
				return
			case <-time.After(400 * time.Millisecond):
			}
			if r := w.spawn(); r != nil {
				startReader(r)
			}
		}
	}()
	// The writers write for the run's duration, and longer on a machine
	// so loaded that they had written little by then.
	for began := time.Now(); time.Since(began) < 4**feedDuration; time.Sleep(100 * time.Millisecond) {
		w.mu.Lock()
		applied := w.applied
		w.mu.Unlock()
		if time.Since(began) >= *feedDuration && applied >= feedMinWrites {
			break
		}
	}
	close(stop)
	writers.Wait()
	others.Wait()
	// Removals are the last change of many items, while the readers
	// still follow: each must reach the replicas on its own.
	w.remove(rand.New(rand.NewPCG(seed, 77)))
	close(readerStop)
	readers.Wait()

	// The end: quiet and fault free. A write left without an answer
	// (killed) may still land a moment later.
	time.Sleep(300 * time.Millisecond)
	w.apiInjected, w.apiCalls = apiFT.Injected()
	w.logInjected, w.logCalls = w.logFaults.Injected()
	apiFT.Set()
	w.logFaults.Set()
	w.killing.Store(false)
	if accounting != nil {
		accounting.settle(t)
	}
	drainCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.poller.Drain(drainCtx); err != nil {
		t.Fatalf("draining the streams: %v", err)
	}
	// Past the feed's horizon and every expiry.
	w.clock.Advance(feedMaxExpiry + 3*time.Second)
	w.advanced += feedMaxExpiry + 3*time.Second

	// Every reader, every cursor taken along the way, and one new reader
	// per feed, read up to date, must hold what the namespace holds.
	truth := w.truth()
	final := slices.Clone(w.readers)
	for name, cps := range w.checkpoints {
		for i, cp := range cps {
			final = append(final, &feedReader{name: fmt.Sprintf("checkpoint %d of %s (taken by %s)", i, name, cp.reader),
				namespace: cp.namespace, subject: cp.subject, items: cp.items, cursor: cp.cursor, rng: rand.New(rand.NewPCG(seed, uint64(1000+len(final))))})
		}
	}
	for u := range feedUsers {
		subject := "u" + strconv.Itoa(u)
		final = append(final, &feedReader{name: "new reader of " + feedName(feedPrivate, subject), namespace: feedPrivate, subject: subject,
			items: map[string]map[string]any{}, rng: rand.New(rand.NewPCG(seed, uint64(2000+u)))})
	}
	final = append(final, &feedReader{name: "new reader of " + feedShared, namespace: feedShared, subject: "u2",
		items: map[string]map[string]any{}, rng: rand.New(rand.NewPCG(seed, 3000))})
	sem := make(chan struct{}, 6)
	var synced sync.WaitGroup
	for _, r := range final {
		synced.Add(1)
		sem <- struct{}{}
		go func() {
			defer synced.Done()
			defer func() { <-sem }()
			before := r.pages
			if !w.syncReader(r) {
				return
			}
			w.mu.Lock()
			w.finalReaders++
			w.finalPages += r.pages - before
			w.maxFinalPage = max(w.maxFinalPage, r.pages-before)
			w.mu.Unlock()
			w.compare(r, truth[feedName(r.namespace, r.subject)])
		}()
	}
	synced.Wait()
	w.report(truth)
}

// startChangesPump runs the changes function's handler on the data and
// list tables' streams, on the API's clock, under the faults above.
func (w *feedWorkload) startChangesPump(t *testing.T, tables store.Tables, seed uint64) {
	ctx := context.Background()
	client, ft := storetest.FaultyClient(t, seed+1<<21)
	w.logFaults = ft
	handle := changes.Handler(store.New(client, tables, store.WithClock(w.clock.Now)), slog.New(slog.DiscardHandler))
	// killable is the handler, killed midway through one batch in ten,
	// as a function that timed out or crashed would be: the poller hands
	// the batch over again.
	killable := func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		w.mu.Lock()
		kill := w.killing.Load() && len(ev.Records) > 0 && w.rng.IntN(10) == 0
		after := time.Duration(w.rng.IntN(3000)) * time.Microsecond
		if kill {
			w.kills++
		}
		w.mu.Unlock()
		if kill {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, after)
			defer cancel()
		}
		return handle(ctx, ev)
	}
	found, err := streampoll.Streams(ctx, storetest.Client(t), tables.Data, tables.List)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := streampoll.NewClient(ctx, os.Getenv(config.EnvDynamoDBEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	w.poller, err = streampoll.New(streams, found, killable,
		streampoll.WithInterval(50*time.Millisecond),
		streampoll.WithLogger(apitest.Logger(t)),
		streampoll.WithFaults(streampoll.Faults{Seed: seed, Duplicate: 0.2, Late: 0.2, MaxDelay: 300 * time.Millisecond, Split: true}),
		streampoll.WithDeliveries(func(d streampoll.Delivery) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.batches++
			w.records += d.Records
			if d.Duplicate {
				w.duplicates++
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.poller.Run(runCtx)
	}()
	t.Cleanup(func() { stop(); <-done })
}

// request sends one request as subject and returns its status and body;
// a positive kill abandons the server's work on it after that long, and
// the answer is then 0.
func (w *feedWorkload) request(kill time.Duration, method, path, subject, body string) (int, []byte) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, w.srv.URL+path, rd)
	if err != nil {
		panic(err)
	}
	req.Header.Set(httpapi.SubjectHeader, subject)
	switch {
	case method == "PATCH":
		req.Header.Set("Content-Type", httpapi.MergePatchType)
	case body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	if kill > 0 {
		req.Header.Set(killAfter, strconv.FormatInt(kill.Microseconds(), 10))
	}
	start := time.Now()
	defer func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if method == "GET" {
			w.readTime += time.Since(start)
			w.reads++
		} else {
			w.writeTime += time.Since(start)
			w.writesSent++
		}
	}()
	res, err := testClient.Do(req)
	if err != nil {
		w.t.Errorf("%s %s: %v", method, path, err)
		return -1, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if kill > 0 {
		return 0, nil
	}
	return res.StatusCode, b
}

// feedKeys are a key space's items: key-value ones and list items.
func feedKeys() []string {
	var keys []string
	for k := range feedKVKeys {
		keys = append(keys, "k"+strconv.Itoa(k))
	}
	for l := range feedLists {
		for s := range feedSorts {
			keys = append(keys, "l"+strconv.Itoa(l)+"/s"+strconv.Itoa(s))
		}
	}
	return keys
}

// write sends random writes as subject until stop.
func (w *feedWorkload) write(id int, subject string, rng *rand.Rand, stop <-chan struct{}) {
	keys := feedKeys()
	n := 0
	value := func() string {
		n++
		body := fmt.Sprintf(`{"data":{"w":%d,"n":%d,"pad":%q}`, id, n, strings.Repeat("p", rng.IntN(200)))
		if rng.IntN(3) == 0 {
			// Expires within the run, or just after it.
			at := w.clock.Now().Add(time.Duration(200+rng.IntN(int(feedMaxExpiry/time.Millisecond)-200)) * time.Millisecond)
			body += `,"expiresAt":"` + at.UTC().Format("2006-01-02T15:04:05.000Z") + `"`
			w.mu.Lock()
			w.expiring++
			w.mu.Unlock()
		}
		return body + "}"
	}
	// patch is a merge patch of a value's members, which keeps its expiry.
	patch := func() string {
		n++
		return fmt.Sprintf(`{"w":%d,"n":%d}`, id, n)
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		ns := feedShared
		if rng.IntN(2) == 0 {
			ns = feedPrivate
		}
		var kill time.Duration
		if rng.IntN(20) == 0 {
			kill = time.Duration(1+rng.IntN(15_000)) * time.Microsecond
		}
		key := keys[rng.IntN(len(keys))]
		path := base + "/" + ns + "/" + key
		var op string
		var st int
		var answer []byte
		sent := w.clock.Now()
		traced := []string{key}
		repeats := false // a batch names an item twice
		switch r := rng.IntN(100); {
		case r < 30:
			op = "POST"
			st, answer = w.request(kill, "POST", path, subject, value())
		case r < 48:
			op = "PUT"
			st, answer = w.request(kill, "PUT", path, subject, value())
		case r < 58:
			op = "PATCH"
			st, answer = w.request(kill, "PATCH", path, subject, patch())
		case r < 75:
			op = "DELETE"
			st, answer = w.request(kill, "DELETE", path, subject, "")
		case r < 96:
			atomic := rng.IntN(2) == 0
			op = "batch atomic=" + strconv.FormatBool(atomic)
			var ops []string
			traced = nil
			for range 2 + rng.IntN(3) {
				k := keys[rng.IntN(len(keys))]
				repeats = repeats || slices.Contains(traced, k)
				traced = append(traced, k)
				p := ns + "/" + k
				switch m := rng.IntN(4); m {
				case 0:
					ops = append(ops, `{"method":"POST","path":"`+p+`","body":`+value()+`}`)
				case 1:
					ops = append(ops, `{"method":"PUT","path":"`+p+`","body":`+value()+`}`)
				case 2:
					ops = append(ops, `{"method":"PATCH","path":"`+p+`","body":`+patch()+`}`)
				default:
					ops = append(ops, `{"method":"DELETE","path":"`+p+`"}`)
				}
			}
			st, answer = w.request(kill, "POST", base+"/batch", subject, `{"atomic":`+strconv.FormatBool(atomic)+`,"operations":[`+strings.Join(ops, ",")+`]}`)
		default:
			op = "DELETE list"
			list := "l" + strconv.Itoa(rng.IntN(feedLists))
			traced = nil
			for s := range feedSorts {
				traced = append(traced, list+"/s"+strconv.Itoa(s))
			}
			st, answer = w.request(kill, "DELETE", base+"/"+ns+"/"+list+"/list", subject, "")
		}
		line := fmt.Sprintf("%s..%s writer %d as %s: %s %d %s", sent.UTC().Format(time.TimeOnly+".000"), w.clock.Now().UTC().Format(time.TimeOnly+".000"),
			id, subject, op, st, uds.Truncate(string(answer), 600))
		if !writeAnswered(op, st, answer, repeats) {
			w.t.Errorf("an answer no write of the workload explains: %s", line)
		}
		w.mu.Lock()
		w.writes[op+" "+strconv.Itoa(st)]++
		if st >= 200 && st < 300 {
			w.applied++
		}
		for _, k := range traced {
			w.trace[feedName(ns, subject)+" "+k] = append(w.trace[feedName(ns, subject)+" "+k], line)
		}
		w.mu.Unlock()
	}
}

// writeAnswered reports whether a writer's request answered as such a
// write may: a killed request (0) or a fault (500, 503) any way, and
// otherwise as the item's state allows. A write's expiry, set within the
// run, may have passed on the API's clock by the time it arrives (400);
// an atomic batch that names an item twice is refused whole (400).
func writeAnswered(op string, status int, answer []byte, repeats bool) bool {
	switch status {
	case 0, 500, 503:
		return true
	case 400:
		return bytes.Contains(answer, []byte("expiresAt")) || op == "batch atomic=true" && repeats
	}
	allowed := map[string][]int{
		"POST": {201, 409}, "PUT": {200, 404}, "PATCH": {200, 404}, "DELETE": {204},
		"batch atomic=false": {200}, "batch atomic=true": {200, 404, 409}, "DELETE list": {204},
	}[op]
	return slices.Contains(allowed, status)
}

// remove deletes about half the items of every key space, one by one, in
// batches of both kinds and a list at once, so that a removal is the last
// change of many items.
func (w *feedWorkload) remove(rng *rand.Rand) {
	var batch []string
	flush := func(subject string) {
		if len(batch) == 0 {
			return
		}
		atomic := rng.IntN(2) == 0
		st, answer := w.request(0, "POST", base+"/batch", subject, `{"atomic":`+strconv.FormatBool(atomic)+`,"operations":[`+strings.Join(batch, ",")+`]}`)
		w.note("final batch atomic="+strconv.FormatBool(atomic), st, answer)
		batch = nil
	}
	for _, ks := range w.keySpaces() {
		ns, subject := ks[0], ks[1]
		if rng.IntN(2) == 0 {
			st, answer := w.request(0, "DELETE", base+"/"+ns+"/l1/list", subject, "")
			w.note("final DELETE list", st, answer)
		}
		for _, k := range feedKeys() {
			switch rng.IntN(4) {
			case 0:
				st, answer := w.request(0, "DELETE", base+"/"+ns+"/"+k, subject, "")
				w.note("final DELETE", st, answer)
			case 1:
				batch = append(batch, `{"method":"DELETE","path":"`+ns+"/"+k+`"}`)
			}
		}
		flush(subject)
	}
}

// keySpaces are the feeds' namespaces, each with a caller of its key
// space.
func (w *feedWorkload) keySpaces() [][2]string {
	out := [][2]string{{feedShared, "u0"}}
	for u := range feedUsers {
		out = append(out, [2]string{feedPrivate, "u" + strconv.Itoa(u)})
	}
	return out
}

// note counts a write's answer.
func (w *feedWorkload) note(op string, status int, answer []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes[op+" "+strconv.Itoa(status)]++
	if status != 200 && status != 204 && status != 503 && status != 500 {
		w.t.Errorf("%s answered %d %s", op, status, answer)
	}
}

// moveClock moves the API's clock ahead now and then until stop: mostly
// a little, sometimes past every expiry.
func (w *feedWorkload) moveClock(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(150 * time.Millisecond):
		}
		w.mu.Lock()
		var d time.Duration
		switch r := w.rng.IntN(100); {
		case r < 70:
			d = time.Duration(w.rng.IntN(500)) * time.Millisecond
		case r < 95:
			d = time.Duration(1000+w.rng.IntN(4000)) * time.Millisecond
		default:
			d = time.Duration(10+w.rng.IntN(60)) * time.Second
		}
		w.advanced += d
		w.mu.Unlock()
		w.clock.Advance(d)
	}
}

// addReader adds a reader of a feed, from the beginning or from a
// checkpoint.
func (w *feedWorkload) addReader(namespace, subject string, from *feedCheckpoint) *feedReader {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.readers)
	r := &feedReader{name: fmt.Sprintf("reader %d of %s as %s", n, feedName(namespace, subject), subject), namespace: namespace, subject: subject,
		items: map[string]map[string]any{}, rng: rand.New(rand.NewPCG(w.rng.Uint64(), uint64(n)))}
	if from != nil {
		r.name += " (from a checkpoint of " + from.reader + ")"
		r.cursor, r.items = from.cursor, maps.Clone(from.items)
		w.fromCheckpoint++
	} else {
		w.fromScratch++
	}
	w.readers = append(w.readers, r)
	return r
}

// spawn starts, now and then, a reader from the beginning or from a
// checkpoint; nil when it starts none.
func (w *feedWorkload) spawn() *feedReader {
	w.mu.Lock()
	names := slices.Sorted(maps.Keys(w.checkpoints))
	// Readers from the beginning leave room for some from checkpoints,
	// which come later.
	room := feedMaxReaders - len(w.readers)
	if room <= 0 || len(names) == 0 && room <= 3 || w.rng.IntN(2) == 0 {
		w.mu.Unlock()
		return nil
	}
	var from *feedCheckpoint
	namespace, subject := feedShared, "u"+strconv.Itoa(w.rng.IntN(feedUsers))
	if w.rng.IntN(2) == 0 {
		namespace = feedPrivate
	}
	if len(names) > 0 && (room <= 3 || w.rng.IntN(2) == 0) {
		name := names[w.rng.IntN(len(names))]
		cps := w.checkpoints[name]
		cp := cps[w.rng.IntN(len(cps))]
		from = &cp
		namespace, subject = cp.namespace, cp.subject
	}
	w.mu.Unlock()
	return w.addReader(namespace, subject, from)
}

// follow reads a feed until stop, with small random limits, pausing when
// up to date, and now and then keeps its cursor and replica as a
// checkpoint.
func (w *feedWorkload) follow(r *feedReader, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		upToDate, ok := w.readPage(r, r.smallLimit(), true)
		if !ok {
			return
		}
		if r.rng.IntN(8) == 0 {
			w.checkpoint(r)
		}
		if upToDate {
			time.Sleep(time.Duration(20+r.rng.IntN(80)) * time.Millisecond)
		}
	}
}

// smallLimit is a read's random limit: mostly a handful.
func (r *feedReader) smallLimit() string {
	switch x := r.rng.IntN(10); {
	case x < 7:
		return strconv.Itoa(1 + r.rng.IntN(5))
	case x < 9:
		return strconv.Itoa(6 + r.rng.IntN(20))
	}
	return "" // the default, 100
}

func (w *feedWorkload) checkpoint(r *feedReader) {
	name := feedName(r.namespace, r.subject)
	w.mu.Lock()
	defer w.mu.Unlock()
	cps := w.checkpoints[name]
	cp := feedCheckpoint{cursor: r.cursor, items: maps.Clone(r.items), namespace: r.namespace, subject: r.subject, reader: r.name}
	if len(cps) < feedMaxCheckpoints {
		w.checkpoints[name] = append(cps, cp)
		return
	}
	// Keep a spread: replace one at random, never the first.
	cps[1+w.rng.IntN(len(cps)-1)] = cp
}

// readPage reads one page of r's feed and applies it; it retries what
// the faults made fail (500s, 503s, killed requests) and fails the test
// on any other answer. live says the writers still write: requests are
// then killed now and then too.
func (w *feedWorkload) readPage(r *feedReader, limit string, live bool) (upToDate, ok bool) {
	path := base + "/" + r.namespace + "?changes=" + url.QueryEscape(r.cursor)
	if limit != "" {
		path += "&limit=" + limit
	}
	for attempt := 0; ; attempt++ {
		var kill time.Duration
		if live && r.rng.IntN(30) == 0 {
			kill = time.Duration(1+r.rng.IntN(10_000)) * time.Microsecond
		}
		st, body := w.request(kill, "GET", path, r.subject, "")
		if st == 200 {
			return w.apply(r, body, w.clock.Now())
		}
		if (st == 0 || st == 500 || st == 503) && attempt < 50 {
			w.mu.Lock()
			w.retries++
			w.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		w.t.Errorf("%s: GET %s answered %d %s", r.name, path, st, body)
		return false, false
	}
}

// apply applies a page to r's replica, as a client does, and checks that
// no item goes back to an older state: a live entry replaces an entry of
// the same incarnation (createdDate) only at a version at least as new,
// and an entry of another incarnation only when it was created later. A
// tombstone removes the entry, so whatever follows starts afresh.
func (w *feedWorkload) apply(r *feedReader, body []byte, read time.Time) (upToDate, ok bool) {
	var page struct {
		Changes  []map[string]any
		Cursor   string
		UpToDate bool
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&page); err != nil || page.Cursor == "" {
		w.t.Errorf("%s: a page of the feed is not one: %v %s", r.name, err, body)
		return false, false
	}
	r.pages++
	tombstones, recreated := 0, 0
	if r.seen == nil {
		r.seen = map[string][]string{}
	}
	for _, entry := range page.Changes {
		k := entryKey(entry)
		r.seen[k] = append(r.seen[k], fmt.Sprintf("page %d read by %s: version %d created %v deleted %v", r.pages, read.UTC().Format(time.TimeOnly+".000"), version(entry), entry["createdDate"], entry["deleted"]))
		if entry["deleted"] == true {
			tombstones++
			delete(r.items, k)
			continue
		}
		if old, ok := r.items[k]; ok {
			oc, nc := created(old), created(entry)
			switch {
			case nc.Before(oc) || nc.Equal(oc) && version(entry) < version(old):
				w.t.Errorf("%s: %s went back from version %d (created %s, updated %v) to version %d (created %s, updated %v) without a tombstone between",
					r.name, k, version(old), oc.Format(time.RFC3339Nano), old["updatedDate"], version(entry), nc.Format(time.RFC3339Nano), entry["updatedDate"])
				return false, false
			case nc.After(oc):
				// Deleted (or expired) and created again, the removal
				// not shown between: the feed shows items as they are.
				recreated++
			}
		}
		r.items[k] = entry
	}
	r.cursor = page.Cursor
	w.mu.Lock()
	w.pages++
	w.tombstones += tombstones
	w.recreated += recreated
	w.mu.Unlock()
	return page.UpToDate, true
}

// created is an entry's createdDate: its incarnation.
func created(entry map[string]any) time.Time {
	s, _ := entry["createdDate"].(string)
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// syncReader reads r's feed until it is up to date, with random limits,
// small and large, as the end's readers catch up with thousands of rows.
func (w *feedWorkload) syncReader(r *feedReader) bool {
	for range 100_000 {
		limit := r.smallLimit()
		if r.rng.IntN(2) == 0 {
			limit = strconv.Itoa(20 + r.rng.IntN(200))
		}
		upToDate, ok := w.readPage(r, limit, false)
		if !ok {
			return false
		}
		if upToDate {
			return true
		}
	}
	w.t.Errorf("%s: the feed never said it was up to date", r.name)
	return false
}

// truth is what every feed's key space holds now, by GET: each item's
// answer, by key.
func (w *feedWorkload) truth() map[string]map[string]map[string]any {
	out := map[string]map[string]map[string]any{}
	read := func(namespace, subject string) {
		items := map[string]map[string]any{}
		for _, k := range feedKeys() {
			st, body := w.request(0, "GET", base+"/"+namespace+"/"+k, subject, "")
			switch st {
			case 404:
				continue
			case 200:
			default:
				w.t.Fatalf("GET %s/%s as %s: %d %s", namespace, k, subject, st, body)
			}
			var entry map[string]any
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			if err := dec.Decode(&entry); err != nil {
				w.t.Fatal(err)
			}
			items[k] = entry
		}
		out[feedName(namespace, subject)] = items
	}
	for _, ks := range w.keySpaces() {
		read(ks[0], ks[1])
	}
	return out
}

// compare fails the test unless r's replica is exactly want, naming each
// key that differs and its versions.
func (w *feedWorkload) compare(r *feedReader, want map[string]map[string]any) {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(r.items)) {
		got := r.items[k]
		now, ok := want[k]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s: the replica holds version %d (created %v, expiresAt %v) of an item that is gone", k, version(got), got["createdDate"], got["expiresAt"]))
			continue
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(now)
		if !bytes.Equal(a, b) {
			diffs = append(diffs, fmt.Sprintf("%s: the replica holds version %d (created %v) %s, the item is version %d (created %v) %s", k, version(got), got["createdDate"], a, version(now), now["createdDate"], b))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if _, ok := r.items[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: the replica lacks version %d (created %v, updated %v)", k, version(want[k]), want[k]["createdDate"], want[k]["updatedDate"]))
		}
	}
	if len(diffs) > 0 {
		w.t.Errorf("%s, up to date after %d pages, differs from what the namespace holds:\n\t%s", r.name, r.pages, strings.Join(diffs, "\n\t"))
		w.explain(r, diffs)
	}
}

// explain logs, for each key a replica gets wrong, the writes sent that
// named it and the rows the feed holds of it.
func (w *feedWorkload) explain(r *feedReader, diffs []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.explained == nil {
		w.explained = map[string]bool{}
	}
	for _, d := range diffs {
		k := d[:strings.IndexByte(d, ':')]
		name := feedName(r.namespace, r.subject) + " " + k
		if w.explained[name] {
			continue
		}
		w.explained[name] = true
		var lines []string
		lines = append(lines, w.trace[name]...)
		lines = append(lines, r.seen[k]...)
		lines = append(lines, w.rows(r, k)...)
		w.t.Logf("%s, writes and rows:\n\t%s", name, strings.Join(lines, "\n\t"))
	}
}

// rows are the feed's rows of key in r's key space.
func (w *feedWorkload) rows(r *feedReader, key string) []string {
	id, sortKey, _ := strings.Cut(key, "/")
	owner := ""
	if r.namespace == feedPrivate {
		owner = r.subject
	}
	var out []string
	p := dynamodb.NewScanPaginator(w.plain, &dynamodb.ScanInput{TableName: aws.String(w.table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			return append(out, err.Error())
		}
		for _, av := range page.Items {
			dk, _ := av[schema.AttrDataKey].(*types.AttributeValueMemberS)
			sk, _ := av[schema.AttrSortKey].(*types.AttributeValueMemberS)
			parts := strings.Split(dk.Value, uds.KeyDelimiter)
			if len(parts) < 3 || parts[1] != r.namespace || parts[2] != id || (len(parts) > 3) != (owner != "") || owner != "" && parts[3] != owner {
				continue
			}
			if (sk != nil && sk.Value != sortKey) || (sk == nil && sortKey != "") {
				continue
			}
			seq := av[schema.AttrChangeSeq].(*types.AttributeValueMemberS).Value
			ms, _ := strconv.ParseInt(seq[:14], 10, 64)
			line := fmt.Sprintf("row %s (%s) version %s", seq, time.UnixMilli(ms).UTC().Format(time.TimeOnly+".000"), av[schema.AttrVersion].(*types.AttributeValueMemberN).Value)
			if _, ok := av[schema.AttrChangeRemoved]; ok {
				line += " removed"
			}
			out = append(out, line)
		}
	}
	slices.Sort(out)
	return out
}

// report logs what the run did.
func (w *feedWorkload) report(truth map[string]map[string]map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := 0
	for _, items := range truth {
		held += len(items)
	}
	var writes []string
	for _, k := range slices.Sorted(maps.Keys(w.writes)) {
		writes = append(writes, fmt.Sprintf("%s: %d", k, w.writes[k]))
	}
	w.t.Logf("writes (status 0: killed) %s; %d of them expiring; clock moved %s",
		strings.Join(writes, ", "), w.expiring, w.advanced)
	w.t.Logf("changes function: %d batches (%d delivered again), %d records, %d batches killed midway; %d DynamoDB calls while the writers wrote, faults %v",
		w.batches, w.duplicates, w.records, w.kills, w.logCalls, w.logInjected)
	w.t.Logf("API: %d DynamoDB calls while the writers wrote, faults %v; %d writes took %s on average, %d reads %s",
		w.apiCalls, w.apiInjected, w.writesSent, w.writeTime/time.Duration(max(1, w.writesSent)), w.reads, w.readTime/time.Duration(max(1, w.reads)))
	w.t.Logf("readers: %d while the writers wrote (%d from the beginning, %d from a checkpoint), %d pages, %d retried, %d tombstones, %d items shown created again without a tombstone between; at the end %d replicas read up to date (%d pages, at most %d for one) and matched %d items held",
		len(w.readers), w.fromScratch, w.fromCheckpoint, w.pages, w.retries, w.tombstones, w.recreated, w.finalReaders, w.finalPages, w.maxFinalPage, held)
}
