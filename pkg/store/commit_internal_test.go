package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// TestContendedWaitPastTheDeadline checks that a write whose time runs out
// while it waits to try again after losing a race is unavailable (503,
// with Retry-After), not the context's bare error, which the HTTP layer
// would answer as an internal one.
func TestContendedWaitPastTheDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	err := waitContended(ctx, "update app|ns|id", 4)
	var unavailable *uds.UnavailableError
	if !errors.As(err, &unavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v (%T), want a *uds.UnavailableError wrapping the deadline", err, err)
	}
	if err := waitContended(context.Background(), "update app|ns|id", 0); err != nil {
		t.Errorf("a wait with time left: %v", err)
	}
}
