package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/ratelimit"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// Leases of several processes from one shared bucket never hand out more
// than the rate and the burst allow, whatever they knew of the bucket
// (each lease checks the time it takes against the bucket as it is);
// an empty bucket grants nothing and says when it holds a token again.
func TestLeaseTokens(t *testing.T) {
	t.Parallel()
	clock := &storetest.Clock{}
	s, counter := newStore(t, store.WithClock(clock.Now))
	ctx := context.Background()
	rate := uds.Rate{PerSecond: 200, Burst: 50}
	start := time.Now()
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last ratelimit.Lease
			for range 30 {
				lease, err := s.LeaseTokens(ctx, "test#shared", rate, 10, 1, last)
				if err != nil {
					t.Error(err)
					return
				}
				granted.Add(lease.Granted)
				last = lease
				if lease.Granted == 0 {
					time.Sleep(5 * time.Millisecond) // a token's interval
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	most := int64(rate.PerSecond*elapsed.Milliseconds()/1000) + rate.Burst + 10
	// The burst is there at once; past it, the rate bounds what passes
	// however fast the leases come, and one lease more: the idle moment
	// a lease may take up.
	if got := granted.Load(); got > most || got < rate.Burst {
		t.Errorf("granted %d tokens in %v; want from the burst (%d) to the rate × the time + the burst + a lease (%d)", got, elapsed, rate.Burst, most)
	}
	// An empty bucket: no write, and a TAT a burst ahead of now (5
	// tokens at one a second), from which the next token is a second
	// away. The clock stands still, so that no token accrues between the
	// calls however slow they are (a call of over a second would let one).
	clock.Freeze()
	counter.Take()
	var last ratelimit.Lease
	for {
		lease, err := s.LeaseTokens(ctx, "test#empty", uds.Rate{PerSecond: 1, Burst: 5}, 100, 1, last)
		if err != nil {
			t.Fatal(err)
		}
		last = lease
		if lease.Granted == 0 {
			if ahead := time.UnixMicro(lease.TAT).Sub(clock.Now()); ahead > 5*time.Second {
				t.Errorf("TAT %v ahead of now, want at most the burst's 5 s", ahead)
			}
			break
		}
	}
	if u := counter.Take(); u.Calls["UpdateItem"] != 1 {
		t.Errorf("%d writes to drain a bucket of 5 with a lease of 100, then find it empty; want 1", u.Calls["UpdateItem"])
	}
}

// A lease writes once when the process's view of the bucket (its last
// lease) says rightly whether others are drawing on it, and a failed
// condition more when it is wrong; a view that already says the bucket
// holds too few costs no write. Every case leases 20 tokens of a bucket of
// 100 a second, burst 100 (10 ms a token), on a clock moved by hand;
// another process's lease comes first where the case says.
func TestLeaseTokensWrites(t *testing.T) {
	t.Parallel()
	rate := uds.Rate{PerSecond: 100, Burst: 100}
	const ms = int64(time.Millisecond / time.Microsecond)
	for _, tc := range []struct {
		name string
		// other is what another process takes first (0: nothing), and
		// after how long this lease comes.
		other int64
		after time.Duration
		// last is this process's view, least what it will take at least.
		last  func(start int64) ratelimit.Lease
		least int64
		// What the lease gives and costs: the TAT relative to the start.
		granted, writes int64
		tat             int64
		drawn           bool
	}{
		{"a new bucket, no view", 0, 0, func(int64) ratelimit.Lease { return ratelimit.Lease{} }, 1, 20, 1, 200 * ms, false},
		{"drawn on by another, seen drawn before", 20, time.Millisecond,
			func(start int64) ratelimit.Lease { return ratelimit.Lease{TAT: start - 5000*ms, Drawn: true} }, 1, 20, 1, 400 * ms, true},
		{"drawn on by another, no view", 20, time.Millisecond, func(int64) ratelimit.Lease { return ratelimit.Lease{} }, 1, 20, 2, 400 * ms, true},
		{"idle for less than a lease, seen drawn before: moved on from where it stood", 20, 300 * time.Millisecond,
			func(start int64) ratelimit.Lease { return ratelimit.Lease{TAT: start, Drawn: true} }, 1, 20, 1, 400 * ms, false},
		{"idle for long, seen drawn before", 20, 2 * time.Second,
			func(start int64) ratelimit.Lease { return ratelimit.Lease{TAT: start, Drawn: true} }, 1, 20, 2, 2200 * ms, false},
		{"seen holding fewer than least", 0, 0,
			func(start int64) ratelimit.Lease { return ratelimit.Lease{TAT: start + 900*ms, Drawn: true} }, 20, 0, 0, 900 * ms, true},
		{"drawn past least by another since", 90, time.Millisecond,
			func(start int64) ratelimit.Lease { return ratelimit.Lease{TAT: start, Drawn: true} }, 20, 0, 1, 900 * ms, true},
		{"drawn down by another since, what is left", 90, time.Millisecond,
			func(start int64) ratelimit.Lease { return ratelimit.Lease{TAT: start, Drawn: true} }, 1, 10, 2, 1000 * ms, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var clock atomic.Int64
			clock.Store(time.Now().UnixMicro())
			start := clock.Load()
			s, counter := newStore(t, store.WithClock(func() time.Time { return time.UnixMicro(clock.Load()) }))
			ctx := context.Background()
			if tc.other > 0 {
				if _, err := s.LeaseTokens(ctx, "test#writes", rate, tc.other, tc.other, ratelimit.Lease{}); err != nil {
					t.Fatal(err)
				}
			}
			clock.Add(tc.after.Microseconds())
			counter.Take()
			lease, err := s.LeaseTokens(ctx, "test#writes", rate, 20, tc.least, tc.last(start))
			if err != nil {
				t.Fatal(err)
			}
			writes := int64(counter.Take().Calls["UpdateItem"])
			if lease.Granted != tc.granted || writes != tc.writes || lease.TAT-start != tc.tat || lease.Drawn != tc.drawn {
				t.Errorf("granted %d with %d writes, TAT start+%v, drawn %v; want %d with %d, start+%v, %v", lease.Granted, writes,
					time.Duration(lease.TAT-start)*time.Microsecond, lease.Drawn, tc.granted, tc.writes, time.Duration(tc.tat)*time.Microsecond, tc.drawn)
			}
		})
	}
}
