package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// form is the multipart/form-data body of a presigned S3 POST: every
// field, then the file as the field "file", which S3 requires last. The
// parts around the file are written ahead, by mime/multipart itself, so
// the body's length is known before the file is read, and the file is
// read as the body is sent, never held whole.
type form struct {
	// head is the fields and the file part's header; tail the closing
	// boundary.
	head, tail  []byte
	contentType string
}

func newForm(fields map[string]string) (form, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if err := w.WriteField(name, fields[name]); err != nil {
			return form{}, err
		}
	}
	if _, err := w.CreateFormFile("file", "value"); err != nil {
		return form{}, err
	}
	head := bytes.Clone(buf.Bytes())
	buf.Reset()
	// The closing boundary does not depend on what the file part holds.
	if err := w.Close(); err != nil {
		return form{}, err
	}
	return form{head: head, tail: bytes.Clone(buf.Bytes()), contentType: w.FormDataContentType()}, nil
}

// length is the body's length with a file of size bytes.
func (f form) length(size int64) int64 { return int64(len(f.head)) + size + int64(len(f.tail)) }

// body is the form with file's bytes.
func (f form) body(file io.Reader) io.Reader {
	return io.MultiReader(bytes.NewReader(f.head), file, bytes.NewReader(f.tail))
}

// exactReader reads size bytes of r, and no more; r ending earlier is an
// error.
type exactReader struct {
	r          io.Reader
	size, read int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.read == e.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), e.size-e.read)]
	n, err := e.r.Read(p)
	e.read += int64(n)
	if errors.Is(err, io.EOF) && e.read < e.size {
		return n, fmt.Errorf("it ended after %d of the %d bytes announced: %w", e.read, e.size, io.ErrUnexpectedEOF)
	}
	return n, err
}

// meter counts the bytes a transfer moved, for progress (report) and for
// the idle watch (touch, when not nil).
type meter struct {
	done, total int64
	touch       func()
	report      func(done, total int64)
}

func (m *meter) moved(n int) {
	if n == 0 {
		return
	}
	m.done += int64(n)
	if m.touch != nil {
		m.touch()
	}
	m.report(m.done, m.total)
}

// countingReader meters the bytes read from r, and keeps r's failure,
// which is the caller's reader's. Once closed it reads no more: an HTTP
// transport may go on reading a request's body in a goroutine of its own
// after the request failed, and r is then moved back for the next
// attempt, or is the caller's again.
type countingReader struct {
	meter
	r      io.Reader
	mu     sync.Mutex
	closed bool
	err    error
}

// errClosed is what a closed countingReader reads.
var errClosed = errors.New("the upload's attempt has ended")

// close ends the reads, once any under way has returned.
func (c *countingReader) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
}

// failure is the reader's failure, if it failed.
func (c *countingReader) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, errClosed
	}
	n, err := c.r.Read(p)
	c.moved(n)
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = fmt.Errorf("%w: %w", errReader, err)
	}
	return n, err
}

// countingWriter meters the bytes written to w, and keeps w's failure.
type countingWriter struct {
	meter
	w   io.Writer
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.moved(n)
	c.err = err
	return n, err
}

// errStalled is the failure of a transfer in which no byte moved for the
// client's idle bound.
var errStalled = errors.New("no byte moved")

// watchIdle derives a context of ctx for one transfer, which ends when
// touch has not been called for c.idle (never, when c.idle is 0); stop ends
// the watch.
func (c *Client) watchIdle(ctx context.Context) (watched context.Context, touch, stop func()) {
	if c.idle <= 0 {
		return ctx, func() {}, func() {}
	}
	watched, cancel := context.WithCancelCause(ctx)
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(max(c.idle/4, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				if now.Sub(time.Unix(0, last.Load())) > c.idle {
					cancel(fmt.Errorf("%w for %v", errStalled, c.idle))
					return
				}
			}
		}
	}()
	touch = func() { last.Store(time.Now().UnixNano()) }
	stop = func() {
		close(done)
		cancel(nil)
	}
	return watched, touch, stop
}

// stalled is err, or the idle watch's failure where that ended the
// transfer.
func stalled(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errStalled) {
		return cause
	}
	return err
}
