package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// TestContendedWaitPastTheDeadline checks that a write whose time runs out
// while it waits to try again after losing a race is unavailable (503,
// with Retry-After), not the context's bare error, which the HTTP layer
// would answer as an internal one. The client is told that nothing was
// written unless an attempt went unanswered, when it may have been.
func TestContendedWaitPastTheDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	for _, uncertain := range []bool{false, true} {
		err := waitContended(ctx, "update app|ns|id", 4, uncertain)
		var unavailable *uds.UnavailableError
		if !errors.As(err, &unavailable) || !errors.Is(err, context.DeadlineExceeded) || unavailable.RetryAfter != time.Second {
			t.Errorf("%v (%T), want a *uds.UnavailableError wrapping the deadline, Retry-After 1 s", err, err)
		} else if said := strings.Contains(unavailable.Public(), "nothing was written"); said == uncertain {
			t.Errorf("uncertain %v: the client is told %q", uncertain, unavailable.Public())
		}
	}
	if err := waitContended(context.Background(), "update app|ns|id", 0, false); err != nil {
		t.Errorf("a wait with time left: %v", err)
	}
}
