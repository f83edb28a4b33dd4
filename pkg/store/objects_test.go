package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// An object that no record names any more is removed even when the
// request that stopped naming it has ended: the removal follows the
// commit, and the request may be cancelled (its caller gone, its time up)
// just as the commit comes back. An object left then would stay for good.
func TestRemoveUnnamedOutlivesItsRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bucket := blobtest.New(t)
	s, _ := newStore(t, store.WithObjects(blob.Objects{Bucket: bucket}))
	name := uds.ValueName(app, "0123456789abcdef0123456789abcdef")
	up, err := bucket.PresignUpload(ctx, name, "application/octet-stream", 5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	blobtest.Put(t, up, "application/octet-stream", []byte("bytes"))
	if _, err := bucket.Head(ctx, name); err != nil {
		t.Fatalf("the object is not there to remove: %v", err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	s.RemoveUnnamed(ended, name)
	if _, err := bucket.Head(ctx, name); !errors.Is(err, blob.ErrNoObject) {
		t.Fatalf("after its removal under an ended request the object answers %v, want %v", err, blob.ErrNoObject)
	}
}
