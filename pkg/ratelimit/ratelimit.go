// Package ratelimit limits requests to a rate across every process that
// serves them, without a database write per request. The rate's state is
// a shared token bucket (store.LeaseTokens, GCRA over one DynamoDB item);
// each process leases tokens from it in batches and spends them in
// memory. A request costs nothing while its process holds tokens, and one
// conditional write when the lease runs out; a refused request costs
// nothing either: the process remembers until when the bucket is empty.
//
// Tokens leased are taken from the shared bucket, so no process can let
// through more than the bucket gives: across all of them at most
// PerSecond × t + Burst requests pass in t, and the tokens the processes
// held when the period began (less than a lease each). A process may hold tokens it
// does not spend (at most one lease), which the others cannot use; leases
// are kept small beside the burst (leaseSize) so that a caller under its
// rate is not refused while another process sits on its tokens.
package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// Leaser takes tokens from a shared bucket (store.Store.LeaseTokens).
type Leaser interface {
	LeaseTokens(ctx context.Context, bucket string, rate uds.Rate, want, knownTAT int64) (granted, tat int64, err error)
}

// OpenFor is how long a bucket whose shared state could not be reached
// lets requests through without asking again: the limiter fails open,
// for a bounded time, rather than take the API down with it.
const OpenFor = 10 * time.Second

// maxBuckets bounds the buckets a process keeps; past it, it starts over
// (a bucket forgotten keeps at most one lease unspent).
const maxBuckets = 100_000

// Limiter spends leased tokens in memory. It is safe for concurrent use.
type Limiter struct {
	leaser Leaser
	now    func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

// New returns a limiter over leaser; now is its clock, which should be
// the leaser's.
func New(leaser Leaser, now func() time.Time) *Limiter {
	return &Limiter{leaser: leaser, now: now, buckets: map[string]*bucket{}}
}

// bucket is a process's share of one shared bucket.
type bucket struct {
	mu sync.Mutex
	// tokens are leased and not spent yet.
	tokens int64
	// tat is the shared bucket's TAT as the last lease left it.
	tat int64
	// emptyUntil is when the shared bucket next holds a token, as the
	// last refused lease said; openUntil the end of a fail-open period.
	emptyUntil, openUntil time.Time
}

// Decision is what the limiter makes of a request.
type Decision struct {
	Allowed bool
	// Charged is the tokens an allowed request spent (at most the
	// burst), for Give.
	Charged int64
	// Remaining estimates the tokens left: this process's, and what the
	// shared bucket held at its last lease.
	Remaining int64
	// RetryAfter, when refused, is when the bucket next holds a token.
	RetryAfter time.Duration
	// Open reports that the shared state could not be reached and the
	// request went through unchecked; Cause, on the request that found it
	// out of reach (and opened the bucket for OpenFor), says why.
	Open  bool
	Cause error
}

// leaseSize is how many tokens a process leases at once: a fifth of a
// second's rate, to amortise the write over many requests, and at most a
// quarter of the burst, so that four processes holding a lease each leave
// a caller under its rate room in the shared bucket.
func leaseSize(r uds.Rate) int64 {
	return max(1, min(r.PerSecond/5, r.Burst/4))
}

// Take spends n tokens of the bucket named key, which fills at rate,
// leasing more from the shared bucket when this process holds too few. A
// request of more tokens than the burst is charged the burst.
func (l *Limiter) Take(ctx context.Context, key string, rate uds.Rate, n int64) Decision {
	n = min(n, rate.Burst)
	b := l.bucket(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	now := l.now()
	switch {
	case now.Before(b.openUntil):
		return Decision{Allowed: true, Open: true}
	case b.tokens >= n:
		b.tokens -= n
		return Decision{Allowed: true, Charged: n, Remaining: remaining(rate, b.tokens, b.tat, now)}
	case now.Before(b.emptyUntil):
		return Decision{RetryAfter: readyAt(rate, b.tat, n-b.tokens).Sub(now), Remaining: b.tokens}
	}
	granted, tat, err := l.leaser.LeaseTokens(ctx, key, rate, max(n-b.tokens, leaseSize(rate)), b.tat)
	if err != nil {
		b.openUntil = now.Add(OpenFor)
		return Decision{Allowed: true, Open: true, Cause: err}
	}
	b.tat, b.tokens = tat, b.tokens+granted
	if b.tokens < n {
		// The shared bucket holds too few: none is leased again until it
		// holds one more, and the request is told when it holds all the
		// tokens it lacks.
		b.emptyUntil = readyAt(rate, tat, 1)
		return Decision{RetryAfter: max(readyAt(rate, tat, n-b.tokens).Sub(now), time.Millisecond), Remaining: b.tokens}
	}
	b.tokens -= n
	return Decision{Allowed: true, Charged: n, Remaining: remaining(rate, b.tokens, tat, now)}
}

// Give returns n tokens of a request that another limit refused to the
// bucket named key: the request did nothing, and its tokens stay in this
// process for the next one.
func (l *Limiter) Give(key string, n int64) {
	b := l.bucket(key)
	b.mu.Lock()
	b.tokens += n
	b.mu.Unlock()
}

// readyAt is when a shared bucket at tat holds k tokens (GCRA: when the
// TAT, with k tokens' time added, is within the burst of now).
func readyAt(r uds.Rate, tat, k int64) time.Time {
	interval := int64(time.Second/time.Microsecond) / r.PerSecond
	return time.UnixMicro(tat + k*interval - r.Burst*interval)
}

// remaining estimates the tokens left to a caller: this process's, and
// what the shared bucket held at its last lease, as it has filled since,
// never more than the burst.
func remaining(r uds.Rate, tokens, tat int64, now time.Time) int64 {
	interval := int64(time.Second/time.Microsecond) / r.PerSecond
	return min(r.Burst, tokens+max(0, (now.UnixMicro()+r.Burst*interval-max(tat, now.UnixMicro()))/interval))
}

func (l *Limiter) bucket(key string) *bucket {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.buckets = map[string]*bucket{}
		}
		b = &bucket{}
		l.buckets[key] = b
	}
	return b
}
