package store_test

import (
	"context"
	"testing"

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
