package httpapi

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/udsproject/uds/pkg/uds"
)

// Compression in both directions. API Gateway HTTP APIs pass bodies
// through as they are, so UDS compresses its own answers: a body of at
// least compressMin bytes goes gzip encoded to a client that accepts gzip
// (base64 on Lambda, which the host does). Answers that carry an ETag are
// sent as they are: the ETag names the item's revision, and a strong ETag
// belongs to one encoding. Request bodies may be gzip encoded; what they
// expand to is bounded by the same limits as plain bodies (413 past them).

// compressMin is the smallest body worth compressing: below it gzip saves
// a few hundred bytes at most and costs CPU on every request.
const compressMin = 4 << 10

// errUnsupportedEncoding is a request body in a coding UDS does not read.
var errUnsupportedEncoding = uds.NewError(uds.CodeUnsupportedMediaType, "unsupported content encoding")

// encodingError names the coding a request body came in.
type encodingError struct{ coding string }

func (e *encodingError) Error() string {
	return "unsupported content encoding " + strconv.Quote(e.coding)
}
func (e *encodingError) Is(target error) bool { return target == errUnsupportedEncoding }
func (e *encodingError) Code() uds.Code       { return uds.CodeUnsupportedMediaType }

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// compressor holds a response back until it is whole, then sends it gzip
// encoded when it is eligible and the client takes gzip, as it is
// otherwise. UDS handlers write whole bodies, so holding them costs
// nothing.
type compressor struct {
	http.ResponseWriter
	acceptsGzip bool
	status      int
	gz          *gzip.Writer
	buf         bytes.Buffer
	decided     bool
}

func (c *compressor) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *compressor) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if !c.decided {
		c.decided = true
		h := c.ResponseWriter.Header()
		if len(p) >= compressMin && h.Get(headerETag) == "" && h.Get("Content-Encoding") == "" {
			h.Add("Vary", "Accept-Encoding")
			if c.acceptsGzip {
				c.gz = gzipWriters.Get().(*gzip.Writer)
				c.buf.Grow(len(p) / 4)
				c.gz.Reset(&c.buf)
			}
		}
		if c.gz == nil {
			c.ResponseWriter.WriteHeader(c.status)
		}
	}
	if c.gz != nil {
		return c.gz.Write(p)
	}
	return c.ResponseWriter.Write(p)
}

// finish sends what the handler answered.
func (c *compressor) finish() {
	switch {
	case c.gz != nil:
		_ = c.gz.Close() // writes to a bytes.Buffer cannot fail
		gzipWriters.Put(c.gz)
		h := c.ResponseWriter.Header()
		h.Set("Content-Encoding", "gzip")
		h.Set(headerContentLength, strconv.Itoa(c.buf.Len()))
		c.ResponseWriter.WriteHeader(c.status)
		_, _ = c.ResponseWriter.Write(c.buf.Bytes())
	case !c.decided && c.status != 0:
		c.ResponseWriter.WriteHeader(c.status)
	}
}

// acceptsGzip reports whether Accept-Encoding allows gzip: named (or as
// x-gzip) with a q-value above zero, or, when not named, covered by *
// with one. A coding's own entry decides over * wherever it stands (RFC
// 9110, 12.5.3).
func acceptsGzip(r *http.Request) bool {
	named, star := -1.0, -1.0
	for _, v := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			q := 1.0
			if name, value, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.EqualFold(strings.TrimSpace(name), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
					q = f
				}
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				named = max(named, q)
			case "*":
				star = max(star, q)
			}
		}
	}
	if named >= 0 {
		return named > 0
	}
	return star > 0
}

// requestCoding prepares a request's body for reading: a gzip body is
// expanded as it is read. Any coding but gzip and identity is refused, and
// so is gzip applied more than once. Content-Encoding is a list, sent on
// one line or several (RFC 9110, 5.3), and is read whole either way.
func requestCoding(r *http.Request) error {
	values := r.Header.Values("Content-Encoding")
	gzipped := false
	for _, v := range values {
		for coding := range strings.SplitSeq(v, ",") {
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "", "identity":
			case "gzip", "x-gzip":
				if gzipped {
					return &encodingError{coding: strings.Join(values, ", ")}
				}
				gzipped = true
			default:
				return &encodingError{coding: strings.Join(values, ", ")}
			}
		}
	}
	if gzipped && r.Body != nil && r.Body != http.NoBody {
		r.Body = &gzipBody{src: r.Body}
	}
	return nil
}

// gzipBody expands a gzip request body. Its reader is made on the first
// read, so a body nobody reads costs nothing.
type gzipBody struct {
	src io.ReadCloser
	zr  *gzip.Reader
	err error
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.zr == nil && g.err == nil {
		if g.zr, g.err = gzip.NewReader(g.src); g.err != nil {
			g.err = errNotGzip
		}
	}
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		// A stream that breaks off or does not check out: the body is
		// not what its Content-Encoding says.
		err = errNotGzip
	}
	return n, err
}

// errNotGzip is a body sent as gzip that is not a whole gzip stream.
var errNotGzip = uds.Invalid("body", "is not a whole gzip stream, which its Content-Encoding says it is")

func (g *gzipBody) Close() error { return g.src.Close() }
