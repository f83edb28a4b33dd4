// Package emf writes CloudWatch Embedded Metric Format records: one JSON
// object per line whose "_aws" member tells CloudWatch Logs which of its
// members are metrics and which are dimensions. On Lambda, stdout goes to
// CloudWatch Logs, which extracts the metrics without any API call.
package emf

import (
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Namespace is the CloudWatch namespace of every UDS metric.
const Namespace = "UDS"

// Units UDS uses (the specification allows more).
const (
	Count        = "Count"
	Milliseconds = "Milliseconds"
	Bytes        = "Bytes"
	None         = "None"
)

// Metric is one value of a record.
type Metric struct {
	Name  string
	Unit  string
	Value float64
}

// Directive publishes metrics under one or more dimension sets: each set is
// a list of dimension names, and each metric is published once per set.
type Directive struct {
	DimensionSets [][]string
	Metrics       []Metric
}

// Record is one EMF document: dimension values, the directives that use
// them, and properties that are logged but not turned into metrics (high
// cardinality fields such as an app or a subject belong there).
type Record struct {
	Dimensions map[string]string
	Directives []Directive
	Properties map[string]any
}

// Writer writes records to an output, one line each.
type Writer struct {
	mu  sync.Mutex
	out io.Writer
	now func() time.Time
}

// NewWriter returns a Writer to out (os.Stdout on Lambda).
func NewWriter(out io.Writer) *Writer { return &Writer{out: out, now: time.Now} }

var buffers = sync.Pool{New: func() any { return new([]byte) }}

// Write writes r as one line. A nil Writer writes nothing, so callers need
// no check. Dimension values, metric values and properties are members of
// the root object; a property must not share a metric's or a dimension's
// name. The line is encoded by hand: it is written once per request.
func (w *Writer) Write(r Record) error {
	if w == nil {
		return nil
	}
	bp := buffers.Get().(*[]byte)
	b := append((*bp)[:0], `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, w.now().UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[`...)
	for i, d := range r.Directives {
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
		}
		b = append(b, "]}"...)
	}
	b = append(b, "]}"...)
	for name, v := range r.Dimensions {
		b = append(b, ',')
		b = appendString(b, name)
		b = append(b, ':')
		b = appendString(b, v)
	}
	for _, d := range r.Directives {
		for _, m := range d.Metrics {
			b = append(b, ',')
			b = appendString(b, m.Name)
			b = append(b, ':')
			b = strconv.AppendFloat(b, m.Value, 'g', -1, 64)
		}
	}
	for name, v := range r.Properties {
		b = append(b, ',')
		b = appendString(b, name)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, v); err != nil {
			return err
		}
	}
	b = append(b, '}', '\n')
	*bp = b
	defer buffers.Put(bp)
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.out.Write(b)
	return err
}

// appendValue appends a property: strings and numbers directly, anything
// else as encoding/json renders it.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return appendString(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case float64:
		return strconv.AppendFloat(b, v, 'g', -1, 64), nil
	}
	j, err := json.Marshal(v)
	return append(b, j...), err
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
