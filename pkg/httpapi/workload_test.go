package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
	"github.com/udsproject/uds/pkg/uds"
)

// The accounting workload: a randomised concurrent mix of every write path
// through the HTTP API, under one fault mix per scenario, checked against
// the accounting invariants of the design brief. `make test` runs it
// briefly; `make soak` runs it longer with these flags.
var (
	workloadOps    = flag.Int("workload-ops", 60, "requests per worker and scenario in TestAccountingWorkload")
	workloadRounds = flag.Int("workload-rounds", 1, "rounds (seeds) of every scenario in TestAccountingWorkload")
	// make soak runs each round on an engine of its own: DynamoDB Local
	// keeps every stream record, and reading its streams grows slower
	// with each, so that one engine under many rounds of the streamed
	// scenarios ends up answering past the requests' budgets.
	workloadFirstRound = flag.Int("workload-first-round", 0, "the first round TestAccountingWorkload runs (round r runs the seeds r×scenarios+1 on)")
	workloadModes      = flag.String("workload-modes", "strict,streamed", "the quota modes TestAccountingWorkload runs every scenario in")
)

const (
	workloadOwners  = 4
	workloadWorkers = 8 // two per owner
	workloadKeys    = 5 // key-value items per worker
	limitItems      = 12
	limitBytes      = 6000
)

// writeOps are the DynamoDB operations that change data.
var writeOps = []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}

type scenario struct {
	name  string
	rules []faults.Rule
	// kill abandons a share of the requests at a random moment, as a
	// process killed mid-request would.
	kill bool
}

// injectsErrors reports whether the scenario makes any call fail or any
// request go unanswered; delays alone fail nothing. Without such faults
// every answer must be one the workers' models explain: a 503 or a 412
// there is a defect, not bad luck.
func (sc scenario) injectsErrors() bool {
	if sc.kill {
		return true
	}
	for _, r := range sc.rules {
		if r.Kind != faults.Delay {
			return true
		}
	}
	return false
}

var scenarios = []scenario{
	{name: "no faults"},
	{name: "lost answers", rules: []faults.Rule{
		{Kind: faults.LostAfterCommit, Ops: writeOps, Rate: 0.04},
		{Kind: faults.ResetAfterCommit, Ops: writeOps, Rate: 0.04},
	}},
	{name: "throttling", rules: []faults.Rule{{Kind: faults.Throttle, Rate: 0.08}}},
	{name: "5xx and resets", rules: []faults.Rule{
		{Kind: faults.ServerError, Rate: 0.03}, {Kind: faults.Unavailable, Rate: 0.03}, {Kind: faults.Reset, Rate: 0.03},
	}},
	{name: "latency spikes", rules: []faults.Rule{{Kind: faults.Delay, Rate: 0.05, Delay: 150 * time.Millisecond}}},
	{name: "killed requests", kill: true},
	// Transactions cancelled for a conflict with another transaction, as
	// DynamoDB answers when two hold one item (an owner's usage record,
	// say) at once; DynamoDB Local never does.
	{name: "conflicts", rules: []faults.Rule{{Kind: faults.Conflict, Rate: 0.15}}},
	{name: "everything", kill: true, rules: []faults.Rule{
		{Kind: faults.LostAfterCommit, Ops: writeOps, Rate: 0.03},
		{Kind: faults.ResetAfterCommit, Ops: writeOps, Rate: 0.02},
		{Kind: faults.Throttle, Rate: 0.04},
		{Kind: faults.ServerError, Rate: 0.02},
		{Kind: faults.Reset, Rate: 0.02},
		{Kind: faults.Delay, Rate: 0.03, Delay: 100 * time.Millisecond},
		{Kind: faults.Conflict, Rate: 0.03},
	}},
}

// TestAccountingWorkload checks, per scenario, that answers tell the truth
// (a model of each worker's own items; in the owner-write namespace, that
// other owners' items are refused), that no owner's usage record ever
// passes the limit, that once quiet every record equals what the tables
// hold, and that recompute then finds no drift. One write in five expires
// a second later; lists live in shared, private and owner-write
// namespaces. Every namespace declares indexes (workload_index_test.go):
// queries while the workers write show items in order and as selected,
// and once quiet each index answers exactly the items stored.
func TestAccountingWorkload(t *testing.T) {
	t.Parallel()
	var history historyExercise
	// Whether a scenario gets a version restored depends on how its
	// owners' quotas fill; across the scenarios some must.
	t.Cleanup(func() {
		restored, undeleted, kept := history.restored.Load(), history.undeleted.Load(), history.kept.Load()
		if restored == 0 || kept+undeleted == 0 {
			t.Errorf("%d restores (%d undeletes), %d versions kept at the ends: the workload did not exercise history", restored, undeleted, kept)
		}
		t.Logf("history: %d restores (%d undeletes), %d versions kept at the ends", restored, undeleted, kept)
	})
	var overshoot overshootTally
	t.Cleanup(func() { overshoot.report(t) })
	for _, m := range strings.Split(*workloadModes, ",") {
		mode, err := uds.ParseQuotaMode(m)
		if err != nil {
			t.Fatal(err)
		}
		for round := *workloadFirstRound; round < *workloadFirstRound+*workloadRounds; round++ {
			for i, sc := range scenarios {
				seed := uint64(round*len(scenarios) + i + 1)
				t.Run(fmt.Sprintf("%s/%s/seed-%d", mode, sc.name, seed), func(t *testing.T) {
					t.Parallel() // each scenario has its own tables and client
					runWorkload(t, sc, seed, mode, &history, &overshoot)
				})
			}
		}
	}
}

// historyExercise counts, across scenarios, the restores answered 200 or
// 201, those of them that brought a deleted item back (201: from a kept
// version), and the versions the histories hold at the ends.
type historyExercise struct {
	restored, undeleted, kept atomic.Int64
}

// workloadEnv is the API under test over a fault-injecting client.
type workloadEnv struct {
	srv    *httptest.Server
	faults *faults.Transport
	tables store.Tables
	plain  *dynamodb.Client
	// imported counts the records imports wrote, as their answers say;
	// queried the pages of index queries answered.
	imported, queried atomic.Int64
	history           *historyExercise
	// objects is the bucket of large values; uploads counts the uploads
	// committed, as their answers say, and binaries the binary values
	// written in one request.
	objects           blob.Objects
	uploads, binaries atomic.Int64
	// bucketEvents commits as the expiry function does on the bucket's
	// events, without faults: Lambda delivers a failed event again.
	// reposts counts the POSTs to committed uploads' forms.
	bucketEvents *store.Store
	reposts      atomic.Int64
	// lateWrites counts the 412s and 409s explained by a write of the
	// worker's own that the engine applied after its answer had left the
	// outcome open.
	lateWrites atomic.Int64
	// mode is the app's quota mode.
	mode uds.QuotaMode
	// faultless says the scenario injects no error (injectsErrors).
	faultless bool
	// grown keeps, in streamed mode, the writes that may have added to
	// their owners' usage, which bound how far they pass their limits.
	grown ownerWrites
	// lines keeps the server's log lines of the answers a faultless
	// scenario must not give, shown if the run fails.
	lines *answerLines
}

// answerLines keeps the server's request lines of 503 and 412 answers,
// the answers a scenario without faults must not give: when the run fails,
// the test logger's last lines may no longer hold them.
type answerLines struct {
	mu    sync.Mutex
	lines []string
}

// keptAnswerLines is how many lines answerLines keeps, the first ones.
const keptAnswerLines = 100

// logger is base, with the lines of 503 and 412 answers also kept.
func (k *answerLines) logger(base *slog.Logger) *slog.Logger {
	return slog.New(keepingHandler{Handler: base.Handler(), kept: k})
}

// replay logs the lines kept, if the test failed.
func (k *answerLines) replay(t *testing.T) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !t.Failed() {
		return
	}
	for _, line := range k.lines {
		t.Log("503/412: " + line)
	}
}

// keepingHandler hands every record to its Handler, and keeps the request
// lines of 503 and 412 answers in kept.
type keepingHandler struct {
	slog.Handler
	kept *answerLines
}

func (h keepingHandler) Handle(ctx context.Context, r slog.Record) error {
	status := 0
	r.Attrs(func(a slog.Attr) bool {
		// A request line's attributes are one group without a key.
		for _, g := range a.Value.Group() {
			if g.Key == "status" {
				status = int(g.Value.Int64())
			}
		}
		return true
	})
	if status == 503 || status == 412 {
		var line bytes.Buffer
		_ = slog.NewTextHandler(&line, nil).Handle(ctx, r)
		h.kept.mu.Lock()
		if len(h.kept.lines) < keptAnswerLines {
			h.kept.lines = append(h.kept.lines, strings.TrimSuffix(line.String(), "\n"))
		}
		h.kept.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h keepingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return keepingHandler{Handler: h.Handler.WithAttrs(attrs), kept: h.kept}
}

func (h keepingHandler) WithGroup(name string) slog.Handler {
	return keepingHandler{Handler: h.Handler.WithGroup(name), kept: h.kept}
}

// killAfter is the test's own header: the server's process is killed this
// many microseconds into the request (faults.WithKill): it sends no more
// DynamoDB calls, and stops once the call it was making is back. The
// client waits for the handler to end, so the model never races a request
// that is still running.
const killAfter = "X-Workload-Kill-After"

// killable kills a request where killAfter says (faults.WithKill; the
// server's DynamoDB client is a faulty one).
func killable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if us, err := strconv.Atoi(r.Header.Get(killAfter)); err == nil {
			ctx, kill := faults.WithKill(r.Context())
			timer := time.AfterFunc(time.Duration(us)*time.Microsecond, kill)
			defer timer.Stop()
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
	})
}

func runWorkload(t *testing.T, sc scenario, seed uint64, mode uds.QuotaMode, history *historyExercise, overshoot *overshootTally) {
	client, ft := storetest.FaultyClient(t, seed)
	newTables := storetest.NewTables
	if mode == uds.QuotaStreamed {
		newTables = storetest.NewStreamedTables // the stream pump reads them
	}
	tables := newTables(t)
	objects := blob.Objects{Bucket: blobtest.New(t)}
	// Uploads abandoned lapse within the run, so that their reservations
	// are reclaimed while the workers write.
	lines := &answerLines{}
	t.Cleanup(func() { lines.replay(t) })
	st := store.New(client, tables, store.WithRecomputeQuiet(0), store.WithPolicySettle(testSettle),
		store.WithObjects(objects), store.WithUploadLapse(uploadLapse))
	api := httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject:         httpapi.HeaderSubject,
		CursorSecret:    []byte("workload"),
		DeleteAllBudget: 3 * time.Second,
		RequestBudget:   4 * time.Second,
		Logger:          lines.logger(apitest.Logger(t)),
		Bucket:          objects,
	})
	plain := storetest.Client(t)
	e := &workloadEnv{srv: httptest.NewServer(killable(api)), faults: ft, tables: tables, plain: plain, history: history, objects: objects, mode: mode, faultless: !sc.injectsErrors(), lines: lines,
		bucketEvents: store.New(plain, tables, store.WithObjects(objects))}
	t.Cleanup(e.srv.Close)
	var stream *streamPump
	if mode == uds.QuotaStreamed {
		if st, body := e.answered("PUT", admin+"/apps/"+app+"/quota-mode", "admin", `{"mode":"streamed"}`); st != 200 {
			t.Fatalf("setting the streamed mode: %d %s", st, body)
		}
		stream = startStreamPump(t, tables, seed)
	}
	if st, _ := e.answered("PUT", admin+"/apps/"+app+"/quota", "admin", fmt.Sprintf(`{"limitBytes":%d,"limitItems":%d}`, limitBytes, limitItems)); st != 200 {
		t.Fatalf("setting the app's limits: %d", st)
	}
	if st, _ := e.answered("PUT", admin+"/apps/"+app+"/users/"+importOwner+"/quota", "admin", `{"limitBytes":-1,"limitItems":-1}`); st != 200 {
		t.Fatalf("lifting the importer's limits: %d", st)
	}
	// The policies are in place before any write: a change into private
	// is announced (202) and completed once it settles.
	for ns, policy := range workloadPolicies {
		st, body := e.answered("PUT", admin+"/apps/"+app+"/namespaces/"+ns, "admin", policy)
		if st == http.StatusAccepted {
			time.Sleep(testSettle + 10*time.Millisecond)
			st, body = e.answered("PUT", admin+"/apps/"+app+"/namespaces/"+ns, "admin", policy)
		}
		if st != 200 {
			t.Fatalf("setting the policy of %s: %d %s", ns, st, body)
		}
	}
	e.buildIndexes(t)

	ft.Set(sc.rules...)
	stats := newTally()
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() { defer close(watched); e.watchLimits(t, stop) }()
	var wg sync.WaitGroup
	workers := make([]*worker, workloadWorkers)
	for i := range workers {
		w := &worker{
			id: i, owner: "u" + strconv.Itoa(i%workloadOwners), env: e, t: t, stats: stats,
			rng: rand.New(rand.NewPCG(seed, uint64(i))), kill: sc.kill, items: make([]model, workloadKeys), unsettled: make([][]unsettled, workloadKeys),
		}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range *workloadOps {
				w.step()
			}
		}()
	}
	wg.Wait()
	quiet := time.Now()
	close(stop)
	<-watched
	injected, calls := ft.Injected()
	ft.Set() // quiet and fault-free from here on: check the outcome

	for _, w := range workers {
		w.checkModel()
	}
	if stream != nil {
		// Reads of the checks, and recompute below, remove the expired
		// items they meet, which the stream releases: every write has
		// expired by now, so they are removed first and the stream
		// settles after them.
		time.Sleep(time.Until(quiet.Add(1100 * time.Millisecond)))
		if _, err := store.New(e.plain, tables).SweepExpired(context.Background()); err != nil {
			t.Fatal(err)
		}
		stream.settle(t)
	}
	var drift []string
	owners := []string{importOwner}
	for o := range workloadOwners {
		owners = append(owners, "u"+strconv.Itoa(o))
	}
	for _, owner := range owners {
		rec, real := e.recorded(t, owner), e.real(t, owner)
		if rec != real {
			t.Errorf("%s: recorded %+v, the tables hold %+v", owner, rec, real)
		}
		switch {
		case owner == importOwner:
		case mode == uds.QuotaStreamed:
			// An owner may pass its limit by what it writes within the
			// stream's lag, and no further.
			overshoot.add(t, owner, real, e.grown.bound(owner))
		case real.Items > limitItems || real.Bytes > limitBytes:
			t.Errorf("%s stores %+v, over the limit of %d items, %d bytes", owner, real, limitItems, limitBytes)
		}
		st, body := e.answered("POST", admin+"/apps/"+app+"/users/"+owner+"/quota/recompute", "admin", "")
		if st != 200 || !strings.Contains(body, `"drift":{"bytes":0,"items":0,"historyBytes":0}`) {
			t.Errorf("%s: recompute answered %d %s, want no drift", owner, st, body)
		}
		drift = append(drift, fmt.Sprintf("%s %d/%d", owner, rec.Items-real.Items, rec.Bytes-real.Bytes))
	}
	if e.imported.Load() == 0 {
		t.Error("no import wrote anything: the workload did not exercise import")
	}
	if e.queried.Load() == 0 {
		t.Error("no index query was answered: the workload did not exercise the indexes")
	}
	if e.uploads.Load() == 0 || e.binaries.Load() == 0 {
		t.Errorf("%d uploads committed, %d binary values written: the workload did not exercise binary values", e.uploads.Load(), e.binaries.Load())
	}
	stale := e.checkIndexes(t, quiet)
	large := e.checkObjects(t)
	if stream != nil {
		t.Logf("stream: %s", stream.stats())
	}
	t.Logf("%d requests (%s); %d records imported; %d index query pages, %d stale entries left; %d binary values sent, %d uploads committed, %d large values stored, %d forms posted after their commit; %d writes landed after their answer left them open; %d DynamoDB calls, faults %v; drift (items/bytes) %s",
		stats.total(), stats, e.imported.Load(), e.queried.Load(), stale, e.binaries.Load(), e.uploads.Load(), large, e.reposts.Load(), e.lateWrites.Load(), calls, injected, strings.Join(drift, ", "))
}

func (e *workloadEnv) recorded(t *testing.T, owner string) uds.Usage {
	return storetest.RecordedUsage(t, e.plain, e.tables, app, owner)
}

func (e *workloadEnv) real(t *testing.T, owner string) uds.Usage {
	return storetest.StoredUsage(t, e.plain, e.tables, app, owner)
}

// watchLimits reads every owner's usage record while the workload runs:
// a record never passes the limit and is never negative. Records never
// under-count (checked at the end), so the data never passes it either.
func (e *workloadEnv) watchLimits(t *testing.T, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		for o := range workloadOwners {
			owner := "u" + strconv.Itoa(o)
			switch u := e.recorded(t, owner); {
			case e.mode == uds.QuotaStreamed && (u.Items < 0 || u.Bytes < 0):
				t.Errorf("%s's usage went negative: %+v", owner, u)
			case e.mode == uds.QuotaStreamed:
				// The record follows the stream: it may pass the limit by
				// the overshoot the mode allows.
			case u.Items > limitItems || u.Bytes > limitBytes:
				t.Errorf("%s's usage reached %+v, over the limit", owner, u)
			case u.Items < 0 || u.Bytes < 0:
				t.Errorf("%s's usage went negative: %+v", owner, u)
			}
		}
	}
}

// send makes one request as subject, its body JSON. A positive kill
// stops the server's work on it after that long; its answer is then no
// answer.
func (e *workloadEnv) send(kill time.Duration, method, path, subject, body, ifMatch string) (int, string) {
	contentType := ""
	if body != "" {
		contentType = "application/json"
	}
	return e.sendAs(kill, method, path, subject, contentType, body, ifMatch)
}

// sendAs is send with a body of the given content type.
func (e *workloadEnv) sendAs(kill time.Duration, method, path, subject, contentType, body, ifMatch string) (int, string) {
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	if kill > 0 {
		req.Header.Set(killAfter, strconv.FormatInt(kill.Microseconds(), 10))
	}
	req.Header.Set(httpapi.SubjectHeader, subject)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	sent := time.Now()
	status, answer := e.do(req, kill > 0)
	if e.mode == uds.QuotaStreamed && subject != "admin" {
		e.grown.add(subject, method, path, sent, status)
	}
	return status, answer
}

// do sends a request of sendAs and reads its answer, none if killed.
func (e *workloadEnv) do(req *http.Request, killed bool) (int, string) {
	res, err := noRedirects.Do(req)
	if err != nil {
		panic(err) // the test server is on this machine and always answers
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if killed {
		return 0, ""
	}
	if res.StatusCode == 503 && res.Header.Get("Retry-After") == "" {
		return -503, string(b) // a 503 without Retry-After is a defect too
	}
	return res.StatusCode, string(b) + "\x00" + res.Header.Get("ETag")
}

// noRedirects is the workers' client: a GET of a large value answers 302
// with the item's ETag, which the model checks, rather than the bucket's
// answer.
var noRedirects = &http.Client{Transport: testTransport,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// answered sends a request of the workload's setup or checks, which run
// without faults, until it is answered with more than a 503 with
// Retry-After: on a loaded machine a request can outlast the 4 s request
// budget, and what the request is for is not that budget.
func (e *workloadEnv) answered(method, path, subject, body string) (int, string) {
	for range 9 {
		if st, answer := e.send(0, method, path, subject, body, ""); st != 503 {
			return st, answer
		}
	}
	return e.send(0, method, path, subject, body, "")
}

// model is what a worker knows of one of its own key-value items: every
// other writer leaves them alone, so each answer can be checked.
type model struct {
	known  bool // false after an answer that leaves the outcome open
	exists bool
	etag   string
	// expires is when the item expires, if it does.
	expires time.Time
	// deleted is the version a delete answered 204 for replaced, which a
	// namespace with history keeps: the version to restore.
	deleted int
}

// settle makes the model exact again around an expiry: an item about to
// expire is waited out, and is then absent.
func (m *model) settle() {
	if !m.known || !m.exists || m.expires.IsZero() || time.Until(m.expires) > 300*time.Millisecond {
		return
	}
	time.Sleep(time.Until(m.expires) + 30*time.Millisecond)
	*m = model{known: true}
}

// expiresIn reads the expiresAt of an answer's body.
func expiresIn(answer string) time.Time {
	i := strings.Index(answer, `"expiresAt":"`)
	if i < 0 {
		return time.Time{}
	}
	at, _ := time.Parse(time.RFC3339Nano, answer[i+len(`"expiresAt":"`):][:len("2006-01-02T15:04:05.000Z")])
	return at
}

type worker struct {
	id    int
	owner string
	env   *workloadEnv
	t     *testing.T
	stats *tally
	rng   *rand.Rand
	kill  bool
	items []model
	// unsettled is, for each item, its writes whose outcome was left
	// open within lateWindow, which lateWrite needs to know, kept through
	// every change of the model.
	unsettled [][]unsettled
}

// unsettled is a write whose answer left its outcome open.
type unsettled struct {
	at    time.Time // when it was answered (or killed)
	label string
	// removes says it was a delete, which may leave the item absent.
	removes bool
}

func (u unsettled) String() string {
	return u.label + " at " + u.at.UTC().Format(time.StampMilli)
}

// itemPath is the path of a worker's key-value item: the odd ones are in
// a namespace that keeps history, one in a namespace without a policy
// (no indexes: a streamed write there is a plain conditional write).
func (w *worker) itemPath(i int) string {
	return base + "/" + itemNamespace(i) + "/w" + strconv.Itoa(w.id) + "-" + strconv.Itoa(i)
}

func itemNamespace(i int) string {
	switch {
	case i%2 == 1:
		return "kept"
	case i == 2:
		return "plain"
	}
	return "kv"
}

// keptVersions is what the workload's history namespace keeps.
const keptVersions = 3

// workloadPolicies are the namespaces of the workload, each with a policy
// that declares the workload's indexes: the private one gives every owner
// a list of their own, in the owner-write one delete-alls and writes of
// other owners' items are refused, kept keeps the versions its writes
// replace, and kv and lists are shared.
var workloadPolicies = map[string]string{
	"kv":    `{"access":"shared",` + workloadIndexesJSON() + `}`,
	"lists": `{"access":"shared",` + workloadIndexesJSON() + `}`,
	"mine":  `{"access":"private",` + workloadIndexesJSON() + `}`,
	"owned": `{"access":"owner-write",` + workloadIndexesJSON() + `}`,
	"kept":  fmt.Sprintf(`{"access":"shared","history":{"versions":%d},%s}`, keptVersions, workloadIndexesJSON()),
}

// listPath is one of the lists all workers write into, in a random
// namespace.
func (w *worker) listPath() string {
	return [...]string{"lists/shared0", "lists/shared1", "owned/thread", "mine/feed", "kept/journal", "plain/list"}[w.rng.IntN(6)]
}

// value is JSON of a random size, so updates grow and shrink items.
func (w *worker) value() string {
	expiry := ""
	if w.rng.IntN(5) == 0 {
		// One write in five expires within the run.
		expiry = `,"ttl":1`
	}
	return `{"data":{"w":` + strconv.Itoa(w.id) + `,` + w.indexedFields() + `"pad":"` + strings.Repeat("p", 10+w.rng.IntN(600)) + `"}` + expiry + `}`
}

// bytesValue is bytes of a random size, none of them JSON.
func (w *worker) bytesValue() string {
	b := make([]byte, 10+w.rng.IntN(500))
	for i := range b {
		b[i] = byte(w.rng.IntN(256))
	}
	return string(b)
}

// anyValue is a write's body and its content type: one in four a binary
// value, the others JSON.
func (w *worker) anyValue() (contentType, body string) {
	if w.rng.IntN(4) == 0 {
		w.env.binaries.Add(1)
		return "application/octet-stream", w.bytesValue()
	}
	return "application/json", w.value()
}

// step sends one random request and checks its answer against the model.
func (w *worker) step() {
	var kill time.Duration
	if w.kill && w.rng.IntN(10) == 0 {
		kill = time.Duration(1+w.rng.IntN(15_000)) * time.Microsecond
	}
	killed := kill > 0
	switch r := w.rng.IntN(100); {
	case r < 56:
		w.itemStep(kill)
	case r < 60:
		w.queryStep(kill)
	case r < 80:
		list := base + "/" + w.listPath()
		contentType, body := w.anyValue()
		st, _ := w.env.sendAs(kill, "POST", list+"/"+strconv.Itoa(w.id)+"-"+strconv.Itoa(w.rng.IntN(1000)), w.owner, contentType, body, "")
		w.expect("POST list item", st, killed, 201, 403, 409)
	case r < 85:
		// A batch of list item writes, one by one or atomic: its slots
		// (or, atomic, its answer) are checked like single requests.
		atomic := w.rng.IntN(2) == 0
		var ops []string
		// repeats is set when two operations name one item, mayMiss when
		// one needs an item or version that may not be there: all an
		// atomic batch's 400s and 404s come from these.
		named := map[string]bool{}
		repeats, mayMiss := false, false
		for range 3 {
			path := w.listPath() + "/" + strconv.Itoa(w.id) + "-" + strconv.Itoa(w.rng.IntN(1000))
			repeats = repeats || named[path]
			named[path] = true
			switch r := w.rng.IntN(6); {
			case r < 2:
				mayMiss = true
				ops = append(ops, `{"method":"DELETE","path":"`+path+`"}`)
			case r == 2 && strings.HasPrefix(path, "kept/"):
				// A restore: an update, a create of a deleted item, or
				// a 404 when the version is not kept.
				mayMiss = true
				ops = append(ops, `{"method":"POST","path":"`+path+`?restore=1"}`)
			case r == 4:
				// A patch: 404 when the item is not there, 409 when its
				// value is binary.
				mayMiss = true
				contentType, patch := w.patch()
				ops = append(ops, `{"method":"PATCH","path":"`+path+`","contentType":"`+contentType+`","body":`+patch+`}`)
			case r == 3:
				// A binary value in JSON.
				ops = append(ops, `{"method":"POST","path":"`+path+`","body":{"dataBase64":"`+base64.StdEncoding.EncodeToString([]byte(w.bytesValue()))+`","contentType":"application/octet-stream"}}`)
			default:
				ops = append(ops, `{"method":"POST","path":"`+path+`","body":`+w.value()+`}`)
			}
		}
		body := `{"atomic":` + strconv.FormatBool(atomic) + `,"operations":[` + strings.Join(ops, ",") + `]}`
		st, answer := w.env.send(kill, "POST", base+"/batch", w.owner, body, "")
		if atomic {
			allowed := []int{200, 403, 409}
			if repeats {
				allowed = append(allowed, 400) // refused whole, nothing written
			}
			if mayMiss {
				allowed = append(allowed, 404)
			}
			w.expect("atomic batch", st, killed, allowed...)
			break
		}
		if w.expect("batch", st, killed, 200) {
			var out struct{ Results []struct{ Status int } }
			if err := json.Unmarshal([]byte(answer[:strings.LastIndexByte(answer, 0)]), &out); err != nil || len(out.Results) != len(ops) {
				w.t.Errorf("worker %d: a batch of %d operations answered %d results (%v): %s", w.id, len(ops), len(out.Results), err, answer)
			}
			for _, res := range out.Results {
				w.expect("batch slot", res.Status, false, 200, 201, 204, 403, 404, 409)
			}
		}
	case r < 88:
		w.importStep(kill)
	case r < 92:
		list := base + "/" + w.listPath()
		if strings.Contains(list, "/owned/") {
			w.deleteAll(kill, list, "DELETE owner-write list", 204, 403)
		} else {
			w.deleteAll(kill, list, "DELETE list", 204)
		}
	default:
		// Another owner's list items change under a delete-all: PUT
		// grows or shrinks one, DELETE removes one.
		creator := w.rng.IntN(workloadWorkers)
		list := w.listPath()
		path := base + "/" + list + "/" + strconv.Itoa(creator) + "-" + strconv.Itoa(w.rng.IntN(1000))
		// Only the worker numbered so creates this item; in the
		// owner-write namespace only its owner may change it.
		foreign := list == "owned/thread" && creator%workloadOwners != w.id%workloadOwners
		var st int
		var answer string
		if w.rng.IntN(2) == 0 {
			st, answer = w.env.send(kill, "PUT", path, w.owner, w.value(), "")
			if foreign {
				w.expect("PUT another owner's item", st, killed, 403, 404)
			} else {
				w.expect("PUT list item", st, killed, 200, 403, 404)
			}
		} else {
			st, answer = w.env.send(kill, "DELETE", path, w.owner, "", "")
			if foreign {
				w.expect("DELETE another owner's item", st, killed, 204, 403)
			} else {
				w.expect("DELETE list item", st, killed, 204)
			}
		}
		if foreign && st == 403 && !strings.Contains(answer, `"error":"Forbidden"`) {
			w.t.Errorf("a write of another owner's item was refused for another reason: %s", answer)
		}
	}
}

// deleteAll sends a delete-all of list, again while it answers that its
// time budget ran out (503 "List not fully deleted", with how many it
// deleted), and checks the last answer: such an answer is true and
// settles its outcome (the rest is left, and a repeat continues), and on a
// slow engine, while the other workers fill the list and change its items
// (which cancels its transactions), a delete-all need not empty it in the
// workload's 2 s (DeleteAllBudget, within the request budget less
// deleteAllMargin). So it is counted, not reported, fault or none.
func (w *worker) deleteAll(kill time.Duration, list, label string, allowed ...int) {
	st, answer := w.env.send(kill, "DELETE", list+"/list", w.owner, "", "")
	for repeat := 0; ; repeat++ {
		var partial struct{ Error string }
		if st != 503 || json.Unmarshal([]byte(answer[:strings.LastIndexByte(answer, 0)]), &partial) != nil || partial.Error != "List not fully deleted" {
			w.expect(label, st, kill > 0, allowed...)
			return
		}
		w.stats.add(st, false)
		if repeat == 3 {
			return
		}
		st, answer = w.env.send(0, "DELETE", list+"/list", w.owner, "", "")
	}
}

// importOwner owns the records the workload imports. Import does not apply
// limits, so it has no limit to pass; its usage is checked like the others'.
const importOwner = "u-import"

// importStep imports three list items into a shared list, some expiring
// within the run, some already there (skipped or conflicts), and checks that
// every record is accounted for in the answer.
func (w *worker) importStep(kill time.Duration) {
	list := [...]string{"shared0", "shared1"}[w.rng.IntN(2)]
	var records []string
	for i := range 3 {
		expiry := ""
		if w.rng.IntN(5) == 0 {
			expiry = `,"expiresAt":"` + time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano) + `"`
		}
		records = append(records, fmt.Sprintf(`{"namespace":"lists","id":%q,"sortKey":"imp-%d-%d","owner":%q,"data":{`+w.indexedFields()+`"pad":%q},`+
			`"createdDate":"2026-01-02T03:04:05.678Z","createdBySubject":%q,"updatedDate":"2026-01-03T03:04:05.678Z","updatedBySubject":"u0","version":%d%s}`,
			list, i, w.rng.IntN(20), importOwner, strings.Repeat("i", 10+w.rng.IntN(400)), importOwner, 1+w.rng.IntN(2), expiry))
	}
	st, answer := w.env.send(kill, "POST", admin+"/apps/"+app+"/import", "admin", `{"records":[`+strings.Join(records, ",")+`]}`, "")
	if !w.expect("import", st, kill > 0, 200) {
		return
	}
	var out struct {
		Imported, Skipped, Expired int
		Conflicts                  []struct{ Index int }
	}
	if err := json.Unmarshal([]byte(answer[:strings.LastIndexByte(answer, 0)]), &out); err != nil ||
		out.Imported+out.Skipped+out.Expired+len(out.Conflicts) != len(records) {
		w.t.Errorf("import of %d records answered %s", len(records), answer)
	}
	w.env.imported.Add(int64(out.Imported))
}

// itemStep writes one of the worker's own items and checks the answer.
func (w *worker) itemStep(kill time.Duration) {
	killed := kill > 0
	i := w.rng.IntN(workloadKeys)
	m := &w.items[i]
	path := w.itemPath(i)
	if !m.known {
		w.resync(i)
	}
	m.settle()
	if itemNamespace(i) == "kept" && w.rng.IntN(2) == 0 {
		w.historyStep(kill, i)
		return
	}
	if itemNamespace(i) == "kv" && w.rng.IntN(6) == 0 {
		w.uploadStep(kill, i)
		return
	}
	var method, ifMatch string
	switch r := w.rng.IntN(100); {
	case r < 32:
		method = "POST"
	case r < 60:
		method = "PUT"
		if w.rng.IntN(2) == 0 && m.exists {
			ifMatch = m.etag
		}
	case r < 72:
		method = "PATCH"
		if w.rng.IntN(2) == 0 && m.exists {
			ifMatch = m.etag
		}
	default:
		method = "DELETE"
		if w.rng.IntN(3) == 0 && m.exists {
			ifMatch = m.etag
		}
	}
	contentType, body := "", ""
	binary := false
	switch method {
	case "PATCH":
		var read bool
		if binary, read = w.holdsBytes(i); !read {
			return
		}
		contentType, body = w.patch()
	case "POST", "PUT":
		contentType, body = w.anyValue()
	}
	st, answer := w.env.sendAs(kill, method, path, w.owner, contentType, body, ifMatch)
	if m.exists && !m.expires.IsZero() && !time.Now().Add(50*time.Millisecond).Before(m.expires) {
		// The item expired while the request ran (a slow one, under
		// faults): either answer is true. Learn which from a GET.
		w.leaveOpen(i, method+" item", !w.record(method+" item", st, killed))
		return
	}
	etag := answer[strings.LastIndexByte(answer, 0)+1:]
	label := method + " item"
	if ifMatch != "" {
		label += " If-Match"
	}
	if st == 412 && ifMatch != "" && w.lateWrite(i, label, st, ifMatch, killed) ||
		st == 409 && method == "POST" && !m.exists && w.lateWrite(i, label, st, "", killed) {
		return
	}
	var allowed []int
	switch {
	case method == "POST" && m.exists:
		allowed = []int{409}
	case method == "POST":
		allowed = []int{201, 403}
	case method == "PUT" && m.exists:
		allowed = []int{200, 403}
	case method == "PUT":
		allowed = []int{404}
	case method == "PATCH" && m.exists && binary:
		allowed = []int{409} // a patch applies to JSON
	case method == "PATCH" && m.exists:
		allowed = []int{200, 403}
	case method == "PATCH":
		allowed = []int{404}
	default:
		allowed = []int{204}
	}
	if !w.expect(label, st, killed, allowed...) {
		if !killed && st != 503 && !slices.Contains(allowed, st) {
			w.describe(i, *m)
		}
		w.leaveOpen(i, label, true)
		return
	}
	switch st {
	case 201, 200:
		m.exists, m.etag, m.expires = true, etag, expiresIn(answer)
	case 204:
		if m.exists {
			m.deleted = versionOf(m.etag)
		}
		m.exists, m.etag = false, ""
	}
}

// patch is a patch of one of the worker's JSON values and its content
// type: a merge patch, or a JSON Patch, of a member of a random size.
func (w *worker) patch() (contentType, body string) {
	pad := strconv.Quote(strings.Repeat("q", 10+w.rng.IntN(600)))
	if w.rng.IntN(2) == 0 {
		return httpapi.MergePatchType, `{"pad":` + pad + `}`
	}
	return httpapi.JSONPatchType, `[{"op":"add","path":"/pad","value":` + pad + `}]`
}

// holdsBytes reports whether item i's value is bytes, which a patch does
// not apply to, as a GET answers it; read is false when the GET did not
// answer (under faults). The worker's items are its own, so the value
// cannot change before the patch is sent.
func (w *worker) holdsBytes(i int) (binary, read bool) {
	st, answer := w.env.send(0, "GET", w.itemPath(i), w.owner, "", "")
	if !w.expect("GET before PATCH", st, false, 200, 302, 404) {
		return false, false
	}
	switch st {
	case 302: // a large value
		return true, true
	case 200:
		return !strings.HasPrefix(answer, `{"applicationUuid":`), true
	}
	return false, true
}

// historyStep restores a version of one of the worker's items that keep
// history, or drops its history, and checks the answer against the model:
// a restore is a write (a quota may refuse it) of a version that may have
// been pruned.
func (w *worker) historyStep(kill time.Duration, i int) {
	killed := kill > 0
	m := &w.items[i]
	path := w.itemPath(i)
	if w.rng.IntN(6) == 0 {
		st, _ := w.env.send(kill, "DELETE", path+"?history", w.owner, "", "")
		w.expect("DELETE history", st, killed, 200)
		return
	}
	// Mostly a version that is likely kept; now and then one long pruned.
	version := max(1, m.deleted)
	if m.exists {
		version = max(1, versionOf(m.etag)-1-w.rng.IntN(keptVersions+1))
	}
	ifMatch := ""
	if m.exists && w.rng.IntN(2) == 0 {
		ifMatch = m.etag
	}
	st, answer := w.env.send(kill, "POST", path+"?restore="+strconv.Itoa(version), w.owner, "", ifMatch)
	if m.exists && !m.expires.IsZero() && !time.Now().Add(50*time.Millisecond).Before(m.expires) {
		// The item expired while the request ran: an update or a
		// create of it again are both true. Learn which from a GET.
		w.leaveOpen(i, "POST restore", !w.record("POST restore", st, killed))
		return
	}
	if st == 412 && ifMatch != "" && w.lateWrite(i, "POST restore If-Match", st, ifMatch, killed) {
		return
	}
	allowed := []int{201, 403, 404}
	if m.exists {
		allowed = []int{200, 403, 404}
	}
	if !w.expect("POST restore", st, killed, allowed...) {
		w.leaveOpen(i, "POST restore", true)
		return
	}
	if st == 200 || st == 201 {
		*m = model{known: true, exists: true, etag: answer[strings.LastIndexByte(answer, 0)+1:]}
		w.env.history.restored.Add(1)
		if st == 201 {
			w.env.history.undeleted.Add(1)
		}
	}
}

// versionOf is the version an ETag names.
func versionOf(etag string) int {
	v, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(etag, "-", 2)[0], `"`))
	return v
}

// expect records an answer and reports whether the model may rely on it:
// whether it settles the request's outcome (record) and is one of those
// allowed.
func (w *worker) expect(label string, status int, killed bool, allowed ...int) bool {
	if !w.record(label, status, killed) {
		return false
	}
	for _, a := range allowed {
		if status == a {
			return true
		}
	}
	w.t.Errorf("worker %d: %s answered %d, want one of %v or 503", w.id, label, status, allowed)
	return false
}

// record counts an answer and reports whether it settles the request's
// outcome: a killed request's does not, nor does a 503 (with Retry-After).
// Where the scenario injects no error, a 503 has no cause the workload
// gives the server and is reported.
func (w *worker) record(label string, status int, killed bool) bool {
	w.stats.add(status, killed)
	switch {
	case killed:
		return false
	case status == 503 && w.env.faultless:
		w.t.Errorf("worker %d: %s answered 503 in a scenario without faults (the server's lines are at the end)", w.id, label)
		return false
	}
	return status != 503
}

// leaveOpen marks the model of item i unknown, to be learnt again from a
// GET, after an answer to label that was not the one expected or that may
// not be true (it expired meanwhile); open says the answer left the
// request's outcome open, as a 503 or a killed request does.
func (w *worker) leaveOpen(i int, label string, open bool) {
	w.items[i].known = false
	if open {
		w.unsettled[i] = append(w.openWrites(i), unsettled{at: time.Now(), label: label, removes: strings.HasPrefix(label, "DELETE")})
	}
}

// openWrites is item i's writes whose outcome was left open and that may
// still land.
func (w *worker) openWrites(i int) []unsettled {
	w.unsettled[i] = slices.DeleteFunc(w.unsettled[i], func(u unsettled) bool { return time.Since(u.at) > lateWindow })
	return w.unsettled[i]
}

// explains reports whether writes left open, landing after the model
// learnt the item at ifMatch, could have brought it to its state now:
// absent, if one of them is a delete; present, at a later version, at
// most one version per write (a version of its own for each), or, after
// a delete among them, at one a create afresh could have.
func explains(open []unsettled, ifMatch string, absent bool, etag string) bool {
	removes := slices.ContainsFunc(open, func(u unsettled) bool { return u.removes })
	if absent {
		return removes
	}
	v, from, n := versionOf(etag), versionOf(ifMatch), len(open)
	return v > from && v-from <= n || removes && v >= 1 && v <= n
}

// lateWindow is how long after a request left its outcome open a write of
// it may still land. The server gives up on a call when the request's
// budget ends, but the engine works on the call it was sent: DynamoDB
// Local applied most cancelled transactions of a trial after a GET made
// just after them (docs/decisions/quotas.md, "Truthful answers"), and an
// overloaded one a restore's write about 20 s later (when a kill still
// cancelled the calls in flight).
const lateWindow = time.Minute

// lateWrite reports whether it dealt with a refusal of a write of item i
// that only a change since the model was learnt can cause: a 412 under
// If-Match (ifMatch names the revision the model holds) or a 409 to a
// create (ifMatch is empty: the model holds the item absent). Such an
// answer while the item is as the model holds it is a defect, reported
// here; one explained by a write of the worker's own, landed after the
// model was learnt again (the item is in a state that the worker's writes
// on it left open within lateWindow could have brought it to: explains),
// is counted, and the model is learnt again. Either way the answer joins
// the stats. An answer it does not explain is left to the caller to
// report.
func (w *worker) lateWrite(i int, label string, status int, ifMatch string, killed bool) bool {
	st, answer := w.env.answered("GET", w.itemPath(i), w.owner, "")
	now := answer[strings.LastIndexByte(answer, 0)+1:]
	if ifMatch != "" && (st == 200 || st == 302) && now == ifMatch || ifMatch == "" && st == 404 {
		w.t.Errorf("worker %d: %s answered %d, but the item is at %d %s", w.id, label, status, st, now)
		w.stats.add(status, killed)
		return true
	}
	open := w.openWrites(i)
	if !explains(open, ifMatch, st == 404, now) {
		if len(open) > 0 {
			w.t.Logf("worker %d item %d: %s %s answered %d with the item at %d %s, which its %d writes left open (%v) cannot explain",
				w.id, i, label, ifMatch, status, st, now, len(open), open)
		}
		return false
	}
	w.stats.add(status, killed)
	_, history := w.env.answered("GET", w.itemPath(i)+"?history", w.owner, "")
	w.t.Logf("worker %d item %d: at %s, %s %s answered %d with the item at %d %s, which its writes left open could have made: %v; its history: %s",
		w.id, i, time.Now().UTC().Format(time.StampMilli), label, ifMatch, status, st, now, open, history)
	w.env.lateWrites.Add(1)
	w.items[i].known = false
	return true
}

// describe logs what is known of item i after an answer its model m did
// not allow: where the item is, what the API answers for it now, with its
// history, and the worker's writes on it whose outcome was left open.
func (w *worker) describe(i int, m model) {
	st, answer := w.env.answered("GET", w.itemPath(i), w.owner, "")
	_, history := w.env.answered("GET", w.itemPath(i)+"?history", w.owner, "")
	w.t.Logf("worker %d item %d (%s) at %s: the model held %+v; a GET answers %d %q; its history: %s; writes left open: %v",
		w.id, i, w.itemPath(i), time.Now().UTC().Format(time.StampMilli), m, st, answer, history, w.openWrites(i))
}

// resync learns an item's state after an answer that left it open.
func (w *worker) resync(i int) {
	for range 20 {
		st, answer := w.env.send(0, "GET", w.itemPath(i), w.owner, "", "")
		switch st {
		case 200, 302: // 302: a large value
			w.items[i] = model{known: true, exists: true, etag: answer[strings.LastIndexByte(answer, 0)+1:], expires: expiresIn(answer)}
			w.items[i].settle()
			return
		case 404:
			w.items[i] = model{known: true}
			return
		case 503: // under faults: read again after a pause
		default:
			w.t.Errorf("worker %d: reading item %d again answered %d: %s", w.id, i, st, answer)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.t.Fatalf("worker %d: item %d could not be read", w.id, i)
}

// checkModel compares the model with what the API answers once quiet.
func (w *worker) checkModel() {
	for i, m := range w.items {
		m.settle()
		if !m.known {
			continue
		}
		st, answer := w.env.answered("GET", w.itemPath(i), w.owner, "")
		if m.exists && !m.expires.IsZero() && !time.Now().Add(50*time.Millisecond).Before(m.expires) {
			continue // it expired while the GET ran: either answer is true
		}
		etag := answer[strings.LastIndexByte(answer, 0)+1:]
		if st == 302 { // a large value
			st = 200
		}
		if st != 200 && st != 404 || (st == 200) != m.exists || m.exists && etag != m.etag {
			w.t.Errorf("worker %d item %d: GET answers %d %s, the answers so far said exists=%v etag %s", w.id, i, st, etag, m.exists, m.etag)
		}
		if itemNamespace(i) == "kept" {
			w.checkHistory(i, m)
		}
	}
}

// checkHistory compares an item's history with the model once quiet: the
// item first (or a delete marker), versions newest first, no more kept
// than the policy says.
func (w *worker) checkHistory(i int, m model) {
	st, answer := w.env.answered("GET", w.itemPath(i)+"?history", w.owner, "")
	var out struct {
		Versions []struct {
			Version          int
			Deleted, Current bool
		}
	}
	if st == 200 {
		_ = json.Unmarshal([]byte(answer[:strings.LastIndexByte(answer, 0)]), &out)
	}
	vs := out.Versions
	switch {
	case st == 404 && !m.exists:
		return
	case st != 200 || len(vs) == 0:
		w.t.Errorf("worker %d item %d: GET ?history answers %d %s", w.id, i, st, answer)
		return
	case m.exists && (!vs[0].Current || vs[0].Deleted || vs[0].Version != versionOf(m.etag)):
		w.t.Errorf("worker %d item %d: history %s does not start with the item at %s", w.id, i, answer, m.etag)
	}
	kept := 0
	for j, v := range vs {
		if j > 0 && v.Version >= vs[j-1].Version {
			w.t.Errorf("worker %d item %d: history out of order: %s", w.id, i, answer)
		}
		if !v.Current && !v.Deleted {
			kept++
		}
	}
	w.env.history.kept.Add(int64(kept))
	if kept > keptVersions {
		w.t.Errorf("worker %d item %d: %d versions shown, the policy keeps %d: %s", w.id, i, kept, keptVersions, answer)
	}
}

// tally counts answers per status.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func newTally() *tally { return &tally{n: map[string]int{}} }

func (c *tally) add(status int, killed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[strconv.Itoa(status)]++
	if killed {
		c.n["killed"]++
	}
}

func (c *tally) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.n {
		if k != "killed" {
			n += v
		}
	}
	return n
}

func (c *tally) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.n))
	for k := range c.n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + strconv.Itoa(c.n[k])
	}
	return strings.Join(parts, " ")
}
