// Package emf writes CloudWatch Embedded Metric Format records: one JSON
// object per line whose "_aws" member tells CloudWatch Logs which of its
// members are metrics and which are dimensions. On Lambda, stdout goes to
// CloudWatch Logs, which extracts the metrics without any API call.
package emf

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/udsproject/uds/internal/jsontext"
)

// Namespace is the CloudWatch namespace of every UDS metric.
const Namespace = "UDS"

// Units UDS uses (the specification allows more).
const (
	Count        = "Count"
	Milliseconds = "Milliseconds"
	None         = "None"
)

// DurationMs is d in Milliseconds to the microsecond, as the latency
// metrics and the log lines beside them give it.
func DurationMs(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// Metric names a metric and its unit.
type Metric struct {
	Name string
	Unit string
}

// Directive publishes metrics under one or more dimension sets: each set is
// a list of dimension names, and each metric is published once per set.
type Directive struct {
	DimensionSets [][]string
	Metrics       []Metric
}

// Dimension is a dimension's value in a record.
type Dimension struct {
	Name, Value string
}

// Layout is a kind of record: its directives, whose JSON is encoded once,
// so that writing a record only encodes its values.
type Layout struct {
	// directives is the CloudWatchMetrics array, encoded.
	directives []byte
	// members holds each metric's `,"Name":`, encoded, in the order
	// records give their values.
	members [][]byte
}

// NewLayout returns the layout of records with these directives. A metric
// name must appear in one directive only.
func NewLayout(directives ...Directive) *Layout {
	l := &Layout{}
	b := []byte{'['}
	for i, d := range directives {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Namespace":"`+Namespace+`","Dimensions":[`...)
		for j, set := range d.DimensionSets {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			for k, name := range set {
				if k > 0 {
					b = append(b, ',')
				}
				b = appendString(b, name)
			}
			b = append(b, ']')
		}
		b = append(b, `],"Metrics":[`...)
		for j, m := range d.Metrics {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"Name":`...)
			b = appendString(b, m.Name)
			if m.Unit != "" {
				b = append(b, `,"Unit":`...)
				b = appendString(b, m.Unit)
			}
			b = append(b, '}')
			l.members = append(l.members, append(appendString([]byte{','}, m.Name), ':'))
		}
		b = append(b, "]}"...)
	}
	l.directives = append(b, ']')
	return l
}

// Writer writes records to an output, one line each.
type Writer struct {
	mu  sync.Mutex
	out io.Writer
}

// NewWriter returns a Writer to out (os.Stdout on Lambda).
func NewWriter(out io.Writer) *Writer { return &Writer{out: out} }

var buffers = sync.Pool{New: func() any { return new([]byte) }}

// Write writes one record of layout l as one line: the dimensions' values
// and the metrics' values in the layout's order, all members of the root
// object beside "_aws". A nil Writer writes nothing, so callers need no
// check.
func (w *Writer) Write(l *Layout, dims []Dimension, values []float64) error {
	if w == nil {
		return nil
	}
	if len(values) != len(l.members) {
		return fmt.Errorf("emf: %d values for a layout of %d metrics", len(values), len(l.members))
	}
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	b := append((*bp)[:0], `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, time.Now().UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":`...)
	b = append(b, l.directives...)
	b = append(b, '}')
	for _, d := range dims {
		b = append(b, ',')
		b = appendString(b, d.Name)
		b = append(b, ':')
		b = appendString(b, d.Value)
	}
	for i, member := range l.members {
		b = append(b, member...)
		b = appendNumber(b, values[i])
	}
	b = append(b, '}', '\n')
	*bp = b
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.out.Write(b)
	return err
}

// appendNumber appends v as a JSON number: whole numbers, most values of
// a record (counts), as integers, which is also faster than the shortest
// float form.
func appendNumber(b []byte, v float64) []byte {
	if i := int64(v); float64(i) == v && i > -1<<53 && i < 1<<53 {
		return strconv.AppendInt(b, i, 10)
	}
	if b, ok := jsontext.AppendThousandths(b, v); ok {
		return b
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			j, _ := json.Marshal(s) // escapes and replaces invalid UTF-8
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
