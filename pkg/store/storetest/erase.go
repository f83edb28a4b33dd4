package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Erase runs the erase q asks for to its end: it starts it, moves clock
// past its settling (settle, as the store was given it with
// store.WithPolicySettle), and sends the step that removes, which must
// end it. It returns the receipt.
func Erase(t testing.TB, s *store.Store, clock *Clock, settle time.Duration, q store.EraseQuery) uds.Erasure {
	t.Helper()
	ctx := context.Background()
	if _, err := s.EraseUser(ctx, q); err != nil {
		t.Fatal(err)
	}
	clock.Advance(settle + time.Second)
	e, err := s.EraseUser(ctx, q)
	if err != nil || e.State != uds.ErasureDone {
		t.Fatalf("the erase of %s: %+v, %v; want it done", q.User, e, err)
	}
	return e
}
