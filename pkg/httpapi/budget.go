package httpapi

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// withBudget bounds ctx by budget and by the host's deadline less margin.
//
// The bound is a budget context (below) rather than context.WithTimeout,
// which costs every request a runtime timer of its own, made and stopped,
// and a place among its parent's children. Measured on a POST, the two
// were about 4% of everything its DynamoDB call and the adapter cost
// (docs/performance.md). A budget shares one timer with every other
// budget of the process, and joins its parent only when the parent can be
// cancelled: on Lambda it cannot (lambdahost hands requests their
// invocation's deadline without the runtime's cancellation, which only
// comes at that deadline or after the handler returned).
func withBudget(ctx context.Context, budget, margin time.Duration) (context.Context, context.CancelFunc) {
	now := time.Now()
	deadline := now.Add(budget)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-margin).Before(deadline) {
		deadline = dl.Add(-margin)
	}
	return budgets.start(ctx, now, deadline)
}

// budgets is the process's one budget clock.
var budgets budgetClock

// budgetCtx is a context with a deadline, done when the deadline passes,
// when its cancel function is called, or when its parent is done: a
// context.WithCancelCause of its parent that the clock cancels at the
// deadline, with context.DeadlineExceeded as its cause. Being a cancelCtx
// underneath, it is what the contexts derived from it find to join, as
// they would join a WithDeadline's (net/http's transport derives one for
// every DynamoDB call, through the SDK's value contexts): the context
// package joins a context it does not know with a goroutine of its own.
// It behaves as context.WithDeadline's does (a test holds the two to the
// same answers); only the timer differs, and what some contexts derived
// from it say once its deadline passed (Err).
type budgetCtx struct {
	context.Context // the budget's own cancelCtx
	cancel          context.CancelCauseFunc
	deadline        time.Time
	// index is the budget's place in clock.pending, or -1; under the
	// clock's lock.
	index int
}

func (b *budgetCtx) Deadline() (time.Time, bool) { return b.deadline, true }

// Err is context.DeadlineExceeded once the deadline has passed, as a
// WithDeadline's is; the cancelCtx underneath says Canceled, with the
// deadline as its cause. A cancellable context derived from the budget
// before its deadline says the same as that cancelCtx when the deadline
// passes: Canceled, with context.Cause giving the deadline (net/http's
// transport answers with the cause; the store takes either as the budget
// run out). One derived after it, or through values only, says
// DeadlineExceeded.
func (b *budgetCtx) Err() error {
	err := b.Context.Err()
	if err != nil && context.Cause(b.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}

func (b *budgetCtx) String() string { return "httpapi.budget(" + b.deadline.String() + ")" }

// budgetClock ends the budgets whose deadline has passed, with one timer
// for all of them, set for the earliest deadline. Requests of one process
// have the same budget and start one after another, so a new budget's
// deadline almost always comes after the earliest one and the timer is
// left alone: it then fires about once a budget's length, not once a
// request.
type budgetClock struct {
	mu      sync.Mutex
	pending budgetHeap
	timer   *time.Timer
	// armedAt is when the timer is set to fire; zero when it is not set.
	armedAt time.Time
}

// start returns a budget under parent that ends at deadline, and the
// function that ends it; now is the time the caller read, which start
// does not read again. A budget stays on the clock until that function is
// called or its deadline passes, even when its parent ends it first:
// every caller defers the call, as with context.WithTimeout.
func (c *budgetClock) start(parent context.Context, now, deadline time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	b := &budgetCtx{Context: ctx, cancel: cancel, deadline: deadline, index: -1}
	end := func() {
		c.remove(b)
		cancel(nil)
	}
	switch {
	case !deadline.After(now):
		cancel(context.DeadlineExceeded)
	case ctx.Err() == nil: // not ended with its parent already
		c.add(b)
	}
	return b, end
}

// add puts b on the clock, and sets the timer when b's deadline is the
// earliest.
func (c *budgetClock) add(b *budgetCtx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	heap.Push(&c.pending, b)
	if c.armedAt.IsZero() || b.deadline.Before(c.armedAt) {
		c.arm(b.deadline)
	}
}

// remove takes b off the clock. The timer stays set: when it fires for
// nothing, fire sets it for the earliest budget left.
func (c *budgetClock) remove(b *budgetCtx) {
	c.mu.Lock()
	if b.index >= 0 {
		heap.Remove(&c.pending, b.index)
	}
	c.mu.Unlock()
}

// arm sets the timer for at; under c.mu.
func (c *budgetClock) arm(at time.Time) {
	c.armedAt = at
	if c.timer == nil {
		c.timer = time.AfterFunc(time.Until(at), c.fire)
		return
	}
	c.timer.Reset(time.Until(at))
}

// fire ends the budgets whose deadline has passed and sets the timer for
// the earliest one left. It may run when nothing is due (the budget it was
// set for ended first, or a Reset raced with a firing): it then only sets
// the timer again.
func (c *budgetClock) fire() {
	c.mu.Lock()
	c.armedAt = time.Time{}
	now := time.Now()
	var due []*budgetCtx
	for len(c.pending) > 0 && !c.pending[0].deadline.After(now) {
		due = append(due, heap.Pop(&c.pending).(*budgetCtx))
	}
	if len(c.pending) > 0 {
		c.arm(c.pending[0].deadline)
	}
	c.mu.Unlock()
	for _, b := range due {
		b.cancel(context.DeadlineExceeded)
	}
}

// budgetHeap orders budgets by deadline, earliest first, keeping each
// one's index (container/heap).
type budgetHeap []*budgetCtx

func (h budgetHeap) Len() int           { return len(h) }
func (h budgetHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }

func (h budgetHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *budgetHeap) Push(x any) {
	b := x.(*budgetCtx)
	b.index = len(*h)
	*h = append(*h, b)
}

func (h *budgetHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	b.index = -1
	*h = old[:len(old)-1]
	return b
}
