package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/coder/websocket"

	"github.com/udsproject/uds/internal/localbench/localbenchtest"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

func TestParseOptions(t *testing.T) {
	valid := options{connections: 100, rate: 100, duration: time.Minute, warmup: 5 * time.Second, grace: 15 * time.Second}
	for _, tc := range []struct {
		name    string
		change  func(o *options)
		mode    string
		wantErr string
	}{
		{"the defaults", func(*options) {}, "strict", ""},
		{"streamed", func(*options) {}, "streamed", ""},
		{"an unknown mode", func(*options) {}, "lax", "-quota-mode"},
		{"no connection", func(o *options) { o.connections = 0 }, "strict", "-connections"},
		{"too many connections", func(o *options) { o.connections = maxConnections + 1 }, "strict", "-connections"},
		{"no write", func(o *options) { o.rate = 0 }, "strict", "-rate"},
		{"too short", func(o *options) { o.duration = time.Millisecond }, "strict", "-duration"},
		{"a warm-up below zero", func(o *options) { o.warmup = -time.Second }, "strict", "-warmup"},
		{"no grace", func(o *options) { o.grace = 0 }, "strict", "-grace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid
			tc.change(&o)
			err := parseOptions(&o, tc.mode)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one starting %q", err, tc.wantErr)
			}
		})
	}
}

// Each connection has 10 subscriptions of distinct ids, every room has a
// quarter of 100 connections, and four writes in a row (one a namespace)
// call for 100 + 25 + 1 + 1 deliveries, the private ones to the writer's
// connection alone.
func TestLayout(t *testing.T) {
	const conns = 100
	perRoom := map[string]int{}
	for c := range conns {
		subs := subscriptionsOf(c)
		if len(subs) != subscriptionsEach {
			t.Fatalf("connection %d: %d subscriptions, want %d", c, len(subs), subscriptionsEach)
		}
		ids := map[string]bool{}
		for _, s := range subs {
			if ids[s.id] {
				t.Errorf("connection %d: id %s twice", c, s.id)
			}
			ids[s.id] = true
			if s.kind == sharedList {
				perRoom[s.key]++
			}
		}
	}
	if len(perRoom) != rooms {
		t.Errorf("%d rooms subscribed to, want %d", len(perRoom), rooms)
	}
	for room, n := range perRoom {
		if n != conns*roomsEach/rooms {
			t.Errorf("room %s: %d subscribers, want %d", room, n, conns*roomsEach/rooms)
		}
	}
	for n, want := range []int{100, 25, 1, 1, 100, 25, 1, 1} {
		w := writeAt(n, conns)
		var got []int
		for c := range conns {
			for _, s := range subscriptionsOf(c) {
				if s.sees(c, w) {
					got = append(got, c)
				}
			}
		}
		if len(got) != want {
			t.Errorf("write %d (%s %s %s): %d deliveries, want %d", n, w.namespace, w.id, w.sortKey, len(got), want)
		}
		if w.private() && len(got) == 1 && got[0] != w.writer {
			t.Errorf("write %d: private, delivered to connection %d, not its writer %d", n, got[0], w.writer)
		}
	}
	if got, want := writeAt(1, conns).path("app"), "/data/app/rt-rooms/room-00/w0000001/"; got != want {
		t.Errorf("a list item's path %s, want %s", got, want)
	}
	if got, want := writeAt(4, conns).path("app"), "/data/app/rt-news/w0000004"; got != want {
		t.Errorf("a key-value item's path %s, want %s", got, want)
	}
}

// Matching counts what was expected, received, missing, repeated and
// unexpected, and measures only the writes acknowledged after the
// warm-up.
func TestMatch(t *testing.T) {
	const conns = 2
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	acks := []ack{
		{w: writeAt(0, conns), sent: at(0), at: at(10), status: http.StatusCreated, version: 1},    // warm-up: news, both
		{w: writeAt(4, conns), sent: at(100), at: at(110), status: http.StatusCreated, version: 1}, // news, both
		{w: writeAt(6, conns), sent: at(200), at: at(220), status: http.StatusCreated, version: 1}, // notes of connection 1
		{w: writeAt(8, conns), sent: at(300), at: at(330), status: http.StatusServiceUnavailable, problem: "busy"},
	}
	rec := func(w write, sub string, ms int) receipt {
		return receipt{sub: sub, namespace: w.namespace, id: w.id, sortKey: w.sortKey, version: 1, at: at(ms)}
	}
	receipts := [][]receipt{
		{rec(acks[0].w, "s0", 50), rec(acks[1].w, "s0", 150), rec(acks[1].w, "s0", 160)},
		{rec(acks[0].w, "s0", 60), rec(acks[2].w, "s6", 200), rec(writeAt(12, conns), "s0", 400)},
	}
	rows := map[int]time.Time{4: at(130)}
	got := match(acks, receipts, rows, at(100))
	if got.writes != 4 || got.writeErrors != 1 || got.firstWriteError != "503 busy" {
		t.Errorf("writes %d, not acknowledged %d (%q)", got.writes, got.writeErrors, got.firstWriteError)
	}
	if got.expected != 5 || got.received != 4 || got.missing != 1 || got.duplicates != 1 || got.unexpected != 1 {
		t.Errorf("expected %d, received %d, missing %d, repeated %d, unexpected %d; want 5, 4, 1, 1, 1",
			got.expected, got.received, got.missing, got.duplicates, got.unexpected)
	}
	if want := "rt-news/w0000004 version 1 to connection 1's s0"; len(got.missingExamples) != 1 || got.missingExamples[0] != want {
		t.Errorf("missing %v, want [%s]", got.missingExamples, want)
	}
	// The measured deliveries: write 4 to connection 0 (40 ms after its
	// acknowledgement) and write 6 to connection 1 (20 ms before it).
	if want := []float64{-20, 40}; len(got.latencyMs) != 2 || got.latencyMs[0] != want[0] || got.latencyMs[1] != want[1] {
		t.Errorf("latencies %v, want %v", got.latencyMs, want)
	}
	if got.beforeAck != 1 || len(got.byKind[sharedNamespace]) != 1 || len(got.byKind[privateNamespace]) != 1 {
		t.Errorf("before the acknowledgement %d, by kind %v", got.beforeAck, got.byKind)
	}
	// Write 4's row came 20 ms after its acknowledgement, its delivery
	// 20 ms after that; write 6's row was not found.
	if len(got.toRowMs) != 1 || got.toRowMs[0] != 20 || len(got.fromRowMs) != 1 || got.fromRowMs[0] != 20 || got.noRow != 1 {
		t.Errorf("to the row %v, from it %v, no row %d; want [20], [20], 1", got.toRowMs, got.fromRowMs, got.noRow)
	}
	if len(got.toRowByTable[0]) != 1 || len(got.toRowByTable[1]) != 0 {
		t.Errorf("to the row by table %v, want a key-value item's only", got.toRowByTable)
	}
}

// stub is a server that speaks the realtime protocol over an HTTP API of
// creates only, as far as the benchmark uses them: each create is answered
// 201 with version 1 and then sent to every subscription that sees it.
type stub struct {
	// drop, when not zero, is the number of a subscription's delivery
	// (from 1, over all) that is not sent; repeat one that is sent twice.
	drop, repeat int64
	sent         atomic.Int64

	mu   sync.Mutex
	subs []stubSub
}

type stubSub struct {
	conn             *websocket.Conn
	subject, id      string
	namespace, key   string
	privateNamespace bool
}

func (s *stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/rest/api/v1")
	switch {
	case ok && rest == realtimePath:
		s.serveRealtime(w, r)
	case ok && r.Method == http.MethodPost && strings.HasPrefix(rest, "/data/"):
		// /data/{app}/{namespace}/{id}[/{sortKey}/]
		parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(rest, "/data/"), "/"), "/")
		change := map[string]any{"applicationUuid": parts[0], "namespace": parts[1], "id": parts[2], "version": 1}
		if len(parts) > 3 {
			change["sortKey"] = parts[3]
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(change)
		go s.publish(r.Header.Get(httpapi.SubjectHeader), change)
	default:
		http.NotFound(w, r)
	}
}

func (s *stub) serveRealtime(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx := r.Context()
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m struct{ Action, ID, ApplicationUUID, Namespace, Key string }
		if json.Unmarshal(b, &m) != nil || m.Action != "subscribe" || m.ApplicationUUID != benchApp {
			_ = conn.Write(ctx, websocket.MessageText, []byte(`{"type":"error","id":"`+m.ID+`","status":400,"error":"Bad request"}`))
			continue
		}
		s.mu.Lock()
		s.subs = append(s.subs, stubSub{conn: conn, subject: r.Header.Get(httpapi.SubjectHeader), id: m.ID, namespace: m.Namespace, key: m.Key,
			privateNamespace: m.Namespace == nsNotes || m.Namespace == nsDrafts})
		s.mu.Unlock()
		_ = conn.Write(ctx, websocket.MessageText, []byte(`{"type":"subscribed","id":"`+m.ID+`","cursor":"c"}`))
	}
}

func (s *stub) publish(writer string, change map[string]any) {
	s.mu.Lock()
	subs := append([]stubSub(nil), s.subs...)
	s.mu.Unlock()
	for _, sub := range subs {
		if sub.namespace != change["namespace"] || (sub.key != "" && sub.key != change["id"]) ||
			(sub.privateNamespace && sub.subject != writer) {
			continue
		}
		b, _ := json.Marshal(map[string]any{"type": "change", "id": sub.id, "change": change, "cursor": "c"})
		n := s.sent.Add(1)
		if n == s.drop {
			continue
		}
		_ = sub.conn.Write(context.Background(), websocket.MessageText, b)
		if n == s.repeat {
			_ = sub.conn.Write(context.Background(), websocket.MessageText, b)
		}
	}
}

// Against a stub of the protocol, the benchmark opens its connections,
// subscribes, writes, and matches every delivery; a delivery the server
// drops is reported missing, and one it sends twice repeated.
func TestDrive(t *testing.T) {
	for _, tc := range []struct {
		name             string
		drop, repeat     int64
		missing, repeats int
	}{
		{"every delivery", 0, 0, 0, 0},
		{"one dropped, one repeated", 7, 11, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &stub{drop: tc.drop, repeat: tc.repeat}
			srv := httptest.NewServer(s)
			defer srv.Close()
			o := options{connections: 20, rate: 200, duration: time.Second, warmup: 200 * time.Millisecond, grace: 2 * time.Second}
			subscribed := false
			d, err := drive(context.Background(), o, srv.Client(), srv.URL+"/rest/api/v1", func() { subscribed = true })
			if err != nil {
				t.Fatal(err)
			}
			if !subscribed {
				t.Error("not told when the connections were subscribed")
			}
			got := match(d.acks, d.receipts, nil, d.writesStart.Add(o.warmup))
			// 240 writes, each four a 20 + 5 + 1 + 1 deliveries.
			if got.writes != 240 || got.writeErrors != 0 || got.expected != 240/4*27 {
				t.Errorf("writes %d (%d not acknowledged), expected %d deliveries; want 240, 0, %d", got.writes, got.writeErrors, got.expected, 240/4*27)
			}
			if got.missing != tc.missing || got.received != got.expected-tc.missing || got.duplicates != tc.repeats || got.unexpected != 0 {
				t.Errorf("received %d, missing %d, repeated %d, unexpected %d", got.received, got.missing, got.duplicates, got.unexpected)
			}
			for k := range kinds {
				if len(got.byKind[k]) == 0 {
					t.Errorf("no measured delivery to a %s subscription", k)
				}
			}
			if len(d.others) > 0 || len(d.closes) > 0 {
				t.Errorf("other messages %v, connections closed %v", d.others, d.closes)
			}
		})
	}
}

// A row of the changes table names its write by the item's id, or its sort
// key in a list, in shared and private namespaces alike.
func TestRowOf(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	const seq = "01764936000123.x1"
	want := time.UnixMilli(1764936000123)
	for _, tc := range []struct {
		name string
		row  map[string]types.AttributeValue
		n    int
		ok   bool
	}{
		{"a key-value item", map[string]types.AttributeValue{schema.AttrDataKey: s("app|rt-news|w0000004"), schema.AttrChangeSeq: s(seq)}, 4, true},
		{"a private one", map[string]types.AttributeValue{schema.AttrDataKey: s("app|rt-notes|w0000006|rt-0001"), schema.AttrChangeSeq: s(seq)}, 6, true},
		{"a list item", map[string]types.AttributeValue{schema.AttrDataKey: s("app|rt-rooms|room-01"), schema.AttrSortKey: s("w0000005"), schema.AttrChangeSeq: s(seq)}, 5, true},
		{"another item", map[string]types.AttributeValue{schema.AttrDataKey: s("app|rt-news|other"), schema.AttrChangeSeq: s(seq)}, 0, false},
		{"no sequence", map[string]types.AttributeValue{schema.AttrDataKey: s("app|rt-news|w0000004")}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, at, ok := rowOf(tc.row)
			if ok != tc.ok || ok && (n != tc.n || !at.Equal(want)) {
				t.Errorf("rowOf = %d, %v, %v; want %d, %v, %v", n, at, ok, tc.n, want, tc.ok)
			}
		})
	}
}

// The whole benchmark, briefly, against the server of this tree over the
// test engine: every delivery received, the report's figures filled in.
// Limits and policies are not cached, so that the private namespaces take
// 15 s to set up rather than a minute.
func TestBench(t *testing.T) {
	endpoint, bin := localbenchtest.Server(t)
	t.Setenv(config.EnvLimitsCacheTTL, "0s")
	o := options{udsLocal: bin, connections: 4, rate: 20, duration: 2 * time.Second, grace: 15 * time.Second, mode: uds.QuotaStrict}
	var report bytes.Buffer
	if err := run(t.Context(), o, endpoint, &report); err != nil {
		t.Fatalf("%v\n%s", err, &report)
	}
	for _, want := range []*regexp.Regexp{
		// 40 writes, each four a 4 + 1 + 1 + 1 deliveries.
		regexp.MustCompile(`\| writes: sent / not acknowledged \| 40 / 0 \|\n`),
		regexp.MustCompile(`\| deliveries: expected / received / missing \| 70 / 70 / \*\*0\*\* \|\n`),
		regexp.MustCompile(`\| \*\*commit-to-delivery p50 / p90 / p99 / max ms\*\* \| \*\*-?[0-9]+ / -?[0-9]+ / [0-9]+ / [0-9]+\*\* \|\n`),
		regexp.MustCompile(`\| of which to the row's instant [^|]*\| 40, `),
		regexp.MustCompile(`\| server RSS per connection \(10 subscriptions\), KB \| -?[0-9.]+ \|\n`),
	} {
		if !want.MatchString(report.String()) {
			t.Errorf("the report does not match %s:\n%s", want, &report)
		}
	}
	if strings.Contains(report.String(), "WARN or ERROR") {
		t.Errorf("the report quotes a server's warning:\n%s", &report)
	}
}
