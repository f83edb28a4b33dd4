package httpapi_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/uds"
)

// TestUploadCommitInParts commits values that the commit copies in parts,
// as a deployment copies values of gigabytes, here above 1 MiB in parts
// of 5 MiB: each reads back whole, redirected and ?inline; a commit sent
// again after a lost answer copies nothing; and a POST to the form that
// lands mid-copy fails the commit (503, nothing committed or left in
// parts) rather than mixing two objects' bytes, and the commit sent again
// commits the new object whole.
func TestUploadCommitInParts(t *testing.T) {
	t.Parallel()
	var parts atomic.Int32
	var mu sync.Mutex
	// midCopy, when set, runs before the next part's copy reaches the
	// engine, once.
	var midCopy func()
	bucket, client := blobtest.Intercepted(t, 1<<20, 5<<20, func(r *http.Request) *http.Response {
		if _, ok := blobtest.IsPartCopy(r); ok {
			parts.Add(1)
			mu.Lock()
			run := midCopy
			midCopy = nil
			mu.Unlock()
			if run != nil {
				run()
			}
		}
		return nil
	})
	e := newEnvOn(t, bucket)
	// upload reserves and posts a value of size random bytes, and returns
	// them with the form and the upload's ID.
	upload := func(t *testing.T, path string, size int) ([]byte, blob.Upload, string) {
		body := make([]byte, size)
		rand.Read(body)
		r := e.on(t).do("POST", path+"?upload", fmt.Sprintf(`{"size": %d, "contentType": "video/mp4"}`, size), "X-Uds-Subject", "alice").expect(t, http.StatusCreated)
		post := presignedPost(r)
		repost(t, post, body)
		return body, post, r.body["uploadId"].(string)
	}
	// readsBack checks that the item answers body with etag, redirected
	// and, if small enough, ?inline, and that no copy is left in parts.
	readsBack := func(t *testing.T, path string, body []byte, etag string) {
		t.Helper()
		if got, tag := e.followed(t, path); !bytes.Equal(got, body) || tag != etag {
			t.Fatalf("GET answered %d bytes (equal: %v) with ETag %s, want %d with %s", len(got), bytes.Equal(got, body), tag, len(body), etag)
		}
		if len(body) <= uds.MaxInlineRead {
			if in := e.on(t).send("GET", path+"?inline", nil).expect(t, http.StatusOK); !bytes.Equal(in.raw, body) {
				t.Fatalf("GET ?inline answered %d bytes, not the value's %d", len(in.raw), len(body))
			}
		}
		if left := blobtest.MultipartUploads(t, client); len(left) != 0 {
			t.Fatalf("multipart uploads left: %v", left)
		}
	}
	for _, tc := range []struct {
		name  string
		size  int
		parts int32
	}{
		{"three parts", 12 << 20, 3},
		{"one part, read inline", uds.MaxInlineRead, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := base + "/videos/" + strings.ReplaceAll(tc.name, " ", "-")
			body, _, id := upload(t, path, tc.size)
			parts.Store(0)
			etag := e.on(t).commit(path, id).expect(t, http.StatusCreated).header.Get("ETag")
			if n := parts.Load(); n != tc.parts {
				t.Fatalf("the commit copied %d parts, want %d", n, tc.parts)
			}
			readsBack(t, path, body, etag)
			t.Run("committed again after a lost answer", func(t *testing.T) {
				again := e.on(t).commit(path, id).expect(t, http.StatusOK)
				if again.header.Get("ETag") != etag || parts.Load() != tc.parts {
					t.Fatalf("the commit sent again answered ETag %s and copied %d parts more", again.header.Get("ETag"), parts.Load()-tc.parts)
				}
				readsBack(t, path, body, etag)
			})
		})
	}
	t.Run("a POST landing mid-copy", func(t *testing.T) {
		path := base + "/videos/raced"
		size := 12 << 20
		_, post, id := upload(t, path, size)
		replaced := bytes.Repeat([]byte("replaced"), size/8)
		mu.Lock()
		midCopy = func() { repost(t, post, replaced) }
		mu.Unlock()
		r := e.on(t).commit(path, id).expect(t, http.StatusServiceUnavailable)
		if details, _ := r.body["details"].(string); !strings.Contains(details, "commit again") || r.header.Get("Retry-After") == "" {
			t.Fatalf("the commit answered %q with Retry-After %q", details, r.header.Get("Retry-After"))
		}
		e.on(t).send("GET", path, nil).expect(t, http.StatusNotFound)
		if !e.absent(uds.ValueName(app, id)) {
			t.Fatal("the failed copy left a value")
		}
		if left := blobtest.MultipartUploads(t, client); len(left) != 0 {
			t.Fatalf("multipart uploads left: %v", left)
		}
		etag := e.on(t).commit(path, id).expect(t, http.StatusCreated).header.Get("ETag")
		readsBack(t, path, replaced, etag)
	})
}
