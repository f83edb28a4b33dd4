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
	"slices"
	"testing"

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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop, err := blob.ServeLocal(ln, "", Name, nil)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(context.Background()); err != nil {
			t.Errorf("stopping the S3 engine: %v", err)
		}
	})
	b, err := blob.FromConfig(context.Background(), Name, "http://"+ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return b
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
	var form bytes.Buffer
	w := multipart.NewWriter(&form)
	for _, name := range slices.Sorted(maps.Keys(up.Fields)) {
		if err := w.WriteField(name, up.Fields[name]); err != nil {
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
	res, err := client.Post(up.URL, w.FormDataContentType(), &form)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
