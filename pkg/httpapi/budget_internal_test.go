package httpapi

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
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

// startIn starts a budget of d from now, as withBudget does.
func (c *budgetClock) startIn(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	now := time.Now()
	return c.start(parent, now, now.Add(d))
}

// starter makes a context bounded by d under parent, and its cancel.
type starter func(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)

// budgetAndDeadline are a budget and context.WithDeadline, which the tests
// hold to the same answers.
func budgetAndDeadline(clock *budgetClock) map[string]starter {
	return map[string]starter{
		"budget": clock.startIn,
		"WithDeadline": func(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
			return context.WithDeadline(parent, time.Now().Add(d))
		},
	}
}

// TestBudgetAsWithDeadline holds a budget to what context.WithDeadline
// answers in the same case: its deadline, its values, and how it ends
// (its deadline passing, its cancel function, its parent), with the
// contexts derived from it, directly or through values.
func TestBudgetAsWithDeadline(t *testing.T) {
	t.Parallel()
	var clock budgetClock
	for _, tc := range []struct {
		name string
		d    time.Duration
		// end ends the context, its parent or neither (nil: the deadline).
		end     func(cancel, cancelParent context.CancelFunc)
		wantErr error
	}{
		// Long enough that a loaded machine still checks it before it ends.
		{"its deadline passes", time.Second, nil, context.DeadlineExceeded},
		{"it is cancelled", time.Hour, func(cancel, _ context.CancelFunc) { cancel() }, context.Canceled},
		{"its parent is cancelled", time.Hour, func(_, cancelParent context.CancelFunc) { cancelParent() }, context.Canceled},
		{"its budget is spent before it starts", -time.Second, func(context.CancelFunc, context.CancelFunc) {}, context.DeadlineExceeded},
		{"its budget is zero", 0, func(context.CancelFunc, context.CancelFunc) {}, context.DeadlineExceeded},
	} {
		for name, start := range budgetAndDeadline(&clock) {
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
				// As the SDK's values wrap a call's context before net/http
				// derives its own.
				caused, cancelCaused := context.WithCancelCause(context.WithValue(ctx, budgetKey{}, "w"))
				defer cancelCaused(nil)
				var after sync.WaitGroup
				after.Add(1)
				context.AfterFunc(ctx, after.Done)
				if tc.d > 0 && ctx.Err() != nil {
					t.Fatalf("Err() = %v before it ends", ctx.Err())
				}
				if tc.end != nil {
					tc.end(cancel, cancelParent)
					// Ended by a call, it is done when the call returns.
					if ctx.Err() != tc.wantErr || child.Err() == nil || caused.Err() == nil {
						t.Errorf("right after the call: Err() %v, derived %v and %v; want %v", ctx.Err(), child.Err(), caused.Err(), tc.wantErr)
					}
				}
				within(t, ctx, 5*time.Second, "the context")
				within(t, child, 5*time.Second, "a context derived from it")
				within(t, caused, 5*time.Second, "a context derived from it through a value")
				after.Wait()
				if err := ctx.Err(); err != tc.wantErr {
					t.Errorf("Err() = %v; want %v", err, tc.wantErr)
				}
				if err := context.Cause(ctx); err != tc.wantErr {
					t.Errorf("Cause() = %v; want %v", err, tc.wantErr)
				}
				// A cancellable context derived from a budget before its
				// deadline passed says Canceled where WithDeadline's says
				// DeadlineExceeded; its cause is the deadline either way.
				for what, derived := range map[string]context.Context{"derived": child, "derived through a value": caused} {
					if err := context.Cause(derived); err != tc.wantErr {
						t.Errorf("the %s context's cause = %v; want %v", what, err, tc.wantErr)
					}
					if err := derived.Err(); err != tc.wantErr && !(name == "budget" && tc.end == nil && err == context.Canceled) {
						t.Errorf("the %s context's Err() = %v; want %v", what, err, tc.wantErr)
					}
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

// TestBudgetUnderEndedParent checks a budget started under a parent that
// has already ended: it is done from the start, as WithDeadline's is.
func TestBudgetUnderEndedParent(t *testing.T) {
	t.Parallel()
	var clock budgetClock
	for name, start := range budgetAndDeadline(&clock) {
		for _, d := range []time.Duration{time.Hour, 0} {
			parent, cancelParent := context.WithCancel(context.Background())
			cancelParent()
			ctx, cancel := start(parent, d)
			if err := ctx.Err(); err != context.Canceled {
				t.Errorf("%s of %v under a cancelled parent: Err() = %v; want Canceled", name, d, err)
			}
			cancel()
		}
	}
	drained(t, &clock)
}

// TestBudgetCauseKept checks that a budget whose deadline passed keeps it
// as its cause when an ancestor is cancelled afterwards with another.
func TestBudgetCauseKept(t *testing.T) {
	t.Parallel()
	var clock budgetClock
	for name, start := range budgetAndDeadline(&clock) {
		parent, cancelParent := context.WithCancelCause(context.Background())
		ctx, cancel := start(parent, 5*time.Millisecond)
		within(t, ctx, 5*time.Second, name)
		cancelParent(errors.New("the client went away"))
		if c := context.Cause(ctx); c != context.DeadlineExceeded {
			t.Errorf("%s: Cause() = %v; want DeadlineExceeded", name, c)
		}
		cancel()
	}
	drained(t, &clock)
}

// TestBudgetDerivedWithoutGoroutines checks that contexts derived from a
// budget through values, as the AWS SDK's are before net/http's transport
// derives one for every call, join it as they join a WithDeadline's: the
// context package starts a goroutine for each child of a context it does
// not know. Not parallel, so that no other test's goroutines are counted.
func TestBudgetDerivedWithoutGoroutines(t *testing.T) {
	var clock budgetClock
	const children = 200
	for name, start := range budgetAndDeadline(&clock) {
		ctx, cancel := start(context.Background(), time.Hour)
		before := runtime.NumGoroutine()
		var cancels []context.CancelCauseFunc
		for range children {
			_, c := context.WithCancelCause(context.WithValue(ctx, budgetKey{}, 1))
			cancels = append(cancels, c)
		}
		if n := runtime.NumGoroutine() - before; n > children/4 {
			t.Errorf("%s: %d goroutines started for %d derived contexts", name, n, children)
		}
		for _, c := range cancels {
			c(nil)
		}
		cancel()
	}
	drained(t, &clock)
}

// TestBudgetOrder checks that budgets end at their own deadlines whatever
// order they start in: a short one started after long ones sets the
// clock's timer earlier, and the timer, once fired, is set for the next.
func TestBudgetOrder(t *testing.T) {
	t.Parallel()
	var clock budgetClock
	long, cancelLong := clock.startIn(context.Background(), time.Hour)
	defer cancelLong()
	short, cancelShort := clock.startIn(context.Background(), 40*time.Millisecond)
	defer cancelShort()
	shorter, cancelShorter := clock.startIn(context.Background(), 20*time.Millisecond)
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
// under the race detector in make test: each ends with its cause, and the
// clock is left empty.
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
				// A budget ended by a call is long, so that the call decides.
				ending := rnd.IntN(3)
				d := time.Duration(1+rnd.IntN(3000)) * time.Microsecond
				if ending != 0 {
					d = time.Hour
				}
				start := time.Now()
				ctx, cancel := clock.startIn(parent, d)
				switch ending {
				case 1:
					cancel()
				case 2:
					cancelParent()
				}
				select {
				case <-ctx.Done():
				case <-bound.Done():
					t.Errorf("a budget of %v did not end", d)
					cancel()
					cancelParent()
					return
				}
				err := ctx.Err()
				switch {
				case ending == 0 && err != context.DeadlineExceeded:
					t.Errorf("a budget of %v left to its deadline ended with %v", d, err)
				case ending == 0 && time.Since(start) < d:
					t.Errorf("a budget of %v ended after %v", d, time.Since(start))
				case ending != 0 && err != context.Canceled:
					t.Errorf("a budget ended by a call (%d) said %v", ending, err)
				}
				cancel()
				cancelParent()
			}
		}()
	}
	wg.Wait()
	drained(t, &clock)
}
