package realtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/realtime"
	"github.com/udsproject/uds/pkg/store/storetest"
)

const app = "5a1e0c9e-8d0b-4c53-9a57-3f2d7e1c0b42"

// client is a test's WebSocket connection to the realtime endpoint.
type client struct {
	t    *testing.T
	c    *websocket.Conn
	msgs chan message
}

// message is a server's message as a test reads it.
type message struct {
	Type    string         `json:"type"`
	ID      string         `json:"id"`
	Change  map[string]any `json:"change"`
	Cursor  string         `json:"cursor"`
	Status  int            `json:"status"`
	Error   string         `json:"error"`
	Details string         `json:"details"`
}

// dial connects as subject ("" is anonymous).
func dial(t *testing.T, base, subject string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	h := http.Header{}
	if subject != "" {
		h.Set("X-Uds-Subject", subject)
	}
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+realtime.Path, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	cl := &client{t: t, c: c, msgs: make(chan message, 10_000)}
	go func() {
		defer close(cl.msgs)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var m message
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("a message that is not JSON: %s", b)
				return
			}
			cl.msgs <- m
		}
	}()
	t.Cleanup(func() { _ = c.CloseNow() })
	return cl
}

func (c *client) send(req string) {
	c.t.Helper()
	if err := c.c.Write(c.t.Context(), websocket.MessageText, []byte(req)); err != nil {
		c.t.Fatal(err)
	}
}

// next is the next message; ok is false when the connection ended or
// none came within wait.
func (c *client) next(wait time.Duration) (message, bool) {
	select {
	case m, ok := <-c.msgs:
		return m, ok
	case <-time.After(wait):
		return message{}, false
	}
}

// expect reads the next message and checks its type.
func (c *client) expect(typ string) message {
	c.t.Helper()
	m, ok := c.next(10 * time.Second)
	if !ok || m.Type != typ {
		c.t.Fatalf("want a %s message, got %+v (ok %v)", typ, m, ok)
	}
	return m
}

func subscribe(id, namespace string, cursor *string) string {
	req := map[string]any{"action": "subscribe", "id": id, "applicationUuid": app, "namespace": namespace}
	if cursor != nil {
		req["cursor"] = *cursor
	}
	b, _ := json.Marshal(req)
	return string(b)
}

// do sends an HTTP request to the API as subject and checks its status.
func do(t *testing.T, base, method, path, body, subject string, want int) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if subject != "" {
		req.Header.Set("X-Uds-Subject", subject)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		t.Fatalf("%s %s: want %d, got %d: %s", method, path, want, res.StatusCode, b)
	}
}

const data = "/rest/api/v1/data/" + app + "/"

// replica holds what a subscriber received: each item's latest entry. It
// fails the test when an item comes at an older state than one it held:
// every key of these tests is created once, updated, and deleted at most
// once at its end, so its versions order its states, a tombstone last.
type replica struct {
	t      *testing.T
	items  map[string]map[string]any
	rank   map[string]int64
	cursor string
	order  []string
}

func newReplica(t *testing.T) *replica {
	return &replica{t: t, items: map[string]map[string]any{}, rank: map[string]int64{}}
}

func keyOf(e map[string]any) string {
	k, _ := e["id"].(string)
	if sk, ok := e["sortKey"].(string); ok {
		k += "/" + sk
	}
	return k
}

func (r *replica) apply(m message) {
	r.t.Helper()
	k := keyOf(m.Change)
	rank := int64(m.Change["version"].(float64))
	if m.Change["deleted"] == true {
		rank = 1 << 60
	}
	if prev, ok := r.rank[k]; ok && rank < prev {
		r.t.Fatalf("%s came at %v after a later state (rank %d after %d)", k, m.Change, rank, prev)
	}
	if _, ok := r.rank[k]; !ok {
		r.order = append(r.order, k)
	}
	r.rank[k] = rank
	r.items[k] = m.Change
	r.cursor = m.Cursor
}

// holds says whether the replica holds exactly want: key to data, for the
// items not deleted.
func (r *replica) holds(want map[string]string) bool {
	n := 0
	for k, e := range r.items {
		if e["deleted"] == true {
			continue
		}
		n++
		b, _ := json.Marshal(e["data"])
		if want[k] != string(b) {
			return false
		}
	}
	return n == len(want)
}

// TestRealtimeDeliversEveryChange subscribes to a namespace, writes
// through the HTTP API, and receives every change as it commits, in the
// feed's order, an expiry included when it comes; a subscription narrowed
// to one item receives that item's changes only.
func TestRealtimeDeliversEveryChange(t *testing.T) {
	t.Parallel()
	base := apitest.FeedServer(t, apitest.Budget)
	c := dial(t, base, "alice")
	c.send(subscribe("all", "notes", nil))
	start := c.expect(realtime.TypeSubscribed).Cursor
	c.send(`{"action":"subscribe","id":"b","applicationUuid":"` + app + `","namespace":"notes","key":"b"}`)
	c.expect(realtime.TypeSubscribed)

	all, narrowed := newReplica(t), newReplica(t)
	// receive applies changes until the replica holds what it should.
	receive := func(what string, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !done() {
			m, ok := c.next(time.Until(deadline))
			switch {
			case !ok:
				t.Fatalf("waiting for %s, the changes stopped: holding %v", what, all.items)
			case m.Type != realtime.TypeChange:
				t.Fatalf("want changes, got %+v", m)
			case m.ID == "b":
				narrowed.apply(m)
			default:
				all.apply(m)
			}
		}
	}
	has := func(k string, version int) bool {
		return all.items[k] != nil && all.items[k]["deleted"] != true && int(all.items[k]["version"].(float64)) == version
	}
	gone := func(k string) bool { return all.items[k] != nil && all.items[k]["deleted"] == true }

	// Each group's rows land before the next is written, so that their
	// order in the feed is the order written (rows of the data and list
	// tables written at once may land in either order).
	do(t, base, "POST", data+"notes/a", `{"data":{"n":1}}`, "alice", 201)
	do(t, base, "POST", data+"notes/b", `{"data":{"n":2}}`, "alice", 201)
	do(t, base, "PUT", data+"notes/a", `{"data":{"n":3}}`, "alice", 200)
	receive("a and b", func() bool { return has("a", 2) && has("b", 1) })
	do(t, base, "POST", data+"notes/l/s1", `{"data":"first"}`, "alice", 201)
	receive("the list item", func() bool { return has("l/s1", 1) })
	do(t, base, "DELETE", data+"notes/b", "", "alice", 204)
	do(t, base, "POST", data+"notes/c", `{"data":4}`, "alice", 201)
	expiresAt := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	do(t, base, "POST", data+"notes/d", `{"data":5,"expiresAt":"`+expiresAt+`"}`, "alice", 201)
	receive("b's deletion, c and d", func() bool { return gone("b") && has("c", 1) && all.items["d"] != nil })
	receive("d's expiry", func() bool { return gone("d") })
	if !all.holds(map[string]string{"a": `{"n":3}`, "l/s1": `"first"`, "c": "4"}) {
		t.Errorf("the replica holds %v", all.items)
	}
	for m, ok := c.next(300 * time.Millisecond); ok; m, ok = c.next(300 * time.Millisecond) {
		if m.ID == "b" {
			narrowed.apply(m)
		}
	}
	if len(narrowed.items) != 1 || narrowed.items["b"]["deleted"] != true {
		t.Errorf("the subscription to b holds %v", narrowed.items)
	}

	// The feed, read over HTTP from where the subscription started, shows
	// the items first in the same order; and the last change's cursor is
	// a cursor of that feed.
	var order []string
	seen := map[string]bool{}
	cursor := start
	for deadline := time.Now().Add(10 * time.Second); len(order) < len(all.order); {
		if time.Now().After(deadline) {
			t.Fatalf("the feed shows %v, the subscription %v", order, all.order)
		}
		page := readFeed(t, base, "notes", cursor, "alice")
		for _, e := range page.Changes {
			if k := keyOf(e); !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
		}
		cursor = page.Cursor
		if page.UpToDate {
			time.Sleep(500 * time.Millisecond)
		}
	}
	if strings.Join(order, " ") != strings.Join(all.order, " ") {
		t.Errorf("the subscription showed items first in the order %v, the feed in %v", all.order, order)
	}
	readFeed(t, base, "notes", all.cursor, "alice")
}

// feedPage is a page of the changes feed read over HTTP.
type feedPage struct {
	Changes  []map[string]any `json:"changes"`
	Cursor   string           `json:"cursor"`
	UpToDate bool             `json:"upToDate"`
}

// readFeed reads a page of the namespace's feed as subject.
func readFeed(t *testing.T, base, namespace, cursor, subject string) feedPage {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", base+data+namespace+"?changes="+url.QueryEscape(cursor), nil)
	req.Header.Set("X-Uds-Subject", subject)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var page feedPage
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("reading the feed from a cursor: %d %s", res.StatusCode, b)
	}
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	return page
}

// TestRealtimeResumesAcrossKills writes concurrently while the subscriber
// loses its connection, and later the server is killed and started again
// over the same tables: resuming each time from the last cursor it
// received, the subscriber ends with the namespace as it is, having never
// seen an item go back to an older state.
func TestRealtimeResumesAcrossKills(t *testing.T) {
	t.Parallel()
	tables := storetest.NewStreamedTables(t)
	server := apitest.StartFeed(t, tables, apitest.Budget)
	var mu sync.Mutex
	base := server.URL
	baseNow := func() string {
		mu.Lock()
		defer mu.Unlock()
		return base
	}

	// The writer's last states, key to data ("" once deleted).
	want := map[string]string{}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		rng := rand.New(rand.NewPCG(7, 42))
		versions := map[string]int{}
		for i := range 120 {
			k := fmt.Sprintf("k%02d", rng.IntN(25))
			v, ok := versions[k]
			method, status := "POST", 201
			switch {
			case v < 0:
				continue
			case ok && rng.IntN(6) == 0:
				method, status, v = "DELETE", 204, -1
			case ok:
				method, status = "PUT", 200
			}
			body := ""
			if method != "DELETE" {
				body = fmt.Sprintf(`{"data":{"i":%d}}`, i)
			}
			if got := sendQuietly(baseNow(), method, data+"space/"+k, body); got != status {
				// The server was being killed: the write is made again
				// once it is back (its start may take seconds on a busy
				// machine), and may find it was made the first time.
				again := map[string]int{"POST": 409, "DELETE": 404}[method]
				for deadline := time.Now().Add(30 * time.Second); got != status && got != again; {
					if got != 0 || time.Now().After(deadline) {
						t.Errorf("%s %s answered %d after the server came back", method, k, got)
						return
					}
					time.Sleep(200 * time.Millisecond)
					got = sendQuietly(baseNow(), method, data+"space/"+k, body)
				}
			}
			versions[k] = v + 1
			if method == "DELETE" {
				versions[k] = -1
			}
			mu.Lock()
			want[k] = ""
			if body != "" {
				want[k] = fmt.Sprintf(`{"i":%d}`, i)
			}
			mu.Unlock()
			time.Sleep(25 * time.Millisecond)
		}
	}()

	r := newReplica(t)
	start := ""
	c := dial(t, baseNow(), "bob")
	c.send(subscribe("all", "space", &start))
	c.expect(realtime.TypeSubscribed)
	received, kills := 0, 0
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, ok := c.next(2 * time.Second)
		switch {
		case ok && m.Type == realtime.TypeChange:
			r.apply(m)
			received++
		case ok && m.Type == realtime.TypeSubscribed:
		case ok:
			t.Fatalf("unexpected %+v", m)
		}
		done := false
		select {
		case <-writerDone:
			mu.Lock()
			final := map[string]string{}
			for k, v := range want {
				if v != "" {
					final[k] = v
				}
			}
			mu.Unlock()
			done = r.holds(final)
		default:
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never caught up: %d changes received", received)
		}
		resume := func() {
			cursor := r.cursor
			c = dial(t, baseNow(), "bob")
			c.send(subscribe("all", "space", &cursor))
		}
		switch {
		case kills == 0 && received >= 15:
			// The connection drops.
			kills++
			_ = c.c.CloseNow()
			resume()
		case kills == 1 && received >= 45:
			// The server is killed, and starts again over the same tables.
			kills++
			server.Kill()
			next := apitest.StartFeed(t, tables, apitest.Budget)
			mu.Lock()
			server, base = next, next.URL
			mu.Unlock()
			resume()
		}
	}
	if kills < 2 {
		t.Errorf("the run ended after %d kills", kills)
	}
}

// sendQuietly makes a write and returns its status, 0 when it had no
// answer.
func sendQuietly(base, method, path, body string) int {
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("X-Uds-Subject", "bob")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// TestRealtimePrivate: in a private namespace each subscriber receives
// its own items only, and an anonymous caller is refused as the feed
// refuses it; a cursor of one caller's feed is refused to another.
func TestRealtimePrivate(t *testing.T) {
	t.Parallel()
	base := apitest.FeedServer(t, apitest.Budget)
	setPolicy(t, base, "diary", `{"access":"private"}`)
	alice, bob := dial(t, base, "alice"), dial(t, base, "bob")
	alice.send(subscribe("mine", "diary", nil))
	aliceCursor := alice.expect(realtime.TypeSubscribed).Cursor
	bob.send(subscribe("mine", "diary", nil))
	bob.expect(realtime.TypeSubscribed)

	do(t, base, "POST", data+"diary/d1", `{"data":"alice's"}`, "alice", 201)
	do(t, base, "POST", data+"diary/d1", `{"data":"bob's"}`, "bob", 201)
	do(t, base, "POST", data+"diary/d2", `{"data":"bob's too"}`, "bob", 201)
	for _, tc := range []struct {
		c    *client
		want map[string]string
	}{{alice, map[string]string{"d1": `"alice's"`}}, {bob, map[string]string{"d1": `"bob's"`, "d2": `"bob's too"`}}} {
		r := newReplica(t)
		deadline := time.Now().Add(15 * time.Second)
		for !r.holds(tc.want) {
			m, ok := tc.c.next(time.Until(deadline))
			if !ok || m.Type != realtime.TypeChange {
				t.Fatalf("want %v, holding %v, then %+v", tc.want, r.items, m)
			}
			r.apply(m)
		}
		// Nothing of the other's follows.
		if m, ok := tc.c.next(time.Second); ok {
			t.Errorf("after its own items, %+v", m)
		}
	}

	anonymous := dial(t, base, "")
	anonymous.send(subscribe("s", "diary", nil))
	if m := anonymous.expect(realtime.TypeError); m.Status != 401 || m.ID != "s" {
		t.Errorf("an anonymous subscribe to a private namespace: %+v", m)
	}
	bob.send(subscribe("alices", "diary", &aliceCursor))
	if m := bob.expect(realtime.TypeError); m.Status != 400 || m.Error != "Invalid changes" {
		t.Errorf("another caller's cursor: %+v", m)
	}
}

// TestRealtimeRefusals: each request refused says why, with the status an
// HTTP request refused the same way has, and the connection goes on.
func TestRealtimeRefusals(t *testing.T) {
	t.Parallel()
	base := apitest.FeedServer(t, apitest.Budget)
	c := dial(t, base, "alice")
	bad := "not a cursor"
	for _, tc := range []struct {
		name, msg string
		status    int
		id, error string
	}{
		{"not JSON", `hello`, 400, "", "Invalid message"},
		{"an unknown action", `{"action":"publish","id":"p"}`, 400, "p", "Invalid action"},
		{"an unknown member", `{"action":"subscribe","id":"x","channel":"c"}`, 400, "x", "Invalid message"},
		{"a malformed app", `{"action":"subscribe","id":"s","applicationUuid":"nope","namespace":"n"}`, 400, "s", "Invalid applicationUuid"},
		{"a malformed namespace", `{"action":"subscribe","id":"s","applicationUuid":"` + app + `","namespace":"a/b"}`, 400, "s", "Invalid namespace"},
		{"a cursor not issued", subscribe("s", "notes", &bad), 400, "s", "Invalid changes"},
		{"an unknown subscription", `{"action":"unsubscribe","id":"none"}`, 404, "none", "Subscription not found"},
	} {
		c.send(tc.msg)
		m := c.expect(realtime.TypeError)
		if m.Status != tc.status || m.ID != tc.id || m.Error != tc.error || m.Details == "" {
			t.Errorf("%s: got %+v", tc.name, m)
		}
	}
	c.send(subscribe("s", "notes", nil))
	c.expect(realtime.TypeSubscribed)
	c.send(subscribe("s", "notes", nil))
	if m := c.expect(realtime.TypeError); m.Status != 400 || m.Error != "Invalid id" {
		t.Errorf("an id in use: %+v", m)
	}
	c.send(`{"action":"unsubscribe","id":"s"}`)
	c.expect(realtime.TypeUnsubscribed)
	for i := range realtime.MaxPerConnection {
		c.send(subscribe(fmt.Sprint(i), "notes", nil))
		c.expect(realtime.TypeSubscribed)
	}
	c.send(subscribe("one too many", "notes", nil))
	if m := c.expect(realtime.TypeError); m.Status != 429 {
		t.Errorf("past the cap: %+v", m)
	}

	// A namespace that became private since a cursor was taken has
	// another key space: the subscriber starts again from the beginning.
	other := dial(t, base, "alice")
	other.send(subscribe("before", "later-private", nil))
	cursor := other.expect(realtime.TypeSubscribed).Cursor
	setPolicy(t, base, "later-private", `{"access":"private"}`)
	other.send(subscribe("after", "later-private", &cursor))
	if m := other.expect(realtime.TypeResync); m.ID != "after" {
		t.Errorf("resync for %q", m.ID)
	}

	// A page of another site cannot open a connection.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	h := http.Header{"Origin": {"https://elsewhere.example"}}
	if _, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+realtime.Path, &websocket.DialOptions{HTTPHeader: h}); err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("an upgrade from another site's page: %v", err)
	}
}

// setPolicy sets a namespace's policy, waiting while a change of access
// mode settles (202).
func setPolicy(t *testing.T, base, namespace, body string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(t.Context(), "PUT", base+"/rest/api/v1/admin/apps/"+app+"/namespaces/"+namespace, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		switch {
		case res.StatusCode == 200:
			return
		case res.StatusCode != 202 || time.Now().After(deadline):
			t.Fatalf("setting the policy of %s: %d %s", namespace, res.StatusCode, b)
		}
	}
}
