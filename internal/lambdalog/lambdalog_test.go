package lambdalog_test

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/udsproject/uds/internal/lambdalog"
)

// field is one field of a line, given to both writers.
type field struct {
	key string
	v   any // string, int or float64
}

// slogLine is the line aws-lambda-go's handler writes in Lambda's JSON
// format: slog's JSON handler with its ReplaceAttr, the fields as one
// inlined group, and the request id added after them.
func slogLine(t *testing.T, ctx context.Context, at time.Time, level slog.Level, msg string, fields []field) string {
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: lambdacontext.ReplaceAttr})
	var attrs []slog.Attr
	for _, f := range fields {
		switch v := f.v.(type) {
		case string:
			attrs = append(attrs, slog.String(f.key, v))
		case int:
			attrs = append(attrs, slog.Int(f.key, v))
		case float64:
			attrs = append(attrs, slog.Float64(f.key, v))
		}
	}
	r := slog.NewRecord(at, level, msg, 0)
	r.AddAttrs(slog.Attr{Value: slog.GroupValue(attrs...)})
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		r.AddAttrs(slog.String("requestId", lc.AwsRequestID))
	}
	if err := h.Handle(ctx, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func directLine(t *testing.T, ctx context.Context, at time.Time, level slog.Level, msg string, fields []field) string {
	var buf bytes.Buffer
	l := lambdalog.Start(at, level, msg)
	for _, f := range fields {
		switch v := f.v.(type) {
		case string:
			l.String(f.key, v)
		case int:
			l.Int(f.key, v)
		case float64:
			l.Float(f.key, v)
		}
	}
	if err := lambdalog.NewWriter(&buf).Write(ctx, l); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestLineIsSlogs writes lines of every kind of value both ways and
// expects the same bytes.
func TestLineIsSlogs(t *testing.T) {
	invocation := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "8f5e1c2a-lambda"})
	at := time.Date(2026, 12, 4, 18, 30, 1, 123456789, time.UTC)
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		at     time.Time
		level  slog.Level
		fields []field
	}{
		{"plain", invocation, at, slog.LevelInfo, []field{{"route", "GET /data/{applicationUuid}/{namespace}/{id}"}, {"status", 200}, {"latencyMs", 1.234}}},
		{"no invocation", context.Background(), at, slog.LevelInfo, []field{{"status", 404}}},
		{"levels and a zone", invocation, at.In(time.FixedZone("X", -5*3600)), slog.LevelWarn, nil},
		{"error", invocation, at.Truncate(time.Second), slog.LevelError, []field{{"cause", "store: \"quoted\"\n\tat line\r\\ end"}}},
		{"offset level", invocation, at, slog.LevelInfo + 2, nil},
		{"controls", invocation, at, slog.LevelInfo, []field{{"s", "a\x00b\x01\x1f\x7f<>&'"}}},
		{"non-UTF-8", invocation, at, slog.LevelInfo, []field{{"subject", "caf\xe9 \xff\xfe ok"}, {"k\xff", "v"}}},
		{"separators and wide runes", invocation, at, slog.LevelInfo, []field{{"s", "a\u2028b\u2029c é 日本 🙂"}}},
		{"empty", invocation, at, slog.LevelInfo, []field{{"app", ""}, {"", "no key"}}},
		{"ints", invocation, at, slog.LevelInfo, []field{{"a", 0}, {"b", -7}, {"c", math.MaxInt64}}},
		{"floats", invocation, at, slog.LevelInfo, []field{
			{"a", 0.0}, {"b", 0.5}, {"c", 1.0}, {"d", 12.345}, {"e", 1e-6}, {"f", 1e-7}, {"g", 1.5e-12},
			{"h", 1e20}, {"i", 1e21}, {"j", 123456789e300}, {"k", -0.000001234}, {"l", math.Copysign(0, -1)},
			{"m", math.NaN()}, {"n", math.Inf(1)}, {"o", math.Inf(-1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := slogLine(t, tc.ctx, tc.at, tc.level, "request", tc.fields)
			if got := directLine(t, tc.ctx, tc.at, tc.level, "request", tc.fields); got != want {
				t.Errorf("line\n%s\nwant slog's\n%s", got, want)
			}
		})
	}
}
