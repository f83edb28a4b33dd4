// Package apitest serves the whole UDS API in-process for the tests of its
// clients (pkg/client, cmd/uds): the handler make run serves, with the
// caller's identity from X-Uds-Subject as make run takes it with
// UDS_TRUST_SUBJECT_HEADER=1, over fresh tables in the test engine. Limits
// are read afresh on every write (no cache) and recompute applies at once,
// so tests see their admin calls take effect immediately. Its request
// lines go to Logger.
package apitest

import (
	"net/http/httptest"
	"testing"
	"time"

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
	st := store.New(storetest.Client(t), storetest.NewTables(t), store.WithRecomputeQuiet(0), store.WithLimitsTTL(0))
	api := httpapi.New(st, httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("api tests"), DeleteAllBudget: deleteAllBudget,
		RequestBudget: Budget, Logger: Logger(t),
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL
}
