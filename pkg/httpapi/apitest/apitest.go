// Package apitest serves the whole UDS API in-process for the tests of its
// clients (pkg/client, cmd/uds): the handler make run serves, with the
// caller's identity from X-Uds-Subject as make run takes it with
// UDS_TRUST_SUBJECT_HEADER=1, over fresh tables in the test engine. Limits
// are read afresh on every write (no cache) and recompute applies at once,
// so tests see their admin calls take effect immediately; a change into or
// out of private settles in 100 ms. Its request lines go to Logger.
package apitest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/changes"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/realtime"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/streampoll"
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
	return serve(t, tables, deleteAllBudget), tables
}

// FeedServer is Server over tables with streams, which the changes
// function's handler reads through a poller until the test ends, as the
// local server runs it: its changes feed shows a write about 2.5 s after
// it (the poller's 200 ms interval and the feed's 2 s settle time), and
// its realtime endpoint (realtime.Path) pushes it as its row lands. The
// engine keeps every stream after its table is gone, and each slows its
// later writes (storetest.NewTables), so only the tests of the feed serve
// one.
func FeedServer(t testing.TB, deleteAllBudget time.Duration) string {
	t.Helper()
	return StartFeed(t, storetest.NewStreamedTables(t), deleteAllBudget).URL
}

// Feed is a server of FeedServer's over given tables, which a test may
// kill and start again over the same tables: its cursors stay good.
type Feed struct {
	URL  string
	kill func()
}

// StartFeed starts a Feed over tables with streams; it stops when the test
// ends, if it was not killed before.
func StartFeed(t testing.TB, tables store.Tables, deleteAllBudget time.Duration) *Feed {
	t.Helper()
	found, err := streampoll.Streams(context.Background(), storetest.Client(t), tables.Data, tables.List)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := streampoll.NewClient(context.Background(), os.Getenv(config.EnvDynamoDBEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	logger := Logger(t)
	api := build(t, tables, deleteAllBudget)
	hub := realtime.NewHub(api.RealtimeFeed(), logger)
	p, err := streampoll.New(streams, found, changes.Handler(store.New(storetest.Client(t), tables, store.WithLanded(hub.Landed)), logger),
		streampoll.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Go(func() { p.Run(ctx) })
	running.Go(func() { hub.Run(ctx) })
	srv := httptest.NewUnstartedServer(realtime.Beside(hub.Handler(api.RealtimeCaller), api))
	conns := &connSet{conns: map[net.Conn]struct{}{}}
	srv.Config.ConnState = conns.track
	srv.Start()
	var once sync.Once
	f := &Feed{URL: srv.URL, kill: func() {
		once.Do(func() {
			// As a killed process: every connection cut, the realtime
			// ones too (they are no longer the HTTP server's), and the
			// poller's batch in hand handed over again next time.
			conns.cut()
			srv.Close()
			cancel()
			running.Wait()
		})
	}}
	// The poller stops before the tables are deleted (cleanups run last
	// registered first), so that it does not log their streams' end as a
	// failure.
	t.Cleanup(f.kill)
	return f
}

// Kill stops the server at once, as a killed process stops.
func (f *Feed) Kill() { f.kill() }

// connSet is a server's open connections.
type connSet struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (c *connSet) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch state {
	case http.StateNew:
		c.conns[conn] = struct{}{}
	case http.StateClosed:
		delete(c.conns, conn)
	}
}

// cut closes every connection.
func (c *connSet) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn := range c.conns {
		_ = conn.Close()
	}
}

// serve starts the API over tables.
func serve(t testing.TB, tables store.Tables, deleteAllBudget time.Duration) string {
	t.Helper()
	srv := httptest.NewServer(build(t, tables, deleteAllBudget))
	t.Cleanup(srv.Close)
	return srv.URL
}

// build is the API over tables.
func build(t testing.TB, tables store.Tables, deleteAllBudget time.Duration) *httpapi.API {
	t.Helper()
	// A change into or out of private settles in a moment: the clients'
	// tests do not race writes against one (pkg/httpapi's tests do).
	objects := blob.Objects{Bucket: blobtest.New(t)}
	st := store.New(storetest.Client(t), tables, store.WithRecomputeQuiet(0), store.WithLimitsTTL(0),
		store.WithPolicySettle(100*time.Millisecond), store.WithObjects(objects))
	return httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("api tests"), DeleteAllBudget: deleteAllBudget,
		RequestBudget: Budget, Logger: Logger(t), Bucket: objects,
	})
}
