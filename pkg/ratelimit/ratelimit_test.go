package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/ratelimit"
	"github.com/udsproject/uds/pkg/uds"
)

// fakeLeaser is a shared bucket in memory, GCRA as the store keeps it,
// that counts its leases and can be made to fail.
type fakeLeaser struct {
	mu     sync.Mutex
	tat    int64
	leases int
	fail   error
}

func (f *fakeLeaser) LeaseTokens(_ context.Context, _ string, r uds.Rate, want, _ int64) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return 0, 0, f.fail
	}
	interval := int64(time.Second/time.Microsecond) / r.PerSecond
	now := clockNow.UnixMicro()
	base := max(f.tat, now)
	granted := min(want, (now+r.Burst*interval-base)/interval)
	if granted <= 0 {
		return 0, f.tat, nil
	}
	f.leases++
	f.tat = base + granted*interval
	return granted, f.tat, nil
}

// clockNow is the tests' clock, moved by hand.
var clockNow = time.Unix(1_700_000_000, 0)

func TestLimiter(t *testing.T) {
	rate := uds.Rate{PerSecond: 100, Burst: 100}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser)
	}{
		{"tokens at hand cost no lease", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			for i := range 20 {
				if d := l.Take(context.Background(), "k", rate, 1); !d.Allowed {
					t.Fatalf("request %d refused", i)
				}
			}
			if f.leases != 1 {
				t.Errorf("%d leases for 20 requests, want 1 (a lease is 20 tokens)", f.leases)
			}
		}},
		{"the burst, then refusals that cost nothing", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			allowed := 0
			for range 150 {
				if l.Take(context.Background(), "k", rate, 1).Allowed {
					allowed++
				}
			}
			leases := f.leases
			d := l.Take(context.Background(), "k", rate, 1)
			switch {
			case allowed != 100:
				t.Errorf("%d allowed at once, want the burst of 100", allowed)
			case d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 10*time.Millisecond:
				t.Errorf("over the burst: %+v, want refused until the next token (10 ms)", d)
			case f.leases != leases:
				t.Errorf("a refusal leased")
			}
			clockNow = clockNow.Add(time.Second)
			if !l.Take(context.Background(), "k", rate, 1).Allowed {
				t.Errorf("refused a second later")
			}
		}},
		{"a request over the burst is charged the burst", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			if d := l.Take(context.Background(), "k", rate, 500); !d.Allowed {
				t.Fatalf("a batch of 500 on a fresh bucket: %+v", d)
			}
			if d := l.Take(context.Background(), "k", rate, 1); d.Allowed {
				t.Errorf("the burst was spent, yet %+v", d)
			}
		}},
		{"a refusal says when all the tokens a request needs are there", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			slow := uds.Rate{PerSecond: 1, Burst: 5}
			if d := l.Take(context.Background(), "k", slow, 5); !d.Allowed || d.Charged != 5 {
				t.Fatalf("a batch of 5 within the burst: %+v", d)
			}
			if d := l.Take(context.Background(), "k", slow, 5); d.Allowed || d.RetryAfter != 5*time.Second {
				t.Errorf("the next batch of 5: %+v, want refused for 5 s", d)
			}
			if d := l.Take(context.Background(), "k", slow, 1); d.Allowed || d.RetryAfter != time.Second {
				t.Errorf("one request: %+v, want refused for 1 s", d)
			}
		}},
		{"tokens given back serve the next request", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			one := uds.Rate{PerSecond: 1, Burst: 1}
			d := l.Take(context.Background(), "k", one, 1)
			if !d.Allowed {
				t.Fatalf("first: %+v", d)
			}
			l.Give("k", d.Charged)
			if d := l.Take(context.Background(), "k", one, 1); !d.Allowed || f.leases != 1 {
				t.Errorf("after the token came back: %+v, %d leases", d, f.leases)
			}
		}},
		{"fails open for a while, then asks again", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			f.fail = errors.New("unreachable")
			for range 3 {
				if d := l.Take(context.Background(), "k", rate, 1); !d.Allowed || !d.Open {
					t.Fatalf("with the state out of reach: %+v, want allowed, open", d)
				}
			}
			f.fail = nil
			clockNow = clockNow.Add(ratelimit.OpenFor)
			if d := l.Take(context.Background(), "k", rate, 1); !d.Allowed || d.Open || f.leases != 1 {
				t.Errorf("after the open period: %+v and %d leases, want a lease", d, f.leases)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clockNow = clockNow.Add(time.Hour)
			f := &fakeLeaser{}
			tc.run(t, ratelimit.New(f, func() time.Time { return clockNow }), f)
		})
	}
}
