package uds

import (
	"strconv"
	"time"
)

// Rate is a token bucket: PerSecond tokens a second, up to Burst at once.
// The zero Rate sets nothing (the next level decides); a PerSecond of
// Unlimited lifts the limit at its level.
type Rate struct {
	PerSecond int64
	Burst     int64
}

// On reports whether the rate limits anything.
func (r Rate) On() bool { return r.PerSecond > 0 }

// Interval is the time one token takes at the rate, in microseconds (the
// unit a bucket's state keeps time in).
func (r Rate) Interval() int64 { return int64(time.Second/time.Microsecond) / r.PerSecond }

// MaxRatePerSecond bounds a rate limit's numbers: far above what one
// caller or app of a deployment should send, and small enough that a
// token's interval in microseconds is never zero.
const MaxRatePerSecond = 1_000_000

// Validate checks a rate as a request sets it: whole positive numbers
// (PerSecond may be Unlimited at an override), the burst at least 1 when
// a rate is set, named by field.
func (r Rate) Validate(field string) error {
	switch {
	case r.PerSecond == Unlimited && r.Burst == 0:
		return nil
	case r.PerSecond == Unlimited:
		return Invalid(field+".burst", "goes with a rate, and requestsPerSecond -1 lifts the limit: leave burst out")
	case r.PerSecond < 1 || r.PerSecond > MaxRatePerSecond:
		return Invalid(field+".requestsPerSecond", "must be a whole number from 1 to %d (or -1 for no limit), got %d", MaxRatePerSecond, r.PerSecond)
	case r.Burst == 0:
		// Absent, as a form's empty field leaves it: "got 0" would name
		// a number nobody sent.
		return Invalid(field+".burst", "is required with a rate: the most requests let through at once, a whole number from 1 to %d", MaxRatePerSecond)
	case r.Burst < 1 || r.Burst > MaxRatePerSecond:
		return Invalid(field+".burst", "must be a whole number from 1 to %d, got %d", MaxRatePerSecond, r.Burst)
	}
	return nil
}

// RateLimits is one level of rate configuration: the limit of each
// caller of an app, and of the app as a whole (a user's override sets
// PerCaller only).
type RateLimits struct {
	PerCaller Rate
	PerApp    Rate
}

// ResolveRate picks the rate in effect: the first level that sets one
// (non-zero) wins; Unlimited there, or none at all, is no limit (the
// zero Rate).
func ResolveRate(levels ...Rate) Rate {
	for _, r := range levels {
		switch {
		case r.PerSecond == Unlimited:
			return Rate{}
		case r.PerSecond != 0:
			return r
		}
	}
	return Rate{}
}

// ErrRateLimited: the caller, or the app, sent more requests than its
// rate limit lets through; a *RateLimitedError says which and when to
// come back.
var ErrRateLimited = NewError(CodeRateLimited, "rate limited")

// RateLimitedError refuses a request over a rate limit. Nothing was done.
type RateLimitedError struct {
	// Limit names the limit: "caller" or "app".
	Limit      string
	Rate       Rate
	RetryAfter time.Duration
	// Operations, when not 0, is the operations of a batch that costs
	// more tokens than the limit's burst: it never passes, whatever the
	// wait, and RetryAfter is 0.
	Operations int
}

func (e *RateLimitedError) Error() string {
	requests := " requests"
	if e.Rate.PerSecond == 1 {
		requests = " request"
	}
	limit := "the " + e.Limit + " rate limit of " + strconv.FormatInt(e.Rate.PerSecond, 10) + requests +
		" a second (burst " + strconv.FormatInt(e.Rate.Burst, 10) + ")"
	if e.Operations != 0 {
		return "a batch of " + strconv.Itoa(e.Operations) + " operations costs " + strconv.Itoa(e.Operations) +
			" tokens, more than the burst of " + limit + " ever holds"
	}
	return "over " + limit
}

// Is makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitedError) Is(target error) bool { return target == ErrRateLimited }

// Code returns CodeRateLimited.
func (e *RateLimitedError) Code() Code { return CodeRateLimited }
