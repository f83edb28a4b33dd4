package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/udsproject/uds/pkg/client"
)

// realtimeFake answers WebSocket upgrades with the protocol's messages as
// each test scripts them, one script a connection, and keeps the upgrades
// it received. It makes the server do what the real one does rarely or
// never on cue (a resync, an error, a close at a given message) for the
// tests of the client's part; TestSubscribe runs the client against the
// real server.
type realtimeFake struct {
	t       *testing.T
	scripts []func(p *fakePeer)

	mu sync.Mutex
	// upgrades are the upgrade requests received, subscribes the cursors
	// of the subscribe messages ("none" for a subscribe without one).
	upgrades   []*http.Request
	subscribes []string
}

// seen is what the fake received so far.
func (f *realtimeFake) seen() ([]*http.Request, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.upgrades...), append([]string(nil), f.subscribes...)
}

// fakePeer is the server's end of one connection, for a script.
type fakePeer struct {
	t    *testing.T
	f    *realtimeFake
	ctx  context.Context
	conn *websocket.Conn
}

// subscribe reads the client's next message, which must be a subscribe,
// and keeps its cursor.
func (p *fakePeer) subscribe() {
	p.t.Helper()
	_, data, err := p.conn.Read(p.ctx)
	if err != nil {
		p.t.Errorf("reading the subscribe: %v", err)
		return
	}
	var m struct {
		Action, ID, ApplicationUUID, Namespace, Key, SortKey string
		Cursor                                               *string
	}
	if err := json.Unmarshal(data, &m); err != nil || m.Action != "subscribe" || m.ID == "" || m.ApplicationUUID != app || m.Namespace != "notes" {
		p.t.Errorf("not the subscribe expected: %s (%v)", data, err)
	}
	cursor := "none"
	if m.Cursor != nil {
		cursor = *m.Cursor
	}
	p.f.mu.Lock()
	p.f.subscribes = append(p.f.subscribes, cursor)
	p.f.mu.Unlock()
}

// send sends a message of the protocol, with the client's id.
func (p *fakePeer) send(msg string) {
	p.t.Helper()
	if err := p.conn.Write(p.ctx, websocket.MessageText, []byte(strings.Replace(msg, `{`, `{"id":"1",`, 1))); err != nil {
		p.t.Errorf("sending %s: %v", msg, err)
	}
}

func (f *realtimeFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.upgrades = append(f.upgrades, r)
	n := len(f.upgrades)
	f.mu.Unlock()
	if n > len(f.scripts) {
		http.Error(w, `{"error":"No more connections"}`, http.StatusServiceUnavailable)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		f.t.Errorf("accept: %v", err)
		return
	}
	defer conn.CloseNow()
	f.scripts[n-1](&fakePeer{t: f.t, f: f, ctx: r.Context(), conn: conn})
}

// serveFake serves scripts, one a connection, and returns a client of it.
func serveFake(t *testing.T, opts []client.Option, scripts ...func(p *fakePeer)) (*realtimeFake, *client.Client) {
	t.Helper()
	f := &realtimeFake{t: t, scripts: scripts}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, newClient(t, srv.URL, append([]client.Option{client.WithRetries(2, time.Millisecond)}, opts...)...)
}

func ptr(s string) *string { return &s }

// received is what an iteration yielded, as text: "id@version deleted?
// cursor", "resync", or the error.
func received(t *testing.T, seq func(func(client.RealtimeChange, error) bool), n int) []string {
	t.Helper()
	var got []string
	for ch, err := range seq {
		switch {
		case err != nil:
			got = append(got, "error "+err.Error())
		case ch.Resync:
			got = append(got, "resync")
		default:
			s := ch.ID + "@" + strconv.FormatInt(ch.Version, 10)
			if ch.Deleted {
				s += " deleted"
			}
			got = append(got, s+" "+ch.Cursor)
		}
		if len(got) == n {
			break
		}
	}
	return got
}

func TestSubscribeResumesAndResyncs(t *testing.T) {
	t.Parallel()
	f, c := serveFake(t, []client.Option{client.WithSubject("alice"), client.WithUserAgent("fake-test")},
		// Live from now: the server says where that is, sends two
		// changes, and closes as one that stops.
		func(p *fakePeer) {
			p.subscribe()
			p.send(`{"type":"subscribed","cursor":"c0"}`)
			p.send(`{"type":"change","change":{"applicationUuid":"` + app + `","namespace":"notes","id":"a","version":1,"data":{"n":1}},"cursor":"c1"}`)
			p.send(`{"type":"change","change":{"applicationUuid":"` + app + `","namespace":"notes","id":"b","version":1,"data":2},"cursor":"c2"}`)
			_ = p.conn.Close(websocket.StatusGoingAway, "stopping")
		},
		// The cursor is too old for the feed: resync, and from the
		// beginning again on the same connection.
		func(p *fakePeer) {
			p.subscribe()
			p.send(`{"type":"subscribed","cursor":"c2"}`)
			p.send(`{"type":"resync"}`)
			p.subscribe()
			p.send(`{"type":"subscribed","cursor":""}`)
			p.send(`{"type":"change","change":{"applicationUuid":"` + app + `","namespace":"notes","id":"b","version":1,"data":2},"cursor":"c3"}`)
			// A message of another subscription is not this one's.
			p.conn.Write(p.ctx, websocket.MessageText, []byte(`{"type":"change","id":"other","change":{"id":"x","version":9},"cursor":"x"}`))
			p.send(`{"type":"change","change":{"applicationUuid":"` + app + `","namespace":"notes","id":"a","version":2,"deleted":true},"cursor":"c4"}`)
			// The client stops here: the connection ends.
			if _, _, err := p.conn.Read(p.ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Errorf("after the caller stopped, the client's end: %v", err)
			}
		})
	got := received(t, c.Subscribe(t.Context(), client.SubscribeRequest{App: app, Namespace: "notes"}), 5)
	want := []string{"a@1 c1", "b@1 c2", "resync", "b@1 c3", "a@2 deleted c4"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("received %q, want %q", got, want)
	}
	upgrades, cursors := f.seen()
	if strings.Join(cursors, ",") != "none,c2," {
		t.Errorf("the subscribes' cursors: %q, want none, c2 and the beginning", cursors)
	}
	for _, r := range upgrades {
		if r.URL.Path != "/rest/api/v1/realtime" || r.Header.Get("X-Uds-Subject") != "alice" || r.Header.Get("User-Agent") != "fake-test" || r.URL.RawQuery != "" {
			t.Errorf("an upgrade to %s with %v", r.URL, r.Header)
		}
	}
}

func TestSubscribeRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	req := client.SubscribeRequest{App: app, Namespace: "notes", Cursor: ptr("c9")}

	// A subscribe the server refuses ends the iteration with its error,
	// as an HTTP answer's.
	f, c := serveFake(t, nil, func(p *fakePeer) {
		p.subscribe()
		p.send(`{"type":"error","status":403,"code":"forbidden","error":"Forbidden","details":"not yours"}`)
	})
	got := received(t, c.Subscribe(ctx, req), 2)
	if len(got) != 1 || got[0] != "error 403 Forbidden: not yours" {
		t.Errorf("a refused subscribe: %q", got)
	}
	for _, err := range c.Subscribe(ctx, req) {
		var apiErr *client.APIError
		if !errors.Is(err, client.ErrUnavailable) {
			// The fake has no script left: 503 on the upgrade, tried
			// again as many times as WithRetries allows.
			t.Errorf("no more connections: %v", err)
		}
		if errors.As(err, &apiErr) && apiErr.Message != "No more connections" {
			t.Errorf("the upgrade's error body: %+v", apiErr)
		}
	}

	// 429 (a rate limit, or a cap on subscriptions) is tried again; the
	// cursor goes along.
	f, c = serveFake(t, []client.Option{client.WithToken("a.b.c")},
		func(p *fakePeer) {
			p.subscribe()
			p.send(`{"type":"error","status":429,"error":"Too many requests"}`)
		},
		func(p *fakePeer) {
			p.subscribe()
			p.send(`{"type":"subscribed","cursor":"c9"}`)
			p.send(`{"type":"change","change":{"id":"a","version":3},"cursor":"c10"}`)
		})
	if got := received(t, c.Subscribe(ctx, req), 1); len(got) != 1 || got[0] != "a@3 c10" {
		t.Errorf("after a 429: %q", got)
	}
	upgrades, cursors := f.seen()
	if strings.Join(cursors, ",") != "c9,c9" {
		t.Errorf("the subscribes' cursors: %q", cursors)
	}
	// The token goes as access_token, a browser's way too.
	for _, r := range upgrades {
		if r.URL.Query().Get("access_token") != "a.b.c" || r.Header.Get("Authorization") != "" {
			t.Errorf("an upgrade to %s with %v", r.URL, r.Header)
		}
	}

	// An upgrade refused with 401 ends the iteration at once.
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"code":"unauthenticated","error":"Unauthorized","details":"the token has expired"}`))
	}))
	t.Cleanup(unauthorized.Close)
	c = newClient(t, "http://127.0.0.1:1", client.WithRealtimeURL(strings.Replace(unauthorized.URL, "http:", "ws:", 1)+"/prod"))
	for _, err := range c.Subscribe(ctx, req) {
		if !errors.Is(err, client.ErrUnauthenticated) || !strings.Contains(err.Error(), "the token has expired") {
			t.Errorf("a 401 upgrade: %v", err)
		}
	}

	// No server at all: the first connection fails as a request does,
	// after the retries.
	c = newClient(t, "http://127.0.0.1:1", client.WithRetries(1, time.Millisecond))
	for _, err := range c.Subscribe(ctx, req) {
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("no server: %v", err)
		}
	}
}

func TestRealtimeURL(t *testing.T) {
	t.Parallel()
	// An https endpoint's subscriptions go to wss:// on its host.
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil || r.URL.Path != "/rest/api/v1/realtime" {
			t.Errorf("an upgrade to %s: %v", r.URL, err)
			return
		}
		defer conn.CloseNow()
		_, _, _ = conn.Read(r.Context())
		_ = conn.Write(r.Context(), websocket.MessageText, []byte(`{"type":"change","id":"1","change":{"id":"a","version":1},"cursor":"c1"}`))
		_, _, _ = conn.Read(r.Context())
	}))
	t.Cleanup(tls.Close)
	c := newClient(t, tls.URL+"/", client.WithHTTPClient(tls.Client()))
	if got := received(t, c.Subscribe(t.Context(), client.SubscribeRequest{App: app, Namespace: "notes"}), 1); len(got) != 1 || got[0] != "a@1 c1" {
		t.Errorf("over wss: %q", got)
	}

	for _, given := range []string{"https://ws.example.com/prod", "wss://", "ws//x"} {
		if _, err := client.New("https://api.example.com", client.WithRealtimeURL(given)); err == nil || err.Error() != `realtime URL "`+given+`" is not a ws(s) URL` {
			t.Errorf("WithRealtimeURL(%q): %v", given, err)
		}
	}
}
