// Package lambdalog writes log lines in Lambda's JSON log format, the
// lines aws-lambda-go's slog handler writes when the function's log format
// is JSON, without going through slog: a line's fields are appended to a
// pooled buffer as they come. slog's JSON handler checks, converts and
// renames every attribute of every line and encodes floats through
// encoding/json; for the one line each request writes, that was a
// noticeable share of the request's time.
package lambdalog

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/udsproject/uds/internal/jsontext"
)

// Writer writes lines to an output, each in one Write.
type Writer struct {
	mu  sync.Mutex
	out io.Writer
}

// NewWriter returns a Writer to out (os.Stdout on Lambda).
func NewWriter(out io.Writer) *Writer { return &Writer{out: out} }

// Line is a line being encoded: Start it, add its fields, and Write it.
type Line struct {
	b []byte
}

var lines = sync.Pool{New: func() any { return &Line{b: make([]byte, 0, 1024)} }}

// Start begins a line at t, at level, with msg: the members slog's JSON
// handler writes first, under the keys Lambda's format gives them.
func Start(t time.Time, level slog.Level, msg string) *Line {
	l := lines.Get().(*Line)
	b := append(l.b[:0], `{"timestamp":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":`...)
	b = jsontext.AppendSlogString(b, level.String())
	b = append(b, `,"message":`...)
	l.b = jsontext.AppendSlogString(b, msg)
	return l
}

func (l *Line) key(key string) {
	l.b = append(jsontext.AppendSlogString(append(l.b, ','), key), ':')
}

// String adds a string field.
func (l *Line) String(key, v string) {
	l.key(key)
	l.b = jsontext.AppendSlogString(l.b, v)
}

// Int adds an integer field.
func (l *Line) Int(key string, n int) {
	l.key(key)
	l.b = strconv.AppendInt(l.b, int64(n), 10)
}

// Float adds a number field, written as encoding/json writes a float64,
// which slog's JSON handler uses for floats.
func (l *Line) Float(key string, f float64) {
	l.key(key)
	if b, ok := jsontext.AppendThousandths(l.b, f); ok {
		l.b = b
		return
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		// slog's handler writes encoding/json's error in their place.
		l.b = jsontext.AppendSlogString(l.b, "!ERROR:json: unsupported value: "+strconv.FormatFloat(f, 'g', -1, 64))
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(l.b, f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes e-7, not strconv's e-07.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	l.b = b
}

// Write ends l with the invocation's request id, as aws-lambda-go's
// handler adds it, writes it as one line and recycles it: l must not be
// used after.
func (w *Writer) Write(ctx context.Context, l *Line) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		l.String("requestId", lc.AwsRequestID)
	}
	l.b = append(l.b, '}', '\n')
	w.mu.Lock()
	_, err := w.out.Write(l.b)
	w.mu.Unlock()
	// Lines with a long stack grow the buffer: only usual ones go back.
	if cap(l.b) <= 16<<10 {
		lines.Put(l)
	}
	return err
}
