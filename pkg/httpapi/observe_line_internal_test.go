package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/udsproject/uds/internal/lambdalog"
	"github.com/udsproject/uds/internal/safe"
	"github.com/udsproject/uds/pkg/store"
)

// lambdaJSONHandler is aws-lambda-go's handler in Lambda's JSON format:
// slog's JSON handler with its ReplaceAttr, and the invocation's request
// id added after a record's attributes.
type lambdaJSONHandler struct{ slog.Handler }

func (h lambdaJSONHandler) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		r.AddAttrs(slog.String("requestId", lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, r)
}

// timestamp is a line's time, which differs between two lines written one
// after the other.
var timestamp = regexp.MustCompile(`^\{"timestamp":"([^"]+)"`)

// TestRequestLineIsSlogs reports a table of requests twice, through
// Lambda's slog handler and through the line written directly, and
// expects the same line but for its time.
func TestRequestLineIsSlogs(t *testing.T) {
	panicked := safe.Call(func() { panic("boom \"quoted\"\n") })
	for _, tc := range []struct {
		name          string
		method, path  string
		header        map[string]string
		route         string
		p             params
		status, bytes int
		c             store.Calls
		ob            *observation
		id            string
	}{
		{name: "read", method: "GET", path: "/rest/api/v1/data/a/ns/k", route: "GET /data/{applicationUuid}/{namespace}/{id}",
			p: params{app: "d53065bd-f932-4841-83fb-849717d8df0f", namespace: "ns"}, status: 200, bytes: 1010,
			c: store.Calls{Calls: 1, ReadUnits: 0.5}, id: "gw-1"},
		{name: "unmatched, escapes", method: "PUT", path: "/no/\"such\"\\route\t\x01", route: unmatched, status: 405},
		{name: "quota refusal and retries", method: "POST", path: "/p", route: "POST /data/{applicationUuid}/{namespace}/{id}", status: 403,
			c:  store.Calls{Calls: 2, Retries: 1, Throttles: 1, ReadUnits: 1, WriteUnits: 2.5},
			ob: &observation{quotaRefusals: 1, errorKind: "Quota exceeded"}},
		{name: "trace and conflict", method: "PUT", path: "/p", route: "PUT /x", status: 409,
			header: map[string]string{"X-Amzn-Trace-Id": "Root=1-65a50929-5fd752fe2505473870faf985;Parent=\"x\""},
			ob:     &observation{conditionalFailures: 1, errorKind: "Conflict"}, id: "gw-2"},
		{name: "cause", method: "GET", path: "/p", route: "GET /x", status: 500,
			ob: &observation{errorKind: "Internal server error", cause: fmt.Errorf("store: %w: \"table\"\nnot found", errors.New("dynamodb"))}},
		{name: "panic's stack", method: "POST", path: "/p", route: "POST /batch", status: 500,
			ob: &observation{errorKind: "Internal server error", cause: panicked, batchOps: 3}},
		{name: "rate limiter out of reach", method: "GET", path: "/p", route: "GET /x", status: 200,
			ob: &observation{rateLimiterOpen: true, rateLimiterCause: errors.New("throttled: <limits> & \"state\"")}},
		{name: "counts", method: "POST", path: "/p", route: "POST /import", status: 200, c: store.Calls{Calls: 12, WriteUnits: 1e-7},
			ob: &observation{deleted: 1, imported: 5, skipped: 1, expired: 2, conflicts: 3, exported: 4}},
		{name: "non-UTF-8", method: "GET", path: "/p\xff", route: unmatched, status: 404,
			header: map[string]string{"X-Test-Subject": "caf\xe9\u2028日本", "X-Amzn-Trace-Id": "\xfe\xff"},
			p:      params{app: "\xc3", namespace: "n\u2029s"}, id: "\xff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var viaSlog, direct bytes.Buffer
			c := Config{
				Subject:   func(r *http.Request) (string, error) { return r.Header.Get("X-Test-Subject"), nil },
				RequestID: func(*http.Request) (string, string) { return "apiRequestId", tc.id },
				Logger:    slog.New(lambdaJSONHandler{slog.NewJSONHandler(&viaSlog, &slog.HandlerOptions{ReplaceAttr: lambdacontext.ReplaceAttr})}),
			}
			a := New(Stores{}, GroupAll, c)
			c.LambdaLog = lambdalog.NewWriter(&direct)
			b := New(Stores{}, GroupAll, c)
			r := httptest.NewRequest("GET", "/", nil)
			r.Method, r.URL.Path = tc.method, tc.path
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			r = r.WithContext(lambdacontext.NewContext(r.Context(), &lambdacontext.LambdaContext{AwsRequestID: "8f5e1c2a-lambda"}))
			if tc.ob == nil {
				tc.ob = &observation{}
			}
			for _, api := range []*API{a, b} {
				api.report(r, tc.route, tc.p, &observed{status: tc.status, bytes: tc.bytes}, 17, 1234567*time.Nanosecond, tc.c, tc.ob)
			}
			want, got := viaSlog.String(), direct.String()
			for _, line := range []string{want, got} {
				m := timestamp.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("no timestamp: %s", line)
				}
				if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil {
					t.Errorf("timestamp %q: %v", m[1], err)
				}
			}
			if got, want := timestamp.ReplaceAllString(got, ""), timestamp.ReplaceAllString(want, ""); got != want {
				t.Errorf("line\n%s\nwant slog's\n%s", got, want)
			}
		})
	}
}
