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
	if page, _, err := s.Policies(ctx, app, "", 10, false); err != nil || len(page) != 1 {
		t.Fatalf("the policy set is listed as %+v (%v), want it alone", page, err)
	}
	if _, err := s.SetPolicy(ctx, app, "ns", uds.Policy{}); err != nil {
		t.Fatal(err)
	}
	if p, err := s.StoredPolicy(ctx, app, "ns"); err != nil || p.Mode() != uds.AccessShared || p.Schema != nil || p.Version != admins+1 {
		t.Errorf("after removal %+v (%v)", p, err)
	}
	if page, _, err := s.Policies(ctx, app, "", 10, false); err != nil || len(page) != 0 {
		t.Errorf("a removed policy is listed: %+v (%v)", page, err)
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

// TestPolicyHistory follows namespaces' history policies through every way
// a change goes: the history is stored at once whether the rest of the
// change applies at once, is announced, replaces a pending target,
// completes or is cancelled; a refused change stores none of it; and the
// policy the data routes read, the stored one and the listing agree.
func TestPolicyHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	// A settle time the test's steps never reach on their own.
	s, _ := newStore(t, store.WithClock(clock.Now), store.WithPolicySettle(time.Hour))
	keep := func(versions, days int) uds.History { return uds.History{Versions: versions, Days: days} }
	// A namespace that holds an item, and one whose change into private
	// meets an item written after it was announced (the store's writes do
	// not look at a pending change; the API refuses them).
	if _, err := s.Create(ctx, write(key(t, "busy", "x"), `1`)); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name, ns string
		set      uds.Policy
		// settle moves the clock past the pending change's settle time
		// first; create writes an item in the namespace first.
		settle, create bool
		wantErr        error
		// What is stored after the step.
		access  uds.Access
		pending bool
		history uds.History
	}{
		{name: "alone, at once", ns: "ns", set: uds.Policy{Access: uds.AccessShared, History: keep(10, 30)},
			access: uds.AccessShared, history: keep(10, 30)},
		{name: "lowered", ns: "ns", set: uds.Policy{Access: uds.AccessShared, History: keep(2, 0)},
			access: uds.AccessShared, history: keep(2, 0)},
		{name: "no versions is none, whatever the days", ns: "ns", set: uds.Policy{Access: uds.AccessOwnerWrite, History: keep(0, 30)},
			access: uds.AccessOwnerWrite},
		{name: "announced into private, the history at once", ns: "ns", set: uds.Policy{Access: uds.AccessPrivate, History: keep(5, 0)},
			access: uds.AccessOwnerWrite, pending: true, history: keep(5, 0)},
		{name: "repeated while settling with another history", ns: "ns", set: uds.Policy{Access: uds.AccessPrivate, History: keep(7, 2)},
			access: uds.AccessOwnerWrite, pending: true, history: keep(7, 2)},
		{name: "completed", ns: "ns", set: uds.Policy{Access: uds.AccessPrivate, History: keep(7, 2)}, settle: true,
			access: uds.AccessPrivate, history: keep(7, 2)},
		{name: "announced out of private, history off at once", ns: "ns", set: uds.Policy{},
			access: uds.AccessPrivate, pending: true},
		{name: "a change on one side of private cancels it", ns: "ns", set: uds.Policy{Access: uds.AccessPrivate, History: keep(1, 1)},
			access: uds.AccessPrivate, history: keep(1, 1)},
		{name: "removal announced", ns: "ns", set: uds.Policy{},
			access: uds.AccessPrivate, pending: true},
		{name: "removed", ns: "ns", set: uds.Policy{}, settle: true},
		{name: "without an access mode", ns: "bare", set: uds.Policy{History: keep(4, 0)}, history: keep(4, 0)},
		{name: "before a refused change", ns: "busy", set: uds.Policy{Access: uds.AccessShared, History: keep(3, 0)},
			access: uds.AccessShared, history: keep(3, 0)},
		{name: "a change refused at once stores no history", ns: "busy", set: uds.Policy{Access: uds.AccessPrivate, History: keep(9, 0)},
			wantErr: uds.ErrInUse, access: uds.AccessShared, history: keep(3, 0)},
		{name: "announced on an empty namespace", ns: "raced", set: uds.Policy{Access: uds.AccessPrivate, History: keep(6, 0)},
			pending: true, history: keep(6, 0)},
		{name: "a completion refused keeps the announced history", ns: "raced", set: uds.Policy{Access: uds.AccessPrivate, History: keep(8, 0)},
			settle: true, create: true, wantErr: uds.ErrInUse, history: keep(6, 0)},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.settle {
				p, err := s.StoredPolicy(ctx, app, step.ns)
				if err != nil || p.Pending == nil {
					t.Fatalf("nothing pending to settle: %+v, %v", p, err)
				}
				clock.Advance(p.Pending.SettlesAt.Sub(clock.Now()) + time.Millisecond)
			}
			if step.create {
				if _, err := s.Create(ctx, write(key(t, step.ns, "late"), `1`)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.SetPolicy(ctx, app, step.ns, step.set)
			if !errors.Is(err, step.wantErr) {
				t.Fatalf("SetPolicy: %v, want %v", err, step.wantErr)
			}
			if err == nil && got.History != step.history {
				t.Errorf("SetPolicy returned history %+v, want %+v", got.History, step.history)
			}
			stored, err := s.StoredPolicy(ctx, app, step.ns)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Access != step.access || (stored.Pending != nil) != step.pending || stored.History != step.history {
				t.Errorf("stored access %q, pending %v, history %+v; want %q, %v, %+v",
					stored.Access, stored.Pending != nil, stored.History, step.access, step.pending, step.history)
			}
			if inEffect, err := s.Policy(ctx, app, step.ns); err != nil || inEffect.History != step.history {
				t.Errorf("the data routes' policy has history %+v (%v), want %+v", inEffect.History, err, step.history)
			}
			listed := uds.History{}
			page, _, err := s.Policies(ctx, app, "", 100, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, np := range page {
				if np.Namespace == step.ns {
					listed = np.History
				}
			}
			if listed != step.history {
				t.Errorf("listed with history %+v, want %+v", listed, step.history)
			}
		})
	}
}
