package blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/uds"
)

// TestUploadAndRead takes a value through its whole life as the server
// and a client see it: a presigned upload, the client's form POST, the
// checks of what arrived, a presigned download, a streamed read, and the
// removal.
func TestUploadAndRead(t *testing.T) {
	for _, tc := range []struct {
		name, contentType string
		size              int
	}{
		{name: "an image", contentType: "image/png", size: 300 << 10},
		{name: "an empty value", contentType: "application/octet-stream", size: 0},
		{name: "a type with parameters", contentType: "text/plain; charset=utf-8", size: 17},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := blobtest.New(t)
			key := blob.UploadKey(newName())
			value := make([]byte, tc.size)
			_, _ = rand.Read(value)

			if _, err := b.Head(ctx, key); !errors.Is(err, blob.ErrNoObject) {
				t.Fatalf("Head before the upload: %v, want ErrNoObject", err)
			}
			const ttl = 15 * time.Minute
			before := time.Now()
			up, err := b.PresignUpload(ctx, key, tc.contentType, int64(tc.size), ttl)
			if err != nil {
				t.Fatal(err)
			}
			if up.ExpiresAt.Before(before.Add(ttl-time.Second)) || up.ExpiresAt.After(time.Now().Add(ttl)) {
				t.Errorf("expires at %v, want %v from now", up.ExpiresAt, ttl)
			}
			checkPolicy(t, up, key, tc.contentType, int64(tc.size))

			res := blobtest.Post(t, up, value)
			res.Body.Close()
			if res.StatusCode/100 != 2 {
				t.Fatalf("the upload answered %s", res.Status)
			}

			obj, err := b.Head(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if want := (blob.Object{Size: int64(tc.size), ContentType: tc.contentType}); obj != want {
				t.Errorf("Head: %+v, want %+v", obj, want)
			}

			url, err := b.PresignGet(ctx, key, uds.DownloadHeaders{}, 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			got, contentType := fetch(t, url, http.StatusOK)
			if !bytes.Equal(got, value) || contentType != tc.contentType {
				t.Errorf("the presigned download: %d bytes of %q, want the %d uploaded of %q", len(got), contentType, len(value), tc.contentType)
			}
			// A download that asks for its answer's headers carries them in
			// its signed query, and is answered with them.
			answer := uds.DownloadHeaders{ContentType: "application/x-asked", ContentDisposition: "attachment"}
			asked, err := b.PresignGet(ctx, key, answer, 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(asked, "response-content-type=application%2Fx-asked") || !strings.Contains(asked, "response-content-disposition=attachment") {
				t.Errorf("the presigned download %s does not ask for %+v", asked, answer)
			}
			res, err = http.Get(asked)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if got := (uds.DownloadHeaders{ContentType: res.Header.Get("Content-Type"), ContentDisposition: res.Header.Get("Content-Disposition")}); got != answer {
				t.Errorf("the download asking for %+v answered %+v", answer, got)
			}
			// The engine answers as S3 does: nothing of the form that
			// stored the object, whose signature gofakes3 keeps with it.
			for name := range res.Header {
				if name == "Policy" || strings.HasPrefix(name, "X-Amz-") && name != "X-Amz-Request-Id" && name != "X-Amz-Id-2" {
					t.Errorf("the download answered %s: %s", name, res.Header.Get(name))
				}
			}

			r, obj, err := b.Open(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			got, err = io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(got, value) || obj.Size != int64(tc.size) || obj.ContentType != tc.contentType {
				t.Errorf("Open: %d bytes (%v), %+v; want the %d uploaded of %q", len(got), err, obj, len(value), tc.contentType)
			}

			for i := range 2 {
				// The second removal finds nothing, and that is no error.
				if err := b.Delete(ctx, key); err != nil {
					t.Fatalf("Delete %d: %v", i+1, err)
				}
			}
			if _, err := b.Head(ctx, key); !errors.Is(err, blob.ErrNoObject) {
				t.Errorf("Head after Delete: %v, want ErrNoObject", err)
			}
			if _, _, err := b.Open(ctx, key); !errors.Is(err, blob.ErrNoObject) {
				t.Errorf("Open after Delete: %v, want ErrNoObject", err)
			}
			fetch(t, url, http.StatusNotFound)
		})
	}
}

// checkPolicy reads the policy S3 will enforce: the key, the Content-Type
// and the exact size, until no later than ExpiresAt says.
func checkPolicy(t *testing.T, up blob.Upload, key, contentType string, size int64) {
	t.Helper()
	if up.Fields["key"] != key || up.Fields["Content-Type"] != contentType {
		t.Errorf("fields key %q, Content-Type %q; want %q, %q", up.Fields["key"], up.Fields["Content-Type"], key, contentType)
	}
	doc, err := base64.StdEncoding.DecodeString(up.Fields["policy"])
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	var policy struct {
		Expiration time.Time         `json:"expiration"`
		Conditions []json.RawMessage `json:"conditions"`
	}
	if err := json.Unmarshal(doc, &policy); err != nil {
		t.Fatalf("policy %s: %v", doc, err)
	}
	if policy.Expiration.Before(up.ExpiresAt) {
		t.Errorf("the policy expires at %v, before ExpiresAt %v", policy.Expiration, up.ExpiresAt)
	}
	var conditions []string
	for _, c := range policy.Conditions {
		conditions = append(conditions, string(c))
	}
	for _, want := range []string{
		`{"key":"` + key + `"}`,
		`{"Content-Type":"` + contentType + `"}`,
		`["content-length-range",` + itoa(size) + `,` + itoa(size) + `]`,
	} {
		if !slices.Contains(conditions, want) {
			t.Errorf("the policy has no condition %s: %s", want, doc)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// fetch GETs url as a browser would, with no credentials, and wants the
// status; it answers the body and Content-Type.
func fetch(t *testing.T, url string, status int) ([]byte, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != status {
		t.Fatalf("GET %s: %s, want %d: %s", url, res.Status, status, body)
	}
	return body, res.Header.Get("Content-Type")
}

func TestPresignUploadRefusesNoTime(t *testing.T) {
	b := blobtest.New(t)
	if _, err := b.PresignUpload(context.Background(), blob.UploadKey(newName()), "image/png", 1, 0); err == nil {
		t.Error("a time to live of 0 was taken, which the SDK reads as 15 minutes")
	}
}

// TestFromConfig: without a bucket there is none; with an endpoint the
// bucket is addressed by path, as S3-compatible engines want (presigning
// needs no engine, and on AWS it would need credentials).
func TestFromConfig(t *testing.T) {
	for _, tc := range []struct {
		name, bucket, endpoint, wantURL string
	}{
		{name: "no bucket: no large values"},
		{name: "a bucket on AWS", bucket: "uds-values"},
		{name: "a bucket on an engine", bucket: "uds-local", endpoint: "http://127.0.0.1:8081",
			wantURL: "http://127.0.0.1:8081/uds-local/uploads/x?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b, err := blob.FromConfig(ctx, tc.bucket, tc.endpoint)
			if err != nil {
				t.Fatal(err)
			}
			if (b == nil) != (tc.bucket == "") || b != nil && b.Name() != tc.bucket {
				t.Fatalf("bucket %+v, want one named %q", b, tc.bucket)
			}
			if tc.wantURL == "" {
				return
			}
			url, err := b.PresignGet(ctx, blob.UploadKey("x"), uds.DownloadHeaders{}, time.Minute)
			if err != nil || !strings.HasPrefix(url, tc.wantURL) {
				t.Errorf("presigned %q (%v), want %s...", url, err, tc.wantURL)
			}
		})
	}
}

// newName is a fresh object name, as the store gives an upload.
func newName() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return uds.ObjectName("d53065bd-f932-4841-83fb-849717d8df0f", hex.EncodeToString(b))
}
