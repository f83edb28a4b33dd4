// Package blobtest is a test helper: a bucket on an in-process S3 engine
// (blob.ServeLocal, objects in memory), fresh for each test. It is the
// engine the tests of large values run against; a real bucket needs AWS.
package blobtest

import (
	"bytes"
	"context"
	"maps"
	"mime/multipart"
	"net"
	"net/http"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/udsproject/uds/pkg/blob"
)

// Name is the bucket's name: each test has an engine of its own, so one
// name serves them all.
const Name = "uds-test"

// New is an empty bucket on an engine of its own that stops with the
// test. The client is the one the servers use (blob.FromConfig), so
// presigned URLs point at the engine and can be fetched.
func New(t testing.TB) *blob.Bucket {
	t.Helper()
	b, _ := Serve(t, nil)
	return b
}

// Serve is New on an engine that answers the pages of the allowed origins
// too, and the engine's endpoint (http://host:port), for tests that call
// it themselves.
func Serve(t testing.TB, allowedOrigins []string) (*blob.Bucket, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop, err := blob.ServeLocal(ln, "", Name, allowedOrigins)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(context.Background()); err != nil {
			t.Errorf("stopping the S3 engine: %v", err)
		}
	})
	endpoint := "http://" + ln.Addr().String()
	b, err := blob.FromConfig(context.Background(), Name, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return b, endpoint
}

// client sends the uploads. It is not http.DefaultClient: every
// httptest.Server closes http.DefaultTransport's idle connections when it
// closes, and a POST of a test running beside it that had just taken one
// would fail (a POST is not sent again).
var client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// Post sends body to an upload as a client does: a multipart/form-data
// POST of every field of up.Fields, then the bytes as the field "file",
// which S3 requires last. The caller closes the answer's body.
func Post(t testing.TB, up blob.Upload, body []byte) *http.Response {
	t.Helper()
	form, contentType := Form(t, up.Fields, body)
	res, err := client.Post(up.URL, contentType, form)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Form is the body of an upload's POST, as Post sends it, of fields and
// the file's bytes, and its Content-Type.
func Form(t testing.TB, fields map[string]string, body []byte) (*bytes.Buffer, string) {
	t.Helper()
	var form bytes.Buffer
	w := multipart.NewWriter(&form)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if err := w.WriteField(name, fields[name]); err != nil {
			t.Fatal(err)
		}
	}
	file, err := w.CreateFormFile("file", "value")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &form, w.FormDataContentType()
}

// Put stores body as the object an upload names, of contentType, through
// the SDK with the engine's credentials: as whoever holds the bucket's
// credentials may, bound by no upload policy. Tests use it for an object
// that is not what its upload announced, which the engine's policy check
// keeps a form from sending.
func Put(t testing.TB, up blob.Upload, contentType string, body []byte) {
	t.Helper()
	endpoint, bucket := path.Split(up.URL)
	key := up.Fields["key"]
	ctx := context.Background()
	c, err := blob.NewClient(ctx, strings.TrimSuffix(endpoint, "/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, ContentType: &contentType, Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("putting %s: %v", key, err)
	}
}

// Intercepted is a bucket on an engine of its own, as New, whose copies
// of more than threshold bytes go in parts of partSize bytes, and whose
// S3 requests pass through intercept first: a test counts them, changes
// the bucket meanwhile, or answers one itself (a non-nil answer goes back
// without reaching the engine). client reaches the same engine directly,
// for the test's own calls.
func Intercepted(t testing.TB, threshold, partSize int64, intercept func(*http.Request) *http.Response) (b *blob.Bucket, client *s3.Client) {
	t.Helper()
	_, endpoint := Serve(t, nil)
	client, err := blob.NewClient(context.Background(), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	intercepted := s3.New(client.Options(), func(o *s3.Options) {
		o.HTTPClient = interceptor{next: o.HTTPClient, intercept: intercept}
	})
	return blob.New(intercepted, Name).WithMultipartCopy(threshold, partSize), client
}

// interceptor is the HTTP client of an Intercepted bucket.
type interceptor struct {
	next      s3.HTTPClient
	intercept func(*http.Request) *http.Response
}

func (i interceptor) Do(r *http.Request) (*http.Response, error) {
	if res := i.intercept(r); res != nil {
		return res, nil
	}
	return i.next.Do(r)
}

// IsPartCopy reports whether r is an UploadPartCopy, one part of a copy
// in parts, and which part.
func IsPartCopy(r *http.Request) (part string, ok bool) {
	q := r.URL.Query()
	return q.Get("partNumber"), r.Method == http.MethodPut && q.Has("partNumber") && r.Header.Get("X-Amz-Copy-Source") != ""
}

// MultipartUploads are the keys of the multipart uploads the engine of
// client holds: begun, and neither completed nor aborted.
func MultipartUploads(t testing.TB, client *s3.Client) []string {
	t.Helper()
	out, err := client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(Name)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, up := range out.Uploads {
		keys = append(keys, aws.ToString(up.Key))
	}
	return keys
}

// Keys lists every object the engine of client holds in the bucket, by
// key, for the tests that hold the bucket against the records naming its
// objects.
func Keys(t testing.TB, client *s3.Client) []string {
	t.Helper()
	var keys []string
	in := &s3.ListObjectsV2Input{Bucket: aws.String(Name)}
	for {
		out, err := client.ListObjectsV2(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) {
			return keys
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}
