package store

import (
	"fmt"
	"testing"
)

// An adoption's transaction holds its items' updates, a usage change per
// app and owner, and a check per owner of their erase record: the batch
// is cut so that they fit DynamoDB's 100 actions, however the items'
// owners spread over apps.
func TestAdoptionBatchFitsATransaction(t *testing.T) {
	s := New(nil, Tables{Data: "data", Usage: "usage"})
	cases := []struct {
		name  string
		items func(i int) LegacyItem
		want  int
	}{
		{"one owner", func(i int) LegacyItem { return LegacyItem{App: "a", Owner: "u"} }, 50},
		{"an owner per item", func(i int) LegacyItem { return LegacyItem{App: "a", Owner: fmt.Sprint(i)} }, 33},
		{"two items per owner, in two apps", func(i int) LegacyItem {
			return LegacyItem{App: fmt.Sprint(i % 2), Owner: fmt.Sprint(i / 2)}
		}, 40},
		{"an owner in two apps among owners of two items", func(i int) LegacyItem {
			if i == 1 {
				return LegacyItem{App: "b", Owner: "0"}
			}
			return LegacyItem{App: "a", Owner: fmt.Sprint(i / 2)}
		}, 49},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			items := make([]LegacyItem, 120)
			for i := range items {
				items[i] = c.items(i)
				items[i].DataKey = fmt.Sprintf("a|ns|%d", i)
			}
			n := adoptionBatch(items)
			updates, usage, checks := s.adoptActions("data", items[:n], nil)
			if total := len(updates) + len(usage) + len(checks); n != c.want || total > maxTxActions {
				t.Errorf("a batch of %d items (%d updates, %d usage changes, %d checks: %d actions); want %d items within %d actions",
					n, len(updates), len(usage), len(checks), total, c.want, maxTxActions)
			}
		})
	}
}
