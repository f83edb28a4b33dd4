package blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
)

// The copies in parts below: values of 12 MiB above a threshold of 8 MiB,
// in parts of S3's smallest size, 5 MiB, so three parts.
const (
	partsThreshold = 8 << 20
	partSize       = 5 << 20
	partsValue     = 12 << 20
	partsCount     = 3
)

// copyCase is a bucket whose copies go in parts, with an object uploaded
// through its form, and what the test's interception saw.
type copyCase struct {
	b      *blob.Bucket
	up     blob.Upload
	src    string
	body   []byte
	parts  atomic.Int32
	copies atomic.Int32
	// onPart, when set, runs before each part's copy reaches the engine;
	// a non-nil answer is the part's instead.
	onPart func(part string) *http.Response
	// client reaches the engine without interception.
	client *s3.Client
}

// newCopyCase uploads size random bytes through a form and counts the
// copies, whole and in parts, the bucket then makes.
func newCopyCase(t *testing.T, size int) *copyCase {
	c := &copyCase{src: blob.UploadKey(newName()), body: make([]byte, size)}
	rand.Read(c.body)
	var mu sync.Mutex
	b, client := blobtest.Intercepted(t, partsThreshold, partSize, func(r *http.Request) *http.Response {
		part, isPart := blobtest.IsPartCopy(r)
		switch {
		case isPart:
			c.parts.Add(1)
			mu.Lock()
			defer mu.Unlock()
			if c.onPart != nil {
				return c.onPart(part)
			}
		case r.Header.Get("X-Amz-Copy-Source") != "":
			c.copies.Add(1)
		}
		return nil
	})
	c.b, c.client = b, client
	up, err := b.PresignUpload(context.Background(), c.src, "video/mp4", int64(size), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.up = up
	if res := blobtest.Post(t, up, c.body); res.StatusCode/100 != 2 {
		t.Fatalf("the upload's POST answered %d", res.StatusCode)
	}
	return c
}

// read is the object at key, and its type.
func read(t *testing.T, b *blob.Bucket, key string) ([]byte, string) {
	t.Helper()
	rc, obj, err := b.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	body, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return body, obj.ContentType
}

// TestCopyInParts: an object above the threshold is copied in parts, side
// by side, byte for byte and with its type; one below it in one
// CopyObject; and a copy made again keeps the first.
func TestCopyInParts(t *testing.T) {
	ctx := context.Background()
	t.Run("above the threshold", func(t *testing.T) {
		c := newCopyCase(t, partsValue)
		dst := "values/" + newName()
		if err := c.b.Copy(ctx, c.src, dst); err != nil {
			t.Fatalf("Copy: %v", err)
		}
		if n, whole := c.parts.Load(), c.copies.Load(); n != partsCount || whole != 0 {
			t.Fatalf("copied in %d parts and %d whole copies, want %d parts", n, whole, partsCount)
		}
		if got, typ := read(t, c.b, dst); !bytes.Equal(got, c.body) || typ != "video/mp4" {
			t.Fatalf("the copy has %d bytes of type %s, equal: %v", len(got), typ, bytes.Equal(got, c.body))
		}
		if left := blobtest.MultipartUploads(t, c.client); len(left) != 0 {
			t.Fatalf("multipart uploads left: %v", left)
		}
		t.Run("copied again after a POST, it keeps the first copy", func(t *testing.T) {
			blobtest.Put(t, c.up, "video/mp4", bytes.Repeat([]byte{1}, partsValue))
			c.parts.Store(0)
			if err := c.b.Copy(ctx, c.src, dst); err != nil {
				t.Fatalf("Copy again: %v", err)
			}
			if got, _ := read(t, c.b, dst); !bytes.Equal(got, c.body) || c.parts.Load() != 0 {
				t.Fatalf("the copy changed (%v) or was made again in %d parts", !bytes.Equal(got, c.body), c.parts.Load())
			}
		})
	})
	t.Run("at the threshold", func(t *testing.T) {
		c := newCopyCase(t, partsThreshold)
		dst := "values/" + newName()
		if err := c.b.Copy(ctx, c.src, dst); err != nil {
			t.Fatalf("Copy: %v", err)
		}
		if n, whole := c.parts.Load(), c.copies.Load(); n != 0 || whole != 1 {
			t.Fatalf("copied in %d parts and %d whole copies, want one CopyObject", n, whole)
		}
		if got, _ := read(t, c.b, dst); !bytes.Equal(got, c.body) {
			t.Fatal("the copy is not the object")
		}
	})
}

// TestCopyInPartsFails: a copy whose part fails, or whose source a POST
// replaces mid-copy, leaves no copy and no multipart upload; the source
// replaced is ErrSourceChanged.
func TestCopyInPartsFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		onPart func(c *copyCase, t *testing.T) func(part string) *http.Response
		want   error
	}{
		{"a part refused", func(*copyCase, *testing.T) func(string) *http.Response {
			return func(part string) *http.Response {
				if part != "2" {
					return nil
				}
				body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`
				return &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{"Content-Type": {"application/xml"}},
					Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
			}
		}, nil},
		{"the source replaced", func(c *copyCase, t *testing.T) func(string) *http.Response {
			return func(part string) *http.Response {
				if part == "2" {
					blobtest.Put(t, c.up, "video/mp4", bytes.Repeat([]byte{1}, partsValue))
				}
				return nil
			}
		}, blob.ErrSourceChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCopyCase(t, partsValue)
			c.onPart = tc.onPart(c, t)
			dst := "values/" + newName()
			err := c.b.Copy(context.Background(), c.src, dst)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Copy: %v, want an error (%v)", err, tc.want)
			}
			if _, err := c.b.Head(context.Background(), dst); !errors.Is(err, blob.ErrNoObject) {
				t.Fatalf("the failed copy left an object: %v", err)
			}
			if left := blobtest.MultipartUploads(t, c.client); len(left) != 0 {
				t.Fatalf("multipart uploads left: %v", left)
			}
		})
	}
}

// TestEnginePartCopyRefuses: the local engine refuses a part's copy as S3
// does, or as not implemented where it would not check what is asked.
func TestEnginePartCopyRefuses(t *testing.T) {
	ctx := context.Background()
	c := newCopyCase(t, 6)
	dst := "values/" + newName()
	created, err := c.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(blobtest.Name), Key: &dst})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, code string
		in         s3.UploadPartCopyInput
	}{
		{"a range past the end", "InvalidArgument", s3.UploadPartCopyInput{CopySourceRange: aws.String("bytes=0-6")}},
		{"a range backwards", "InvalidArgument", s3.UploadPartCopyInput{CopySourceRange: aws.String("bytes=3-2")}},
		{"another ETag", "PreconditionFailed", s3.UploadPartCopyInput{CopySourceIfMatch: aws.String(`"other"`)}},
		{"a version", "NotImplemented", s3.UploadPartCopyInput{CopySource: aws.String(blobtest.Name + "/" + c.src + "?versionId=1")}},
		{"a condition not checked", "NotImplemented", s3.UploadPartCopyInput{CopySourceIfNoneMatch: aws.String("*")}},
		{"no such source", "NoSuchKey", s3.UploadPartCopyInput{CopySource: aws.String(blobtest.Name + "/uploads/none")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Bucket, in.Key, in.UploadId, in.PartNumber = aws.String(blobtest.Name), &dst, created.UploadId, aws.Int32(1)
			if in.CopySource == nil {
				in.CopySource = aws.String(blobtest.Name + "/" + c.src)
			}
			var api smithy.APIError
			if _, err := c.client.UploadPartCopy(ctx, &in); !errors.As(err, &api) || api.ErrorCode() != tc.code {
				t.Fatalf("UploadPartCopy: %v, want %s", err, tc.code)
			}
		})
	}
}
