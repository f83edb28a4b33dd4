package httpapi_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"testing"
)

// fill creates list items with the given sort keys and values of about
// size bytes that compress little.
func (e *env) fill(list string, keys []string, size int) {
	e.t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			pad := make([]byte, size*3/4)
			_, _ = rand.Read(pad)
			r := e.do("POST", list+"/"+url.PathEscape(k), fmt.Sprintf(`{"data":{"k":%q,"pad":%q}}`, k, base64.StdEncoding.EncodeToString(pad)))
			if r.status != 201 {
				e.t.Errorf("fill %s: %d %s", k, r.status, r.raw)
			}
		}()
	}
	wg.Wait()
}

// walk reads every page of a list query and returns the sort keys in order
// and the number of pages.
func (e *env) walk(list string, q url.Values) ([]string, int) {
	e.t.Helper()
	var keys []string
	pages := 0
	for {
		r := e.do("GET", list+"/list/?"+q.Encode(), "").expect(e.t, 200)
		pages++
		items, _ := r.body["list"].([]any)
		cursor, _ := r.body["cursor"].(string)
		if len(items) == 0 && cursor != "" {
			e.t.Fatalf("empty page with a cursor: %s", r.raw)
		}
		for _, it := range items {
			keys = append(keys, it.(map[string]any)["sortKey"].(string))
		}
		if cursor == "" {
			return keys, pages
		}
		q.Set("cursor", cursor)
		if pages > 1000 {
			e.t.Fatal("too many pages")
		}
	}
}

func TestListRangeOrderLimitCursor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	list := base + "/activities/user123"
	var all []string
	for i := range 150 {
		all = append(all, fmt.Sprintf("k%03d", i))
	}
	// 150 items of 9 KB (about 7 KB stored): more than one 1 MB DynamoDB
	// query page, so pages below are joined from several queries.
	e.fill(list, all, 9000)
	e.fill(base+"/activities/other-user", []string{"k000", "k001"}, 10)

	// expected computes what a query must return from the model.
	expected := func(start, end string, desc bool) []string {
		var out []string
		for _, k := range all {
			if (start == "" || k >= start) && (end == "" || k < end) {
				out = append(out, k)
			}
		}
		if desc {
			slices.Reverse(out)
		}
		return out
	}
	for _, start := range []string{"", "k010", "k075"} {
		for _, end := range []string{"", "k020", "k140", "k075"} {
			for _, order := range []string{"ASC", "desc"} {
				for _, limit := range []string{"", "1", "7", "1000"} {
					name := fmt.Sprintf("start=%s end=%s order=%s limit=%s", start, end, order, limit)
					t.Run(name, func(t *testing.T) {
						t.Parallel() // the queries only read
						e := e.on(t)
						q := url.Values{"sortOrder": {order}}
						if start != "" {
							q.Set("startKey", start)
						}
						if end != "" {
							q.Set("endKey", end)
						}
						if limit != "" {
							q.Set("limit", limit)
						}
						got, pages := e.walk(list, q)
						want := expected(start, end, order == "desc")
						if !slices.Equal(got, want) {
							t.Fatalf("got %d keys %v..., want %d keys %v...", len(got), head(got), len(want), head(want))
						}
						pageSize := 100
						if limit != "" {
							fmt.Sscan(limit, &pageSize)
						}
						if wantPages := max(1, (len(want)+pageSize-1)/pageSize); pages != wantPages {
							t.Errorf("%d pages, want %d", pages, wantPages)
						}
					})
				}
			}
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 3)] }

func TestCursorIsBoundToItsQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	list := base + "/bound/a"
	e.fill(list, []string{"a", "b", "c", "d"}, 10)
	e.fill(base+"/bound/b", []string{"a", "b", "c", "d"}, 10)
	r := e.do("GET", list+"/list?limit=2", "").expect(t, 200)
	cursor := r.body["cursor"].(string)
	// The cursor continues its own query.
	next := e.do("GET", list+"/list?limit=2&cursor="+url.QueryEscape(cursor), "").expect(t, 200)
	if items := next.body["list"].([]any); len(items) != 2 || next.body["cursor"] != nil {
		t.Fatalf("second page = %s", next.raw)
	}
	other := "d63065bd-f932-4841-83fb-849717d8df0f"
	for name, path := range map[string]string{
		"another list":      base + "/bound/b/list?limit=2&cursor=" + url.QueryEscape(cursor),
		"another app":       "/rest/api/v1/data/" + other + "/bound/a/list?limit=2&cursor=" + url.QueryEscape(cursor),
		"another order":     list + "/list?limit=2&sortOrder=DESC&cursor=" + url.QueryEscape(cursor),
		"another range":     list + "/list?limit=2&startKey=a&cursor=" + url.QueryEscape(cursor),
		"forged":            list + "/list?limit=2&cursor=" + url.QueryEscape(base64.RawURLEncoding.EncodeToString([]byte("c"))+".AAAAAAAAAAAAAAAAAAAAAA"),
		"garbage":           list + "/list?cursor=not-a-cursor",
		"tampered position": list + "/list?cursor=" + url.QueryEscape("Yw"+cursor[len("Yg"):]),
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do("GET", path, "").expect(t, 400)
			if r.body["error"] != "Invalid cursor" {
				t.Errorf("body = %s", r.raw)
			}
		})
	}
}

func TestDeleteAllOfAList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	list := base + "/purge/me"
	var keys []string
	for i := range 120 {
		keys = append(keys, fmt.Sprintf("k%03d", i))
	}
	e.fill(list, keys, 50)
	e.fill(base+"/purge/keep", []string{"x"}, 10)
	// No one ETag names a list's items: If-Match, which a client meaning
	// to delete one item would send, is refused and nothing is deleted.
	for _, tag := range []string{`"1-zzz"`, "*"} {
		if r := e.do("DELETE", list+"/list", "", "If-Match", tag).expect(t, 400); r.body["error"] != "Invalid If-Match" {
			t.Fatalf("If-Match %s: %s", tag, r.raw)
		}
	}
	if got, _ := e.walk(list, url.Values{}); len(got) != len(keys) {
		t.Fatalf("%d of %d items left after a refused delete-all", len(got), len(keys))
	}
	e.do("DELETE", list+"/list", "").expect(t, 204)
	if got, _ := e.walk(list, url.Values{}); len(got) != 0 {
		t.Fatalf("%d items left after delete-all", len(got))
	}
	if got, _ := e.walk(base+"/purge/keep", url.Values{}); len(got) != 1 {
		t.Fatalf("delete-all touched another list: %v", got)
	}
	// Deleting an empty list succeeds too.
	e.do("DELETE", list+"/list/", "").expect(t, 204)
}
