package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pattern is n bytes that are not all alike.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13 + i/509)
	}
	return b
}

// formServer reads every upload as S3 does, a multipart form, and keeps
// what it read: the Content-Length announced, the bytes that came, and
// the form's fields and file in their order.
type formServer struct {
	t        *testing.T
	answer   func(attempt int32) int // the status of each attempt
	attempts atomic.Int32
	length   int64
	received int64
	names    []string
	fields   map[string]string
	file     []byte
}

func (f *formServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	attempt := f.attempts.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("reading the form: %v", err)
		return
	}
	f.length, f.received = r.ContentLength, int64(len(body))
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		f.t.Errorf("the form's Content-Type %q: %v", r.Header.Get("Content-Type"), err)
		return
	}
	f.names, f.fields, f.file = nil, map[string]string{}, nil
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			f.t.Errorf("the form's parts: %v", err)
			return
		}
		b, _ := io.ReadAll(part)
		f.names = append(f.names, part.FormName())
		if part.FormName() == "file" {
			f.file = b
		} else {
			f.fields[part.FormName()] = string(b)
		}
	}
	if status := f.answer(attempt); status != http.StatusNoContent {
		w.WriteHeader(status)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>`)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func testClient(t *testing.T, idle time.Duration) *Client {
	t.Helper()
	c, err := New("http://127.0.0.1:1", WithRetries(3, time.Millisecond), WithHTTPClient(&http.Client{Timeout: idle}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFormLength sends forms with files of several sizes and checks that
// the Content-Length announced is what was sent, and that the form holds
// every field, then the file, whole.
func TestFormLength(t *testing.T) {
	t.Parallel()
	fields := map[string]string{
		"key": "uploads/abc", "Content-Type": "image/png", "policy": strings.Repeat("eyJ", 300),
		"x-amz-signature": "0123abcd", "quoted \"name\"": "line\r\nbreak",
	}
	for _, size := range []int{0, 1, 4096, 1 << 20, 3<<20 + 17} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			t.Parallel()
			f := &formServer{t: t, answer: func(int32) int { return http.StatusNoContent }}
			srv := httptest.NewServer(f)
			defer srv.Close()
			form, err := newForm(fields)
			if err != nil {
				t.Fatal(err)
			}
			want := pattern(size)
			c := testClient(t, time.Minute)
			if err := c.postForm(context.Background(), srv.URL, form, bytes.NewReader(want), int64(size), callOptions{}); err != nil {
				t.Fatal(err)
			}
			if f.length != form.length(int64(size)) || f.received != f.length {
				t.Errorf("Content-Length %d for %d bytes sent; the form says %d", f.length, f.received, form.length(int64(size)))
			}
			if len(f.names) != len(fields)+1 || f.names[len(f.names)-1] != "file" || !bytes.Equal(f.file, want) {
				t.Errorf("parts %q with %d bytes of file, want the %d fields then the %d bytes", f.names, len(f.file), len(fields), size)
			}
			for name, v := range fields {
				if f.fields[name] != v {
					t.Errorf("field %q came as %q, want %q", name, f.fields[name], v)
				}
			}
		})
	}
}

// gatedReader yields the first half of its bytes, then waits until open
// is closed before it yields the rest: a sender that read the whole file
// before sending would wait for ever.
type gatedReader struct {
	data []byte
	read int
	open chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.read == len(g.data) {
		return 0, io.EOF
	}
	if g.read >= len(g.data)/2 {
		<-g.open
	}
	end := len(g.data)
	if g.read < len(g.data)/2 {
		end = len(g.data) / 2
	}
	n := copy(p, g.data[g.read:end])
	g.read += n
	return n, nil
}

// TestFormStreams checks that the file is sent as it is read: the server
// receives a good part of its first half before the reader gives the
// second.
func TestFormStreams(t *testing.T) {
	t.Parallel()
	const size = 4 << 20
	file := &gatedReader{data: pattern(size), open: make(chan struct{})}
	var early atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err != nil {
				t.Errorf("no file part: %v", err)
				return
			}
			if part.FormName() != "file" {
				continue
			}
			// The sender may hold the last few KiB it read in a buffer
			// until it has more: a quarter is surely sent.
			if _, err := io.ReadFull(part, make([]byte, size/4)); err != nil {
				t.Errorf("the first quarter: %v", err)
				return
			}
			early.Store(true)
			close(file.open)
			rest, err := io.ReadAll(part)
			if err != nil || len(rest) != size-size/4 {
				t.Errorf("the second half: %d bytes, %v", len(rest), err)
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}))
	defer srv.Close()
	form, err := newForm(map[string]string{"key": "k"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := testClient(t, time.Minute).postForm(ctx, srv.URL, form, file, size, callOptions{}); err != nil || !early.Load() {
		t.Errorf("%v; the server had a quarter before the second half was read: %v", err, early.Load())
	}
}

// onlyReader hides every method of a reader but Read.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestUploadRetries checks when sendUpload sends the value again: after S3
// was unavailable, when the reader can go back to where it began, and
// never after a refusal.
func TestUploadRetries(t *testing.T) {
	t.Parallel()
	const size = 100_000
	want := pattern(size)
	unavailableOnce := func(attempt int32) int {
		if attempt == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	}
	for _, tc := range []struct {
		name     string
		reader   func() io.Reader
		answer   func(int32) int
		valid    time.Duration // the upload's time left
		attempts int32
		ok       bool
	}{
		{"a seekable reader after a 503", func() io.Reader { return bytes.NewReader(want) }, unavailableOnce, time.Minute, 2, true},
		{"a seekable reader that began further on", func() io.Reader {
			r := bytes.NewReader(append([]byte("skipped"), want...))
			_, _ = r.Seek(7, io.SeekStart)
			return r
		}, unavailableOnce, time.Minute, 2, true},
		{"a reader that cannot go back", func() io.Reader { return onlyReader{bytes.NewReader(want)} }, unavailableOnce, time.Minute, 1, false},
		{"an upload about to lapse", func() io.Reader { return bytes.NewReader(want) }, unavailableOnce, 0, 1, false},
		{"a refusal", func() io.Reader { return bytes.NewReader(want) }, func(int32) int { return http.StatusForbidden }, time.Minute, 1, false},
		{"S3 unavailable for good", func() io.Reader { return bytes.NewReader(want) }, func(int32) int { return http.StatusServiceUnavailable }, time.Minute, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &formServer{t: t, answer: tc.answer}
			srv := httptest.NewServer(f)
			defer srv.Close()
			grant := uploadGrant{URL: srv.URL, Fields: map[string]string{"key": "k"}, ExpiresAt: time.Now().Add(tc.valid)}
			var last [2]int64
			o := callOptions{progress: func(done, total int64) { last = [2]int64{done, total} }}
			err := testClient(t, time.Minute).sendUpload(context.Background(), grant, tc.reader(), size, o)
			if (err == nil) != tc.ok || f.attempts.Load() != tc.attempts {
				t.Fatalf("%v after %d attempts, want ok=%v after %d", err, f.attempts.Load(), tc.ok, tc.attempts)
			}
			if !bytes.Equal(f.file, want) || last != [2]int64{size, size} {
				t.Errorf("the last attempt sent %d bytes of file and reported %v; want the whole value", len(f.file), last)
			}
			var apiErr *APIError
			if !tc.ok && (!errors.As(err, &apiErr) || apiErr.Message == "" || apiErr.Details == "") {
				t.Errorf("%v, want S3's code and message", err)
			}
		})
	}
}

// TestTransferStalls checks that a transfer in which no byte moves for
// the client's idle bound fails saying so, however long the whole takes.
func TestTransferStalls(t *testing.T) {
	t.Parallel()
	// A second: the handler below pauses a third of it between writes; a
	// loaded machine would have to add two thirds more to end the
	// download before its last bytes.
	const idle = time.Second
	// The handlers wait until the test ends; a handler that has not read
	// its request's body does not see the client go.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Length", "1000000")
			// Bytes for longer than idle in all, then none.
			for range 5 {
				_, _ = w.Write(make([]byte, 1000))
				w.(http.Flusher).Flush()
				time.Sleep(idle / 3)
			}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := testClient(t, idle)
	t.Run("download", func(t *testing.T) {
		var it Item
		err := c.download(context.Background(), srv.URL, io.Discard, &it, callOptions{})
		var delivered *deliveredError
		if !errors.Is(err, errStalled) || !errors.As(err, &delivered) || it.Size != 5000 {
			t.Errorf("%v after %d bytes, want a stall once bytes were delivered", err, it.Size)
		}
	})
	t.Run("upload", func(t *testing.T) {
		form, err := newForm(nil)
		if err != nil {
			t.Fatal(err)
		}
		// The server reads nothing and answers nothing.
		err = c.postForm(context.Background(), srv.URL, form, bytes.NewReader(pattern(100)), 100, callOptions{})
		if !errors.Is(err, errStalled) || !transferTransient(err) {
			t.Errorf("%v, want a stall, which may pass if sent again", err)
		}
	})
}

func TestExactReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data string
		size int64
		want string
		err  error
	}{
		{"as long", "abcdef", 6, "abcdef", nil},
		{"longer: the rest is left", "abcdef", 4, "abcd", nil},
		{"shorter", "abc", 6, "abc", io.ErrUnexpectedEOF},
		{"empty", "", 0, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := strings.NewReader(tc.data)
			got, err := io.ReadAll(&exactReader{r: r, size: tc.size})
			if string(got) != tc.want || !errors.Is(err, tc.err) || (tc.err == nil && r.Len() != len(tc.data)-len(tc.want)) {
				t.Errorf("read %q, %v (%d left); want %q, %v", got, err, r.Len(), tc.want, tc.err)
			}
		})
	}
}
