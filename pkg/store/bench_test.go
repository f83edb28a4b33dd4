package store_test

import (
	"context"
	"testing"
)

// BenchmarkDeleteList measures delete-all throughput against the engine:
// items per second tells how large a list one call clears within its time
// budget (docs/capacity.md).
func BenchmarkDeleteList(b *testing.B) {
	s, _ := newStore(b)
	list := key(b, "bench", "purge")
	const n = 3000
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		fillList(b, s, list, n, 100)
		b.StartTimer()
		if got, err := s.DeleteList(ctx, list, ""); err != nil || got != n {
			b.Fatalf("deleted %d, %v", got, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "items/s")
}
