package httpapi_test

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// The workload's indexes. Every namespace it writes declares them, so that
// every write path (creates, updates, deletes, delete-alls, batches atomic
// and not, restores, imports, expiry) keeps their entries, under the
// scenario's faults: a string of three values, which many items share, and
// a number. Workers query them while they write; once quiet, each index
// must answer exactly the items the tables hold.
var workloadIndexes = []uds.Index{
	{Name: "byStatus", Path: "/status", Type: uds.IndexString},
	{Name: "byRank", Path: "/rank", Type: uds.IndexNumber},
}

// workloadIndexesJSON declares workloadIndexes in a policy body.
func workloadIndexesJSON() string {
	var parts []string
	for _, ix := range workloadIndexes {
		parts = append(parts, `{"name":"`+ix.Name+`","path":"`+ix.Path+`","type":"`+string(ix.Type)+`"}`)
	}
	return `"indexes":[` + strings.Join(parts, ",") + `]`
}

// indexedFields is the part of a value that the indexes read, each member
// ended by a comma: mostly a status and a rank, now and then one of
// another type than its index's, or none.
func (w *worker) indexedFields() string {
	var b strings.Builder
	switch r := w.rng.IntN(8); {
	case r < 6:
		b.WriteString(`"status":"` + [...]string{"open", "done", "held"}[r%3] + `",`)
	case r == 6:
		b.WriteString(`"status":7,`)
	}
	switch r := w.rng.IntN(10); {
	case r < 8:
		b.WriteString(`"rank":` + [...]string{"-2", "-0", "0", "1", "2.5", "1e308", "1", "0"}[r] + `,`)
	case r == 8:
		b.WriteString(`"rank":"high",`)
	}
	return b.String()
}

// buildIndexes completes the build of the indexes every workload
// namespace declares, before the workers start.
func (e *workloadEnv) buildIndexes(t *testing.T) {
	for ns := range workloadPolicies {
		for attempt := 0; ; attempt++ {
			st, body := e.answered("POST", admin+"/apps/"+app+"/namespaces/"+ns+"/indexes/build", "admin", "")
			if st == http.StatusOK {
				break
			}
			if st != http.StatusAccepted || attempt == 200 {
				t.Fatalf("building the indexes of %s: %d %s", ns, st, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// shownItem is an item as a query's page shows it.
type shownItem struct {
	Namespace        string          `json:"namespace"`
	ID               string          `json:"id"`
	SortKey          string          `json:"sortKey"`
	Data             json.RawMessage `json:"data"`
	CreatedBySubject string          `json:"createdBySubject"`
}

func (it shownItem) path() string {
	return storetest.KeyPath(uds.Key{ID: it.ID, SortKey: it.SortKey})
}

// indexPage parses a query's answer as send returns it.
func indexPage(answer string) (items []shownItem, cursor string, err error) {
	var page struct {
		Items  []shownItem `json:"items"`
		Cursor string      `json:"cursor"`
	}
	err = json.Unmarshal([]byte(answer[:strings.LastIndexByte(answer, 0)]), &page)
	return page.Items, page.Cursor, err
}

// compareIndexed orders two items as index ix does: by value, then by id
// and sort key.
func compareIndexed(ix uds.Index, a, b shownItem, va, vb uds.IndexValue) int {
	c := cmp.Compare(va.Num, vb.Num)
	if ix.Type == uds.IndexString {
		c = strings.Compare(va.Str, vb.Str)
	}
	return cmp.Or(c, strings.Compare(a.ID, b.ID), strings.Compare(a.SortKey, b.SortKey))
}

// queryStep queries one of the indexes of a random namespace while the
// others write, following its cursor for a few pages. An index query sees
// every write acknowledged before it, and a page starts after the entry
// the last one ended at: so every item shown has a value of the index's
// type that the selection takes, and the items follow each other in the
// index's order across pages, whatever the writes in between.
func (w *worker) queryStep(kill time.Duration) {
	ns := [...]string{"kv", "kept", "lists", "owned", "mine"}[w.rng.IntN(5)]
	ix := workloadIndexes[w.rng.IntN(len(workloadIndexes))]
	params := url.Values{"index": {ix.Name}, "limit": {strconv.Itoa(1 + w.rng.IntN(8))}}
	takes := func(uds.IndexValue) bool { return true }
	switch r := w.rng.IntN(4); {
	case r == 0:
	case ix.Type == uds.IndexString && r == 1:
		params.Set("eq", "open")
		takes = func(v uds.IndexValue) bool { return v.Str == "open" }
	case ix.Type == uds.IndexString && r == 2:
		params.Set("prefix", "d")
		takes = func(v uds.IndexValue) bool { return strings.HasPrefix(v.Str, "d") }
	case ix.Type == uds.IndexString:
		params.Set("from", "done")
		params.Set("to", "open")
		takes = func(v uds.IndexValue) bool { return v.Str >= "done" && v.Str < "open" }
	case r == 1:
		params.Set("eq", "-0")
		takes = func(v uds.IndexValue) bool { return v.Num == 0 }
	default:
		params.Set("from", "-1")
		params.Set("to", "2.5")
		takes = func(v uds.IndexValue) bool { return v.Num >= -1 && v.Num < 2.5 }
	}
	desc := w.rng.IntN(2) == 0
	if desc {
		params.Set("sortOrder", "DESC")
	}
	var last *shownItem
	var lastValue uds.IndexValue
	for range 1 + w.rng.IntN(3) {
		st, answer := w.env.send(kill, "GET", base+"/"+ns+"?"+params.Encode(), w.owner, "", "")
		if !w.expect("GET index query", st, kill > 0, 200) {
			return
		}
		w.env.queried.Add(1)
		items, cursor, err := indexPage(answer)
		if err != nil {
			w.t.Errorf("worker %d: query %s?%s answered %s", w.id, ns, params.Encode(), answer)
			return
		}
		for _, it := range items {
			v, ok := ix.ValueOf(it.Data)
			switch {
			case it.Namespace != ns || !ok || !takes(v):
				w.t.Errorf("worker %d: query %s?%s shows %s %s", w.id, ns, params.Encode(), it.path(), it.Data)
			case ns == "mine" && it.CreatedBySubject != w.owner:
				w.t.Errorf("worker %d (%s): query of the private namespace shows %s of %s", w.id, w.owner, it.path(), it.CreatedBySubject)
			case last != nil && (compareIndexed(ix, *last, it, lastValue, v) >= 0) != desc:
				w.t.Errorf("worker %d: query %s?%s shows %s %s after %s %s", w.id, ns, params.Encode(), it.path(), it.Data, last.path(), last.Data)
			}
			last, lastValue = &it, v
		}
		if cursor == "" {
			return
		}
		params.Set("cursor", cursor)
	}
}

// checkIndexes holds every index of the workload's namespaces against the
// tables once the workers are done and every item they gave an expiry has
// expired: a query over the whole index, through all its pages, in either
// order, lists exactly the items stored, live, with a value of its type
// at its path, in the index's order (in the private namespace, each
// owner's own); and each such item has its entry in the index table. It
// returns how many entries lead to no item with their value (stale ones,
// which the queries skip).
func (e *workloadEnv) checkIndexes(t *testing.T, quiet time.Time) (stale int) {
	// The workers' writes expire within a second.
	time.Sleep(time.Until(quiet.Add(1100 * time.Millisecond)))
	now := time.Now()
	policies := store.New(e.plain, e.tables)
	for _, ns := range slices.Sorted(maps.Keys(workloadPolicies)) {
		p, err := policies.StoredPolicy(context.Background(), app, ns)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Indexes) != len(workloadIndexes) || p.IndexBuild != nil {
			t.Errorf("%s: indexes %+v, build %+v", ns, p.Indexes, p.IndexBuild)
		}
		owners := []string{""}
		if ns == "mine" {
			owners = []string{"u0", "u1", "u2", "u3"}
		}
		for _, ix := range p.Indexes {
			entries := map[uds.Key]int{}
			all := storetest.IndexEntries(t, e.plain, e.tables, app, ns, ix.ID)
			for _, en := range all {
				entries[en.Key]++
			}
			indexed := 0
			for _, owner := range owners {
				want := storetest.IndexedKeys(t, e.plain, e.tables, app, ns, ix, owner, now)
				indexed += len(want)
				subject := cmp.Or(owner, "u0")
				for _, desc := range []bool{false, true} {
					expected := slices.Clone(want)
					params := "index=" + ix.Name + "&limit=8"
					if desc {
						slices.Reverse(expected)
						params += "&sortOrder=DESC"
					}
					if got := e.queryAll(t, ns, params, subject); got != storetest.KeyPaths(expected) {
						t.Errorf("%s?%s as %s:\n got %s\nwant %s", ns, params, subject, got, storetest.KeyPaths(expected))
					}
				}
				for _, k := range want {
					if entries[k] == 0 {
						t.Errorf("%s: %s of %q has no entry in index %s", ns, storetest.KeyPath(k), owner, ix.Name)
					}
				}
			}
			stale += len(all) - indexed
		}
	}
	return stale
}

// queryAll runs a query to its end, quiet, and lists the items' paths.
func (e *workloadEnv) queryAll(t *testing.T, ns, params, subject string) string {
	var paths []string
	cursor := ""
	for range 1000 {
		path := base + "/" + ns + "?" + params
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		st, answer := e.answered("GET", path, subject, "")
		if st != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, st, answer)
		}
		items, next, err := indexPage(answer)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		for _, it := range items {
			paths = append(paths, it.path())
		}
		if next == "" {
			return strings.Join(paths, " ")
		}
		cursor = next
	}
	t.Fatalf("the query %s?%s did not end", ns, params)
	return ""
}
