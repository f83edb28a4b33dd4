package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

// A read of many items may name one key more than once (a batch of
// reads does, if its caller asks): each slot gets the item.
func TestGetManyRepeatedKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	k, missing := key(t, "ns", "a"), key(t, "ns", "b")
	if _, err := s.Create(ctx, write(k, `{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	items, errs := s.GetMany(ctx, []uds.Key{k, missing, k, missing})
	for i, want := range []uds.Key{k, missing, k, missing} {
		switch {
		case want == k && (errs[i] != nil || string(items[i].Data) != `{"v":1}`):
			t.Errorf("slot %d: %+v %v, want the item", i, items[i], errs[i])
		case want == missing && !errors.Is(errs[i], uds.ErrNotFound):
			t.Errorf("slot %d: %v, want not found", i, errs[i])
		}
	}
}
