package lambdahost

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"
)

// responseWriter collects a handler's answer as an HTTP API response. It
// replaces the adapter's writer, which grows a bytes.Buffer from empty and
// sniffs content types: UDS answers whole bodies with their length, so the
// body is gathered in one buffer of that size, which becomes the
// response's string. A compressed (Content-Encoding) or otherwise binary
// body goes base64 encoded, as API Gateway requires.
type responseWriter struct {
	header http.Header
	status int
	body   []byte
}

func newResponseWriter() *responseWriter {
	return &responseWriter{header: http.Header{}}
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.body == nil {
		if n, err := strconv.Atoi(w.header.Get("Content-Length")); err == nil && n >= len(p) {
			w.body = make([]byte, 0, n)
		}
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

// response is the answer in the HTTP API's form.
func (w *responseWriter) response() events.APIGatewayV2HTTPResponse {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	res := events.APIGatewayV2HTTPResponse{StatusCode: w.status, Headers: make(map[string]string, len(w.header))}
	for k, v := range w.header {
		if strings.EqualFold(k, "Set-Cookie") {
			res.Cookies = append(res.Cookies, v...)
			continue
		}
		res.Headers[k] = strings.Join(v, ",")
	}
	if w.header.Get("Content-Encoding") != "" || !utf8.Valid(w.body) {
		// Encoded into a buffer of its own, which the response's string
		// then shares: EncodeToString copied it once more (a gzip list
		// page's is half a megabyte).
		b := make([]byte, base64.StdEncoding.EncodedLen(len(w.body)))
		encodeBase64(b, w.body)
		res.Body, res.IsBase64Encoded = unsafe.String(unsafe.SliceData(b), len(b)), true
	} else {
		// The writer is done with its buffer, which nothing else holds:
		// the response's string can share it rather than copy it.
		res.Body = unsafe.String(unsafe.SliceData(w.body), len(w.body))
	}
	return res
}
