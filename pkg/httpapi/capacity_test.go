package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

var capacityReport = flag.String("capacity-report", "", "write the capacity table as Markdown to this file")

// batchOf is a batch of n operations on items ns/0 .. ns/n-1.
func batchOf(n int, method, ns, body string, atomic bool) string {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"method":%q,"path":"%s/%d"`, method, ns, i)
		if body != "" {
			ops[i] += `,"body":` + body
		}
		ops[i] += "}"
	}
	return fmt.Sprintf(`{"atomic":%v,"operations":[%s]}`, atomic, strings.Join(ops, ","))
}

// indexedKB is a write body of about 1 KB of data whose "status" is
// status: one length for "open" and "done", so that changing it keeps the
// item's size.
func indexedKB(status string) string {
	return fmt.Sprintf(`{"data":{"status":%q,"s":"%s"}}`, status, strings.Repeat("a", 960))
}

// expiring adds a ttl of lifetime to a write body.
func expiring(body string) string {
	return strings.Replace(body, "{", fmt.Sprintf(`{"ttl":%d,`, int(lifetime.Seconds())), 1)
}

// TestCapacityTable measures, per API operation, the DynamoDB calls made and
// the capacity they consumed (ReturnConsumedCapacity=INDEXES), and checks
// the call counts against the floor: one data call per single-item
// operation plus at most one usage write (and, the first time an owner
// writes, one read of the limits; the first time a namespace is used, one
// read of its policy; the first time an item is created in it, two
// updates that mark it and its app in the catalogue), one query per 1 MB
// of list data,
// ceil(n/25) batch writes and one usage write per owner for delete-all. A
// growing update costs a refused conditional write more: it learns the old
// size from it instead of reading first. In a namespace with one index a
// write reads the whole item instead of its metadata and commits its
// entries with it, and a query reads every write shard of the index, then
// the page's items in one call. The measured rows must be those of
// docs/capacity.md (checkDocumented).
func TestCapacityTable(t *testing.T) {
	t.Parallel()
	tables := storetest.NewTables(t)
	counter := storetest.NewCounter(storetest.Client(t))
	// The limits and policies read by a namespace's first request stay
	// cached for the whole table, however long a loaded machine takes and
	// however far the clock is moved to expire an item.
	clock := &storetest.Clock{}
	// Index builds and the change into private of the index rows' setup
	// settle at once; that change completes only before its window, less
	// the cache time, has passed, so the window outlasts the cache.
	// Large values go to a bucket on the in-process S3 engine, whose
	// calls the counter does not see: docs/capacity.md lists them.
	objects := blob.Objects{Bucket: blobtest.New(t)}
	st := store.New(counter, tables, store.WithLimitsTTL(24*lifetime), store.WithTrackedTTL(24*lifetime), store.WithClock(clock.Now),
		store.WithPolicySettle(testSettle), store.WithPolicyWindow(48*lifetime), store.WithObjects(objects))
	api := httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("k"), DeleteAllBudget: apitest.Budget, RequestBudget: apitest.Budget,
		Logger: apitest.Logger(t), Now: clock.Now, Bucket: objects,
	})
	srv := httptest.NewServer(api)
	defer srv.Close()
	e := &env{t: t, srv: srv, tables: tables, client: storetest.Client(t), clock: clock, objects: objects}

	kb := func(n int) string { return `{"data":{"s":"` + strings.Repeat("a", n*1000-20) + `"}}` }
	list := base + "/cap/list"
	big := base + "/cap/big"
	hist := base + "/hist/item"
	var exported string // the export page, as an import body
	type row struct {
		op     string
		status int
		run    func() response
		calls  map[string]int // the floor
	}
	rows := []row{
		{"POST key-value item (1 KB)", 201, func() response { return e.do("POST", base+"/cap/item", kb(1)) }, map[string]int{"TransactWriteItems": 1, "BatchGetItem": 1, "GetItem": 1, "UpdateItem": 2}},
		{"GET key-value item (1 KB)", 200, func() response { return e.do("GET", base+"/cap/item", "") }, map[string]int{"GetItem": 1}},
		{"PUT key-value item, same size", 200, func() response { return e.do("PUT", base+"/cap/item", kb(1)) }, map[string]int{"GetItem": 1, "UpdateItem": 1}},
		{"PUT key-value item, grows to 3 KB", 200, func() response { return e.do("PUT", base+"/cap/item", kb(3)) }, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"PUT key-value item, shrinks to 1 KB", 200, func() response { return e.do("PUT", base+"/cap/item", kb(1)) }, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		// A patch reads the whole item, whose value it patches, and writes
		// as a PUT of its result does.
		{"PATCH key-value item (1 KB), same size", 200, func() response {
			return e.patch(base+"/cap/item", httpapi.MergePatchType, `{"s":"`+strings.Repeat("b", 980)+`"}`)
		}, map[string]int{"GetItem": 1, "UpdateItem": 1}},
		{"PATCH key-value item, grows to 3 KB", 200, func() response {
			return e.patch(base+"/cap/item", httpapi.MergePatchType, `{"s":"`+strings.Repeat("c", 2980)+`"}`)
		}, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"PATCH key-value item, shrinks to 1 KB", 200, func() response {
			return e.patch(base+"/cap/item", httpapi.MergePatchType, `{"s":"`+strings.Repeat("d", 980)+`"}`)
		}, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"DELETE key-value item", 204, func() response { return e.do("DELETE", base+"/cap/item", "") }, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"POST list item (1 KB)", 201, func() response { return e.do("POST", list+"/k0000", kb(1)) }, map[string]int{"TransactWriteItems": 1}},
		{"GET list item (1 KB)", 200, func() response { return e.do("GET", list+"/k0000", "") }, map[string]int{"GetItem": 1}},
		{"DELETE list item", 204, func() response { return e.do("DELETE", list+"/k0000", "") }, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"GET list page, 100 items of 1 KB", 200, func() response { return e.do("GET", list+"/list?limit=100", "") }, map[string]int{"Query": 1}},
		{"GET list page, 1000 items of 1 KB (1 MB)", 200, func() response { return e.do("GET", list+"/list?limit=1000", "") }, map[string]int{"Query": 2}},
		{"GET list page, 100 items of 20 KB (2 MB)", 200, func() response { return e.do("GET", big+"/list?limit=100", "") }, map[string]int{"Query": 3}},
		// The users of an app are read from every shard of its index,
		// then the owner's keys through the owner index of each table: one
		// query of the key-value table's, and the list table's in the
		// pages DynamoDB Local cuts (three here, for 1,100 items holding
		// 3 MB), then the items, 100 a call.
		{"GET export page, 1000 records of 1 KB (one owner)", 200, func() response {
			r := e.do("GET", admin+"/apps/"+app+"/export?limit=1000", "")
			var page struct{ Records json.RawMessage }
			if err := json.Unmarshal(r.raw, &page); err != nil {
				t.Fatal(err)
			}
			exported = `{"records":` + string(page.Records) + `}`
			return r
		}, map[string]int{"Query": schema.AppShards + 4, "BatchGetItem": 10}},
		// A user's export reads the user's usage records (one query of
		// their partition), then in each app what an app's export reads
		// of that owner: no shard of the users index.
		{"GET user export page, 1000 records of 1 KB (one app)", 200, func() response {
			return e.do("GET", admin+"/users/anonymous/export?limit=1000", "")
		}, map[string]int{"Query": 1 + 4, "BatchGetItem": 10}},
		// The catalogue's listings: the registry's index, one query per
		// partition; the namespaces table, one query of the app's.
		{"GET apps with include=held, one page", 200, func() response { return e.do("GET", admin+"/apps?include=held", "") }, map[string]int{"Query": 2}},
		{"GET namespaces with include=held, one page", 200, func() response { return e.do("GET", admin+"/apps/"+app+"/namespaces?include=held", "") }, map[string]int{"Query": 1}},
		// A page of a namespace's keys reads the app's users from every
		// shard, then at most limit entries of the owner indexes (here
		// one owner's: a query of each table's), then the keys found, 100
		// a call.
		{"GET namespace items page, limit 50 (one owner)", 200, func() response {
			return e.do("GET", admin+"/apps/"+app+"/namespaces/cap/items?limit=50", "")
		}, map[string]int{"Query": schema.AppShards + 2, "BatchGetItem": 1}},
		{"GET namespace items page, limit 200 (one owner)", 200, func() response {
			return e.do("GET", admin+"/apps/"+app+"/namespaces/cap/items?limit=200", "")
		}, map[string]int{"Query": schema.AppShards + 2, "BatchGetItem": 2}},
		{"GET namespace items page, limit 200, one user", 200, func() response {
			return e.do("GET", admin+"/apps/"+app+"/namespaces/cap/items?limit=200&user=anonymous", "")
		}, map[string]int{"Query": 2, "BatchGetItem": 2}},
		// 99 records and the owner's usage change per transaction; one
		// read of the namespace's policy, and one of the writer's records
		// (whether an erase refuses their writes).
		{"POST import of those 1000 records into another app", 200, func() response {
			return e.do("POST", admin+"/apps/"+otherApp+"/import", exported)
		}, map[string]int{"BatchGetItem": 1, "GetItem": 1, "TransactWriteItems": 11, "UpdateItem": 2}},
		{"DELETE list of 1000 items (delete-all)", 204, func() response { return e.do("DELETE", list+"/list", "") }, map[string]int{"Query": 2, "TransactWriteItems": 11}},
		{"POST key-value item that expires (1 KB)", 201, func() response { return e.do("POST", base+"/cap/ttl", expiring(kb(1))) }, map[string]int{"TransactWriteItems": 1}},
		{"GET key-value item that expires (1 KB)", 200, func() response { return e.do("GET", base+"/cap/ttl", "") }, map[string]int{"GetItem": 1}},
		{"GET expired key-value item (404, removes it)", 404, func() response {
			e.expire()
			return e.do("GET", base+"/cap/ttl", "")
		}, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"batch of 100 POSTs (1 KB), one by one", 200, func() response { return e.do("POST", base+"/batch", batchOf(100, "POST", "b1", kb(1), false)) }, map[string]int{"TransactWriteItems": 100, "GetItem": 1, "UpdateItem": 2}},
		{"batch of 100 GETs (1 KB)", 200, func() response { return e.do("POST", base+"/batch", batchOf(100, "GET", "b1", "", false)) }, map[string]int{"BatchGetItem": 1}},
		{"batch of 50 POSTs (1 KB), atomic", 200, func() response { return e.do("POST", base+"/batch", batchOf(50, "POST", "b2", kb(1), true)) }, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1, "GetItem": 1, "UpdateItem": 2}},
		// In a namespace that keeps history (hist: up to 10 versions),
		// a write reads the item and its history head in one call and
		// commits the kept version, the head and the usage with it; a
		// create reads the head alone (and, the first time, the policy).
		{"POST key-value item (1 KB), with history", 201, func() response { return e.do("POST", hist, kb(1)) }, map[string]int{"GetItem": 2, "TransactWriteItems": 1, "UpdateItem": 2}},
		{"PUT key-value item, same size, with history", 200, func() response { return e.do("PUT", hist, kb(1)) }, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1}},
		{"PUT key-value item, grows to 3 KB, with history", 200, func() response { return e.do("PUT", hist, kb(3)) }, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1}},
		{"GET ?history of an item with 2 kept versions", 200, func() response { return e.do("GET", hist+"?history", "") }, map[string]int{"BatchGetItem": 1}},
		{"GET ?version of a kept version (1 KB)", 200, func() response { return e.do("GET", hist+"?version=1", "") }, map[string]int{"BatchGetItem": 1}},
		{"POST ?restore of a kept version (1 KB)", 200, func() response { return e.do("POST", hist+"?restore=1", "") }, map[string]int{"BatchGetItem": 2, "TransactWriteItems": 1}},
		{"DELETE key-value item, with history", 204, func() response { return e.do("DELETE", hist, "") }, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1}},
		{"POST key-value item after its delete, with history", 201, func() response { return e.do("POST", hist, kb(1)) }, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"DELETE ?history of 5 kept versions and a marker", 200, func() response { return e.do("DELETE", hist+"?history", "") }, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		// An atomic batch reads its items and their history heads in one
		// call, then commits as one transaction.
		{"batch of 10 POSTs (1 KB), atomic, with history", 200, func() response { return e.do("POST", base+"/batch", batchOf(10, "POST", "hist", kb(1), true)) }, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1}},
		{"batch of 10 PUTs (1 KB), atomic, with history", 200, func() response { return e.do("POST", base+"/batch", batchOf(10, "PUT", "hist", kb(1), true)) }, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1}},
	}
	// In namespace ix (shared) and ixp (private) the items' status is
	// indexed; ix holds 300 items of status open besides the one the write
	// rows take through its life, enough for every shard to answer a
	// query's first read in full, and ixp 20 of alice's.
	ix, ixp := base+"/ix", base+"/ixp"
	indexRows := len(rows)
	rows = append(rows, []row{
		// The entry's put is one more action of the create's transaction.
		{"POST key-value item (1 KB), one index", 201, func() response { return e.do("POST", ix+"/item", indexedKB("open")) }, map[string]int{"TransactWriteItems": 1}},
		// The whole item is read (its value names its entries); an update
		// that keeps the indexed value stays one UpdateItem.
		{"PUT key-value item, same size, indexed value unchanged, one index", 200, func() response { return e.do("PUT", ix+"/item", indexedKB("open")) }, map[string]int{"GetItem": 1, "UpdateItem": 1}},
		// One that changes it becomes a transaction: the update, the old
		// entry's delete and the new one's put.
		{"PUT key-value item, same size, indexed value changed, one index", 200, func() response { return e.do("PUT", ix+"/item", indexedKB("done")) }, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		{"DELETE key-value item, one index", 204, func() response { return e.do("DELETE", ix+"/item", "") }, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		// A query reads each of the index's 8 write shards for twice its
		// share of the page, at least 32 entries (and a shard again where
		// the merge used up what it read, which these keys' spread never
		// makes it do), then the page's items in one BatchGetItem.
		{"GET query page, 10 items of 1 KB", 200, func() response { return e.do("GET", ix+"?index=byStatus&eq=open&limit=10", "") }, map[string]int{"Query": schema.IndexShards, "BatchGetItem": 1}},
		{"GET query page, 100 items of 1 KB", 200, func() response { return e.do("GET", ix+"?index=byStatus&eq=open&limit=100", "") }, map[string]int{"Query": schema.IndexShards, "BatchGetItem": 1}},
		// In a private namespace the caller's entries are one partition.
		{"GET query page, 10 items of 1 KB, private namespace", 200, func() response {
			return e.as("alice", "GET", ixp+"?index=byStatus&eq=open&limit=10", "")
		}, map[string]int{"Query": 1, "BatchGetItem": 1}},
	}...)
	// Binary values, in namespace cap, whose policy and the caller's
	// limits the first row read. A value of 100 KB is one item; a large
	// one (1 MB) is reserved, sent to the bucket (no DynamoDB call) and
	// committed.
	image := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0x00, 0xff}, 100_000/6)
	video := bytes.Repeat([]byte("\x00\x01frame"), 1<<20/7)
	var upload response // the reservation, for the commit
	rows = append(rows, []row{
		{"POST key-value item, binary (100 KB image/png)", 201, func() response {
			return e.send("POST", base+"/cap/image", image, "Content-Type", "image/png")
		}, map[string]int{"TransactWriteItems": 1}},
		{"GET key-value item, binary (100 KB)", 200, func() response { return e.send("GET", base+"/cap/image", nil) }, map[string]int{"GetItem": 1}},
		{"DELETE key-value item, binary (100 KB)", 204, func() response { return e.do("DELETE", base+"/cap/image", "") }, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
		// The reservation is an item of its own, put with the usage
		// change.
		{"POST ?upload, reserving 1 MB", 201, func() response {
			upload = e.do("POST", base+"/cap/video?upload", `{"size": `+strconv.Itoa(len(video))+`, "contentType": "video/mp4"}`)
			return upload
		}, map[string]int{"TransactWriteItems": 1}},
		// The commit reads the reservation and the item (none here), and
		// turns one into the other with the usage changes in one
		// transaction.
		{"POST ?commit of the 1 MB upload", 201, func() response {
			fields := map[string]string{}
			for k, v := range upload.body["fields"].(map[string]any) {
				fields[k] = v.(string)
			}
			res := blobtest.Post(t, blob.Upload{URL: upload.body["url"].(string), Fields: fields}, video)
			res.Body.Close()
			return e.do("POST", base+"/cap/video?commit", `{"uploadId": "`+upload.body["uploadId"].(string)+`"}`)
		}, map[string]int{"GetItem": 2, "TransactWriteItems": 1}},
		{"GET large value (302 to the bucket)", 302, func() response { return e.send("GET", base+"/cap/video", nil) }, map[string]int{"GetItem": 1}},
		{"DELETE large value", 204, func() response { return e.do("DELETE", base+"/cap/video", "") }, map[string]int{"GetItem": 1, "TransactWriteItems": 1}},
	}...)
	// Streamed quota mode, in an app of its own with the same limits: the
	// writes are plain conditional writes, and the stream function counts
	// them, one UpdateItem per owner and batch of stream records (the last
	// row: the batch of the 100 creates above, as the stream hands it
	// over).
	streamedRows := len(rows)
	const streamedApp = "7c0e54a2-3f1d-4b8e-9a65-0d2c1e8f4b39"
	sbase := "/rest/api/v1/data/" + streamedApp
	rows = append(rows, []row{
		{"POST key-value item (1 KB), streamed", 201, func() response { return e.do("POST", sbase+"/cap/item", kb(1)) }, map[string]int{"BatchGetItem": 1, "GetItem": 2, "PutItem": 1, "UpdateItem": 2}},
		{"PUT key-value item, same size, streamed", 200, func() response { return e.do("PUT", sbase+"/cap/item", kb(1)) }, map[string]int{"GetItem": 1, "UpdateItem": 1}},
		{"PUT key-value item, grows to 3 KB, streamed", 200, func() response { return e.do("PUT", sbase+"/cap/item", kb(3)) }, map[string]int{"GetItem": 1, "UpdateItem": 1}},
		{"PUT key-value item, shrinks to 1 KB, streamed", 200, func() response { return e.do("PUT", sbase+"/cap/item", kb(1)) }, map[string]int{"GetItem": 1, "UpdateItem": 1}},
		{"DELETE key-value item, streamed", 204, func() response { return e.do("DELETE", sbase+"/cap/item", "") }, map[string]int{"GetItem": 1, "DeleteItem": 1}},
		{"POST list item (1 KB), streamed", 201, func() response { return e.do("POST", sbase+"/cap/list/k0000", kb(1)) }, map[string]int{"GetItem": 1, "PutItem": 1}},
		{"DELETE list item, streamed", 204, func() response { return e.do("DELETE", sbase+"/cap/list/k0000", "") }, map[string]int{"GetItem": 1, "DeleteItem": 1}},
		{"batch of 100 POSTs (1 KB), one by one, streamed", 200, func() response { return e.do("POST", sbase+"/batch", batchOf(100, "POST", "b1", kb(1), false)) }, map[string]int{"GetItem": 1, "PutItem": 100, "UpdateItem": 2}},
		{"batch of 50 POSTs (1 KB), atomic, streamed", 200, func() response { return e.do("POST", sbase+"/batch", batchOf(50, "POST", "b2", kb(1), true)) }, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1, "GetItem": 1, "UpdateItem": 2}},
		{"stream counting of the 100 creates (one batch of one owner)", 200, func() response {
			changes := make([]store.StreamChange, 100)
			for j := range changes {
				out, err := e.client.GetItem(context.Background(), &dynamodb.GetItemInput{
					TableName: aws.String(tables.Data),
					Key:       map[string]types.AttributeValue{"dataKey": &types.AttributeValueMemberS{Value: fmt.Sprintf("%s|b1|%d", streamedApp, j)}},
				})
				if err != nil {
					t.Fatal(err)
				}
				changes[j] = store.StreamChange{Sequence: strconv.Itoa(100 + j), At: clock.Now(), New: out.Item}
			}
			if n, err := st.CountStreamed(context.Background(), "shard-capacity", changes); err != nil || n != len(changes) {
				t.Fatalf("counting: %d, %v", n, err)
			}
			return response{status: 200}
		}, map[string]int{"UpdateItem": 1}},
	}...)
	streamedSetup := func() {
		if err := st.SetQuotaMode(context.Background(), streamedApp, uds.QuotaStreamed); err != nil {
			t.Fatal(err)
		}
		if r := e.do("PUT", admin+"/apps/"+streamedApp+"/quota", `{"limitBytes":100000000,"limitItems":100000}`); r.status != 200 {
			t.Fatalf("the streamed app's limits: %d %s", r.status, r.raw)
		}
	}
	indexSetup := func() {
		const byStatus = `"indexes":[{"name":"byStatus","path":"/status","type":"string"}]`
		e.setPolicy(t, "ix", `{"access":"shared",`+byStatus+`}`)
		e.setPolicy(t, "ixp", `{"access":"private",`+byStatus+`}`)
		e.buildIndexes(t, "ix")
		e.buildIndexes(t, "ixp")
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for j := range 300 {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if r := e.do("POST", fmt.Sprintf("%s/q%03d", ix, j), indexedKB("open")); r.status != 201 {
					t.Errorf("fill %s: %d %s", ix, r.status, r.raw)
				}
			}()
		}
		wg.Wait()
		for j := range 20 {
			e.as("alice", "POST", fmt.Sprintf("%s/q%03d", ixp, j), indexedKB("open")).expect(t, 201)
		}
	}
	if r := e.do("PUT", admin+"/apps/"+app+"/namespaces/hist", `{"access":"shared","history":{"versions":10}}`); r.status != 200 {
		t.Fatalf("setting the history policy: %d %s", r.status, r.raw)
	}
	var md strings.Builder
	md.WriteString("| API operation | DynamoDB calls | RCU | WCU |\n|---|---|---:|---:|\n")
	for i, r := range rows {
		if r.op == "GET list page, 100 items of 1 KB" { // the list reads need lists
			keys := make([]string, 1000)
			for j := range keys {
				keys[j] = fmt.Sprintf("k%04d", j)
			}
			e.fill(list, keys, 1000)
			e.fill(big, keys[:100], 20000)
		}
		if i == indexRows {
			indexSetup()
		}
		if i == streamedRows {
			streamedSetup()
		}
		counter.Take()
		r.run().expect(t, r.status)
		u := counter.Take()
		fmt.Fprintf(&md, "| %s | %s | %.1f | %.1f |\n", r.op, callList(u.Calls), u.Read, u.Write)
		for op, n := range u.Calls {
			if n > r.calls[op] {
				t.Errorf("%s: %d %s calls, floor %d", r.op, n, op, r.calls[op])
			}
		}
	}
	t.Logf("\n%s", md.String())
	if *capacityReport != "" {
		if err := os.WriteFile(*capacityReport, []byte(md.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkDocumented(t, md.String())
}

// capacityDoc is the document whose tables give the measured rows, from
// this package's directory.
const capacityDoc = "../../docs/capacity.md"

// checkDocumented holds docs/capacity.md to the measured table, so that a
// change in what an operation costs cannot leave the document behind:
// every measured row must stand in one of its tables of this release,
// cell for cell, and every row of those tables must be measured. Sections
// whose heading says "before" record earlier releases and are not held to
// it.
func checkDocumented(t *testing.T, measured string) {
	t.Helper()
	checkDocumentedTables(t, "| API operation |", measured)
}

// checkDocumentedTables is checkDocumented for the tables of
// docs/capacity.md whose header row starts with header.
func checkDocumentedTables(t *testing.T, header, measured string) {
	t.Helper()
	documented := documentedRows(t, header)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(measured), "\n")[2:] {
		op, cells := tableRow(line)
		seen[op] = true
		if len(documented[op]) == 0 {
			t.Errorf("%s: measured %q, not in %s", op, cells, capacityDoc)
		}
		for _, r := range documented[op] {
			if r != cells {
				t.Errorf("%s: %s says %q, measured %q", op, capacityDoc, r, cells)
			}
		}
	}
	for op := range documented {
		if !seen[op] {
			t.Errorf("%s: in %s, not measured", op, capacityDoc)
		}
	}
}

// documentedRows reads the rows of docs/capacity.md's tables of this
// release whose header row starts with header: each operation's rows'
// cells but the first, joined.
func documentedRows(t *testing.T, header string) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile(capacityDoc)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string][]string{} // operation → its rows' cells, joined
	earlier, inTable := false, false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			earlier = strings.Contains(strings.ToLower(line), "before")
		case strings.HasPrefix(line, header):
			inTable = true
		case !strings.HasPrefix(line, "|"):
			inTable = false
		case inTable && !earlier && !strings.HasPrefix(line, "|---"):
			op, cells := tableRow(line)
			documented[op] = append(documented[op], cells)
		}
	}
	return documented
}

// tableRow splits a Markdown table row into its first cell and the others,
// trimmed and joined by " | ".
func tableRow(line string) (string, string) {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells[0], strings.Join(cells[1:], " | ")
}

func callList(calls map[string]int) string {
	var parts []string
	for op, n := range calls {
		parts = append(parts, fmt.Sprintf("%d %s", n, op))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
