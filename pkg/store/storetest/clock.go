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
}

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock d ahead.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
