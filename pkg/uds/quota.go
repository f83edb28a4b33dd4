package uds

import "time"

// Unlimited, as an app default or a user override, lifts the limit
// explicitly. Zero (or absent) means "the next level decides": user override,
// then app default, then the global default, where 0 means unlimited.
const Unlimited = -1

// Limits is one level of quota configuration.
type Limits struct {
	Bytes int64
	Items int64
}

// Resolve picks the limit in effect per dimension: the first level that
// sets one (non-zero) wins; Unlimited and an unset global both come out as 0,
// which means no limit.
func Resolve(levels ...Limits) Limits {
	var out Limits
	out.Bytes = first(levels, func(l Limits) int64 { return l.Bytes })
	out.Items = first(levels, func(l Limits) int64 { return l.Items })
	return out
}

func first(levels []Limits, get func(Limits) int64) int64 {
	for _, l := range levels {
		if v := get(l); v != 0 {
			if v < 0 {
				return 0
			}
			return v
		}
	}
	return 0
}

// Usage is what one owner stores in one app, or a change to it.
type Usage struct {
	Bytes int64
	Items int64
	// History is the part of Bytes that kept versions hold (they count in
	// bytes, not in items).
	History int64
}

// Negate returns the change that undoes u.
func (u Usage) Negate() Usage { return Usage{Bytes: -u.Bytes, Items: -u.Items, History: -u.History} }

// Plus returns u and v added up.
func (u Usage) Plus(v Usage) Usage {
	return Usage{Bytes: u.Bytes + v.Bytes, Items: u.Items + v.Items, History: u.History + v.History}
}

// Grows reports whether u adds to either dimension.
func (u Usage) Grows() bool { return u.Bytes > 0 || u.Items > 0 }

// Quota is an owner's usage in an app beside the limits in effect (0 means
// unlimited).
type Quota struct {
	App    string
	User   string
	Used   Usage
	Limits Limits
}

// UserUsage is one row of an app's users listing.
type UserUsage struct {
	User string
	Usage
}

// AppUsage is one row of a user's apps listing.
type AppUsage struct {
	App string
	Usage
}

// Recomputed is the outcome of rebuilding an owner's usage from the data.
type Recomputed struct {
	// Quota is the usage recorded after the recompute, beside the limits.
	Quota Quota
	// Drift is what the record said minus what the data holds.
	Drift Usage
	// Applied reports whether the record now holds what the data holds. A
	// correction that lowers usage waits until the owner's usage has been
	// quiet for a while (see store.WithRecomputeQuiet); until then it is
	// not applied and RetryAfter says how long to wait.
	Applied    bool
	RetryAfter time.Duration
}
