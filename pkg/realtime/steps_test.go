package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// stubFeed is a feed whose pages and entries a test sets: a page read at
// instant t reaches t less the settle time, as the store's feed does.
type stubFeed struct {
	now func() time.Time
	// pages counts the pages read.
	pages int
	// failOpen refuses every subscribe with it.
	failOpen error
}

func (f *stubFeed) Open(_ context.Context, caller string, req Request) (Scope, error) {
	if f.failOpen != nil {
		return Scope{Caller: caller}, f.failOpen
	}
	return Scope{App: req.ApplicationUUID, Namespace: req.Namespace, Caller: caller, Key: req.Key}, nil
}

func (f *stubFeed) Page(_ context.Context, sc Scope, cursor string) (Page, error) {
	f.pages++
	if cursor == "expired" {
		return Page{}, uds.ErrCursorExpired
	}
	at := f.now().Add(-store.ChangesSettle)
	return Page{Cursor: "page@" + at.Format(time.RFC3339Nano), UpToDate: true, At: at}, nil
}

func (f *stubFeed) Current(_ context.Context, rows []store.FeedRow) ([]Entry, error) {
	out := make([]Entry, len(rows))
	for i, r := range rows {
		out[i] = Entry{Key: r.Key, Version: r.Version, JSON: fmt.Appendf(nil, `{"id":%q,"version":%d}`, r.Key.ID, r.Version)}
	}
	return out, nil
}

func (f *stubFeed) CursorAt(_ Scope, t time.Time) (string, error) {
	return "at@" + t.Format(time.RFC3339Nano), nil
}

func (f *stubFeed) Refusal(_ Scope, err error) Refusal {
	if errors.Is(err, errRefused) {
		return Refusal{Status: http.StatusUnauthorized, Error: "Unauthenticated"}
	}
	if errors.Is(err, uds.ErrInvalid) {
		return Refusal{Status: http.StatusBadRequest, Error: "Invalid request"}
	}
	return Refusal{Status: http.StatusInternalServerError, Error: "Internal error"}
}

// errRefused is a refusal of the caller (401) in the stub feed.
var errRefused = errors.New("the caller may not read this feed")

// watches records a session's watches.
type watches map[string]bool

func (w watches) Watch(_ context.Context, feed, sub string) error { w[feed+" "+sub] = true; return nil }
func (w watches) Unwatch(_ context.Context, feed, sub string) error {
	delete(w, feed+" "+sub)
	return nil
}

// clock is a test's clock, which sleeps by moving on.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }
func (c *clock) sleep(_ context.Context, d time.Duration) error {
	c.t = c.t.Add(max(d, 0))
	return nil
}

func newSteps() (*Steps, *stubFeed, *clock) {
	c := &clock{t: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}
	f := &stubFeed{now: c.now}
	st := NewSteps(f, c.now)
	st.sleep = c.sleep
	return st, f, c
}

func types(t *testing.T, msgs [][]byte) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		var v struct {
			Type   string
			Status int
		}
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatalf("not JSON: %s", m)
		}
		if v.Status != 0 {
			v.Type += fmt.Sprint(v.Status)
		}
		out = append(out, v.Type)
	}
	return out
}

func TestStepsRequests(t *testing.T) {
	st, _, _ := newSteps()
	s, w := &State{}, watches{}
	ctx := context.Background()
	for _, tc := range []struct{ msg, want string }{
		{`{"action":"subscribe","id":"a","applicationUuid":"app","namespace":"ns"}`, "subscribed"},
		{`{"action":"subscribe","id":"a","applicationUuid":"app","namespace":"ns"}`, "error400"},
		{`{"action":"nope","id":"b"}`, "error400"},
		{`not json`, "error400"},
		{`{"action":"unsubscribe","id":"zz"}`, "error404"},
		{`{"action":"unsubscribe","id":"a"}`, "unsubscribed"},
	} {
		out, err := st.Message(ctx, "alice", s, w, []byte(tc.msg))
		if err != nil || strings.Join(types(t, out), ",") != tc.want {
			t.Fatalf("%s: %v, %v; want %s", tc.msg, types(t, out), err, tc.want)
		}
	}
	if len(s.Subs) != 0 || len(w) != 0 {
		t.Fatalf("after unsubscribe: %+v, watches %v", s.Subs, w)
	}
	for i := range MaxPerConnection {
		_, _ = st.Message(ctx, "alice", s, w, fmt.Appendf(nil, `{"action":"subscribe","id":"s%d","applicationUuid":"app","namespace":"ns"}`, i))
	}
	out, _ := st.Message(ctx, "alice", s, w, []byte(`{"action":"subscribe","id":"over","applicationUuid":"app","namespace":"ns"}`))
	if got := types(t, out); len(got) != 1 || got[0] != "error429" {
		t.Fatalf("past the cap: %v", got)
	}
}

// TestStepsCatchUpWaits checks that a subscribe from a cursor reads the
// feed until its horizon passes the instant the subscription was watched:
// the rows that landed just before were handed out before anyone
// listened.
func TestStepsCatchUpWaits(t *testing.T) {
	st, f, c := newSteps()
	s, w := &State{}, watches{}
	watched := c.t
	out, err := st.Message(context.Background(), "alice", s, w, []byte(`{"action":"subscribe","id":"a","applicationUuid":"app","namespace":"ns","cursor":"c0"}`))
	if err != nil || strings.Join(types(t, out), ",") != "subscribed" {
		t.Fatalf("%v, %v", types(t, out), err)
	}
	if f.pages != 2 {
		t.Fatalf("%d pages read, want the first and one after the wait", f.pages)
	}
	sub := s.Subs[0]
	if sub.Floor.Before(watched) || !w["app|ns| a"] {
		t.Fatalf("floor %v before the watch at %v, or not watched: %v", sub.Floor, watched, w)
	}
	// An expired cursor ends the subscription with resync, unwatched.
	out, err = st.Message(context.Background(), "alice", s, w, []byte(`{"action":"subscribe","id":"b","applicationUuid":"app","namespace":"ns","cursor":"expired"}`))
	if err != nil || strings.Join(types(t, out), ",") != "resync" || w["app|ns| b"] || len(s.Subs) != 1 {
		t.Fatalf("%v, %v, watches %v", types(t, out), err, w)
	}
}

// TestStepsLanded shows the rows after a subscription's floor, in its
// feed and scope, with a cursor a settle time before the landing's
// instant; a refused subscribe is answered, a failed one returned.
func TestStepsLanded(t *testing.T) {
	st, f, c := newSteps()
	s, w := &State{}, watches{}
	ctx := context.Background()
	_, _ = st.Message(ctx, "alice", s, w, []byte(`{"action":"subscribe","id":"all","applicationUuid":"app","namespace":"ns"}`))
	_, _ = st.Message(ctx, "alice", s, w, []byte(`{"action":"subscribe","id":"one","applicationUuid":"app","namespace":"ns","key":"x"}`))
	floor := s.Subs[0].Floor
	row := func(id string, v int64, at time.Time) store.FeedRow {
		return store.FeedRow{Key: uds.Key{App: "app", Namespace: "ns", ID: id}, Version: v,
			Seq: fmt.Sprintf("%014d.%s", at.UnixMilli(), id)}
	}
	c.t = c.t.Add(10 * time.Second)
	landed := c.t.Add(-5 * time.Second)
	out, err := st.Landed(ctx, s, []store.FeedRow{
		row("old", 1, floor.Add(-time.Second)), row("x", 2, floor.Add(time.Second)), row("y", 3, floor.Add(time.Second)),
		{Key: uds.Key{App: "app", Namespace: "other", ID: "z"}, Version: 1, Seq: fmt.Sprintf("%014d.z", c.t.UnixMilli())},
	}, landed)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range out {
		var v struct {
			ID     string
			Change struct {
				ID string
			}
			Cursor string
		}
		_ = json.Unmarshal(m, &v)
		got = append(got, v.ID+":"+v.Change.ID)
		if want := "at@" + landed.Add(-store.ChangesSettle).Format(time.RFC3339Nano); v.Cursor != want {
			t.Errorf("cursor %s, want %s", v.Cursor, want)
		}
	}
	if strings.Join(got, ",") != "all:x,all:y,one:x" {
		t.Fatalf("shown %v", got)
	}

	f.failOpen = errRefused
	out, err = st.Message(ctx, "anonymous", s, w, []byte(`{"action":"subscribe","id":"p","applicationUuid":"app","namespace":"mine"}`))
	if err != nil || strings.Join(types(t, out), ",") != "error401" {
		t.Fatalf("a refused subscribe: %v, %v", types(t, out), err)
	}
	f.failOpen = errors.New("DynamoDB is down")
	if _, err := st.Message(ctx, "alice", s, w, []byte(`{"action":"subscribe","id":"q","applicationUuid":"app","namespace":"ns"}`)); err == nil {
		t.Fatal("a failed subscribe is answered, not returned")
	}
}
