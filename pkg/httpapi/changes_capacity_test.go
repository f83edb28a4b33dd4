package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/changes"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/streampoll"
)

// TestChangesCapacityTable measures what the changes feed costs
// (docs/capacity.md, "The changes feed"), as TestCapacityTable measures
// the API's operations: over tables with streams, through the API, with
// the changes function's handler (changes.Handler over store.LogChanges)
// reading the streams through a poller, each count taken apart by a
// storetest.Counter of its own. For each change, of items of 100 B to
// 100 KB: the request's calls and units, and the rows the changes
// function wrote for it. Then the reads of the feed: a page of the log,
// a read with nothing new, and the first page of a new replica (the walk
// of the namespace's current items).
//
// The requests are those of TestCapacityTable's rows where the names
// match (in a namespace whose policy and limits are cached), and must
// cost what that table says: keeping the feed adds no call and no unit to
// a write's request. The measured rows must be those of docs/capacity.md's
// tables headed "Change" and "Feed read" (checkDocumentedTables).
//
// The changes function's store runs on a clock that stands still while
// the function writes, so that a slow machine cannot make a row's write
// look late and have it written again (LogChanges's rule, which would
// count a second unit): the units are those of one write per row.
func TestChangesCapacityTable(t *testing.T) {
	t.Parallel()
	tables := storetest.NewStreamedTables(t)
	api, feed := storetest.NewCounter(storetest.Client(t)), storetest.NewCounter(storetest.Client(t))
	clock := &storetest.Clock{}
	objects := blob.Objects{Bucket: blobtest.New(t)}
	st := store.New(api, tables, store.WithLimitsTTL(24*lifetime), store.WithTrackedTTL(24*lifetime), store.WithClock(clock.Now),
		store.WithPolicySettle(testSettle), store.WithPolicyWindow(48*lifetime), store.WithObjects(objects))
	srv := httptest.NewServer(httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("k"), DeleteAllBudget: apitest.Budget, RequestBudget: apitest.Budget,
		Logger: apitest.Logger(t), Now: clock.Now, Bucket: objects,
	}))
	defer srv.Close()
	e := &env{t: t, srv: srv, tables: tables, client: storetest.Client(t), clock: clock, objects: objects}

	// The changes function, on a clock set to the API's before each
	// drain and standing still during it.
	var logAt atomic.Int64
	logger := store.New(feed, tables, store.WithClock(func() time.Time { return time.Unix(0, logAt.Load()) }))
	found, err := streampoll.Streams(t.Context(), e.client, tables.Data, tables.List)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := streampoll.NewClient(t.Context(), os.Getenv(config.EnvDynamoDBEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	poller, err := streampoll.New(streams, found, changes.Handler(logger, apitest.Logger(t)), streampoll.WithLogger(apitest.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	drain := func() storetest.Usage {
		t.Helper()
		feed.Take()
		logAt.Store(clock.Now().UnixNano())
		if err := poller.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		return feed.Take()
	}
	// cursor is a replica's, kept up to date by sync.
	cursor := ""
	sync := func() {
		t.Helper()
		for range 100 {
			body := e.do("GET", base+"/feed?changes="+url.QueryEscape(cursor)+"&limit=1000", "").expect(t, 200).body
			cursor = body["cursor"].(string)
			if body["upToDate"] == true {
				return
			}
		}
		t.Fatal("the feed never said it was up to date")
	}

	// The namespace's first write reads its policy and marks it in the
	// catalogue; the rows below are later writes, as in
	// TestCapacityTable's namespace cap. A replica follows from here.
	e.do("POST", base+"/feed/warm", kb1).expect(t, 201)
	sync()
	drain()
	api.Take()

	image := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0x00, 0xff}, 100_000/6)
	tenKB := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0x00, 0xff}, 10_000/6)
	b100 := `{"data":{"s":"` + strings.Repeat("a", 100-len(`{"s":""}`)) + `"}}`
	type change struct {
		op     string
		status int
		run    func() response
		// capacityRow names TestCapacityTable's row of the same
		// request, whose cells the request must have.
		capacityRow string
	}
	post := func(path, body string) func() response {
		return func() response { return e.do("POST", base+path, body) }
	}
	put := func(path, body string) func() response {
		return func() response { return e.do("PUT", base+path, body) }
	}
	del := func(path string) func() response { return func() response { return e.do("DELETE", base+path, "") } }
	png := func(method, path string, b []byte) func() response {
		return func() response { return e.send(method, base+path, b, "Content-Type", "image/png") }
	}
	rows := []change{
		{"INSERT, 100 B item (POST)", 201, post("/feed/b100", b100), ""},
		{"MODIFY, 100 B item (PUT, same size)", 200, put("/feed/b100", b100), ""},
		{"REMOVE, 100 B item (DELETE)", 204, del("/feed/b100"), ""},
		{"INSERT, 1 KB item (POST)", 201, post("/feed/kb1", kb1), ""},
		{"MODIFY, 1 KB item (PUT, same size)", 200, put("/feed/kb1", kb1), "PUT key-value item, same size"},
		{"REMOVE, 1 KB item (DELETE)", 204, del("/feed/kb1"), "DELETE key-value item"},
		{"INSERT, 10 KB item (POST, binary)", 201, png("POST", "/feed/kb10", tenKB), ""},
		{"MODIFY, 10 KB item (PUT, binary, same size)", 200, png("PUT", "/feed/kb10", tenKB), ""},
		{"REMOVE, 10 KB item (DELETE)", 204, del("/feed/kb10"), ""},
		{"INSERT, 100 KB item (POST, binary)", 201, png("POST", "/feed/kb100", image), "POST key-value item, binary (100 KB image/png)"},
		{"MODIFY, 100 KB item (PUT, binary, same size)", 200, png("PUT", "/feed/kb100", image), ""},
		{"REMOVE, 100 KB item (DELETE)", 204, del("/feed/kb100"), "DELETE key-value item, binary (100 KB)"},
		{"INSERT, 1 KB list item (POST)", 201, post("/feed/list/k0", kb1), "POST list item (1 KB)"},
		{"REMOVE, 1 KB list item (DELETE)", 204, del("/feed/list/k0"), "DELETE list item"},
		{"batch of 100 INSERTs, 1 KB items (POST /batch, one by one)", 200, func() response {
			return e.do("POST", base+"/batch", batchOf(100, "POST", "feed", kb1, false))
		}, ""},
	}
	// The expiring item's rows come last: the clock moves past its expiry.
	expiringRows := []change{
		{"INSERT, 1 KB item that expires (POST)", 201, post("/feed/ttl", expiring(kb1)), "POST key-value item that expires (1 KB)"},
		{"REMOVE, 1 KB item, expired (GET 404 removes it)", 404, func() response {
			e.expire()
			return e.do("GET", base+"/feed/ttl", "")
		}, "GET expired key-value item (404, removes it)"},
	}
	capacityRows := documentedRows(t, "| API operation |")
	var changesMD, readsMD strings.Builder
	changesMD.WriteString("| Change | the request: DynamoDB calls | RCU | WCU | the changes function: DynamoDB calls | WCU |\n|---|---|---:|---:|---|---:|\n")
	readsMD.WriteString("| Feed read | DynamoDB calls | RCU | WCU |\n|---|---|---:|---:|\n")
	measure := func(r change) {
		t.Helper()
		api.Take()
		r.run().expect(t, r.status)
		req := api.Take()
		up := drain()
		fmt.Fprintf(&changesMD, "| %s | %s | %.1f | %.1f | %s | %.1f |\n", r.op, callList(req.Calls), req.Read, req.Write, callList(up.Calls), up.Write)
		if up.Read != 0 {
			t.Errorf("%s: the changes function read %.1f units", r.op, up.Read)
		}
		if r.capacityRow != "" {
			want := capacityRows[r.capacityRow]
			got := fmt.Sprintf("%s | %.1f | %.1f", callList(req.Calls), req.Read, req.Write)
			if len(want) == 0 {
				t.Errorf("%s: no row %q in %s", r.op, r.capacityRow, capacityDoc)
			}
			for _, w := range want {
				if w != got {
					t.Errorf("%s: the request cost %q with the feed kept, %q as %s says (row %q)", r.op, got, w, capacityDoc, r.capacityRow)
				}
			}
		}
	}
	read := func(op, cursor string, limit int) map[string]any {
		t.Helper()
		api.Take()
		body := e.do("GET", fmt.Sprintf("%s/feed?changes=%s&limit=%d", base, url.QueryEscape(cursor), limit), "").expect(t, 200).body
		u := api.Take()
		fmt.Fprintf(&readsMD, "| %s | %s | %.1f | %.1f |\n", op, callList(u.Calls), u.Read, u.Write)
		return body
	}

	for _, r := range rows {
		measure(r)
	}
	// The replica reads what came so far; then 100 changes after its
	// cursor (updates of the batch's items) are a page of the log, once
	// past the horizon.
	clock.Advance(3 * time.Second)
	sync()
	e.do("POST", base+"/batch", batchOf(100, "PUT", "feed", kb1, false)).expect(t, 200)
	drain()
	clock.Advance(3 * time.Second)
	page := read("log page, 100 changes of 1 KB items (limit 100)", cursor, 100)
	if n := len(page["changes"].([]any)); n != 100 || page["upToDate"] != true {
		t.Fatalf("the page holds %d changes, upToDate %v; want 100, true", n, page["upToDate"])
	}
	clock.Advance(time.Second)
	page = read("log page, nothing new", page["cursor"].(string), 100)
	if n := len(page["changes"].([]any)); n != 0 {
		t.Fatalf("nothing new: %d changes", n)
	}
	page = read("first page of a new replica (the walk), 100 items of 1 KB (limit 100)", "", 100)
	if n := len(page["changes"].([]any)); n != 100 {
		t.Fatalf("the walk's first page holds %d items, want 100", n)
	}
	for _, r := range expiringRows {
		measure(r)
	}

	t.Logf("\n%s\n%s", changesMD.String(), readsMD.String())
	checkDocumentedTables(t, "| Change |", changesMD.String())
	checkDocumentedTables(t, "| Feed read |", readsMD.String())
}

// kb1 is TestCapacityTable's write body of 1 KB.
var kb1 = `{"data":{"s":"` + strings.Repeat("a", 1000-20) + `"}}`
