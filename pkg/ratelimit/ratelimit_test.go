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

func (f *fakeLeaser) LeaseTokens(_ context.Context, _ string, r uds.Rate, want, least int64, _ ratelimit.Lease) (ratelimit.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return ratelimit.Lease{}, f.fail
	}
	interval := r.Interval()
	now := clockNow.UnixMicro()
	base := max(f.tat, now)
	granted := min(want, (now+r.Burst*interval-base)/interval)
	if granted < least {
		return ratelimit.Lease{TAT: f.tat, Drawn: true}, nil
	}
	f.leases++
	f.tat = base + granted*interval
	return ratelimit.Lease{Granted: granted, TAT: f.tat, Drawn: base > now}, nil
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
			case d.Allowed || d.RetryAfter != 200*time.Millisecond:
				t.Errorf("over the burst: %+v, want refused until the bucket holds a lease (200 ms)", d)
			case f.leases != leases:
				t.Errorf("a refusal leased")
			}
			clockNow = clockNow.Add(time.Second)
			if !l.Take(context.Background(), "k", rate, 1).Allowed {
				t.Errorf("refused a second later")
			}
		}},
		{"at its limit, a lease takes a whole lease or nothing", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			for range 101 {
				l.Take(context.Background(), "k", rate, 1)
			}
			clockNow = clockNow.Add(100 * time.Millisecond)
			leases := f.leases
			if d := l.Take(context.Background(), "k", rate, 1); d.Allowed || f.leases != leases {
				t.Fatalf("10 tokens in the bucket: %+v, %d leases; want refused without one", d, f.leases-leases)
			}
			clockNow = clockNow.Add(100 * time.Millisecond)
			allowed := 0
			for l.Take(context.Background(), "k", rate, 1).Allowed {
				allowed++
			}
			if allowed != 20 || f.leases != leases+1 {
				t.Errorf("a lease's time later: %d allowed with %d leases, want 20 with 1", allowed, f.leases-leases)
			}
		}},
		{"at its limit, a process waits for its turn while others draw on the bucket", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			for range 100 {
				l.Take(context.Background(), "k", rate, 1)
			}
			// In 200 ms, others take 15 of the 20 tokens that came: the
			// bucket holds 5, and fills at a quarter of the rate for this
			// process, which waits 4 times a lease's 150 ms.
			clockNow = clockNow.Add(200 * time.Millisecond)
			f.tat += 150_000
			if d := l.Take(context.Background(), "k", rate, 1); d.Allowed || d.RetryAfter != 600*time.Millisecond {
				t.Errorf("%+v, want refused for 600 ms", d)
			}
		}},
		{"below its limit, a lease takes what the bucket holds", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			// Other processes have drawn the bucket down to 5 tokens.
			f.tat = clockNow.Add(950 * time.Millisecond).UnixMicro()
			allowed := 0
			for l.Take(context.Background(), "k", rate, 1).Allowed {
				allowed++
			}
			if allowed != 5 || f.leases != 1 {
				t.Errorf("%d allowed with %d leases, want the bucket's 5 with 1", allowed, f.leases)
			}
		}},
		{"a lowered rate holds at once, whatever was leased under the old", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			// One request leases 20 tokens, 19 of which stay at hand.
			if !l.Take(context.Background(), "k", rate, 1).Allowed {
				t.Fatal("the first request refused")
			}
			clockNow = clockNow.Add(time.Minute)
			lowered := uds.Rate{PerSecond: 1, Burst: 1}
			allowed := 0
			for range 30 {
				if l.Take(context.Background(), "k", lowered, 1).Allowed {
					allowed++
				}
			}
			// A lease of the new rate (1 token) of what was at hand, and
			// the bucket's burst of 1.
			if allowed > 2 {
				t.Errorf("%d of 30 allowed after the rate went down to 1 a second, want at most 2", allowed)
			}
		}},
		{"a request over the burst is refused and costs nothing", func(t *testing.T, l *ratelimit.Limiter, f *fakeLeaser) {
			if d := l.Take(context.Background(), "k", rate, 101); d.Allowed || !d.OverBurst || d.RetryAfter != 0 {
				t.Fatalf("a batch of 101 over a burst of 100: %+v, want refused as over the burst, with no wait", d)
			}
			if d := l.Take(context.Background(), "k", rate, 100); !d.Allowed || d.Charged != 100 || d.OverBurst {
				t.Errorf("a batch of the burst after it: %+v, want allowed, charged 100", d)
			}
			if d := l.Take(context.Background(), "k", rate, 1); d.Allowed || d.OverBurst {
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

// Four processes over one bucket, requests sent to them in turn for 30
// seconds of a clock moved by hand: a caller under its limit is never
// refused and costs a lease per lease of requests; a caller at three
// times its limit gets at most the rate and the burst, nearly all of it,
// and its processes lease whole leases.
func TestLimiterProcesses(t *testing.T) {
	rate := uds.Rate{PerSecond: 100, Burst: 100}
	for _, tc := range []struct {
		name           string
		perSecond      int
		allowedAtLeast int
		allowedAtMost  int
		tokensPerLease int
	}{
		{"at 90% of its limit", 90, 2700, 2700, 20},
		{"at 3 times its limit", 300, 2900, 3100, 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clockNow = clockNow.Add(time.Hour)
			f := &fakeLeaser{}
			var processes [4]*ratelimit.Limiter
			for i := range processes {
				processes[i] = ratelimit.New(f, func() time.Time { return clockNow })
			}
			allowed := 0
			step := time.Second / time.Duration(tc.perSecond)
			for i := range 30 * tc.perSecond {
				if processes[i%4].Take(context.Background(), "k", rate, 1).Allowed {
					allowed++
				}
				clockNow = clockNow.Add(step)
			}
			if allowed < tc.allowedAtLeast || allowed > tc.allowedAtMost {
				t.Errorf("%d allowed, want from %d to %d", allowed, tc.allowedAtLeast, tc.allowedAtMost)
			}
			if f.leases*tc.tokensPerLease > allowed+4*20 {
				t.Errorf("%d leases for %d requests allowed, want at most one per %d (and the tokens the processes hold)", f.leases, allowed, tc.tokensPerLease)
			}
		})
	}
}

// plenty grants every lease in full.
type plenty struct{}

func (plenty) LeaseTokens(_ context.Context, _ string, _ uds.Rate, want, _ int64, _ ratelimit.Lease) (ratelimit.Lease, error) {
	return ratelimit.Lease{Granted: want}, nil
}

// BenchmarkTakeAtHand is what the limiter adds to a request whose process
// holds tokens: the rate's lease is so large (200,000 tokens) that the
// loop leases once in that many requests.
func BenchmarkTakeAtHand(b *testing.B) {
	rate := uds.Rate{PerSecond: uds.MaxRatePerSecond, Burst: uds.MaxRatePerSecond}
	l := ratelimit.New(plenty{}, time.Now)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if !l.Take(ctx, "caller#app#user", rate, 1).Allowed {
			b.Fatal("refused")
		}
	}
}
