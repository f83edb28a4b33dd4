package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// TestExportPages checks that pages cut by the record limit, by the byte
// budget and by the deadline (one owner a page once it has passed) each
// continue where the last ended, so that every record comes once.
func TestExportPages(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	want := 0
	for o := range 4 {
		for i := range 3 + o {
			w := write(key(t, "ns", fmt.Sprintf("o%d-%d", o, i)), `{"i":1}`)
			w.Subject = fmt.Sprintf("owner%d", o)
			if _, err := s.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			want++
		}
	}
	one := func(*uds.Record) int { return 1 }
	for _, tc := range []struct {
		name     string
		query    store.ExportQuery
		maxPages int
	}{
		{"one page", store.ExportQuery{Limit: 1000, MaxBytes: 1000}, 1},
		{"two records a page", store.ExportQuery{Limit: 2, MaxBytes: 1000}, (want + 1) / 2},
		{"three bytes a page", store.ExportQuery{Limit: 1000, MaxBytes: 3}, (want + 2) / 3},
		{"past the deadline", store.ExportQuery{Limit: 1000, MaxBytes: 1000, Deadline: time.Now().Add(-time.Second)}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.query
			q.App, q.RecordBytes = key(t, "ns", "x").App, one
			seen := map[string]bool{}
			pages := 0
			for {
				page, err := s.Export(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				owners := map[string]bool{}
				for _, r := range page.Records {
					if seen[r.ID] {
						t.Fatalf("page %d repeats %s", pages, r.ID)
					}
					seen[r.ID], owners[r.Owner] = true, true
					if r.Owner != r.CreatedBy || r.Version != 1 || string(r.Data) != `{"i":1}` {
						t.Errorf("record %+v is not the item written", r)
					}
				}
				if !q.Deadline.IsZero() && len(owners) > 1 {
					t.Errorf("page %d holds %d owners past the deadline", pages, len(owners))
				}
				if page.Next == nil {
					break
				}
				if pages > 2*want {
					t.Fatal("the export does not end")
				}
				q.After = *page.Next
			}
			if len(seen) != want || pages > tc.maxPages+1 || pages < tc.maxPages {
				t.Errorf("%d records in %d pages, want %d records in %d pages (or one more, empty)", len(seen), pages, want, tc.maxPages)
			}
		})
	}
}

// exportPages reads every page of an export and answers the records, and
// how many each page held.
func exportPages(t *testing.T, s *store.Store, q store.ExportQuery) ([]uds.Record, []int) {
	t.Helper()
	var records []uds.Record
	var sizes []int
	for {
		page, err := s.Export(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		records, sizes = append(records, page.Records...), append(sizes, len(page.Records))
		if page.Next == nil {
			return records, sizes
		}
		if len(sizes) > 1000 {
			t.Fatal("the export does not end")
		}
		q.After = *page.Next
	}
}

// TestExportNamespace checks that an export filtered by namespace gives,
// in pages of any size, exactly the unfiltered export's records of that
// namespace in the same order: key-value and list items of several owners,
// shared and private keys, kept versions, and beside the namespace one
// whose name begins with it. Only the last page may hold fewer records
// than the limit.
func TestExportNamespace(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	h := uds.History{Versions: 2}
	for o, owner := range []string{"alice", "bob", "carol"} {
		for _, ns := range []string{"pick", "pickle", "other", "secret"} {
			for i := range 2 + o {
				k := key(t, ns, fmt.Sprintf("%s-%d", owner, i))
				var err error
				if i%2 == 1 {
					if k, err = k.WithSortKey(fmt.Sprintf("s%d", i)); err != nil {
						t.Fatal(err)
					}
				}
				if ns == "secret" {
					if k, err = k.InSpaceOf(owner); err != nil {
						t.Fatal(err)
					}
				}
				w := writeAs(owner, k, `{"v":1}`)
				if ns == "pick" || ns == "other" {
					w.History = h
				}
				if _, err := s.Create(ctx, w); err != nil {
					t.Fatal(err)
				}
				if w.History.Versions > 0 {
					w.Data = []byte(`{"v":2}`)
					if _, err := s.Update(ctx, w); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	one := func(*uds.Record) int { return 1 }
	for _, history := range []bool{false, true} {
		all, _ := exportPages(t, s, store.ExportQuery{App: app, Limit: 1000, MaxBytes: 1 << 20, RecordBytes: one, History: history})
		// Each namespace holds 2+3+4 items; pick's were each updated once,
		// so with history it has as many kept versions.
		counts := map[string]int{"pick": 9, "pickle": 9, "secret": 9, "absent": 0}
		if history {
			counts["pick"] = 18
		}
		for _, ns := range []string{"pick", "pickle", "secret", "absent"} {
			var want []uds.Record
			for _, r := range all {
				if r.Namespace == ns {
					want = append(want, r)
				}
			}
			if len(want) != counts[ns] {
				t.Fatalf("the unfiltered export holds %d records of %s, want %d", len(want), ns, counts[ns])
			}
			for _, limit := range []int{1, 3, 1000} {
				t.Run(fmt.Sprintf("%s, %d a page, history %v", ns, limit, history), func(t *testing.T) {
					got, sizes := exportPages(t, s, store.ExportQuery{App: app, Namespace: ns, Limit: limit, MaxBytes: 1 << 20, RecordBytes: one, History: history})
					if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
						t.Errorf("filtered export:\n%+v\nwant the unfiltered export's records of %s:\n%+v", got, ns, want)
					}
					for i, n := range sizes[:len(sizes)-1] {
						if n != limit {
							t.Errorf("page %d of %v holds %d records, not the limit", i+1, sizes, n)
						}
					}
				})
			}
		}
	}
}

// TestExportNamespaceReads checks what a filtered export reads for an
// owner of many items in other namespaces: no item but the namespace's
// (the filter works on the index's keys), and few index queries even one
// record a page (each filtered query reads twice the entries of the last).
func TestExportNamespaceReads(t *testing.T) {
	t.Parallel()
	s, counter := newStore(t)
	ctx := context.Background()
	for i := range 120 {
		if _, err := s.Create(ctx, writeAs("erin", key(t, "other", fmt.Sprintf("o%03d", i)), `{"v":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, writeAs("erin", key(t, "pick", "p"), `{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	counter.Take()
	got, sizes := exportPages(t, s, store.ExportQuery{App: app, Namespace: "pick", Limit: 1, MaxBytes: 1 << 20, RecordBytes: func(*uds.Record) int { return 1 }})
	if len(got) != 1 || got[0].ID != "p" {
		t.Fatalf("records %+v, want the one of pick", got)
	}
	// Each page reads the users index (a query per shard) once; the
	// owner's 121 entries take at most two doublings up to 128 (the page
	// may end in the middle of them), the list table one query.
	u := counter.Take()
	if most := len(sizes)*schema.AppShards + 2*8 + 1; u.Calls["Query"] > most || u.Calls["BatchGetItem"] != 1 {
		t.Errorf("%d pages made calls %v, want at most %d queries and one BatchGetItem", len(sizes), u.Calls, most)
	}
}
