package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// actionRecorder is a store.Client that notes the IAM action each call
// needs, on which table or index, named as infra/stack_test.go's wantAccess
// names them ("DataTable: PutItem", "DataTable/index/byOwner: Query"). A
// transaction needs the action of each item it writes. It implements every
// method of store.Client itself, so a method added there does not compile
// here until it is recorded too.
type actionRecorder struct {
	next  store.Client
	names map[string]string // physical table name → table ID
	mu    sync.Mutex
	seen  map[string]bool
}

func newActionRecorder(next store.Client, tables store.Tables) *actionRecorder {
	r := &actionRecorder{next: next, names: map[string]string{}, seen: map[string]bool{}}
	for _, t := range schema.Tables {
		r.names[tables.Name(t)] = t.ID
	}
	return r
}

func (r *actionRecorder) note(table, index *string, action string) {
	resource := r.names[aws.ToString(table)]
	if index != nil {
		resource += "/index/" + *index
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[resource+": "+action] = true
}

// actions returns the actions seen, sorted.
func (r *actionRecorder) actions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.seen))
	for a := range r.seen {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

func (r *actionRecorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.note(in.TableName, nil, "GetItem")
	return r.next.GetItem(ctx, in, o...)
}

func (r *actionRecorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.note(in.TableName, nil, "UpdateItem")
	return r.next.UpdateItem(ctx, in, o...)
}

func (r *actionRecorder) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.note(in.TableName, in.IndexName, "Query")
	return r.next.Query(ctx, in, o...)
}

func (r *actionRecorder) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	r.note(in.TableName, in.IndexName, "Scan")
	return r.next.Scan(ctx, in, o...)
}

func (r *actionRecorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for table := range in.RequestItems {
		r.note(&table, nil, "BatchGetItem")
	}
	return r.next.BatchGetItem(ctx, in, o...)
}

func (r *actionRecorder) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	for table, reqs := range in.RequestItems {
		for _, w := range reqs {
			if w.PutRequest != nil {
				r.note(&table, nil, "PutItem")
			} else {
				r.note(&table, nil, "DeleteItem")
			}
		}
	}
	return r.next.BatchWriteItem(ctx, in, o...)
}

func (r *actionRecorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			r.note(it.Put.TableName, nil, "PutItem")
		case it.Update != nil:
			r.note(it.Update.TableName, nil, "UpdateItem")
		case it.Delete != nil:
			r.note(it.Delete.TableName, nil, "DeleteItem")
		case it.ConditionCheck != nil:
			r.note(it.ConditionCheck.TableName, nil, "ConditionCheckItem")
		}
	}
	return r.next.TransactWriteItems(ctx, in, o...)
}

// TestExportImportDynamoDBActions lists the DynamoDB actions export and
// import take, through every path they have (list and key-value items,
// records skipped, a conflict, an expired item in the way). The admin
// function serves them, and IAM refuses it whatever infra/access.go does
// not grant, which no test against the local engine would notice: a store
// change that makes them call DynamoDB differently fails here, and the
// grant (and wantAccess) must follow.
func TestExportImportDynamoDBActions(t *testing.T) {
	t.Parallel()
	tables := storetest.NewTables(t)
	client := storetest.Client(t)
	recorder := newActionRecorder(client, tables)
	clock := &storetest.Clock{}
	cfg := httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("test secret"), RequestBudget: apitest.Budget, Logger: apitest.Logger(t), Now: clock.Now,
	}
	data := httpapi.New(store.New(client, tables, store.WithClock(clock.Now)), httpapi.GroupAll, cfg)
	admin := httpapi.New(store.New(recorder, tables, store.WithClock(clock.Now)), httpapi.GroupAdmin, cfg)
	do := func(api http.Handler, method, path, body string, status int) string {
		t.Helper()
		return serveAs(t, api, "alice", method, path, body, status)
	}
	const otherBase = "/rest/api/v1/data/" + otherApp
	do(data, "POST", base+"/kv/a", `{"data":1}`, 201)
	do(data, "POST", base+"/kv/b", `{"data":2}`, 201)
	do(data, "POST", base+"/lists/l/k1", `{"data":3}`, 201)
	// The target holds an expired item on one record's key, and another
	// item on another's.
	do(data, "POST", otherBase+"/kv/a", `{"data":"gone","ttl":1}`, 201)
	do(data, "POST", otherBase+"/kv/b", `{"data":"different"}`, 201)
	clock.Advance(2 * time.Second)

	var export struct{ Records json.RawMessage }
	if err := json.Unmarshal([]byte(do(admin, "GET", "/rest/api/v1/admin/apps/"+app+"/export", "", 200)), &export); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second time, every record is skipped or a conflict
		do(admin, "POST", "/rest/api/v1/admin/apps/"+otherApp+"/import", `{"records":`+string(export.Records)+`}`, 200)
	}
	want := []string{
		"DataTable/index/byOwner: Query",    // an owner's keys
		"DataTable: BatchGetItem",           // their items
		"DataTable: DeleteItem",             // the expired item in the way
		"DataTable: PutItem",                // the records
		"HistoryTable/index/byOwner: Query", // an owner's kept versions
		"ListTable/index/byOwner: Query",
		"ListTable: BatchGetItem",
		"ListTable: PutItem",
		"NamespacesTable: GetItem",           // the namespaces' key spaces
		"UsageTable/index/byAppShard: Query", // the app's owners
		"UsageTable: UpdateItem",             // usage, with the puts and the delete
	}
	slices.Sort(want)
	if got := recorder.actions(); !slices.Equal(got, want) {
		t.Errorf("export and import took the DynamoDB actions\n%s\nwant\n%s\n(grant the admin function what is new in infra/access.go)", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// dataGrants is what infra/access.go grants the kv and list functions, as
// infra/stack_test.go's wantAccess writes it.
var dataGrants = map[httpapi.Group]map[string][]string{
	httpapi.GroupKV: {
		"DataTable":               {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem", "ConditionCheckItem"},
		"ListTable":               {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem"},
		"HistoryTable":            {"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
		"UsageTable":              {"GetItem", "UpdateItem", "BatchGetItem"},
		"AppsTable":               {"GetItem", "BatchGetItem"},
		"DataTable/index/byOwner": {"Query"},
		"ListTable/index/byOwner": {"Query"},
		"NamespacesTable":         {"GetItem"},
	},
	httpapi.GroupList: {
		"ListTable":               {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem", "ConditionCheckItem"},
		"HistoryTable":            {"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
		"UsageTable":              {"GetItem", "UpdateItem", "BatchGetItem"},
		"AppsTable":               {"GetItem", "BatchGetItem"},
		"DataTable":               {"DeleteItem"},
		"DataTable/index/byOwner": {"Query"},
		"ListTable/index/byOwner": {"Query"},
		"NamespacesTable":         {"GetItem"},
	},
}

// TestHistoryDynamoDBActions takes items of the kv and list functions
// through their history (writes that keep versions, listing, version
// reads, restores as updates and as creates, drops, and a batch of
// version reads and restores) and checks that every DynamoDB action the
// calls need is granted to the function that serves them.
func TestHistoryDynamoDBActions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		group httpapi.Group
		path  string
		batch bool
	}{
		{"kv", httpapi.GroupKV, base + "/hist/doc", true},
		{"list", httpapi.GroupList, base + "/hist/l/2024-01", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tables := storetest.NewTables(t)
			client := storetest.Client(t)
			// The admin function sets the policy; the recorder sees what
			// the data function does under it.
			if _, err := store.New(client, tables).SetPolicy(context.Background(), app, "hist", uds.Policy{History: uds.History{Versions: 5}}); err != nil {
				t.Fatal(err)
			}
			recorder := newActionRecorder(client, tables)
			api := httpapi.New(store.New(recorder, tables), tc.group, httpapi.Config{
				Subject: httpapi.HeaderSubject, CursorSecret: []byte("test secret"), RequestBudget: apitest.Budget, Logger: apitest.Logger(t),
			})
			do := func(method, path, body string, status int) {
				t.Helper()
				serveAs(t, api, "alice", method, path, body, status)
			}
			do("POST", tc.path, `{"data":1}`, 201)
			do("PUT", tc.path, `{"data":2}`, 200)
			do("GET", tc.path+"?history", "", 200)
			do("GET", tc.path+"?version=1", "", 200)
			do("POST", tc.path+"?restore=1", "", 200)
			do("DELETE", tc.path, "", 204)
			do("POST", tc.path+"?restore=3", "", 201)
			do("DELETE", tc.path+"?history", "", 200)
			if tc.batch {
				do("POST", base+"/hist/b", `{"data":1}`, 201)
				do("PUT", base+"/hist/b", `{"data":2}`, 200)
				do("POST", base+"/batch", `{"operations":[{"method":"GET","path":"hist/b?version=1"},
					{"method":"POST","path":"hist/b?restore=1"},{"method":"POST","path":"hist/l/s1","body":{"data":1}},
					{"method":"PUT","path":"hist/l/s1","body":{"data":2}},{"method":"POST","path":"hist/l/s1?restore=1"},
					{"method":"DELETE","path":"hist/l/s1?"},{"method":"POST","path":"hist/l/s1?restore=1"}]}`, 200)
			}
			granted := dataGrants[tc.group]
			var missing []string
			for _, a := range recorder.actions() {
				resource, action, _ := strings.Cut(a, ": ")
				if !slices.Contains(granted[resource], action) {
					missing = append(missing, a)
				}
			}
			if len(missing) > 0 {
				t.Errorf("the %s function's history calls take DynamoDB actions infra/access.go does not grant it:\n%s\n(all it took:\n%s)",
					tc.name, strings.Join(missing, "\n"), strings.Join(recorder.actions(), "\n"))
			}
			if !slices.Contains(recorder.actions(), "HistoryTable: PutItem") {
				t.Errorf("no version was kept: %v", recorder.actions())
			}
		})
	}
}

// serveAs has api serve a request of subject and fails the test unless it
// answers status; it returns the body.
func serveAs(t *testing.T, api http.Handler, subject, method, path, body string, status int) string {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Uds-Subject", subject)
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	if w.Code != status {
		t.Fatalf("%s %s: %d %s, want %d", method, path, w.Code, w.Body, status)
	}
	return w.Body.String()
}
