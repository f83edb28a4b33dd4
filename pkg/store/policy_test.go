package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// testSettle is how long a change into or out of private settles in tests
// that do not race writes against it.
const testSettle = 50 * time.Millisecond

// setPolicy sets a namespace's policy and, for a change into or out of
// private, completes it once it settles, moving the store's clock there.
func setPolicy(ctx context.Context, s *store.Store, clock *storetest.Clock, ns string, p uds.Policy) (uds.Policy, error) {
	got, err := s.SetPolicy(ctx, app, ns, p)
	if err != nil || got.Pending == nil {
		return got, err
	}
	clock.Advance(got.Pending.SettlesAt.Sub(clock.Now()) + time.Millisecond)
	return s.SetPolicy(ctx, app, ns, p)
}

func TestSetPolicyVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	const admins = 6
	var wg sync.WaitGroup
	errs := make([]error, admins)
	for i := range admins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.SetPolicy(ctx, app, "ns", uds.Policy{Access: uds.AccessOwnerWrite, Schema: json.RawMessage(`{"type":"object"}`)})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	p, err := s.StoredPolicy(ctx, app, "ns")
	if err != nil {
		t.Fatal(err)
	}
	// Every change is conditioned on the version it read: none is lost.
	if p.Version != admins || p.Access != uds.AccessOwnerWrite || string(p.Schema) != `{"type":"object"}` {
		t.Errorf("stored %+v, want version %d", p, admins)
	}
	if _, err := s.SetPolicy(ctx, app, "ns", uds.Policy{}); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.StoredPolicy(ctx, app, "ns"); p.Mode() != uds.AccessShared || p.Schema != nil || p.Version != admins+1 {
		t.Errorf("after removal %+v", p)
	}
	if page, _, _ := s.Policies(ctx, app, "", 10); len(page) != 0 {
		t.Errorf("a removed policy is listed: %+v", page)
	}
}

func TestPrivateSwitchIgnoresExpiredItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	s, _ := newStore(t, store.WithClock(clock.Now))
	w := write(key(t, "ns", "soon-gone"), `1`)
	w.ExpiresAt = clock.Now().Add(time.Hour)
	if _, err := s.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPolicy(ctx, app, "ns", uds.Policy{Access: uds.AccessPrivate}); !errors.Is(err, uds.ErrInUse) {
		t.Fatalf("switch with a live item: %v, want ErrInUse", err)
	}
	clock.Advance(2 * time.Hour)
	if _, err := setPolicy(ctx, s, clock, "ns", uds.Policy{Access: uds.AccessPrivate}); err != nil {
		t.Fatalf("switch with only an expired item: %v", err)
	}
}

func TestOwnerWriteDeleteList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	list := key(t, "ns", "thread")
	for i, who := range []string{"alice", "alice", "bob"} {
		k := list
		k.SortKey = string(rune('a' + i))
		w := write(k, `1`)
		w.Subject = who
		if _, err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.DeleteList(ctx, uds.Write{Key: list, IfMatch: uds.Precondition{Creator: "alice"}}); !errors.Is(err, uds.ErrForbidden) || n != 0 {
		t.Fatalf("DeleteList with bob's item: %d, %v; want 0, ErrForbidden", n, err)
	}
	if n, err := s.DeleteList(ctx, uds.Write{Key: list, IfMatch: uds.Precondition{Creator: "bob"}}); !errors.Is(err, uds.ErrForbidden) || n != 0 {
		t.Fatalf("DeleteList with alice's items: %d, %v; want 0, ErrForbidden", n, err)
	}
	bobs := list
	bobs.SortKey = "c"
	if err := s.Delete(ctx, uds.Write{Key: bobs, IfMatch: uds.Precondition{Creator: "alice"}}); !errors.Is(err, uds.ErrForbidden) {
		t.Fatalf("alice deletes bob's item: %v", err)
	}
	if err := s.Delete(ctx, uds.Write{Key: bobs, IfMatch: uds.Precondition{Creator: "bob"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteList(ctx, uds.Write{Key: list, IfMatch: uds.Precondition{Creator: "alice"}}); err != nil || n != 2 {
		t.Fatalf("DeleteList of alice's own items: %d, %v", n, err)
	}
}

// A private item's key ends with its owner, who may hold the delimiter:
// reclaiming it from the owner index finds its key again.
func TestPrivateItemsAreReclaimed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	// A quiet period past the clock's move: recompute does not lower the
	// record on its own.
	s, _ := newStore(t, store.WithClock(clock.Now), store.WithRecomputeQuiet(24*time.Hour))
	const owner = "auth0|abc"
	k, err := key(t, "ns", "settings").InSpaceOf(owner)
	if err != nil {
		t.Fatal(err)
	}
	w := write(k, `{"a":1}`)
	w.Subject, w.ExpiresAt = owner, clock.Now().Add(time.Hour)
	if _, err := s.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	rc, err := s.Recompute(ctx, app, owner)
	if err != nil {
		t.Fatal(err)
	}
	// Had the reclaim not found the item, its usage would still be
	// recorded (recompute lowers a record only once it is quiet).
	if rc.Quota.Used != (uds.Usage{}) || rc.Drift != (uds.Usage{}) {
		t.Errorf("after the expiry: %+v", rc)
	}
	if _, err := s.Get(ctx, k); !errors.Is(err, uds.ErrNotFound) {
		t.Errorf("Get: %v", err)
	}
}
