package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// activeValues are stored values a browser would run as a page of the
// API's origin if it were let to: each one's script says so.
var activeValues = []struct{ name, contentType, body string }{
	{"HTML", "text/html", `<html><body><script>document.title = "script ran"</script></body></html>`},
	{"SVG", "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"><script>document.title = "script ran"</script></svg>`},
}

// inertHeaders are the headers every answer of stored bytes carries.
var inertHeaders = map[string]string{
	"X-Content-Type-Options":  "nosniff",
	"Content-Security-Policy": "default-src 'none'; sandbox",
	"Content-Disposition":     "attachment",
}

// checkInert fails the test unless an answer of stored bytes carries
// inertHeaders and still says the type the bytes were stored with.
func checkInert(t *testing.T, header http.Header, contentType string) {
	t.Helper()
	for name, want := range inertHeaders {
		if got := header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if got := header.Get("Content-Type"); got != contentType {
		t.Errorf("Content-Type: %q, want the stored %q", got, contentType)
	}
}

// TestStoredBytesAreInert: however a binary value was stored (raw, as
// dataBase64 in a JSON body, in a batch), as a key-value or a list item,
// every read of its bytes (GET, HEAD, a range, a kept version) answers
// them with the headers that keep a browser from running them.
func TestStoredBytesAreInert(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"pages": `{"access":"shared","history":{"versions":10}}`})
	writes := []struct {
		name  string
		write func(e *env, method, path, contentType, body string)
	}{
		{"raw", func(e *env, method, path, contentType, body string) {
			e.send(method, path, []byte(body), "Content-Type", contentType).expect(e.t, statusOf(method))
		}},
		{"dataBase64", func(e *env, method, path, contentType, body string) {
			e.do(method, path, `{"dataBase64": "`+base64.StdEncoding.EncodeToString([]byte(body))+`", "contentType": "`+contentType+`"}`).expect(e.t, statusOf(method))
		}},
		{"batch", func(e *env, method, path, contentType, body string) {
			r := e.do("POST", base+"/batch", `{"operations": [{"method": "`+method+`", "path": "`+strings.TrimPrefix(path, base+"/")+
				`", "body": {"dataBase64": "`+base64.StdEncoding.EncodeToString([]byte(body))+`", "contentType": "`+contentType+`"}}]}`).expect(e.t, http.StatusOK)
			if got := num(e.t, r.body["results"].([]any)[0].(map[string]any)["status"]); got != int64(statusOf(method)) {
				e.t.Fatalf("the batch's %s answered %d: %s", method, got, r.raw)
			}
		}},
	}
	reads := []struct {
		name, query string
		headers     []string
		status      int
	}{
		{"GET", "", nil, http.StatusOK},
		{"HEAD", "", nil, http.StatusOK},
		{"range", "", []string{"Range", "bytes=0-9"}, http.StatusPartialContent},
		{"a kept version", "?version=1", nil, http.StatusOK},
		{"a range of a kept version", "?version=1", []string{"Range", "bytes=-5"}, http.StatusPartialContent},
	}
	for _, value := range activeValues {
		for _, w := range writes {
			for _, kind := range []struct{ name, path string }{
				{"key-value item", base + "/pages/" + w.name + "-" + value.name},
				{"list item", base + "/pages/list/" + w.name + "-" + value.name},
			} {
				t.Run(value.name+" written "+w.name+" as a "+kind.name, func(t *testing.T) {
					e := e.on(t)
					// Two writes, so that version 1 is kept history.
					w.write(e, "POST", kind.path, value.contentType, value.body)
					w.write(e, "PUT", kind.path, value.contentType, value.body)
					for _, read := range reads {
						method := http.MethodGet
						if read.name == "HEAD" {
							method = http.MethodHead
						}
						r := e.send(method, kind.path+read.query, nil, read.headers...).expect(t, read.status)
						t.Run(read.name, func(t *testing.T) { checkInert(t, r.header, value.contentType) })
					}
				})
			}
		}
	}
}

// statusOf is what a write of method answers: 201 for a POST that
// creates, 200 for a PUT.
func statusOf(method string) int {
	if method == http.MethodPost {
		return http.StatusCreated
	}
	return http.StatusOK
}

// TestLargeStoredBytesAreInert: a large value's ?inline answer carries the
// same headers as a small one's, and the 302 to the bucket names a
// presigned GET that asks S3 for the stored type as an attachment, which
// the bucket's answer then carries.
func TestLargeStoredBytesAreInert(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	value := activeValues[0]
	path := base + "/pages/large"
	id := e.upload(path, len(value.body), value.contentType, []byte(value.body))
	e.commit(path, id).expect(t, http.StatusCreated)

	t.Run("inline", func(t *testing.T) {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			r := e.send(method, path+"?inline", nil).expect(t, http.StatusOK)
			checkInert(t, r.header, value.contentType)
		}
		r := e.send("GET", path+"?inline", nil, "Range", "bytes=0-5").expect(t, http.StatusPartialContent)
		checkInert(t, r.header, value.contentType)
	})
	t.Run("the redirect's presigned GET", func(t *testing.T) {
		location := e.send("GET", path, nil).expect(t, http.StatusFound).header.Get("Location")
		u, err := url.Parse(location)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if got := q.Get("response-content-disposition"); got != "attachment" {
			t.Errorf("response-content-disposition=%q in %s, want attachment", got, location)
		}
		if got := q.Get("response-content-type"); got != value.contentType {
			t.Errorf("response-content-type=%q in %s, want %q", got, location, value.contentType)
		}
		res, err := testClient.Get(location)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !bytes.Equal(got, []byte(value.body)) || res.Header.Get("Content-Disposition") != "attachment" ||
			res.Header.Get("Content-Type") != value.contentType {
			t.Errorf("the bucket answered %q as %q, %q", got, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"))
		}
	})
}

// TestEveryAnswerIsNotSniffed: JSON answers, errors included, say nosniff
// too, so that no browser takes one for a page.
func TestEveryAnswerIsNotSniffed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("POST", base+"/docs/a", `{"data": "<script>1</script>"}`).expect(t, http.StatusCreated)
	for _, r := range []response{
		e.do("GET", base+"/docs/a", "").expect(t, http.StatusOK),
		e.do("GET", base+"/docs/missing", "").expect(t, http.StatusNotFound),
		e.do("GET", "/rest/api/v1/nowhere", "").expect(t, http.StatusNotFound),
	} {
		if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("X-Content-Type-Options %q on %s", got, r.raw)
		}
	}
}
