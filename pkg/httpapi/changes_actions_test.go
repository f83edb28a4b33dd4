package httpapi_test

import (
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/changes"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/streampoll"
)

// TestChangesDynamoDBActions takes the changes feed through the two
// functions that serve it and checks that each takes only what
// infra/access.go grants it: the changes function writing the rows of key-value
// and list items created, updated and deleted (BatchWriteItem on the
// changes table, and nothing else), and the kv function reading the feed
// from its first page (the walk of the namespace's items) to the end of
// its log (a Query of the changes table among its grants).
func TestChangesDynamoDBActions(t *testing.T) {
	t.Parallel()
	tables := storetest.NewStreamedTables(t)
	client := storetest.Client(t)
	clock := &storetest.Clock{}
	opts := []store.Option{store.WithClock(clock.Now), store.WithPolicySettle(testSettle)}
	cfg := httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("test secret"), RequestBudget: apitest.Budget,
		DeleteAllBudget: apitest.Budget, Logger: apitest.Logger(t), Now: clock.Now,
	}
	plain := httpapi.New(httpapi.StoresOf(store.New(client, tables, opts...)), httpapi.GroupAll, cfg)
	kvActions := newActionRecorder(client, tables)
	kv := httpapi.New(httpapi.StoresOf(store.New(kvActions, tables, opts...)), httpapi.GroupKV, cfg)

	fnActions := newActionRecorder(client, tables)
	found, err := streampoll.Streams(t.Context(), client, tables.Data, tables.List)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := streampoll.NewClient(t.Context(), os.Getenv(config.EnvDynamoDBEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	handler := changes.Handler(store.New(fnActions, tables, store.WithClock(clock.Now)), apitest.Logger(t))
	poller, err := streampoll.New(streams, found, handler, streampoll.WithLogger(apitest.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}

	const path = base + "/feed"
	serveAs(t, plain, "alice", "POST", path+"/a", `{"data":1}`, 201)
	serveAs(t, plain, "alice", "POST", path+"/l/x", `{"data":2,"ttl":3600}`, 201)
	// The first page walks the items there are.
	cursor, _ := feedPage(t, kv, path, "")
	serveAs(t, plain, "alice", "PUT", path+"/a", `{"data":3}`, 200)
	serveAs(t, plain, "alice", "DELETE", path+"/l/x", "", 204)
	if err := poller.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Second)
	upToDate := false
	for i := 0; i < 20 && !upToDate; i++ {
		cursor, upToDate = feedPage(t, kv, path, cursor)
	}
	if !upToDate {
		t.Fatal("the feed never said it was up to date")
	}

	if got, want := fnActions.actions(), []string{"ChangesTable: BatchWriteItem"}; !slices.Equal(got, want) {
		t.Errorf("the changes function took the DynamoDB actions\n%s\nwant\n%s\n(grant it what is new in infra/access.go)",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if missing := ungranted(httpapi.GroupKV, kvActions); len(missing) > 0 {
		t.Errorf("reading the changes feed takes DynamoDB actions infra/access.go does not grant the kv function:\n%s\n(all it took:\n%s)",
			strings.Join(missing, "\n"), strings.Join(kvActions.actions(), "\n"))
	}
	if !slices.Contains(kvActions.actions(), "ChangesTable: Query") {
		t.Errorf("the kv function did not query the changes table: %v", kvActions.actions())
	}
}

// feedPage reads one page of the feed at cursor and returns the next
// cursor, and whether the feed is up to date.
func feedPage(t *testing.T, api *httpapi.API, path, cursor string) (string, bool) {
	t.Helper()
	var page struct {
		Cursor   string
		UpToDate bool
	}
	if err := json.Unmarshal([]byte(serveAs(t, api, "alice", "GET", path+"?changes="+url.QueryEscape(cursor), "", 200)), &page); err != nil {
		t.Fatal(err)
	}
	return page.Cursor, page.UpToDate
}
