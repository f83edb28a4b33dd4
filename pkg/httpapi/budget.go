package httpapi

import (
	"container/heap"
	"context"
	"slices"
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
// comes after the handler returned).
func withBudget(ctx context.Context, budget, margin time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)-margin)
	}
	return budgets.start(ctx, budget)
}

// budgets is the process's one budget clock.
var budgets budgetClock

// budgetCtx is a context with a deadline, done when the deadline passes,
// when its cancel function is called, or when its parent is done. It
// behaves as context.WithDeadline's does (a test holds the two to the
// same answers); only the timer and the parent's bookkeeping differ.
type budgetCtx struct {
	context.Context // the parent: values, and Cause's lookup
	deadline        time.Time
	done            chan struct{}

	// index is the budget's place in clock.pending, or -1; under the
	// clock's lock.
	index int

	mu  sync.Mutex
	err error
	// stopParent stops the parent's cancellation from reaching the
	// budget once it is done by itself.
	stopParent func() bool
	// afters are the functions to call when the budget is done: the
	// context package's, which cancel the contexts derived from it.
	afters []*afterBudget
}

// afterBudget is one function AfterFunc registered.
type afterBudget struct{ f func() }

func (b *budgetCtx) Deadline() (time.Time, bool) { return b.deadline, true }
func (b *budgetCtx) Done() <-chan struct{}       { return b.done }

func (b *budgetCtx) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

func (b *budgetCtx) String() string { return "httpapi.budget(" + b.deadline.String() + ")" }

// AfterFunc arranges for f to be called once the budget is done, and
// returns the function that stops it. The context package calls it to
// cancel the contexts derived from a budget (context.WithCancel and the
// like), where it would otherwise start a goroutine for each of them to
// watch Done. f is called on the goroutine that ends the budget, after its
// lock is released, as a cancelCtx cancels its children; or on a goroutine
// of its own when the budget is already done.
func (b *budgetCtx) AfterFunc(f func()) func() bool {
	a := &afterBudget{f: f}
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	b.afters = append(b.afters, a)
	b.mu.Unlock()
	return func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		i := slices.Index(b.afters, a)
		if i < 0 {
			return false
		}
		b.afters = slices.Delete(b.afters, i, i+1)
		return true
	}
}

// end makes the budget done with err, once: it closes Done, leaves the
// clock and the parent, and calls the functions registered with
// AfterFunc.
func (b *budgetCtx) end(clock *budgetClock, err error) {
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return
	}
	b.err = err
	close(b.done)
	afters, stop := b.afters, b.stopParent
	b.afters, b.stopParent = nil, nil
	b.mu.Unlock()
	clock.remove(b)
	if stop != nil {
		stop()
	}
	for _, a := range afters {
		a.f()
	}
}

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

// start returns a budget of d under parent, and the function that ends it.
func (c *budgetClock) start(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	b := &budgetCtx{Context: parent, deadline: time.Now().Add(d), done: make(chan struct{}), index: -1}
	cancel := func() { b.end(c, context.Canceled) }
	if d <= 0 {
		b.end(c, context.DeadlineExceeded)
		return b, cancel
	}
	if parent.Done() != nil {
		stop := context.AfterFunc(parent, func() { b.end(c, parent.Err()) })
		b.mu.Lock()
		if b.err == nil {
			b.stopParent = stop
		}
		b.mu.Unlock()
	}
	c.add(b)
	return b, cancel
}

// add puts b on the clock, unless it is already done (its parent was),
// and sets the timer when b's deadline is the earliest.
func (c *budgetClock) add(b *budgetCtx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.mu.Lock()
	done := b.err != nil
	b.mu.Unlock()
	if done {
		return
	}
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
		b.end(c, context.DeadlineExceeded)
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
