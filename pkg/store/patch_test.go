package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

// setMember is a patch that sets one member of an object value, as a
// merge patch of one member does.
func setMember(name string, value any) func(*uds.Item, *uds.Write) error {
	return func(current *uds.Item, w *uds.Write) error {
		var obj map[string]any
		if err := json.Unmarshal(current.Data, &obj); err != nil {
			return err
		}
		obj[name] = value
		data, err := json.Marshal(obj)
		w.Data, w.ClassName, w.ExpiresAt = data, current.ClassName, current.ExpiresAt
		return err
	}
}

// Concurrent patches of different members of one item, each applied to
// the item as it is when committed, lose none of one another: every
// member is there at the end, and the version counts every patch.
func TestPatchConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	k := key(t, "prefs", "shared")
	if _, err := s.Create(ctx, write(k, `{}`)); err != nil {
		t.Fatal(err)
	}
	const writers, patches = 8, 5
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range patches {
				// A patch that lost every race of its attempts (503, nothing
				// written) is sent again, as a client sends a 503 again.
				_, err := s.Patch(ctx, write(k, ""), setMember(fmt.Sprintf("w%d", i), j))
				for tries := 0; errors.Is(err, uds.ErrUnavailable) && tries < 5; tries++ {
					_, err = s.Patch(ctx, write(k, ""), setMember(fmt.Sprintf("w%d", i), j))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	it, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]int
	if err := json.Unmarshal(it.Data, &obj); err != nil {
		t.Fatal(err)
	}
	for i := range writers {
		if got, ok := obj[fmt.Sprintf("w%d", i)]; !ok || got != patches-1 {
			t.Errorf("member w%d is %d (present %v), want %d", i, got, ok, patches-1)
		}
	}
	if it.Version != 1+writers*patches {
		t.Errorf("version %d, want %d", it.Version, 1+writers*patches)
	}
}

// A patch answers as an update does where the item refuses it, and a
// binary value is not patched.
func TestPatchRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if _, err := s.Patch(ctx, write(key(t, "prefs", "none"), ""), setMember("a", 1)); !errors.Is(err, uds.ErrNotFound) {
		t.Errorf("a patch of no item: %v", err)
	}
	k := key(t, "prefs", "one")
	created, err := s.Create(ctx, write(k, `{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	stale := write(k, "")
	stale.IfMatch = uds.Precondition{Revisions: []uds.Revision{{Version: 99, Created: created.CreatedDate}}}
	if _, err := s.Patch(ctx, stale, setMember("a", 2)); !errors.Is(err, uds.ErrPrecondition) {
		t.Errorf("a patch under If-Match of another revision: %v", err)
	}
	refused := errors.New("refused")
	if _, err := s.Patch(ctx, write(k, ""), func(*uds.Item, *uds.Write) error { return refused }); !errors.Is(err, refused) {
		t.Errorf("a patch its patcher refuses: %v", err)
	}
	if it, _ := s.Get(ctx, k); it.Version != created.Version {
		t.Errorf("refused patches wrote version %d", it.Version)
	}
	b := key(t, "prefs", "bytes")
	bin := write(b, "")
	bin.Binary = &uds.Binary{ContentType: "image/png", Bytes: []byte{1, 2, 3}}
	if _, err := s.Create(ctx, bin); err != nil {
		t.Fatal(err)
	}
	var conflict *uds.PatchConflictError
	if _, err := s.Patch(ctx, write(b, ""), setMember("a", 1)); !errors.As(err, &conflict) {
		t.Errorf("a patch of a binary value: %v", err)
	}
}
