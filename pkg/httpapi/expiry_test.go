package httpapi_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store/storetest"
)

func TestExpiryInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name, body, field string
	}{
		{"zero ttl", `{"data":1,"ttl":0}`, "Invalid ttl"},
		{"negative ttl", `{"data":1,"ttl":-5}`, "Invalid ttl"},
		{"fractional ttl", `{"data":1,"ttl":1.5}`, "Invalid ttl"},
		{"exponent ttl", `{"data":1,"ttl":1e3}`, "Invalid ttl"},
		{"ttl as a string", `{"data":1,"ttl":"60"}`, "Invalid ttl"},
		{"ttl over ten years", `{"data":1,"ttl":315360001}`, "Invalid ttl"},
		{"past instant", `{"data":1,"expiresAt":"2020-01-01T00:00:00Z"}`, "Invalid expiresAt"},
		{"malformed instant", `{"data":1,"expiresAt":"tomorrow"}`, "Invalid expiresAt"},
		{"milliseconds instead of an instant", `{"data":1,"expiresAt":1700000000000}`, "Invalid expiresAt"},
		{"both", `{"data":1,"ttl":60,"expiresAt":"` + future + `"}`, "Invalid expiresAt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", base+"/ttl/bad", tc.body).expect(t, 400)
			if r.body["error"] != tc.field {
				t.Errorf("error %q, want %q: %s", r.body["error"], tc.field, r.raw)
			}
		})
	}
	e.do("GET", base+"/ttl/bad", "").expect(t, 404)

	start := time.Now()
	r := e.do("POST", base+"/ttl/ok", `{"data":1,"ttl":315360000}`).expect(t, 201)
	got, err := time.Parse(time.RFC3339Nano, fmt.Sprint(r.body["expiresAt"]))
	if err != nil || got.Before(start.Add(315360000*time.Second).Truncate(time.Millisecond)) || !strings.HasSuffix(fmt.Sprint(r.body["expiresAt"]), "Z") {
		t.Errorf("expiresAt %v: %s", r.body["expiresAt"], r.raw)
	}
	r = e.do("PUT", base+"/ttl/ok", `{"data":2,"expiresAt":"`+future+`"}`).expect(t, 200)
	if r.body["expiresAt"] != strings.Replace(future, "Z", ".000Z", 1) {
		t.Errorf("PUT expiresAt %v, want %s", r.body["expiresAt"], future)
	}
	// A PUT without expiry removes it.
	if r := e.do("PUT", base+"/ttl/ok", `{"data":3}`).expect(t, 200); r.body["expiresAt"] != nil {
		t.Errorf("PUT without expiry kept %v", r.body["expiresAt"])
	}
	if r := e.do("GET", base+"/ttl/ok", "").expect(t, 200); r.body["expiresAt"] != nil {
		t.Errorf("GET after PUT without expiry: %s", r.raw)
	}
}

// An expired item is gone on every route at once, and its size is
// released exactly once.
func TestExpiredItemsAreGoneEverywhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{base + "/exp/item", base + "/exp/list/2024-01-01"} {
		t.Run(path[len(base):], func(t *testing.T) {
			at := e.expiresAt()
			created := e.do("POST", path, `{"data":{"v":1},"expiresAt":"`+at+`"}`, "X-Uds-Subject", "erin").expect(t, 201)
			etag := created.header.Get("ETag")
			if r := e.do("GET", path, "").expect(t, 200); r.body["expiresAt"] != at {
				t.Fatalf("expiresAt %v, want %s", r.body["expiresAt"], at)
			}
			e.expire()
			e.do("GET", path, "").expect(t, 404)
			e.do("GET", path, "", "If-None-Match", etag).expect(t, 404)
			e.do("HEAD", path, "").expect(t, 404)
			e.do("PUT", path, `{"data":2}`).expect(t, 404)
			e.do("PUT", path, `{"data":2}`, "If-Match", etag).expect(t, 404)
			e.do("DELETE", path, "", "If-Match", etag).expect(t, 412)
			e.do("DELETE", path, "").expect(t, 204)
			again := e.do("POST", path, `{"data":{"v":2}}`, "X-Uds-Subject", "erin").expect(t, 201)
			if again.header.Get("ETag") == etag || num(t, again.body["version"]) != 1 {
				t.Errorf("the new item reuses the expired one's revision: %s", again.raw)
			}
			e.do("GET", path, "", "If-None-Match", etag).expect(t, 200)
			exactUsage(t, e, "erin")
		})
	}
	// A POST onto an expired key that nothing read since replaces it.
	e.do("POST", base+"/exp/direct", `{"data":1,"expiresAt":"`+e.expiresAt()+`"}`, "X-Uds-Subject", "erin").expect(t, 201)
	e.expire()
	e.do("POST", base+"/exp/direct", `{"data":2}`, "X-Uds-Subject", "erin").expect(t, 201)
	exactUsage(t, e, "erin")
}

func exactUsage(t *testing.T, e *env, owner string) {
	t.Helper()
	if rec, real := storetest.RecordedUsage(t, e.client, e.tables, app, owner), storetest.StoredUsage(t, e.client, e.tables, app, owner); rec != real {
		t.Errorf("%s: usage %+v, the tables hold %+v", owner, rec, real)
	}
}

// Expired items scattered over several DynamoDB query pages vanish from
// list pages, which stay full, and the cursors stay valid.
func TestListPagesSkipExpiredItems(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	at := e.expiresAt()
	list := base + "/exp/scattered"
	pad := make([]byte, 30_000)
	_, _ = rand.Read(pad)
	value := base64.StdEncoding.EncodeToString(pad) // 40 KB: 25 items fill a 1 MB query page
	live := 0
	var wg sync.WaitGroup
	for i := range 75 {
		body := `{"data":"` + value + `"}`
		if i%3 != 0 {
			body = `{"data":"` + value + `","expiresAt":"` + at + `"}`
		} else {
			live++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.do("POST", fmt.Sprintf("%s/%03d", list, i), body, "X-Uds-Subject", "lena").expect(t, 201)
		}()
	}
	wg.Wait()
	e.expire()
	seen, cursor := 0, ""
	for pages := 0; ; pages++ {
		q := "?limit=7"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r := e.do("GET", list+"/list"+q, "").expect(t, 200)
		items := r.body["list"].([]any)
		for _, it := range items {
			var n int
			sk := it.(map[string]any)["sortKey"].(string)
			if _, err := fmt.Sscanf(sk, "%03d", &n); err != nil || n%3 != 0 {
				t.Errorf("expired item %s on a page", sk)
			}
		}
		seen += len(items)
		c, more := r.body["cursor"].(string)
		if more && len(items) != 7 {
			t.Errorf("page %d holds %d items and a cursor; pages stay full", pages, len(items))
		}
		if !more {
			break
		}
		cursor = c
	}
	if seen != live {
		t.Errorf("pages held %d items, want the %d live ones", seen, live)
	}
	exactUsage(t, e, "lena")
	if r := e.do("GET", admin+"/apps/"+app+"/users/lena/quota", "").expect(t, 200); num(t, r.body["usedItems"]) != int64(live) {
		t.Errorf("usage after the pages: %s, want %d items", r.raw, live)
	}
}

// An owner's expired items never cause a 403: a write that would be
// refused reclaims them first; recompute counts live items only.
func TestExpiredItemsFreeQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("PUT", admin+"/apps/"+app+"/users/quinn/quota", `{"limitItems": 3}`).expect(t, 200)
	at := e.expiresAt()
	for i := range 3 {
		e.do("POST", fmt.Sprintf("%s/q/%d", base, i), `{"data":1,"expiresAt":"`+at+`"}`, "X-Uds-Subject", "quinn").expect(t, 201)
	}
	e.do("POST", base+"/q/x", `{"data":1}`, "X-Uds-Subject", "quinn").expect(t, 403)
	e.expire()
	for i := range 3 {
		e.do("POST", fmt.Sprintf("%s/q/new%d", base, i), `{"data":1}`, "X-Uds-Subject", "quinn").expect(t, 201)
	}
	e.do("POST", base+"/q/one-more", `{"data":1}`, "X-Uds-Subject", "quinn").expect(t, 403)
	exactUsage(t, e, "quinn")

	// Writes sent at once, each refused by usage its expired items
	// still hold: the first to reclaim them releases them for all, and
	// the others, finding nothing left to reclaim, try again on the usage
	// that release left rather than answer 403 on the one they met.
	e.do("PUT", admin+"/apps/"+app+"/users/uma/quota", `{"limitItems": 10}`).expect(t, 200)
	at = e.expiresAt()
	for i := range 10 {
		e.do("POST", fmt.Sprintf("%s/u/%d", base, i), `{"data":1,"expiresAt":"`+at+`"}`, "X-Uds-Subject", "uma").expect(t, 201)
	}
	e.expire()
	statuses := make([]int, 10)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = e.send("POST", fmt.Sprintf("%s/u/new%d", base, i), []byte(`{"data":1}`), "Content-Type", "application/json", "X-Uds-Subject", "uma").status
		}()
	}
	wg.Wait()
	if slices.ContainsFunc(statuses, func(st int) bool { return st != 201 }) {
		t.Errorf("creates at once into the room of expired items: %v, want every one 201", statuses)
	}
	e.do("POST", base+"/u/one-more", `{"data":1}`, "X-Uds-Subject", "uma").expect(t, 403)
	exactUsage(t, e, "uma")

	// Expired items nothing has touched: recompute reclaims them.
	at = e.expiresAt()
	e.do("PUT", admin+"/apps/"+app+"/users/rita/quota", `{"limitItems": 100}`).expect(t, 200)
	for i := range 4 {
		e.do("POST", fmt.Sprintf("%s/r/%d", base, i), `{"data":1,"expiresAt":"`+at+`"}`, "X-Uds-Subject", "rita").expect(t, 201)
	}
	e.expire()
	r := e.do("POST", admin+"/apps/"+app+"/users/rita/quota/recompute", "").expect(t, 200)
	if num(t, r.body["usedItems"]) != 0 {
		t.Errorf("recompute after expiry: %s", r.raw)
	}
	exactUsage(t, e, "rita")
}

// Writes racing the expiry of their keys keep usage exact: the keys
// expire halfway through the writes, and the writes' own ttl of 1 s
// passes while others still run. Each write answers as a write of a key
// that may be there, expired or gone does, and creates land on keys whose
// items expired.
func TestConcurrentWritesOntoExpiringKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	at := e.expiresAt()
	for i := range 6 {
		e.do("POST", fmt.Sprintf("%s/race/%d", base, i), `{"data":1,"expiresAt":"`+at+`"}`, "X-Uds-Subject", "sam").expect(t, 201)
	}
	const writers, writes = 6, 50
	var started atomic.Int32
	// answers counts each method's answers, and the creates answered 201
	// once the keys expired.
	var (
		mu             sync.Mutex
		answers        = map[string]map[int]int{"POST": {}, "PUT": {}, "DELETE": {}}
		createdExpired int
	)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				n := started.Add(1)
				if n == writers*writes/2 {
					e.expire()
				}
				path := fmt.Sprintf("%s/race/%d", base, (w+i)%6)
				var method string
				var st int
				switch i % 3 {
				case 0:
					method, st = "POST", e.send("POST", path, []byte(`{"data":"`+strings.Repeat("p", i%50)+`"}`), "Content-Type", "application/json", "X-Uds-Subject", "sam").status
				case 1:
					method, st = "PUT", e.send("PUT", path, []byte(`{"data":2,"ttl":1}`), "Content-Type", "application/json", "X-Uds-Subject", "sam").status
				default:
					method, st = "DELETE", e.send("DELETE", path, nil, "X-Uds-Subject", "sam").status
				}
				mu.Lock()
				answers[method][st]++
				if method == "POST" && st == 201 && n > writers*writes/2 {
					createdExpired++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	allowed := map[string][]int{"POST": {201, 409}, "PUT": {200, 404}, "DELETE": {204, 404}}
	for method, counts := range answers {
		for st := range counts {
			if !slices.Contains(allowed[method], st) {
				t.Errorf("%s answered %d (%v), want one of %v", method, st, counts, allowed[method])
			}
		}
	}
	if answers["PUT"][200] == 0 || createdExpired == 0 {
		t.Errorf("answers %v, %d creates after the expiry: want updates with a ttl and creates over expired items", answers, createdExpired)
	}
	e.clock.Advance(2 * time.Second) // every ttl of 1 s is past
	for i := range 6 {
		// The last write of a key may have been a create without a ttl.
		if st := e.do("GET", fmt.Sprintf("%s/race/%d", base, i), "").status; st != 200 && st != 404 {
			t.Errorf("GET of key %d after the writes answered %d", i, st)
		}
	}
	e.do("POST", admin+"/apps/"+app+"/users/sam/quota/recompute", "").expect(t, 200)
	exactUsage(t, e, "sam")
}
