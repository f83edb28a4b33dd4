package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
