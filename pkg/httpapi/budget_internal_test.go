package httpapi

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// budgetKey is a context value key of the tests'.
type budgetKey struct{}

// within waits for ctx to be done, failing the test after limit.
func within(t *testing.T, ctx context.Context, limit time.Duration, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(limit):
		t.Fatalf("%s: not done after %v", what, limit)
	}
}

// drained checks that the clock holds no budget: every budget that ended
// left it.
func drained(t *testing.T, c *budgetClock) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.pending); n != 0 {
		t.Errorf("the clock still holds %d budgets", n)
	}
}

// TestBudgetAsWithDeadline holds a budget to what context.WithDeadline
// answers in the same case: its deadline, its values, and how it ends
// (its deadline passing, its cancel function, its parent), with the
// contexts derived from it.
func TestBudgetAsWithDeadline(t *testing.T) {
	t.Parallel()
	type start func(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)
	var clock budgetClock
	impls := map[string]start{
		"budget": clock.start,
		"WithDeadline": func(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
			return context.WithDeadline(parent, time.Now().Add(d))
		},
	}
	for _, tc := range []struct {
		name string
		d    time.Duration
		// end ends the context, its parent or neither (nil: the deadline).
		end     func(cancel, cancelParent context.CancelFunc)
		wantErr error
	}{
		{"its deadline passes", 30 * time.Millisecond, nil, context.DeadlineExceeded},
		{"it is cancelled", time.Hour, func(cancel, _ context.CancelFunc) { cancel() }, context.Canceled},
		{"its parent is cancelled", time.Hour, func(_, cancelParent context.CancelFunc) { cancelParent() }, context.Canceled},
		{"its budget is spent before it starts", -time.Second, func(context.CancelFunc, context.CancelFunc) {}, context.DeadlineExceeded},
		{"its budget is zero", 0, func(context.CancelFunc, context.CancelFunc) {}, context.DeadlineExceeded},
	} {
		for name, start := range impls {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), budgetKey{}, "v"))
				defer cancelParent()
				before := time.Now()
				ctx, cancel := start(parent, tc.d)
				defer cancel()
				if dl, ok := ctx.Deadline(); !ok || dl.Before(before.Add(tc.d)) || dl.After(time.Now().Add(tc.d)) {
					t.Errorf("Deadline() = %v, %v; want %v from the start", dl, ok, tc.d)
				}
				if ctx.Value(budgetKey{}) != "v" {
					t.Errorf("the parent's value is lost")
				}
				child, cancelChild := context.WithCancel(ctx)
				defer cancelChild()
				caused, cancelCaused := context.WithCancelCause(ctx)
				defer cancelCaused(nil)
				var after sync.WaitGroup
				after.Add(1)
				context.AfterFunc(ctx, after.Done)
				if tc.d > 0 && ctx.Err() != nil {
					t.Fatalf("Err() = %v before it ends", ctx.Err())
				}
				if tc.end != nil {
					tc.end(cancel, cancelParent)
				}
				within(t, ctx, 5*time.Second, "the context")
				within(t, child, 5*time.Second, "a context derived from it")
				after.Wait()
				if err := ctx.Err(); err != tc.wantErr {
					t.Errorf("Err() = %v; want %v", err, tc.wantErr)
				}
				if err := child.Err(); err != tc.wantErr {
					t.Errorf("the derived context's Err() = %v; want %v", err, tc.wantErr)
				}
				if err := context.Cause(caused); !errors.Is(err, tc.wantErr) {
					t.Errorf("the derived context's cause = %v; want %v", err, tc.wantErr)
				}
				cancel() // a second end changes nothing
				if err := ctx.Err(); err != tc.wantErr {
					t.Errorf("Err() after cancel = %v; want %v", err, tc.wantErr)
				}
			})
		}
	}
	t.Cleanup(func() { drained(t, &clock) })
}

// TestBudgetDerivedStopped checks that a context derived from a budget and
// cancelled first leaves the budget: nothing of it is kept or called when
// the budget ends.
func TestBudgetDerivedStopped(t *testing.T) {
	t.Parallel()
	var clock budgetClock
	ctx, cancel := clock.start(context.Background(), time.Hour)
	b := ctx.(*budgetCtx)
	child, cancelChild := context.WithCancel(ctx)
	if n := afterCount(b); n != 1 {
		t.Fatalf("a derived context registered %d times; want once, through AfterFunc", n)
	}
	cancelChild()
	if n := afterCount(b); n != 0 {
		t.Errorf("a cancelled derived context is still registered (%d)", n)
	}
	cancel()
	if child.Err() != context.Canceled {
		t.Errorf("child: %v", child.Err())
	}
	// A budget already done runs what registers at once.
	ran := make(chan struct{})
	context.AfterFunc(ctx, func() { close(ran) })
	within(t, withDone(ran), 5*time.Second, "a function registered after the end")
	drained(t, &clock)
}

func afterCount(b *budgetCtx) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.afters)
}

// withDone is a context done when ch is closed.
func withDone(ch chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-ch; cancel() }()
	return ctx
}

// TestBudgetOrder checks that budgets end at their own deadlines whatever
// order they start in: a short one started after long ones sets the
// clock's timer earlier, and the timer, once fired, is set for the next.
func TestBudgetOrder(t *testing.T) {
	t.Parallel()
	var clock budgetClock
	long, cancelLong := clock.start(context.Background(), time.Hour)
	defer cancelLong()
	short, cancelShort := clock.start(context.Background(), 40*time.Millisecond)
	defer cancelShort()
	shorter, cancelShorter := clock.start(context.Background(), 20*time.Millisecond)
	defer cancelShorter()
	within(t, shorter, 5*time.Second, "the 20 ms budget")
	within(t, short, 5*time.Second, "the 40 ms budget")
	if long.Err() != nil {
		t.Errorf("the hour's budget ended: %v", long.Err())
	}
	for name, ctx := range map[string]context.Context{"20 ms": shorter, "40 ms": short} {
		if dl, _ := ctx.Deadline(); time.Now().Before(dl) {
			t.Errorf("the %s budget ended before its deadline", name)
		}
		if ctx.Err() != context.DeadlineExceeded {
			t.Errorf("the %s budget: %v", name, ctx.Err())
		}
	}
	cancelLong()
	drained(t, &clock)
}

// TestBudgetsConcurrent starts and ends budgets from many goroutines at
// once, some by their deadlines, some cancelled, some by their parents,
// under the race detector in make test: each ends once, with its cause,
// and the clock is left empty.
func TestBudgetsConcurrent(t *testing.T) {
	t.Parallel()
	var clock budgetClock
	var wg sync.WaitGroup
	// One bound for all of them, so that budgets which never end fail the
	// test in seconds rather than one by one.
	bound, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 1))
			for range 200 {
				parent, cancelParent := context.WithCancel(context.Background())
				d := time.Duration(rnd.IntN(3000)) * time.Microsecond
				ctx, cancel := clock.start(parent, d)
				var want error
				switch rnd.IntN(3) {
				case 0:
					want = context.DeadlineExceeded
				case 1:
					cancel()
					want = context.Canceled
				default:
					cancelParent()
					want = context.Canceled
				}
				select {
				case <-ctx.Done():
				case <-bound.Done():
					t.Errorf("a budget of %v did not end", d)
					cancel()
					cancelParent()
					return
				}
				if err := ctx.Err(); err != want && err != context.DeadlineExceeded {
					t.Errorf("a budget of %v ended with %v; want %v", d, err, want)
				}
				cancel()
				cancelParent()
			}
		}()
	}
	wg.Wait()
	drained(t, &clock)
}
