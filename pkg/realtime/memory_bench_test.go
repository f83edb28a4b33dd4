package realtime_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/udsproject/uds/pkg/cursor"
	"github.com/udsproject/uds/pkg/realtime"
	"github.com/udsproject/uds/pkg/store"
)

// BenchmarkMemoryPerConnection measures what an open connection holds in
// the server: its heap and its goroutines' stacks, from runtime.MemStats
// after a collection, before the connections and once every one is open
// and subscribed, divided by their number. The hub and its handler run in
// this process behind httptest; the clients run in a process of their own
// (this test binary again, TestMemoryClients), so that their memory is not
// counted. The feed is a stub (memoryFeed) that opens every subscribe and
// seals real cursors: what is measured is the hub's and the connections'
// memory, not a DynamoDB client's, which a server has once whatever its
// connections.
//
// Each sub-benchmark opens its connections once per b.N (one, at these
// sizes); -short opens 100 instead of 1,000.
func BenchmarkMemoryPerConnection(b *testing.B) {
	conns := 1000
	if testing.Short() {
		conns = 100
	}
	for _, subs := range []int{0, len(memorySubscriptions)} {
		b.Run(fmt.Sprintf("connections=%d/subscriptions=%d", conns, subs), func(b *testing.B) {
			for range b.N {
				m := measureConnections(b, conns, subs)
				b.ReportMetric(m.heap/float64(conns), "heap-B/conn")
				b.ReportMetric(m.stack/float64(conns), "stack-B/conn")
				b.ReportMetric((m.heap+m.stack)/float64(conns), "B/conn")
				b.ReportMetric(m.goroutines/float64(conns), "goroutines/conn")
			}
		})
	}
}

// growth is what the server's process grew by.
type growth struct{ heap, stack, goroutines float64 }

// measureConnections opens conns connections of subs subscriptions each
// to a hub in this process, and returns what the server grew by.
func measureConnections(b *testing.B, conns, subs int) growth {
	b.Helper()
	hub := realtime.NewHub(memoryFeed{cursor.NewSealer([]byte("memory benchmark"))}, slog.New(slog.DiscardHandler))
	ctx, stop := context.WithCancel(b.Context())
	defer stop()
	go hub.Run(ctx)
	srv := httptest.NewServer(hub.Handler(func(r *http.Request) (string, error) { return r.Header.Get("X-Uds-Subject"), nil }))
	defer srv.Close()
	defer hub.Close()

	before := serverMemory()
	clients := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMemoryClients$")
	clients.Env = append(os.Environ(), envMemoryClients+"="+fmt.Sprintf("%s %d %d", srv.URL, conns, subs))
	clients.Stderr = os.Stderr
	in, err := clients.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := clients.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := clients.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		in.Close() // the clients close their connections and exit
		_ = clients.Wait()
	}()
	ready := false
	for lines := bufio.NewScanner(out); lines.Scan(); {
		if lines.Text() == clientsReady {
			ready = true
			break
		}
	}
	if !ready {
		b.Fatal("the clients did not open their connections (their output ended)")
	}
	after := serverMemory()
	return growth{heap: after.heap - before.heap, stack: after.stack - before.stack, goroutines: after.goroutines - before.goroutines}
}

// serverMemory is this process's live heap and stacks after a collection,
// and its goroutines.
func serverMemory() growth {
	// Two collections: the first may leave objects with finalizers for
	// the second.
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return growth{heap: float64(m.HeapAlloc), stack: float64(m.StackInuse), goroutines: float64(runtime.NumGoroutine())}
}

// envMemoryClients tells this test binary to be the clients of
// BenchmarkMemoryPerConnection: "URL connections subscriptions".
const envMemoryClients = "UDS_REALTIME_MEMORY_CLIENTS"

// clientsReady is what the clients write once every connection is open
// and subscribed.
const clientsReady = "subscribed"

// memorySubscriptions are a connection's subscriptions, as
// cmd/uds-realtimebench makes them: the shared namespace news whole, 5
// lists of the shared namespace rooms, the private namespace notes whole
// and 3 of the caller's lists in the private namespace drafts.
var memorySubscriptions = []struct{ namespace, key string }{
	{"news", ""}, {"rooms", "room-1"}, {"rooms", "room-2"}, {"rooms", "room-3"}, {"rooms", "room-4"}, {"rooms", "room-5"},
	{"notes", ""}, {"drafts", "draft-0"}, {"drafts", "draft-1"}, {"drafts", "draft-2"},
}

// privateNamespaces are the namespaces of memorySubscriptions that are
// private: each caller's subscriptions there are of its own key space.
var privateNamespaces = map[string]bool{"notes": true, "drafts": true}

// TestMemoryClients is the clients of BenchmarkMemoryPerConnection, run in
// a process of their own; it does nothing otherwise. It opens the
// connections, each as a caller of its own, sends each the first of
// memorySubscriptions it is to have, writes clientsReady once every
// subscription is answered, and holds the connections until its standard
// input ends.
func TestMemoryClients(t *testing.T) {
	spec := os.Getenv(envMemoryClients)
	if spec == "" {
		t.Skip("the clients of BenchmarkMemoryPerConnection, in their own process")
	}
	var url string
	var conns, subs int
	if _, err := fmt.Sscanf(spec, "%s %d %d", &url, &conns, &subs); err != nil {
		t.Fatalf("%s=%q: %v", envMemoryClients, spec, err)
	}
	ctx := context.Background()
	open := make([]*websocket.Conn, conns)
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := http.Header{}
			h.Set("X-Uds-Subject", "caller-"+strconv.Itoa(c))
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+realtime.Path, &websocket.DialOptions{HTTPHeader: h})
			if err != nil {
				errs <- err
				return
			}
			open[c] = conn
			for s, sub := range memorySubscriptions[:subs] {
				req := map[string]string{"action": realtime.ActionSubscribe, "id": "s" + strconv.Itoa(s), "applicationUuid": app, "namespace": sub.namespace}
				if sub.key != "" {
					req["key"] = sub.key
				}
				msg, _ := json.Marshal(req)
				if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
					errs <- err
					return
				}
			}
			for range subs {
				_, b, err := conn.Read(ctx)
				if err == nil && !strings.Contains(string(b), `"type":"subscribed"`) {
					err = fmt.Errorf("a subscribe answered %s", b)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	fmt.Println(clientsReady)
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, conn := range open {
		_ = conn.CloseNow()
	}
}

// memoryFeed is a feed that opens every subscribe, in the caller's key
// space for a private namespace, and seals its cursors as the API does;
// nothing lands, so it reads nothing.
type memoryFeed struct{ sealer *cursor.Sealer }

func (f memoryFeed) Open(_ context.Context, caller string, req realtime.Request) (realtime.Scope, error) {
	sc := realtime.Scope{App: req.ApplicationUUID, Namespace: req.Namespace, Caller: caller, Key: req.Key, SortKey: req.SortKey}
	if privateNamespaces[req.Namespace] {
		sc.KeySpace = caller
	}
	return sc, nil
}

func (memoryFeed) Page(context.Context, realtime.Scope, string) (realtime.Page, error) {
	return realtime.Page{UpToDate: true, At: time.Now()}, nil
}

func (memoryFeed) Current(context.Context, []store.FeedRow) ([]realtime.Entry, error) {
	return nil, nil
}

func (f memoryFeed) CursorAt(sc realtime.Scope, t time.Time) (string, error) {
	position, err := json.Marshal(store.ChangesAt(sc.KeySpace, t))
	if err != nil {
		return "", err
	}
	return f.sealer.Seal(sc.App+"/"+sc.Namespace+"/"+sc.Caller, string(position)), nil
}

func (memoryFeed) Refusal(_ realtime.Scope, err error) realtime.Refusal {
	return realtime.Refusal{Status: http.StatusInternalServerError, Error: "Internal error", Details: err.Error()}
}
