package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// Leases of several processes from one shared bucket never hand out more
// than the rate and the burst allow, whatever they knew of the bucket
// (each lease checks the time it takes against the bucket as it is);
// an empty bucket grants nothing and says when it holds a token again.
func TestLeaseTokens(t *testing.T) {
	t.Parallel()
	s, counter := newStore(t)
	ctx := context.Background()
	rate := uds.Rate{PerSecond: 200, Burst: 50}
	start := time.Now()
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tat int64
			for range 30 {
				g, next, err := s.LeaseTokens(ctx, "test#shared", rate, 10, tat)
				if err != nil {
					t.Error(err)
					return
				}
				granted.Add(g)
				tat = next
				if g == 0 {
					time.Sleep(5 * time.Millisecond) // a token's interval
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	most := int64(rate.PerSecond*elapsed.Milliseconds()/1000) + rate.Burst
	// The burst is there at once; past it, the rate bounds what passes
	// however fast the leases come.
	if got := granted.Load(); got > most || got < rate.Burst {
		t.Errorf("granted %d tokens in %v; want from the burst (%d) to the rate × the time + the burst (%d)", got, elapsed, rate.Burst, most)
	}
	// An empty bucket: no write, and a TAT a burst ahead of now (5
	// tokens at one a second), from which the next token is a second
	// away. The slow rate keeps the bucket from filling between the
	// calls, however slow they are.
	counter.Take()
	var tat int64
	for {
		g, next, err := s.LeaseTokens(ctx, "test#empty", uds.Rate{PerSecond: 1, Burst: 5}, 100, tat)
		if err != nil {
			t.Fatal(err)
		}
		tat = next
		if g == 0 {
			if ahead := time.Until(time.UnixMicro(tat)); ahead > 5*time.Second {
				t.Errorf("TAT %v ahead of now, want at most the burst's 5 s", ahead)
			}
			break
		}
	}
	if u := counter.Take(); u.Calls["UpdateItem"] != 1 {
		t.Errorf("%d writes to drain a bucket of 5 with a lease of 100, then find it empty; want 1", u.Calls["UpdateItem"])
	}
}
