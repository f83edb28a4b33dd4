// Package apitest serves the whole UDS API in-process for the tests of its
// clients (pkg/client, cmd/uds): the handler make run serves, with the
// caller's identity from X-Uds-Subject as make run takes it with
// UDS_TRUST_SUBJECT_HEADER=1, over fresh tables in the test engine. Limits
// are read afresh on every write (no cache) and recompute applies at once,
// so tests see their admin calls take effect immediately; a change into or
// out of private settles in 100 ms. Its request lines go to Logger.
package apitest

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// Budget is the request and delete-all budget of an API under test whose
// budgets are not what the test is about: longer than any request takes
// on a loaded machine, where Lambda's 25 s cut large exports.
const Budget = 5 * time.Minute

// Server starts the API and returns its base URL; it stops when the test
// ends. deleteAllBudget bounds one delete-all request (a short one makes
// the server answer 503 with partial progress, as on Lambda for big lists).
func Server(t testing.TB, deleteAllBudget time.Duration) string {
	t.Helper()
	url, _ := ServerOver(t, deleteAllBudget)
	return url
}

// ServerOver is Server, also returning the tables it serves, for tests
// that set up what the API itself never writes.
func ServerOver(t testing.TB, deleteAllBudget time.Duration) (string, store.Tables) {
	t.Helper()
	tables := storetest.NewTables(t)
	// A change into or out of private settles in a moment: the clients'
	// tests do not race writes against one (pkg/httpapi's tests do).
	objects := blob.Objects{Bucket: blobtest.New(t)}
	st := store.New(storetest.Client(t), tables, store.WithRecomputeQuiet(0), store.WithLimitsTTL(0),
		store.WithPolicySettle(100*time.Millisecond), store.WithObjects(objects))
	api := httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("api tests"), DeleteAllBudget: deleteAllBudget,
		RequestBudget: Budget, Logger: Logger(t), Bucket: objects,
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL, tables
}
