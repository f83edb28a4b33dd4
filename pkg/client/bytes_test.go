package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// progressLog records what a Progress callback is told.
type progressLog struct{ calls [][2]int64 }

func (p *progressLog) option() client.CallOption {
	return client.Progress(func(done, total int64) { p.calls = append(p.calls, [2]int64{done, total}) })
}

// last is the last report, or {-2, -2} when there was none.
func (p *progressLog) last() [2]int64 {
	if len(p.calls) == 0 {
		return [2]int64{-2, -2}
	}
	return p.calls[len(p.calls)-1]
}

// value is n bytes that are not all alike, so that a value cut or shifted
// does not compare equal.
func value(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func TestSmallValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, apitest.Server(t, 10*time.Second), client.WithSubject("zoë"))
	for _, tc := range []struct {
		name        string
		key         client.Key
		size        int
		contentType string
		className   string
	}{
		{"a key-value item", client.Key{App: app, Namespace: "avatars", ID: "u1"}, 1234, "image/png", "Avatar"},
		{"a list item", client.Key{App: app, Namespace: "files", ID: "u1", SortKey: "2024/01 ümlaut?#%"}, 5000, "application/pdf", ""},
		{"an empty value", client.Key{App: app, Namespace: "avatars", ID: "empty"}, 0, "text/plain; charset=utf-8", ""},
		{"the largest inline value", client.Key{App: app, Namespace: "avatars", ID: "largest"}, client.MaxInlineBytes, "application/octet-stream", ""},
		{"a class name of more than ASCII", client.Key{App: app, Namespace: "avatars", ID: "named"}, 10, "image/gif", "Bild für zoë"},
		{"no content type", client.Key{App: app, Namespace: "avatars", ID: "untyped"}, 10, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := value(tc.size)
			wantType := tc.contentType
			if wantType == "" {
				wantType = "application/octet-stream"
			}
			opts := []client.CallOption{client.TTL(time.Hour)}
			if tc.className != "" {
				opts = append(opts, client.ClassName(tc.className))
			}
			var put progressLog
			it, err := c.PutBytes(ctx, tc.key, bytes.NewReader(want), int64(tc.size), tc.contentType, append(opts, put.option())...)
			if err != nil {
				t.Fatal(err)
			}
			if it.Version != 1 || it.ETag == "" || it.ContentType != wantType || it.Size != int64(tc.size) || it.Bytes != nil || it.Data != nil ||
				it.ClassName != tc.className || it.CreatedBySubject != "zoë" || it.ExpiresAt.Before(time.Now().Add(59*time.Minute)) || it.SortKey != tc.key.SortKey {
				t.Fatalf("created %+v", it)
			}
			if put.last() != [2]int64{int64(tc.size), int64(tc.size)} {
				t.Errorf("progress of the write ended at %v, want all %d bytes", put.last(), tc.size)
			}
			got, err := c.Get(ctx, tc.key)
			if err != nil || !bytes.Equal(got.Bytes, want) || got.ETag != it.ETag || got.ContentType != wantType || got.Size != int64(tc.size) ||
				!got.IsBinary() || got.ClassName != tc.className || got.Version != 1 || got.CreatedBySubject != "zoë" || got.UpdatedBySubject != "zoë" ||
				!got.CreatedDate.Equal(it.CreatedDate) || !got.ExpiresAt.Equal(it.ExpiresAt) {
				t.Errorf("Get: %+v (%d bytes), %v; want the value and the fields of %+v", got, len(got.Bytes), err, it)
			}
			if err := got.Decode(new(any)); err == nil {
				t.Error("Decode of bytes succeeded")
			}
			var buf bytes.Buffer
			var read progressLog
			meta, err := c.GetBytes(ctx, tc.key, &buf, read.option())
			if err != nil || !bytes.Equal(buf.Bytes(), want) || meta.Bytes != nil || meta.ETag != it.ETag || meta.ContentType != wantType ||
				meta.Size != int64(tc.size) || meta.Large || meta.ClassName != tc.className || meta.Version != 1 || !meta.UpdatedDate.Equal(it.UpdatedDate) {
				t.Errorf("GetBytes: %+v and %d bytes, %v; want the value and the fields of %+v", meta, buf.Len(), err, it)
			}
			if tc.size > 0 && read.last() != [2]int64{int64(tc.size), int64(tc.size)} {
				t.Errorf("progress of the read ended at %v, want all %d bytes", read.last(), tc.size)
			}
			if _, err := c.GetBytes(ctx, tc.key, io.Discard, client.IfNoneMatch(it.ETag)); !errors.Is(err, client.ErrNotModified) {
				t.Errorf("GetBytes at the current ETag: %v, want ErrNotModified", err)
			}
			replaced, err := c.PutBytes(ctx, tc.key, strings.NewReader("new"), 3, "text/plain", client.IfMatch(it.ETag))
			if err != nil || replaced.Version != 2 || replaced.ContentType != "text/plain" || replaced.Size != 3 {
				t.Fatalf("replaced at its ETag: %+v, %v", replaced, err)
			}
			if _, err := c.PutBytes(ctx, tc.key, strings.NewReader("x"), 1, "text/plain", client.IfMatch(it.ETag)); !errors.Is(err, client.ErrPreconditionFailed) {
				t.Errorf("replaced at a stale ETag: %v, want ErrPreconditionFailed", err)
			}
			again, err := c.PutBytes(ctx, tc.key, strings.NewReader("again"), 5, "text/plain")
			if err != nil || again.Version != 3 {
				t.Errorf("replaced without IfMatch: %+v, %v", again, err)
			}
		})
	}
}

// TestBytesInJSONForms checks that list pages, batch reads and exports show
// a value of bytes as its content type, size and bytes.
func TestBytesInJSONForms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := apitest.Server(t, 10*time.Second)
	c := newClient(t, url, client.WithSubject("amy"))
	want := value(300)
	list := client.Key{App: app, Namespace: "files", ID: "u1"}
	k := list
	k.SortKey = "a"
	if _, err := c.PutBytes(ctx, k, bytes.NewReader(want), int64(len(want)), "image/jpeg"); err != nil {
		t.Fatal(err)
	}
	empty := list
	empty.SortKey = "b"
	if _, err := c.PutBytes(ctx, empty, bytes.NewReader(nil), 0, "text/plain"); err != nil {
		t.Fatal(err)
	}
	page, err := c.ListPage(ctx, list, client.ListQuery{}, "")
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("list page: %+v, %v", page, err)
	}
	if it := page.Items[0]; !bytes.Equal(it.Bytes, want) || it.ContentType != "image/jpeg" || it.Size != 300 || it.Data != nil {
		t.Errorf("listed %+v", it)
	}
	if it := page.Items[1]; it.Bytes == nil || len(it.Bytes) != 0 || it.ContentType != "text/plain" {
		t.Errorf("the empty value listed as %+v", it)
	}
	// The item encoded again is as the API wrote it: the empty value's
	// bytes are there, and no data.
	if b, err := json.Marshal(page.Items[1]); err != nil || !bytes.Contains(b, []byte(`"contentType":"text/plain","dataBase64":""`)) || bytes.Contains(b, []byte(`"data"`)) {
		t.Errorf("the empty value encoded as %s, %v", b, err)
	}
	results, err := c.Batch(ctx, app, false, []client.BatchOp{{Method: "GET", Key: k}})
	if err != nil || len(results) != 1 {
		t.Fatalf("batch: %+v, %v", results, err)
	}
	if it, err := results[0].Item(); err != nil || !bytes.Equal(it.Bytes, want) || it.ContentType != "image/jpeg" || it.ETag == "" {
		t.Errorf("batch read %+v, %v", it, err)
	}
	admin := newClient(t, url)
	var records []client.Record
	for rec, err := range admin.Export(ctx, app) {
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, rec)
	}
	if len(records) != 2 || records[0].ContentType != "image/jpeg" || records[0].Size == nil || *records[0].Size != 300 || records[0].DataBase64 == nil || records[0].Data != nil {
		t.Fatalf("exported %+v", records)
	}
	// The export imports into another app as it came.
	if res, err := admin.Import(ctx, otherApp, records); err != nil || res.Imported != 2 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	moved := k
	moved.App = otherApp
	if got, err := c.Get(ctx, moved); err != nil || !bytes.Equal(got.Bytes, want) || got.ContentType != "image/jpeg" {
		t.Errorf("imported %+v, %v", got, err)
	}
}

func TestPutBytesRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, apitest.Server(t, 10*time.Second))
	k := client.Key{App: app, Namespace: "n", ID: "refused"}
	for _, tc := range []struct {
		name        string
		r           io.Reader
		size        int64
		contentType string
		opts        []client.CallOption
		want        string
	}{
		{"a JSON type", strings.NewReader("{}"), 2, "application/json", nil, "is JSON: store JSON with Create or Update"},
		{"a +json type", strings.NewReader("{}"), 2, "application/ld+json; charset=utf-8", nil, "is JSON"},
		{"a negative size", strings.NewReader(""), -1, "text/plain", nil, "the size must be from 0 to"},
		{"past 5 GB", strings.NewReader(""), client.MaxBytes + 1, "text/plain", nil, "the size must be from 0 to"},
		{"a reader short of the size", strings.NewReader("abc"), 10, "text/plain", nil, "unexpected EOF"},
		{"IfMatch on an upload", strings.NewReader(""), client.MaxInlineBytes + 1, "text/plain", []client.CallOption{client.IfMatch(`"1-x"`)}, "the upload of a larger one takes no precondition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.PutBytes(ctx, k, tc.r, tc.size, tc.contentType, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error saying %q", err, tc.want)
			}
		})
	}
	if _, err := c.Get(ctx, k); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("after the refusals: %v, want ErrNotFound", err)
	}
	if _, err := c.PutBytes(ctx, k, strings.NewReader("x"), 1, "text/plain", client.IfMatch("*")); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("IfMatch where there is no item: %v, want ErrNotFound", err)
	}
	// Only what the size says is read: the rest of the reader stays.
	r := strings.NewReader("abcdef")
	if _, err := c.PutBytes(ctx, k, r, 3, "text/plain"); err != nil || r.Len() != 3 {
		t.Errorf("PutBytes of 3 bytes left %d of 6 unread, %v", r.Len(), err)
	}
}

// TestGetBytesOfJSON checks that GetBytes writes a JSON value as its text.
func TestGetBytesOfJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, apitest.Server(t, 10*time.Second))
	k := client.Key{App: app, Namespace: "n", ID: "json"}
	created, err := c.Create(ctx, k, json.RawMessage(`{"a":"<b>"}`), client.ClassName("Doc"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	it, err := c.GetBytes(ctx, k, &buf)
	if err != nil || buf.String() != `{"a":"<b>"}` || it.ETag != created.ETag || it.ClassName != "Doc" || it.IsBinary() {
		t.Errorf("GetBytes of JSON: %+v and %q, %v", it, buf.String(), err)
	}
}

// recorder is a transport that keeps the requests it sends to other
// hosts than the API's: the transfers to and from S3.
type recorder struct {
	api string // the API's host
	mu  sync.Mutex
	s3  []*http.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != r.api {
		r.mu.Lock()
		r.s3 = append(r.s3, req)
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// recordedClient serves the API and returns a client of it as subject,
// with a bearer token (which the API under test ignores), whose transfers
// to and from S3 transport records, and the API's URL.
func recordedClient(t *testing.T, subject string) (*client.Client, *recorder, string) {
	t.Helper()
	endpoint := apitest.Server(t, 10*time.Second)
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	transport := &recorder{api: u.Host}
	c := newClient(t, endpoint, client.WithSubject(subject), client.WithToken("a-token"),
		client.WithHTTPClient(&http.Client{Transport: transport, Timeout: time.Minute}))
	return c, transport, endpoint
}

// TestLargeValues stores values past MaxInlineBytes through uploads to
// the test's S3 engine and reads them back through the API's redirect.
func TestLargeValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, transport, _ := recordedClient(t, "ann")
	k := client.Key{App: app, Namespace: "videos", ID: "u1"}
	first := value(client.MaxInlineBytes + 1)
	var put progressLog
	it, err := c.PutBytes(ctx, k, bytes.NewReader(first), int64(len(first)), "video/mp4", client.ClassName("Clip"), client.TTL(time.Hour), put.option())
	if err != nil {
		t.Fatal(err)
	}
	if !it.Large || it.Size != int64(len(first)) || it.ContentType != "video/mp4" || it.ClassName != "Clip" || it.Version != 1 || it.ETag == "" ||
		it.CreatedBySubject != "ann" || it.ExpiresAt.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("uploaded %+v", it)
	}
	if put.last() != [2]int64{int64(len(first)), int64(len(first))} {
		t.Errorf("progress of the upload ended at %v", put.last())
	}
	if got, err := c.Get(ctx, k); err != nil || !got.Large || !got.IsBinary() || got.Bytes != nil || got.ETag != it.ETag || got.ClassName != "Clip" || got.Version != 1 ||
		got.ContentType != "video/mp4" || got.Size != int64(len(first)) {
		t.Errorf("Get of a large value: %+v, %v", got, err)
	}
	var buf bytes.Buffer
	var read progressLog
	meta, err := c.GetBytes(ctx, k, &buf, read.option())
	if err != nil || !bytes.Equal(buf.Bytes(), first) || !meta.Large || meta.Size != int64(len(first)) || meta.ContentType != "video/mp4" ||
		meta.ETag != it.ETag || meta.ClassName != "Clip" || meta.Version != 1 {
		t.Errorf("GetBytes: %+v and %d bytes, %v", meta, buf.Len(), err)
	}
	if read.last() != [2]int64{int64(len(first)), int64(len(first))} {
		t.Errorf("progress of the download ended at %v", read.last())
	}
	transport.mu.Lock()
	if len(transport.s3) != 2 {
		t.Errorf("%d requests to S3, want the upload and the download", len(transport.s3))
	}
	for _, req := range transport.s3 {
		for _, h := range []string{"Authorization", "X-Uds-Subject", "X-Amz-Date", "X-Amz-Security-Token"} {
			if req.Header.Get(h) != "" {
				t.Errorf("%s %s carried the API's %s", req.Method, req.URL.Path, h)
			}
		}
	}
	transport.mu.Unlock()

	// A larger value replaces it, streamed from a reader that cannot be
	// held whole or moved back; then a small value replaces that.
	const size = 3<<20 + 5
	second := value(size)
	replaced, err := c.PutBytes(ctx, k, io.MultiReader(bytes.NewReader(second)), size, "video/webm")
	if err != nil || !replaced.Large || replaced.Version != 2 || replaced.Size != size || replaced.ContentType != "video/webm" {
		t.Fatalf("replaced by a larger value: %+v, %v", replaced, err)
	}
	buf.Reset()
	if meta, err := c.GetBytes(ctx, k, &buf); err != nil || !bytes.Equal(buf.Bytes(), second) || meta.Version != 2 {
		t.Errorf("GetBytes of the replacement: %+v and %d bytes, %v", meta, buf.Len(), err)
	}
	small, err := c.PutBytes(ctx, k, strings.NewReader("small"), 5, "text/plain")
	if err != nil || small.Large || small.Version != 3 {
		t.Fatalf("replaced by a small value: %+v, %v", small, err)
	}
	if got, err := c.Get(ctx, k); err != nil || string(got.Bytes) != "small" || got.Large {
		t.Errorf("Get after a small value replaced the large one: %+v, %v", got, err)
	}

	// A list item, listed with its fields.
	listed := client.Key{App: app, Namespace: "videos", ID: "u1-clips", SortKey: "2024/01 a"}
	if _, err := c.PutBytes(ctx, listed, bytes.NewReader(first), int64(len(first)), "video/mp4"); err != nil {
		t.Fatal(err)
	}
	page, err := c.ListPage(ctx, client.Key{App: app, Namespace: "videos", ID: "u1-clips"}, client.ListQuery{}, "")
	if err != nil || len(page.Items) != 1 || !page.Items[0].Large || page.Items[0].Size != int64(len(first)) || page.Items[0].ContentType != "video/mp4" || page.Items[0].Bytes != nil {
		t.Errorf("listed %+v, %v", page.Items, err)
	}
}

// TestLargeValueRefusals checks that an upload the API refuses sends
// nothing to S3.
func TestLargeValueRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, transport, endpoint := recordedClient(t, "ben")
	admin := newClient(t, endpoint)
	big := value(client.MaxInlineBytes + 10)
	_, err := c.PutBytes(ctx, client.Key{App: app, Namespace: "probe", ID: "x"}, bytes.NewReader(big), int64(len(big)), "image/png")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SetAppLimits(ctx, app, client.Limits{LimitBytes: 2 * client.MaxInlineBytes}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SetPolicy(ctx, app, "typed", client.Policy{Access: "shared", Schema: json.RawMessage(`{"type":"object"}`)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		key  client.Key
		want error
	}{
		{"over the quota", client.Key{App: app, Namespace: "n", ID: "over"}, client.ErrQuotaExceeded},
		{"a namespace that takes JSON only", client.Key{App: app, Namespace: "typed", ID: "x"}, client.ErrSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			transport.mu.Lock()
			transport.s3 = nil
			transport.mu.Unlock()
			_, err := c.PutBytes(ctx, tc.key, bytes.NewReader(big), int64(len(big)), "image/png")
			transport.mu.Lock()
			defer transport.mu.Unlock()
			if !errors.Is(err, tc.want) || len(transport.s3) != 0 {
				t.Errorf("%v after %d requests to S3, want %v before any", err, len(transport.s3), tc.want)
			}
		})
	}
}
