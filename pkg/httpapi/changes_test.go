package httpapi_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/changes"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/streampoll"
)

// feedEnv is an API over tables with streams, and the changes function's
// handler reading them through a poller, on the API's clock.
type feedEnv struct {
	*env
	poller *streampoll.Poller
}

func newFeedEnv(t *testing.T) *feedEnv {
	t.Helper()
	e := newEnvOver(t, storetest.NewStreamedTables(t), blobtest.New(t))
	found, err := streampoll.Streams(t.Context(), e.client, e.tables.Data, e.tables.List)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := streampoll.NewClient(t.Context(), os.Getenv(config.EnvDynamoDBEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	logger := store.New(e.client, e.tables, store.WithClock(e.clock.Now))
	p, err := streampoll.New(streams, found, changes.Handler(logger, apitest.Logger(t)), streampoll.WithLogger(apitest.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	return &feedEnv{env: e, poller: p}
}

// settle hands every change made so far to the feed, and moves the clock
// past the feed's horizon.
func (f *feedEnv) settle(t *testing.T) {
	t.Helper()
	if err := f.poller.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(3 * time.Second)
}

// replica is what a client of the feed holds: entries by key.
type replica struct {
	items  map[string]map[string]any
	cursor string
	pages  int
}

func entryKey(c map[string]any) string {
	k, _ := c["id"].(string)
	if sk, ok := c["sortKey"].(string); ok {
		k += "/" + sk
	}
	return k
}

// version is an entry's version.
func version(entry map[string]any) int64 {
	v, _ := entry["version"].(json.Number).Int64()
	return v
}

// sync reads the feed from the replica's cursor until it is up to date,
// applying each page in order, as the guide tells a client to.
func (r *replica) sync(t *testing.T, e *env, namespace string, headers ...string) {
	t.Helper()
	for range 1000 {
		body := e.do("GET", base+"/"+namespace+"?changes="+url.QueryEscape(r.cursor)+"&limit=2", "", headers...).expect(t, 200).body
		r.pages++
		for _, c := range body["changes"].([]any) {
			entry := c.(map[string]any)
			if entry["deleted"] == true {
				delete(r.items, entryKey(entry))
				continue
			}
			if old, ok := r.items[entryKey(entry)]; ok && version(old) > version(entry) {
				t.Fatalf("%s at version %v after version %v", entryKey(entry), entry["version"], old["version"])
			}
			r.items[entryKey(entry)] = entry
		}
		r.cursor = body["cursor"].(string)
		if body["upToDate"] == true {
			return
		}
	}
	t.Fatal("the feed never said it was up to date")
}

// holds checks the replica against the items the namespace has now, read
// one by one.
func (r *replica) holds(t *testing.T, e *env, namespace string, want []string, headers ...string) {
	t.Helper()
	got := slices.Sorted(maps.Keys(r.items))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("replica holds %v, want %v", got, want)
	}
	for k, entry := range r.items {
		now := e.do("GET", base+"/"+namespace+"/"+k, "", headers...).expect(t, 200).body
		a, _ := json.Marshal(now)
		b, _ := json.Marshal(entry)
		if string(a) != string(b) {
			t.Fatalf("replica's %s is %s, the item is %s", k, b, a)
		}
	}
}

func TestChangesFeed(t *testing.T) {
	t.Parallel()
	f := newFeedEnv(t)
	e := f.env
	e.do("POST", base+"/notes/a", `{"data":{"n":1}}`).expect(t, 201)
	e.do("POST", base+"/notes/b", `{"data":{"n":2}}`).expect(t, 201)
	e.do("POST", base+"/notes/l/s1", `{"data":"x"}`).expect(t, 201)
	e.do("POST", base+"/other/z", `{"data":0}`).expect(t, 201)
	// The rows of those writes fall behind the first read's horizon, so
	// that the reads after it see the later changes by their own rows
	// alone: a delete whose record wrote no row would otherwise still
	// show, through the item's older rows that the same read replays.
	f.settle(t)

	// A new replica starts from the beginning: the namespace as it is.
	r := &replica{items: map[string]map[string]any{}}
	r.sync(t, e, "notes")
	r.holds(t, e, "notes", []string{"a", "b", "l/s1"})
	// Past the creates' rows, so that what follows is read from the rows
	// of the changes below, not from the creates' rows shown again.
	f.settle(t)
	r.sync(t, e, "notes")

	e.do("PUT", base+"/notes/a", `{"data":{"n":10}}`).expect(t, 200)
	e.do("DELETE", base+"/notes/b", "").expect(t, 204)
	e.do("POST", base+"/notes/c", `{"data":3}`).expect(t, 201)
	e.do("POST", base+"/notes/d", `{"data":4, "expiresAt":"`+e.expiresAt()+`"}`).expect(t, 201)
	f.settle(t)
	r.sync(t, e, "notes")
	r.holds(t, e, "notes", []string{"a", "c", "d", "l/s1"})

	// An expiry leaves the replica once the feed's horizon passes it,
	// without a write.
	e.expire()
	r.sync(t, e, "notes")
	r.holds(t, e, "notes", []string{"a", "c", "l/s1"})

	// A second replica from the beginning agrees.
	r2 := &replica{items: map[string]map[string]any{}}
	r2.sync(t, e, "notes")
	r2.holds(t, e, "notes", []string{"a", "c", "l/s1"})

	// A delete long after the replica's first page, past the margin by
	// which the log starts before the walk, reaches it by its own row:
	// a removal's record has no new image.
	f.clock.Advance(2 * time.Minute)
	e.do("DELETE", base+"/notes/c", "").expect(t, 204)
	f.settle(t)
	r.sync(t, e, "notes")
	r.holds(t, e, "notes", []string{"a", "l/s1"})

	// Nothing new: one page, up to date, the same position.
	before := r.cursor
	r.sync(t, e, "notes")
	if r.cursor == "" || before == "" {
		t.Fatal("no cursor")
	}

	t.Run("refusals", func(t *testing.T) {
		e := e.on(t)
		for _, tc := range []struct{ query, field string }{
			{"changes=garbage", "changes"},
			{"changes=&limit=0", "limit"},
			{"changes=&limit=1001", "limit"},
			{"changes=&index=byName", "index"},
		} {
			body := e.do("GET", base+"/notes?"+tc.query, "").expect(t, 400).body
			if body["error"] != "Invalid "+tc.field {
				t.Errorf("%s: %v", tc.query, body)
			}
		}
		// A cursor of another namespace's feed.
		other := e.do("GET", base+"/other?changes=", "").expect(t, 200).body["cursor"].(string)
		e.do("GET", base+"/notes?changes="+url.QueryEscape(other), "").expect(t, 400)
	})

	t.Run("expired cursor", func(t *testing.T) {
		e := e.on(t)
		e.clock.Advance(store.ChangesRetention + time.Hour)
		body := e.do("GET", base+"/notes?changes="+url.QueryEscape(r.cursor), "").expect(t, 410).body
		if body["resync"] != true || body["code"] != "cursor_expired" || body["error"] != "Cursor expired" {
			t.Fatalf("410 body %v", body)
		}
	})
}

func TestChangesFeedPrivate(t *testing.T) {
	t.Parallel()
	f := newFeedEnv(t)
	e := f.env
	e.setPolicy(t, "diary", `{"access": "private"}`)
	alice, bob := []string{"X-Uds-Subject", "alice"}, []string{"X-Uds-Subject", "bob"}
	e.do("POST", base+"/diary/d1", `{"data":"alice's"}`, alice...).expect(t, 201)
	e.do("POST", base+"/diary/d1", `{"data":"bob's"}`, bob...).expect(t, 201)
	e.do("POST", base+"/diary/d2", `{"data":"bob's too"}`, bob...).expect(t, 201)

	ra := &replica{items: map[string]map[string]any{}}
	ra.sync(t, e, "diary", alice...)
	ra.holds(t, e, "diary", []string{"d1"}, alice...)

	e.do("POST", base+"/diary/d3", `{"data":"bob's third"}`, bob...).expect(t, 201)
	e.do("DELETE", base+"/diary/d1", "", alice...).expect(t, 204)
	f.settle(t)
	ra.sync(t, e, "diary", alice...)
	ra.holds(t, e, "diary", nil, alice...)
	rb := &replica{items: map[string]map[string]any{}}
	rb.sync(t, e, "diary", bob...)
	rb.holds(t, e, "diary", []string{"d1", "d2", "d3"}, bob...)

	e.do("GET", base+"/diary?changes=", "").expect(t, 401)
	e.do("GET", base+"/diary?changes="+url.QueryEscape(rb.cursor), "", alice...).expect(t, 400)
}

// A deployment whose data tables' streams nothing reads (tables imported
// from an earlier deployment) writes nothing into the feed, so a read of
// it is refused, saying why, rather than showing the items once and then
// nothing whatever changes; the namespace's items are served as ever.
func TestChangesFeedWithoutStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.WithoutStreams())
	e.do("POST", base+"/notes/a", `{"data":1}`).expect(t, 201)
	r := e.do("GET", base+"/notes?changes=", "").expect(t, 501)
	if r.body["error"] != "Changes feed not available" || r.body["code"] != "not_configured" ||
		!strings.Contains(fmt.Sprint(r.body["details"]), "imported without streams") {
		t.Errorf("refusal %s", r.raw)
	}
	e.do("GET", base+"/notes/a", "").expect(t, 200)
}

// An item written several times and deleted between two reads appears
// once, as it is at the last of them: its tombstone names the version the
// delete removed (and the delete's instant), not those of its first row in
// the page.
func TestChangesTombstoneNamesTheRemoval(t *testing.T) {
	t.Parallel()
	f := newFeedEnv(t)
	e := f.env
	e.do("POST", base+"/notes/keep", `{"data":0}`).expect(t, 201)
	f.settle(t)
	r := &replica{items: map[string]map[string]any{}}
	r.sync(t, e, "notes")
	f.settle(t)
	r.sync(t, e, "notes")

	// Each change is logged in a millisecond of its own, as changes a
	// little apart are, and in one batch with others, as the stream
	// delivers changes close together.
	e.do("POST", base+"/notes/x", `{"data":1}`).expect(t, 201)
	if err := f.poller.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Millisecond)
	e.do("PUT", base+"/notes/x", `{"data":2}`).expect(t, 200)
	e.do("PUT", base+"/notes/x", `{"data":3}`).expect(t, 200)
	e.do("DELETE", base+"/notes/x", "").expect(t, 204)
	f.settle(t)
	body := e.do("GET", base+"/notes?changes="+url.QueryEscape(r.cursor), "").expect(t, 200).body
	changes := body["changes"].([]any)
	if len(changes) != 1 {
		t.Fatalf("the page holds %v, want x's tombstone alone", changes)
	}
	if entry := changes[0].(map[string]any); entry["id"] != "x" || entry["deleted"] != true || version(entry) != 3 {
		t.Errorf("the tombstone %v, want x deleted at version 3", entry)
	}
}
