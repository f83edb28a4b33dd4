// Package ratelimit limits requests to a rate across every process that
// serves them, without a database write per request. The rate's state is
// a shared token bucket (store.LeaseTokens, GCRA over one DynamoDB item);
// each process leases tokens from it in batches and spends them in
// memory. A request costs nothing while its process holds tokens, and one
// conditional write when the lease runs out; a refused request costs
// nothing either: the process remembers until when the bucket is empty.
// A write whose condition fails is charged like one that commits, so a
// lease is shaped to commit at its first write: it expects the bucket as
// its process last found it (drawn on by others, or idle), and a caller
// past its limit has its processes lease whole leases, in turns (Take).
//
// Tokens leased are taken from the shared bucket, so no process can let
// through more than the bucket gives: across all of them at most
// PerSecond × t + Burst requests pass in t, and the tokens the processes
// held when the period began (less than a lease each), and one lease (the
// bucket's idle moment a lease may take up, store.LeaseTokens). A process
// may hold tokens it does not spend (at most one lease), which the others
// cannot use; leases are kept small beside the burst (leaseSize) so that
// a caller under its rate is not refused while another process sits on
// its tokens.
package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// Leaser takes tokens from a shared bucket (store.Store.LeaseTokens):
// from want down to least of them, or none when the bucket holds fewer
// than least. last is what the process's previous lease of the bucket
// returned (the zero Lease: none), its view of the bucket.
type Leaser interface {
	LeaseTokens(ctx context.Context, bucket string, rate uds.Rate, want, least int64, last Lease) (Lease, error)
}

// Lease is what a lease gave, and the process's view of the shared bucket
// for the next one.
type Lease struct {
	// Granted is the tokens taken: 0 when the lease was refused.
	Granted int64
	// TAT is the bucket's theoretical arrival time (Unix microseconds)
	// after the lease, or as last seen when it was refused.
	TAT int64
	// Drawn reports that the bucket was drawn on when the lease came
	// (its TAT past now): leases before it, other processes' as a rule,
	// were not yet paid for at the rate.
	Drawn bool
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
	// tokens are leased and not spent yet, under rate.
	tokens int64
	rate   uds.Rate
	// last is the shared bucket as the last lease that reached it (or
	// learnt of it) left it, at lastAt.
	last   Lease
	lastAt time.Time
	// others is the part of the rate at which other processes drew on
	// the shared bucket between the last two leases that reached it.
	others float64
	// tight is set when a lease was refused, or left the shared bucket
	// holding less than a lease: the caller is at its limit, until a
	// lease finds the bucket full.
	tight bool
	// openUntil is the end of a fail-open period.
	openUntil time.Time
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
	// RetryAfter, when refused, is when this process leases for the
	// caller again: when the bucket holds what the request lacks, or
	// later, at the process's turn.
	RetryAfter time.Duration
	// Open reports that the shared state could not be reached and the
	// request went through unchecked; Cause, on the request that found it
	// out of reach (and opened the bucket for OpenFor), says why.
	Open  bool
	Cause error
	// OverBurst, when refused, reports that the request costs more tokens
	// than the bucket ever holds: no wait lets it through.
	OverBurst bool
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
// request of more tokens than the burst is refused (OverBurst) and costs
// nothing: charging it the burst would let a batch of any size through at
// the price of a burst.
//
// A lease takes what the shared bucket holds, up to a lease, so that a
// request is refused only when the bucket cannot pay for it. But once the
// caller is at its limit (tight), a lease takes a whole lease or nothing,
// and the process leases again only at its turn: when the bucket holds a
// lease, at the part of the rate the caller's other processes leave. A
// caller who keeps sending past its limit would otherwise have each of
// its processes lease the bucket's every few tokens as they come, or all
// of them lease at once as soon as it held a lease, the writes of all
// but one failing: a write for every few requests answered.
func (l *Limiter) Take(ctx context.Context, key string, rate uds.Rate, n int64) Decision {
	b := l.bucket(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate != rate {
		// The rate changed: tokens leased under the old one are kept up
		// to a lease of the new, so that a lowered limit holds at once
		// with less than a lease at hand, as the bound says.
		b.tokens, b.rate = min(b.tokens, leaseSize(rate)), rate
	}
	now := l.now()
	switch {
	case n > rate.Burst:
		return Decision{OverBurst: true, Remaining: remaining(rate, b.tokens, b.last.TAT, now)}
	case now.Before(b.openUntil):
		return Decision{Allowed: true, Open: true}
	case b.tokens >= n:
		b.tokens -= n
		return Decision{Allowed: true, Charged: n, Remaining: remaining(rate, b.tokens, b.last.TAT, now)}
	}
	size := leaseSize(rate)
	want, least := max(n-b.tokens, size), n-b.tokens
	if b.tight {
		least = want
		if at := b.turn(rate, want); now.Before(at) {
			return Decision{RetryAfter: at.Sub(now), Remaining: b.tokens}
		}
	}
	lease, err := l.leaser.LeaseTokens(ctx, key, rate, want, least, b.last)
	if err != nil {
		b.openUntil = now.Add(OpenFor)
		return Decision{Allowed: true, Open: true, Cause: err}
	}
	// A lease refused on the view alone, without a write, learnt
	// nothing new of the bucket.
	if lease.Granted > 0 || lease.TAT != b.last.TAT {
		b.learn(rate, lease, now)
	}
	b.tokens += lease.Granted
	// At its limit, the caller stays so until a lease finds the bucket
	// full again: a lease at a process's turn may find a lease or two
	// more there, which others take next.
	b.tight = lease.Granted == 0 || holds(rate, lease.TAT, now) < size || b.tight && lease.Drawn
	if b.tokens < n {
		// Told when this process leases again, the request is told too
		// when the bucket holds all the tokens it lacks.
		return Decision{RetryAfter: max(b.turn(rate, want).Sub(now), time.Millisecond), Remaining: b.tokens}
	}
	b.tokens -= n
	return Decision{Allowed: true, Charged: n, Remaining: remaining(rate, b.tokens, lease.TAT, now)}
}

// learn takes in the shared bucket as a lease that reached it found it:
// its TAT, and how fast the other processes drew on it since the last
// lease, from how far they moved its TAT on.
func (b *bucket) learn(rate uds.Rate, lease Lease, now time.Time) {
	b.others = 0
	if since := now.Sub(b.lastAt).Microseconds(); lease.Drawn && b.last.TAT != 0 && since > 0 {
		drawn := lease.TAT - lease.Granted*rate.Interval() - b.last.TAT
		b.others = min(1, max(0, float64(drawn)/float64(since)))
	}
	b.last, b.lastAt = lease, now
}

// turn is when the process of a caller at its limit leases k tokens
// again: when the shared bucket, as the last lease left it, holds them,
// with the other processes drawing on it at the part of the rate they did
// and so taking turns with this one; at the latest when the bucket would
// be full, so that a process that misjudged the others asks again within
// a burst's time.
func (b *bucket) turn(rate uds.Rate, k int64) time.Time {
	ready, full := readyAt(rate, b.last.TAT, k), time.UnixMicro(b.last.TAT)
	wait := ready.Sub(b.lastAt)
	if wait <= 0 || b.others == 0 {
		return ready
	}
	if b.others < 1 {
		if at := b.lastAt.Add(time.Duration(float64(wait) / (1 - b.others))); at.Before(full) {
			full = at
		}
	}
	if full.Before(ready) {
		return ready
	}
	return full
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
	return time.UnixMicro(tat + (k-r.Burst)*r.Interval())
}

// holds is what a shared bucket at tat holds at now.
func holds(r uds.Rate, tat int64, now time.Time) int64 {
	return max(0, (now.UnixMicro()+r.Burst*r.Interval()-max(tat, now.UnixMicro()))/r.Interval())
}

// remaining estimates the tokens left to a caller: this process's, and
// what the shared bucket held at its last lease, as it has filled since,
// never more than the burst.
func remaining(r uds.Rate, tokens, tat int64, now time.Time) int64 {
	return min(r.Burst, tokens+holds(r, tat, now))
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
