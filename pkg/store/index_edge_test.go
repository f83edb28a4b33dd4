package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// parsed is a query's bound as the API reads it from a query string.
func parsed(t *testing.T, ix uds.Index, s string) *uds.IndexValue {
	t.Helper()
	v, err := ix.ParseIndexValue("eq", s)
	if err != nil {
		t.Fatal(err)
	}
	return &v
}

// putItems creates an item per id with its value, with ns's indexes.
func putItems(t *testing.T, s *store.Store, ns string, p uds.Policy, items map[string]string) {
	t.Helper()
	for id, data := range items {
		list, sk, isList := strings.Cut(id, "/")
		k := key(t, ns, list)
		if isList {
			k, _ = k.WithSortKey(sk)
		}
		if _, err := s.Create(context.Background(), uds.Write{Key: k, Data: json.RawMessage(data), Subject: "alice", Indexes: p.Indexes}); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
}

// Numbers at the edges of float64: -0 is 0, the extremes and the
// smallest magnitudes keep their order, and what JSON holds but float64
// does not (1e309) is not indexed.
func TestIndexNumberEdges(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	const ns = "numbers"
	p := declare(t, s, ns, testIndexes[1:])
	rank := p.Indexes[0]
	putItems(t, s, ns, p, map[string]string{
		"neg-zero": `{"meta":{"rank":-0}}`, "zero": `{"meta":{"rank":0}}`, "zero-float": `{"meta":{"rank":0.0e5}}`,
		"max": `{"meta":{"rank":1e308}}`, "min": `{"meta":{"rank":-1.7976931348623157e308}}`,
		"tiny": `{"meta":{"rank":5e-324}}`, "neg-tiny": `{"meta":{"rank":-5e-324}}`,
		"tenth": `{"meta":{"rank":0.1}}`, "hundred": `{"meta":{"rank":1E2}}`, "hundred-int": `{"meta":{"rank":100}}`,
		"too-big": `{"meta":{"rank":1e309}}`, "too-small": `{"meta":{"rank":-1e309}}`, "text": `{"meta":{"rank":"1"}}`,
	})
	for _, tc := range []struct {
		name string
		q    store.IndexQuery
		want string
	}{
		{"all", store.IndexQuery{}, "min neg-tiny neg-zero zero zero-float tiny tenth hundred hundred-int max"},
		{"all descending", store.IndexQuery{Descending: true}, "max hundred-int hundred tenth tiny zero-float zero neg-zero neg-tiny min"},
		{"eq 0", store.IndexQuery{Eq: parsed(t, rank, "0")}, "neg-zero zero zero-float"},
		{"eq -0", store.IndexQuery{Eq: parsed(t, rank, "-0")}, "neg-zero zero zero-float"},
		{"eq 1e2", store.IndexQuery{Eq: parsed(t, rank, "1e2")}, "hundred hundred-int"},
		{"negatives", store.IndexQuery{To: parsed(t, rank, "-0")}, "min neg-tiny"},
		{"from 0", store.IndexQuery{From: parsed(t, rank, "0"), To: parsed(t, rank, "0.1")}, "neg-zero zero zero-float tiny"},
		{"from the largest", store.IndexQuery{From: parsed(t, rank, "1e308")}, "max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			q.App, q.Namespace, q.Index, q.Limit = app, ns, rank, 2
			if got := queryIDs(t, s, q); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Keys longer than the room an entry's sort key leaves beside the value
// are cut there, and a digest of the whole key keeps their entries apart:
// items whose keys share the part that fits are each listed once, paged
// one at a time, in either order.
func TestIndexLongKeys(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	const ns = "long"
	p := declare(t, s, ns, testIndexes[:1])
	status := p.Indexes[0]
	same := `{"status":"` + strings.Repeat("v", uds.MaxIndexedStringBytes) + `"}`
	shared := strings.Repeat("k", 1500)
	sortShared := strings.Repeat("s", 900)
	items := map[string]string{
		shared + "1": same, shared + "2": same, shared + "3": same, "short": same,
		"list/" + sortShared + "1": same, "list/" + sortShared + "2": same,
	}
	putItems(t, s, ns, p, items)
	want := slices.Sorted(maps.Keys(items))
	for _, desc := range []bool{false, true} {
		t.Run(fmt.Sprintf("descending %v", desc), func(t *testing.T) {
			q := store.IndexQuery{App: app, Namespace: ns, Index: status, Eq: str(strings.Repeat("v", uds.MaxIndexedStringBytes)), Limit: 1, Descending: desc}
			got := strings.Fields(queryIDs(t, s, q))
			if !slices.Equal(slices.Sorted(slices.Values(got)), want) {
				t.Errorf("the query lists %d items, want each of %d once", len(got), len(want))
			}
			// The short key fits whole, and sorts after the long ones,
			// whose first bytes are below its first.
			if i := slices.Index(got, "short"); desc && i != 0 || !desc && i != len(got)-1 {
				t.Errorf("short is at %d of %d", i, len(got))
			}
		})
	}
}

// A page cut by its byte budget ends where the next begins, also when
// stale entries (their items gone) lie around the cut: every item is
// listed once, in order, and no page passes the budget but by a single
// item.
func TestIndexPagesCutByBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	const ns = "sized"
	p := declare(t, s, ns, testIndexes[:1])
	status := p.Indexes[0]
	items := map[string]string{}
	var want []string
	for i := range 30 {
		id := fmt.Sprintf("i%02d", i)
		items[id] = fmt.Sprintf(`{"status":"open","pad":%q}`, strings.Repeat("p", (i*37)%150))
		want = append(want, id)
	}
	putItems(t, s, ns, p, items)
	for i := range 30 {
		if i%4 == 1 {
			if err := s.PutIndexEntry(ctx, key(t, ns, fmt.Sprintf("i%02d-gone", i)), status, json.RawMessage(`{"status":"open"}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	size := func(it *uds.Item) int { return len(it.Data) }
	const budget = 300
	for _, tc := range []struct {
		name  string
		desc  bool
		limit int
	}{{"ascending", false, 100}, {"descending", true, 100}, {"ascending, pages of 4", false, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			q := store.IndexQuery{App: app, Namespace: ns, Index: status, Eq: str("open"), Limit: tc.limit,
				Descending: tc.desc, MaxBytes: budget, ItemBytes: size}
			var got []string
			for pages := 0; ; pages++ {
				if pages > 100 {
					t.Fatal("the query does not end")
				}
				page, err := s.QueryIndex(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				total := 0
				for _, it := range page.Items {
					got = append(got, storetest.KeyPath(it.Key))
					total += size(&it)
				}
				if len(page.Items) > 1 && total > budget {
					t.Errorf("page %d holds %d bytes in %d items, over the budget of %d", pages, total, len(page.Items), budget)
				}
				if page.Cursor == "" {
					break
				}
				q.Cursor = page.Cursor
			}
			expected := slices.Clone(want)
			if tc.desc {
				slices.Reverse(expected)
			}
			if !slices.Equal(got, expected) {
				t.Errorf("got %v\nwant %v", got, expected)
			}
		})
	}
}

// Strings order by their UTF-8 bytes: the empty string first, a string
// before the longer ones it begins (even one continued by U+0000), and
// the longest an index holds is MaxIndexedStringBytes bytes, however many
// characters that is.
func TestIndexStringEdges(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	const ns = "strings"
	p := declare(t, s, ns, testIndexes[:1])
	status := p.Indexes[0]
	value := func(v string) string {
		b, _ := json.Marshal(map[string]string{"status": v})
		return string(b)
	}
	longest := strings.Repeat("x", uds.MaxIndexedStringBytes)
	wide := strings.Repeat("é", uds.MaxIndexedStringBytes/2) // 512 bytes, 256 characters
	putItems(t, s, ns, p, map[string]string{
		"empty": value(""), "a": value("a"), "a-nul": value("a\x00"), "ab": value("ab"),
		"e-acute": value("é"), "last-bmp": value("\uffff"), "clef": value("𝄞"),
		"longest": value(longest), "wide": value(wide),
		"too-long": value(longest + "x"), "too-wide": value(wide + "é"),
		"list/1": value("a"), "list/2": value("a"),
	})
	for _, tc := range []struct {
		name string
		q    store.IndexQuery
		want string
	}{
		{"all", store.IndexQuery{}, "empty a list/1 list/2 a-nul ab longest e-acute wide last-bmp clef"},
		{"eq empty", store.IndexQuery{Eq: str("")}, "empty"},
		{"eq a", store.IndexQuery{Eq: str("a")}, "a list/1 list/2"},
		{"prefix a", store.IndexQuery{Prefix: str("a")}, "a list/1 list/2 a-nul ab"},
		{"prefix é", store.IndexQuery{Prefix: str("é")}, "e-acute wide"},
		{"eq longest", store.IndexQuery{Eq: str(longest)}, "longest"},
		{"range", store.IndexQuery{From: str("a"), To: str("ab")}, "a list/1 list/2 a-nul"},
		{"to the first", store.IndexQuery{To: str("a")}, "empty"},
		{"from above the BMP", store.IndexQuery{From: str("\U00010000")}, "clef"},
		{"empty prefix", store.IndexQuery{Prefix: str("")}, "empty a list/1 list/2 a-nul ab longest e-acute wide last-bmp clef"},
		{"from empty", store.IndexQuery{From: str("")}, "empty a list/1 list/2 a-nul ab longest e-acute wide last-bmp clef"},
		{"to empty", store.IndexQuery{To: str("")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			q.App, q.Namespace, q.Index, q.Limit = app, ns, status, 3
			if got := queryIDs(t, s, q); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
