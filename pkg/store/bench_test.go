package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// BenchmarkDeleteList measures delete-all throughput against the engine:
// items per second tells how large a list one call clears within its time
// budget (docs/capacity.md). With -short (make test runs every benchmark
// once that way, to see that it works) the list is a tenth as long:
// filling 3,000 items takes 20 s there.
func BenchmarkDeleteList(b *testing.B) {
	s, _ := newStore(b)
	list := key(b, "bench", "purge")
	n := 3000
	if testing.Short() {
		n = 300
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		fillList(b, s, list, n, 100)
		b.StartTimer()
		if got, err := s.DeleteList(ctx, uds.Write{Key: list}); err != nil || got != n {
			b.Fatalf("deleted %d, %v", got, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkIndexQuery measures a query page of 100 items selected by a
// low-cardinality index (a third of the namespace has the value), and
// reports what a page costs: DynamoDB calls and read units.
func BenchmarkIndexQuery(b *testing.B) {
	s, counter := newStore(b)
	ctx := context.Background()
	n := 900
	if testing.Short() {
		n = 300
	}
	p := declare(b, s, "benchq", []uds.Index{{Name: "byStatus", Path: "/status", Type: uds.IndexString}})
	for i := range n {
		data := fmt.Sprintf(`{"status":%q,"n":%d,"note":"%s"}`, []string{"open", "done", "held"}[i%3], i, strings.Repeat("x", 200))
		if _, err := s.Create(ctx, uds.Write{Key: key(b, "benchq", fmt.Sprint(i)), Data: json.RawMessage(data), Subject: "alice", Indexes: p.Indexes}); err != nil {
			b.Fatal(err)
		}
	}
	q := store.IndexQuery{App: app, Namespace: "benchq", Index: p.Indexes[0], Eq: &uds.IndexValue{Str: "open"}, Limit: 100}
	counter.Take()
	pages := 0
	for b.Loop() {
		page, err := s.QueryIndex(ctx, q)
		if err != nil || len(page.Items) != 100 {
			b.Fatalf("%d items, %v", len(page.Items), err)
		}
		pages++
	}
	u := counter.Take()
	calls := 0
	for _, c := range u.Calls {
		calls += c
	}
	b.ReportMetric(float64(calls)/float64(pages), "calls/page")
	b.ReportMetric(u.Read/float64(pages), "RCU/page")
	b.ReportMetric(float64(100*pages)/b.Elapsed().Seconds(), "items/s")
}
