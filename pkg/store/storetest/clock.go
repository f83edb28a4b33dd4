package storetest

import (
	"sync/atomic"
	"time"
)

// Clock is a clock a test moves ahead: real time plus whatever the test
// has added. Given to the store (store.WithClock) and the API
// (httpapi.Config.Now), it lets a test write items that expire an hour
// from now, however long the writes take on a loaded machine, and then
// expire them at once with Advance instead of sleeping. Time still passes
// between moves, so audit dates and ETags stay distinct. The zero Clock
// reads real time.
type Clock struct {
	offset atomic.Int64 // nanoseconds added to real time
	// frozen, when set, is the instant (Unix nanoseconds) time stands at
	// instead of passing.
	frozen atomic.Int64
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	if f := c.frozen.Load(); f != 0 {
		return time.Unix(0, f).Add(time.Duration(c.offset.Load()))
	}
	return time.Now().Add(time.Duration(c.offset.Load()))
}

// Freeze stops time where it is, for a test of rates: however slowly the
// machine sends its requests, no token accrues between them. Advance
// still moves it.
func (c *Clock) Freeze() { c.frozen.Store(time.Now().UnixNano()) }

// Advance moves the clock d ahead.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
