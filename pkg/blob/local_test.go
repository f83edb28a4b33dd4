package blob_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
)

// TestServeLocal: make run's engine serves the bucket it was asked for,
// creating it at the first start, and keeps the objects across restarts.
func TestServeLocal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	key := blob.UploadKey(newName())
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, b *blob.Bucket)
	}{
		{name: "the first start creates the bucket and takes an upload", run: func(t *testing.T, b *blob.Bucket) {
			up, err := b.PresignUpload(ctx, key, "audio/ogg", 5, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			res := blobtest.Post(t, up, []byte("hello"))
			res.Body.Close()
			if res.StatusCode/100 != 2 {
				t.Fatalf("the upload answered %s", res.Status)
			}
		}},
		{name: "a restart finds the object", run: func(t *testing.T, b *blob.Bucket) {
			r, obj, err := b.Open(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got, err := io.ReadAll(r); err != nil || string(got) != "hello" || obj != (blob.Object{Size: 5, ContentType: "audio/ogg"}) {
				t.Errorf("%q (%v), %+v; want hello, audio/ogg", got, err, obj)
			}
			if err := b.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a restart after the removal finds none", run: func(t *testing.T, b *blob.Bucket) {
			if _, err := b.Head(ctx, key); !errors.Is(err, blob.ErrNoObject) {
				t.Errorf("Head: %v, want ErrNoObject", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			stop, err := blob.ServeLocal(ln, dir, "uds-local", nil)
			if err != nil {
				ln.Close()
				t.Fatal(err)
			}
			defer func() {
				if err := stop(ctx); err != nil {
					t.Errorf("stop: %v", err)
				}
			}()
			b, err := blob.FromConfig(ctx, "uds-local", "http://"+ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			tc.run(t, b)
		})
	}
}

// TestServeLocalRefusesAFile: a data directory that is a file is an error
// at start, not at the first upload.
func TestServeLocalRefusesAFile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	file := t.TempDir() + "/s3"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := blob.ServeLocal(ln, file, "uds-local", nil); err == nil {
		t.Error("served over a file")
	}
}
