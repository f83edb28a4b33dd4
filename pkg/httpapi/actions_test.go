package httpapi_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/ratelimit"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// actionRecorder is a store.Client that notes the IAM action each call
// needs, on which table or index, named as infra/stack_test.go's wantAccess
// names them ("DataTable: PutItem", "DataTable/index/byOwner: Query"). A
// transaction needs the action of each item it writes; a BatchWriteItem
// needs its own action, whatever puts and deletes it holds. A single-item
// call on a rate bucket's item is named apart, "AppsTable[rate#*]", since
// the data functions' grant on the apps table is limited to those items'
// keys. It implements every method of store.Client itself, so a method
// added there does not compile here until it is recorded too.
type actionRecorder struct {
	next  store.Client
	names map[string]string // physical table name → table ID
	apps  string            // the apps table's physical name
	mu    sync.Mutex
	seen  map[string]bool
}

func newActionRecorder(next store.Client, tables store.Tables) *actionRecorder {
	r := &actionRecorder{next: next, names: map[string]string{}, apps: tables.Apps, seen: map[string]bool{}}
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
	r.noteResource(resource, action)
}

// noteItem notes an action on one item, naming a rate bucket's item of
// the apps table apart.
func (r *actionRecorder) noteItem(table *string, key map[string]types.AttributeValue, action string) {
	resource := r.names[aws.ToString(table)]
	if app, ok := key[schema.AttrApp].(*types.AttributeValueMemberS); ok && aws.ToString(table) == r.apps && strings.HasPrefix(app.Value, "rate#") {
		resource += "[rate#*]"
	}
	r.noteResource(resource, action)
}

func (r *actionRecorder) noteResource(resource, action string) {
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
	r.noteItem(in.TableName, in.Key, "GetItem")
	return r.next.GetItem(ctx, in, o...)
}

func (r *actionRecorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	resource := r.names[aws.ToString(in.TableName)]
	if attrs, ok := attributeGrants[resource]; ok && namesOnly(in, attrs) {
		r.noteResource(resource+"{"+strings.Join(attrs, ",")+"}", "UpdateItem")
	} else {
		r.noteItem(in.TableName, in.Key, "UpdateItem")
	}
	return r.next.UpdateItem(ctx, in, o...)
}

// attributeGrants are the grants limited to requests that name some
// attributes only (dynamodb:Attributes), as infra/stack_test.go's
// wantAccess names them: the catalogue's marks.
var attributeGrants = map[string][]string{
	"NamespacesTable": {schema.AttrApp, schema.AttrNamespace, schema.AttrHeldSince},
	"AppsTable":       {schema.AttrApp, schema.AttrHeldSince, schema.AttrRegistry, schema.AttrAppNameKey},
}

// namesOnly reports whether an update names no attribute but attrs, in
// its key and its expression's names, and names the catalogue's mark (an
// expression may also name attributes in its text, which the catalogue's
// never does).
func namesOnly(in *dynamodb.UpdateItemInput, attrs []string) bool {
	if !slices.Contains(slices.Collect(maps.Values(in.ExpressionAttributeNames)), schema.AttrHeldSince) {
		return false
	}
	for k := range in.Key {
		if !slices.Contains(attrs, k) {
			return false
		}
	}
	for _, n := range in.ExpressionAttributeNames {
		if !slices.Contains(attrs, n) {
			return false
		}
	}
	return true
}

func (r *actionRecorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.noteItem(in.TableName, in.Item, "PutItem")
	return r.next.PutItem(ctx, in, o...)
}

func (r *actionRecorder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.noteItem(in.TableName, in.Key, "DeleteItem")
	return r.next.DeleteItem(ctx, in, o...)
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

// BatchWriteItem notes its own action: IAM authorises a batch write as
// dynamodb:BatchWriteItem, not as the PutItem and DeleteItem it holds
// (unlike a transaction's actions).
func (r *actionRecorder) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	for table := range in.RequestItems {
		r.note(&table, nil, "BatchWriteItem")
	}
	return r.next.BatchWriteItem(ctx, in, o...)
}

func (r *actionRecorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			r.noteItem(it.Put.TableName, it.Put.Item, "PutItem")
		case it.Update != nil:
			r.noteItem(it.Update.TableName, it.Update.Key, "UpdateItem")
		case it.Delete != nil:
			r.noteItem(it.Delete.TableName, it.Delete.Key, "DeleteItem")
		case it.ConditionCheck != nil:
			r.noteItem(it.ConditionCheck.TableName, it.ConditionCheck.Key, "ConditionCheckItem")
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
	data := httpapi.New(httpapi.StoresOf(store.New(client, tables, store.WithClock(clock.Now))), httpapi.GroupAll, cfg)
	admin := httpapi.New(httpapi.StoresOf(store.New(recorder, tables, store.WithClock(clock.Now))), httpapi.GroupAdmin, cfg)
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
		"DataTable: PutItem",                // the records, one over the expired item in the way
		"HistoryTable/index/byOwner: Query", // an owner's kept versions
		"ListTable/index/byOwner: Query",
		"ListTable: BatchGetItem",
		"ListTable: PutItem",
		"NamespacesTable: GetItem",                                 // the namespaces' key spaces
		"NamespacesTable{app,namespace,heldSince}: UpdateItem",     // the catalogue's marks of the namespaces imported into
		"AppsTable{app,heldSince,registry,appNameKey}: UpdateItem", // and of their app
		"UsageTable/index/byAppShard: Query",                       // the app's owners
		"UsageTable: UpdateItem",                                   // usage, with the puts
		"AppsTable: BatchGetItem",                                  // the writers' records, for the erase guard
		"UsageTable: BatchGetItem",
	}
	slices.Sort(want)
	if got := recorder.actions(); !slices.Equal(got, want) {
		t.Errorf("export and import took the DynamoDB actions\n%s\nwant\n%s\n(grant the admin function what is new in infra/access.go)", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// grants is what infra/access.go grants the kv, list and admin functions,
// as infra/stack_test.go's wantAccess writes it.
var grants = map[httpapi.Group]map[string][]string{
	httpapi.GroupKV: {
		"DataTable":                   {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem", "ConditionCheckItem"},
		"ListTable":                   {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem", "ConditionCheckItem"},
		"HistoryTable":                {"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
		"IndexTable":                  {"PutItem", "DeleteItem", "Query"},
		"UsageTable":                  {"GetItem", "UpdateItem", "BatchGetItem"},
		"AppsTable":                   {"GetItem", "BatchGetItem"},
		"AppsTable[rate#*]":           {"UpdateItem"},
		"DataTable/index/byOwner":     {"Query"},
		"ListTable/index/byOwner":     {"Query"},
		"NamespacesTable":             {"GetItem"},
		"ChangesTable":                {"Query"},
		"UsageTable/index/byAppShard": {"Query"},
		"NamespacesTable{app,namespace,heldSince}":     {"UpdateItem"},
		"AppsTable{app,heldSince,registry,appNameKey}": {"UpdateItem"},
	},
	httpapi.GroupList: {
		"ListTable":               {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem", "ConditionCheckItem"},
		"HistoryTable":            {"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
		"IndexTable":              {"PutItem", "DeleteItem"},
		"UsageTable":              {"GetItem", "UpdateItem", "BatchGetItem"},
		"AppsTable":               {"GetItem", "BatchGetItem"},
		"AppsTable[rate#*]":       {"UpdateItem"},
		"DataTable":               {"DeleteItem"},
		"DataTable/index/byOwner": {"Query"},
		"ListTable/index/byOwner": {"Query"},
		"NamespacesTable":         {"GetItem"},
		"NamespacesTable{app,namespace,heldSince}":     {"UpdateItem"},
		"AppsTable{app,heldSince,registry,appNameKey}": {"UpdateItem"},
	},
	httpapi.GroupAdmin: {
		"UsageTable":                  {"GetItem", "UpdateItem", "Query", "BatchGetItem", "PutItem", "DeleteItem"},
		"UsageTable/index/byAppShard": {"Query"},
		"AppsTable":                   {"GetItem", "UpdateItem", "BatchGetItem", "PutItem", "DeleteItem"},
		"AppsTable/index/byName":      {"Query"},
		"DataTable":                   {"PutItem", "DeleteItem", "BatchGetItem", "Scan", "UpdateItem", "GetItem"},
		"ListTable":                   {"PutItem", "DeleteItem", "BatchGetItem", "Scan", "UpdateItem", "GetItem"},
		"DataTable/index/byOwner":     {"Query"},
		"ListTable/index/byOwner":     {"Query"},
		"HistoryTable":                {"Scan", "GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
		"HistoryTable/index/byOwner":  {"Query"},
		"IndexTable":                  {"Scan", "BatchWriteItem", "PutItem", "DeleteItem"},
		"NamespacesTable":             {"GetItem", "UpdateItem", "Query"},
	},
}

// ungranted lists the actions the recorder saw that infra/access.go does
// not grant the function serving group.
func ungranted(group httpapi.Group, r *actionRecorder) []string {
	var missing []string
	for _, a := range r.actions() {
		resource, action, _ := strings.Cut(a, ": ")
		// A grant of the whole table covers one limited to attributes.
		whole, _, _ := strings.Cut(resource, "{")
		if !slices.Contains(grants[group][resource], action) && !slices.Contains(grants[group][whole], action) {
			missing = append(missing, a)
		}
	}
	return missing
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
			api := httpapi.New(httpapi.StoresOf(store.New(recorder, tables)), tc.group, httpapi.Config{
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
			if missing := ungranted(tc.group, recorder); len(missing) > 0 {
				t.Errorf("the %s function's history calls take DynamoDB actions infra/access.go does not grant it:\n%s\n(all it took:\n%s)",
					tc.name, strings.Join(missing, "\n"), strings.Join(recorder.actions(), "\n"))
			}
			if !slices.Contains(recorder.actions(), "HistoryTable: PutItem") {
				t.Errorf("no version was kept: %v", recorder.actions())
			}
		})
	}
}

// TestIndexDynamoDBActions takes each function through its work with a
// namespace's indexes and checks that every DynamoDB action it took is
// granted to it: the kv function's writes, an atomic batch and a query
// that meets the entries of an expired key-value item and an expired list
// item; the list function's writes and a whole-list delete; the admin
// function's builds (of new indexes from the items stored, and of the
// removal of a dropped one) and an import into a namespace with indexes.
// Each case also names actions it must have taken, so that a path it no
// longer reaches fails it rather than passing unseen.
func TestIndexDynamoDBActions(t *testing.T) {
	t.Parallel()
	const namespace = "tasks"
	path := base + "/" + namespace
	byRank := `{"access": "shared", "indexes": [{"name": "byRank", "path": "/rank", "type": "number"}]}`
	for _, tc := range []struct {
		name  string
		group httpapi.Group
		// run does the work on api, the recorded function; plain serves
		// every route unrecorded, for what the function does not do.
		run  func(t *testing.T, api, plain http.Handler, clock *storetest.Clock)
		took []string
	}{
		{"kv", httpapi.GroupKV, func(t *testing.T, api, plain http.Handler, clock *storetest.Clock) {
			declareIndexes(t, plain, app, namespace, taskIndexes)
			serveAs(t, api, "alice", "POST", path+"/t1", `{"data":{"status":"open","rank":1}}`, 201)
			serveAs(t, api, "alice", "PUT", path+"/t1", `{"data":{"status":"done","rank":1}}`, 200)
			serveAs(t, api, "alice", "POST", path+"/t2", `{"data":{"status":"open"},"ttl":1}`, 201)
			serveAs(t, api, "alice", "POST", base+"/batch", `{"atomic":true,"operations":[
				{"method":"POST","path":"tasks/l/a","body":{"data":{"status":"open"},"ttl":1}},
				{"method":"DELETE","path":"tasks/t1"}]}`, 200)
			clock.Advance(2 * time.Second)
			serveAs(t, api, "alice", "GET", path+"?index=byStatus&eq=open", "", 200)
		}, []string{"IndexTable: PutItem", "IndexTable: DeleteItem", "IndexTable: Query",
			"DataTable: ConditionCheckItem", "ListTable: ConditionCheckItem"}},
		{"list", httpapi.GroupList, func(t *testing.T, api, plain http.Handler, _ *storetest.Clock) {
			declareIndexes(t, plain, app, namespace, taskIndexes)
			serveAs(t, api, "alice", "POST", path+"/l/a", `{"data":{"status":"open"}}`, 201)
			serveAs(t, api, "alice", "PUT", path+"/l/a", `{"data":{"status":"done"}}`, 200)
			serveAs(t, api, "alice", "DELETE", path+"/l/a", "", 204)
			serveAs(t, api, "alice", "POST", path+"/l/b", `{"data":{"status":"open"}}`, 201)
			serveAs(t, api, "alice", "DELETE", path+"/l/list", "", 204)
		}, []string{"IndexTable: PutItem", "IndexTable: DeleteItem"}},
		{"admin", httpapi.GroupAdmin, func(t *testing.T, api, plain http.Handler, _ *storetest.Clock) {
			serveAs(t, plain, "alice", "POST", path+"/t1", `{"data":{"status":"open","rank":1}}`, 201)
			serveAs(t, plain, "alice", "POST", path+"/l/a", `{"data":{"status":"done","rank":2}}`, 201)
			declareIndexes(t, api, app, namespace, taskIndexes) // built from the items stored
			declareIndexes(t, api, app, namespace, byRank)      // byStatus dropped
			declareIndexes(t, api, otherApp, namespace, byRank)
			var export struct{ Records json.RawMessage }
			if err := json.Unmarshal([]byte(serveAs(t, api, "alice", "GET", "/rest/api/v1/admin/apps/"+app+"/export", "", 200)), &export); err != nil {
				t.Fatal(err)
			}
			serveAs(t, api, "alice", "POST", "/rest/api/v1/admin/apps/"+otherApp+"/import", `{"records":`+string(export.Records)+`}`, 200)
		}, []string{"DataTable: Scan", "ListTable: Scan", "IndexTable: Scan", "IndexTable: BatchWriteItem", "IndexTable: PutItem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tables := storetest.NewTables(t)
			client := storetest.Client(t)
			clock := &storetest.Clock{}
			cfg := httpapi.Config{
				Subject: httpapi.HeaderSubject, CursorSecret: []byte("test secret"), RequestBudget: apitest.Budget,
				DeleteAllBudget: apitest.Budget, Logger: apitest.Logger(t), Now: clock.Now,
			}
			opts := []store.Option{store.WithClock(clock.Now), store.WithPolicySettle(testSettle)}
			recorder := newActionRecorder(client, tables)
			api := httpapi.New(httpapi.StoresOf(store.New(recorder, tables, opts...)), tc.group, cfg)
			plain := httpapi.New(httpapi.StoresOf(store.New(client, tables, opts...)), httpapi.GroupAll, cfg)
			tc.run(t, api, plain, clock)
			if missing := ungranted(tc.group, recorder); len(missing) > 0 {
				t.Errorf("the %s function's index work takes DynamoDB actions infra/access.go does not grant it:\n%s\n(all it took:\n%s)",
					tc.name, strings.Join(missing, "\n"), strings.Join(recorder.actions(), "\n"))
			}
			for _, a := range tc.took {
				if !slices.Contains(recorder.actions(), a) {
					t.Errorf("the %s function did not take %s: %v", tc.name, a, recorder.actions())
				}
			}
		})
	}
}

// TestRateLimitDynamoDBActions takes each function through the rate
// limits and checks that every DynamoDB action it took is granted to it:
// the data functions' requests under a caller's and an app's limit (the
// limits read with the quota limits' records, tokens leased from both
// buckets, a request refused 429, a batch charged per operation), and the
// admin function's routes that set, show and clear an app's limits and a
// user's override. Each case also names the actions it must have taken,
// so that a path it no longer reaches fails it rather than passing
// unseen.
func TestRateLimitDynamoDBActions(t *testing.T) {
	t.Parallel()
	const admin = "/rest/api/v1/admin/apps/" + app
	// A caller may send one request at once, and the app a thousand.
	const limits = `{"perCaller": {"requestsPerSecond": 1, "burst": 1}, "perApp": {"requestsPerSecond": 1000, "burst": 1000}}`
	for _, tc := range []struct {
		name  string
		group httpapi.Group
		// run does the work on api, the recorded function; plain serves
		// every route unrecorded, for what the function does not do.
		run  func(t *testing.T, api, plain http.Handler)
		took []string
	}{
		{"kv", httpapi.GroupKV, func(t *testing.T, api, plain http.Handler) {
			serveAs(t, plain, "ops", "PUT", admin+"/rate-limits", limits, 200)
			serveAs(t, api, "alice", "GET", base+"/prefs/alice", "", 404)
			serveAs(t, api, "alice", "GET", base+"/prefs/alice", "", 429)
			serveAs(t, api, "bob", "POST", base+"/batch", `{"operations": [{"method": "GET", "path": "prefs/bob"}]}`, 200)
		}, []string{"AppsTable: BatchGetItem", "UsageTable: BatchGetItem", "AppsTable[rate#*]: UpdateItem"}},
		{"list", httpapi.GroupList, func(t *testing.T, api, plain http.Handler) {
			serveAs(t, plain, "ops", "PUT", admin+"/rate-limits", limits, 200)
			serveAs(t, api, "alice", "POST", base+"/activities/alice/2024-01-15", `{"data": 1}`, 201)
			serveAs(t, api, "alice", "GET", base+"/activities/alice/list", "", 429)
		}, []string{"AppsTable: BatchGetItem", "UsageTable: BatchGetItem", "AppsTable[rate#*]: UpdateItem"}},
		{"admin", httpapi.GroupAdmin, func(t *testing.T, api, _ http.Handler) {
			serveAs(t, api, "ops", "PUT", admin+"/rate-limits", limits, 200)
			serveAs(t, api, "ops", "GET", admin+"/rate-limits", "", 200)
			serveAs(t, api, "ops", "PUT", admin+"/users/alice/rate-limits", `{"perCaller": {"requestsPerSecond": -1}}`, 200)
			serveAs(t, api, "ops", "GET", admin+"/users/alice/rate-limits", "", 200)
			serveAs(t, api, "ops", "DELETE", admin+"/users/alice/rate-limits", "", 204)
			serveAs(t, api, "ops", "DELETE", admin+"/users/bob/rate-limits", "", 204) // none set
			serveAs(t, api, "ops", "DELETE", admin+"/rate-limits", "", 204)
		}, []string{"AppsTable: GetItem", "AppsTable: UpdateItem", "UsageTable: GetItem", "UsageTable: UpdateItem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tables := storetest.NewTables(t)
			client := storetest.Client(t)
			clock := &storetest.Clock{}
			logger := apitest.Logger(t)
			recorder := newActionRecorder(client, tables)
			recorded := store.New(recorder, tables, store.WithClock(clock.Now))
			plainStore := store.New(client, tables, store.WithClock(clock.Now))
			config := func(st *store.Store) httpapi.Config {
				return httpapi.Config{
					Subject: httpapi.HeaderSubject, CursorSecret: []byte("test secret"), RequestBudget: apitest.Budget,
					DeleteAllBudget: apitest.Budget, Logger: logger, Now: clock.Now, Limiter: ratelimit.New(st, clock.Now),
				}
			}
			api := httpapi.New(httpapi.StoresOf(recorded), tc.group, config(recorded))
			plain := httpapi.New(httpapi.StoresOf(plainStore), httpapi.GroupAll, config(plainStore))
			// No token accrues between the requests, however slowly a
			// loaded machine serves them: the second GET is refused.
			clock.Freeze()
			tc.run(t, api, plain)
			if missing := ungranted(tc.group, recorder); len(missing) > 0 {
				t.Errorf("the %s function's rate limits take DynamoDB actions infra/access.go does not grant it:\n%s\n(all it took:\n%s)",
					tc.name, strings.Join(missing, "\n"), strings.Join(recorder.actions(), "\n"))
			}
			for _, a := range tc.took {
				if !slices.Contains(recorder.actions(), a) {
					t.Errorf("the %s function did not take %s: %v", tc.name, a, recorder.actions())
				}
			}
		})
	}
}

// TestRegistryDynamoDBActions takes the admin function through the app
// registry (a registration, a rename that frees the old name's claim, one
// refused for a name another app holds, reads by id and by name, the
// listing and a removal) and checks that every DynamoDB action it took is
// granted to it, and that it took the ones each path needs.
func TestRegistryDynamoDBActions(t *testing.T) {
	t.Parallel()
	tables := storetest.NewTables(t)
	recorder := newActionRecorder(storetest.Client(t), tables)
	api := httpapi.New(httpapi.StoresOf(store.New(recorder, tables)), httpapi.GroupAdmin, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("test secret"), RequestBudget: apitest.Budget, Logger: apitest.Logger(t),
	})
	const registry = "/rest/api/v1/admin/apps"
	serveAs(t, api, "ops", "PUT", registry+"/"+app, `{"name": "Fitness"}`, 200)
	serveAs(t, api, "ops", "PUT", registry+"/"+app, `{"name": "Fitness Pro", "description": "Workouts"}`, 200)
	serveAs(t, api, "ops", "PUT", registry+"/"+otherApp, `{"name": "fitness pro"}`, 409)
	serveAs(t, api, "ops", "GET", registry+"/"+app, "", 200)
	serveAs(t, api, "ops", "GET", registry+"?name=FITNESS+PRO", "", 200)
	serveAs(t, api, "ops", "GET", registry+"?limit=1", "", 200)
	serveAs(t, api, "ops", "DELETE", registry+"/"+app, "", 204)
	if missing := ungranted(httpapi.GroupAdmin, recorder); len(missing) > 0 {
		t.Errorf("the admin function's registry takes DynamoDB actions infra/access.go does not grant it:\n%s\n(all it took:\n%s)",
			strings.Join(missing, "\n"), strings.Join(recorder.actions(), "\n"))
	}
	for _, a := range []string{"AppsTable: GetItem", "AppsTable: PutItem", "AppsTable: UpdateItem", "AppsTable: DeleteItem", "AppsTable/index/byName: Query"} {
		if !slices.Contains(recorder.actions(), a) {
			t.Errorf("the registry did not take %s: %v", a, recorder.actions())
		}
	}
}

// declareIndexes sets a namespace's policy through api and steps the build
// of its indexes until it is done.
func declareIndexes(t *testing.T, api http.Handler, app, namespace, policy string) {
	t.Helper()
	admin := "/rest/api/v1/admin/apps/" + app + "/namespaces/" + namespace
	serveAs(t, api, "alice", "PUT", admin, policy, 200)
	for range 100 {
		req := httptest.NewRequest("POST", admin+"/indexes/build", nil)
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK:
			return
		case http.StatusAccepted:
			time.Sleep(20 * time.Millisecond)
		default:
			t.Fatalf("build of %s/%s: %d %s", app, namespace, w.Code, w.Body)
		}
	}
	t.Fatalf("the build of %s/%s did not end", app, namespace)
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
