package httpapi_test

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestCatalogueListings follows an app that holds data and is not
// registered through the apps and namespaces listings with include=held,
// across pages of one cursor.
func TestCatalogueListings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Two registered apps, one of which holds data, and this test's app,
	// which holds data and is not registered.
	e.do("PUT", registry+"/"+registryApp(1), `{"name": "Alpha"}`).expect(t, 200)
	e.do("PUT", registry+"/"+registryApp(2), `{"name": "Bravo"}`).expect(t, 200)
	e.do("POST", "/rest/api/v1/data/"+registryApp(2)+"/notes/a", `{"data": {}}`).expect(t, 201)
	e.do("POST", base+"/notes/a", `{"data": {}}`).expect(t, 201)
	e.do("POST", base+"/scores/a", `{"data": {}}`).expect(t, 201)
	e.setPolicy(t, "profiles", `{"access": "owner-write"}`)

	t.Run("apps", func(t *testing.T) {
		var got []string
		cursor := ""
		for range 5 {
			q := "?include=held&limit=2"
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			r := e.do("GET", registry+q, "").expect(t, 200)
			for _, a := range r.body["apps"].([]any) {
				reg := a.(map[string]any)
				got = append(got, fmt.Sprintf("%v %v %v", reg["applicationUuid"], reg["name"], reg["registered"]))
			}
			if cursor, _ = r.body["cursor"].(string); cursor == "" {
				break
			}
		}
		want := []string{registryApp(1) + " Alpha true", registryApp(2) + " Bravo true", app + " <nil> false"}
		if !slices.Equal(got, want) {
			t.Errorf("apps with include=held: %q, want %q", got, want)
		}
		r := e.do("GET", registry, "").expect(t, 200)
		if apps := r.body["apps"].([]any); len(apps) != 2 {
			t.Errorf("apps without include=held: %s", r.raw)
		}
	})
	t.Run("namespaces", func(t *testing.T) {
		list := func(q string) []string {
			r := e.do("GET", adminApps+"/namespaces"+q, "").expect(t, 200)
			var out []string
			for _, n := range r.body["namespaces"].([]any) {
				ns := n.(map[string]any)
				_, held := ns["heldSince"]
				out = append(out, fmt.Sprintf("%v %v %v %v", ns["namespace"], ns["access"], ns["policy"], held))
			}
			return out
		}
		if got, want := list("?include=held"), []string{"notes shared false true", "profiles owner-write true false", "scores shared false true"}; !slices.Equal(got, want) {
			t.Errorf("namespaces with include=held: %q, want %q", got, want)
		}
		if got, want := list(""), []string{"profiles owner-write true false"}; !slices.Equal(got, want) {
			t.Errorf("namespaces without include=held: %q, want %q", got, want)
		}
		// A removed policy keeps the namespace's mark.
		e.do("POST", base+"/profiles/a", `{"data": {}}`).expect(t, 201)
		e.do("DELETE", adminApps+"/namespaces/profiles", "").expect(t, 204)
		r := e.do("GET", adminApps+"/namespaces/profiles", "").expect(t, 200)
		if r.body["heldSince"] == nil || r.body["access"] != "shared" {
			t.Errorf("a removed policy: %s", r.raw)
		}
	})
}

// TestNamespaceItemsListing pages through a namespace's keys, by key and
// newest first, for every owner and for one, in a private namespace, and
// checks the refusals of bad input.
func TestNamespaceItemsListing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setPolicy(t, "diary", `{"access": "private"}`)
	want := map[string][]string{} // owner → "id" or "id/sortKey"
	for _, who := range []string{"alice", "bob", "carol"} {
		for i := range 4 {
			id := fmt.Sprintf("%s-%d", who, i)
			e.clock.Advance(10 * time.Millisecond)
			e.as(who, "POST", base+"/diary/"+id, `{"data": {}}`).expect(t, 201)
			want[who] = append(want[who], id)
		}
		e.as(who, "POST", base+"/diary/day/2026-01-0"+who[:1], `{"data": {}}`).expect(t, 201)
		want[who] = append(want[who], "day/2026-01-0"+who[:1])
		e.as(who, "POST", base+"/other/"+who, `{"data": {}}`).expect(t, 201)
	}
	items := adminApps + "/namespaces/diary/items"
	walk := func(t *testing.T, q string) (map[string][]string, int) {
		got := map[string][]string{}
		cursor, pages := "", 0
		for ; pages < 100; pages++ {
			p := q
			if cursor != "" {
				p += "&cursor=" + url.QueryEscape(cursor)
			}
			r := e.do("GET", items+"?"+p, "").expect(t, 200)
			for _, it := range r.body["items"].([]any) {
				item := it.(map[string]any)
				k := item["id"].(string)
				if sk, ok := item["sortKey"].(string); ok {
					k += "/" + sk
				}
				if item["updatedDate"] == nil || item["size"] == nil {
					t.Errorf("item %v", item)
				}
				got[item["owner"].(string)] = append(got[item["owner"].(string)], k)
			}
			if cursor, _ = r.body["cursor"].(string); cursor == "" {
				break
			}
		}
		for _, ks := range got {
			sort.Strings(ks)
		}
		return got, pages + 1
	}
	for _, ks := range want {
		sort.Strings(ks)
	}
	t.Run("all owners, small pages", func(t *testing.T) {
		got, pages := walk(t, "limit=2")
		if fmt.Sprint(got) != fmt.Sprint(want) || pages < 5 {
			t.Errorf("%d pages: %v, want %v", pages, got, want)
		}
	})
	t.Run("one owner", func(t *testing.T) {
		got, _ := walk(t, "limit=3&user=bob")
		if fmt.Sprint(got) != fmt.Sprint(map[string][]string{"bob": want["bob"]}) {
			t.Errorf("bob's: %v", got)
		}
	})
	t.Run("order", func(t *testing.T) {
		keys := func(q string) []string {
			r := e.do("GET", items+"?user=alice&"+q, "").expect(t, 200)
			var out []string
			for _, it := range r.body["items"].([]any) {
				out = append(out, it.(map[string]any)["id"].(string))
			}
			return out
		}
		if got, want := keys("order=key"), []string{"alice-0", "alice-1", "alice-2", "alice-3", "day"}; !slices.Equal(got, want) {
			t.Errorf("by key: %v, want %v", got, want)
		}
		if got, want := keys("order=newest"), []string{"day", "alice-3", "alice-2", "alice-1", "alice-0"}; !slices.Equal(got, want) {
			t.Errorf("newest: %v, want %v", got, want)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		other := e.do("GET", items+"?limit=1", "").expect(t, 200).body["cursor"].(string)
		for _, tc := range []struct{ query, error, details string }{
			{"limit=0", "Invalid limit", "from 1 to 200"},
			{"limit=201", "Invalid limit", "from 1 to 200"},
			{"limit=x", "Invalid limit", "from 1 to 200"},
			{"order=oldest", "Invalid order", `"newest"`},
			{"user=", "Invalid user", ""},
			{"cursor=abc", "Invalid cursor", "was not issued"},
			{"user=bob&cursor=" + url.QueryEscape(other), "Invalid cursor", "was not issued"},
			{"include=held", "Invalid query", "include"},
		} {
			r := e.do("GET", items+"?"+tc.query, "").expect(t, 400)
			if r.body["error"] != tc.error || !strings.Contains(fmt.Sprint(r.body["details"]), tc.details) {
				t.Errorf("%s: error %q, details %q; want %q, %q", tc.query, r.body["error"], r.body["details"], tc.error, tc.details)
			}
		}
		for _, path := range []string{registry + "?include=all", adminApps + "/namespaces?include=x"} {
			if r := e.do("GET", path, "").expect(t, 400); r.body["error"] != "Invalid include" {
				t.Errorf("%s: %s", path, r.raw)
			}
		}
	})
}
