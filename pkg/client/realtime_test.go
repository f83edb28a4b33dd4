package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// redialer dials the server it is pointed at, whatever address a URL
// names, and keeps the connections it made, so that a test can cut them
// as a network does, and a client reaches a server started again on
// another port.
type redialer struct {
	mu    sync.Mutex
	addr  string
	conns []net.Conn
}

func newRedialer(t *testing.T, endpoint string) *redialer {
	t.Helper()
	d := &redialer{}
	d.point(t, endpoint)
	return d
}

// point sends the connections made from now on to endpoint's server.
func (d *redialer) point(t *testing.T, endpoint string) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.addr = u.Host
	d.mu.Unlock()
}

func (d *redialer) httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: d.dial}}
}

func (d *redialer) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	d.mu.Lock()
	addr := d.addr
	d.mu.Unlock()
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.conns = append(d.conns, conn)
	d.mu.Unlock()
	return conn, nil
}

// cut closes every connection made so far, and says how many there were.
func (d *redialer) cut() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		_ = c.Close()
	}
	n := len(d.conns)
	d.conns = nil
	return n
}

// liveReplica is what a subscriber holds: the entries by key, applied in
// the order they came, and what it saw go wrong with that order.
type liveReplica struct {
	mu       sync.Mutex
	items    map[string]client.Change
	newest   map[string]int64 // the newest version received by key
	received int
	resyncs  int
	// disorder names each entry that came at an older version than one
	// before it of the same key.
	disorder []string
	err      error
}

// follow applies the subscription's changes until it ends.
func (r *liveReplica) follow(changes func(func(client.RealtimeChange, error) bool)) {
	for ch, err := range changes {
		r.mu.Lock()
		switch {
		case err != nil:
			r.err = err
		case ch.Resync:
			r.resyncs++
			r.items = map[string]client.Change{}
		default:
			r.received++
			k := changeKey(ch.Change)
			// A tombstone names the version of the logged change it
			// stands for, which may be older than the item shown before
			// it: only an item shown at an older version is out of order.
			if !ch.Deleted && ch.Version < r.newest[k] {
				r.disorder = append(r.disorder, fmt.Sprintf("%s at version %d after %d", k, ch.Version, r.newest[k]))
			}
			r.newest[k] = max(r.newest[k], ch.Version)
			r.items[k] = ch.Change
		}
		r.mu.Unlock()
	}
}

// await waits until the replica holds want (data by key; a deleted key
// as "deleted", since a replica that keeps tombstones shows it so).
func (r *liveReplica) await(t *testing.T, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r.mu.Lock()
		got := map[string]string{}
		for k, ch := range r.items {
			got[k] = string(ch.Data)
			if ch.Deleted {
				got[k] = "deleted"
			}
		}
		err := r.err
		r.mu.Unlock()
		if err != nil {
			t.Fatalf("the subscription ended: %v", err)
		}
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica holds %v, want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSubscribe subscribes to a namespace of the real local server with
// the Go client, writes through the HTTP API and receives every change:
// the replica it keeps ends equal to the namespace, no item ever coming at
// an older version after a newer one, across a connection cut mid-stream
// and a server killed and started again over the same tables.
func TestSubscribe(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	tables := storetest.NewStreamedTables(t)
	feed := apitest.StartFeed(t, tables, apitest.Budget)
	// The writer and the subscriber each go through a redialer of their
	// own: the subscriber's connections are the ones cut.
	writes, subscribed := newRedialer(t, feed.URL), newRedialer(t, feed.URL)
	writer := newClient(t, feed.URL, client.WithSubject("alice"), client.WithHTTPClient(writes.httpClient()))
	subscriber := newClient(t, feed.URL, client.WithSubject("bob"), client.WithHTTPClient(subscribed.httpClient()), client.WithRetries(4, 10*time.Millisecond))

	r := &liveReplica{items: map[string]client.Change{}, newest: map[string]int64{}}
	beginning := ""
	var following sync.WaitGroup
	following.Go(func() {
		r.follow(subscriber.Subscribe(ctx, client.SubscribeRequest{App: app, Namespace: "live", Cursor: &beginning}))
	})
	// One item of the namespace alone, from now on, beside it.
	one := &liveReplica{items: map[string]client.Change{}, newest: map[string]int64{}}
	following.Go(func() {
		one.follow(subscriber.Subscribe(ctx, client.SubscribeRequest{App: app, Namespace: "live", Key: "k1"}))
	})
	t.Cleanup(func() {
		stop()
		following.Wait()
	})

	// truth is what the namespace holds, as the replica must show it.
	truth := map[string]string{}
	key := func(i int) client.Key { return client.Key{App: app, Namespace: "live", ID: fmt.Sprintf("k%d", i)} }
	// write makes the n-th write of a run over five keys, four writes a
	// key: a create, updates, and for k0, k2 and k4 a delete last (no key
	// is created again: a new incarnation starts again at version 1).
	written := map[int]int{}
	write := func(n int) {
		t.Helper()
		i := n % 5
		k := key(i)
		data := fmt.Sprintf(`{"n":%d}`, n)
		var err error
		switch {
		case written[i] == 0:
			_, err = writer.Create(ctx, k, json.RawMessage(data))
		case written[i] == 3 && i%2 == 0:
			err = writer.Delete(ctx, k)
			data = "deleted"
		default:
			_, err = writer.Update(ctx, k, json.RawMessage(data))
		}
		if err != nil {
			t.Fatalf("write %d: %v", n, err)
		}
		written[i]++
		truth[k.ID] = data
	}

	// Live: the first writes come in order.
	for n := range 6 {
		write(n)
	}
	r.await(t, truth)

	// A connection cut mid-stream: the subscription connects again and
	// goes on from its last cursor, missing nothing.
	for n := 6; n < 12; n++ {
		write(n)
		if n == 8 {
			time.Sleep(500 * time.Millisecond)
			if subscribed.cut() == 0 {
				t.Fatal("no connection of the subscriber's to cut")
			}
		}
	}
	r.await(t, truth)

	// The server killed mid-stream and started again over the same
	// tables: the cursors stay good, and so does the subscription.
	write(12)
	time.Sleep(500 * time.Millisecond)
	feed.Kill()
	feed = apitest.StartFeed(t, tables, apitest.Budget)
	writes.point(t, feed.URL)
	subscribed.point(t, feed.URL)
	for n := 13; n < 20; n++ {
		write(n)
	}
	r.await(t, truth)

	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.disorder) > 0 || r.resyncs > 0 {
		t.Errorf("out of order: %v; resyncs: %d", r.disorder, r.resyncs)
	}
	if r.received < len(truth) {
		t.Errorf("%d changes received for %d keys", r.received, len(truth))
	}
	// The subscription to k1 saw k1 only, as it ended.
	one.await(t, map[string]string{"k1": truth["k1"]})
}

// TestSubscribeRefusedByServer checks the real server's refusals as the
// client's errors: a private namespace refuses an anonymous subscriber
// (401), and a subscribe that is not valid is refused (400).
func TestSubscribeRefusedByServer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := apitest.FeedServer(t, apitest.Budget)
	admin := newClient(t, srv)
	if _, err := admin.SetPolicy(ctx, app, "diary", client.Policy{Access: "private"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    *client.Client
		req  client.SubscribeRequest
		want error
		text string
	}{
		{"anonymous in a private namespace", admin, client.SubscribeRequest{App: app, Namespace: "diary"}, client.ErrUnauthenticated, "401 "},
		{"not an app", admin, client.SubscribeRequest{App: "not-a-uuid", Namespace: "diary"}, client.ErrInvalid, "400 Invalid applicationUuid"},
		{"a sort key without a key", admin, client.SubscribeRequest{App: app, Namespace: "diary", SortKey: "s"}, client.ErrInvalid, "400 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for _, err := range tc.c.Subscribe(ctx, tc.req) {
				n++
				if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), tc.text) {
					t.Errorf("%v, want %v starting %q", err, tc.want, tc.text)
				}
			}
			if n != 1 {
				t.Errorf("%d results, want the error alone", n)
			}
		})
	}
}
