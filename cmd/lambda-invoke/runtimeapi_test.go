package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testARN = "arn:aws:lambda:us-east-1:123456789012:function:test"

// newTestAPI serves a runtimeAPI on an httptest server.
func newTestAPI(t *testing.T, timeout time.Duration) (*runtimeAPI, *httptest.Server) {
	t.Helper()
	api := newRuntimeAPI("test", testARN, timeout)
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		api.shutdown()
		srv.Close()
	})
	return api, srv
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

// nextOutcome waits up to wait for a report.
func nextOutcome(t *testing.T, api *runtimeAPI, wait time.Duration) (outcome, bool) {
	t.Helper()
	select {
	case o := <-api.outcomes:
		return o, true
	case <-time.After(wait):
		return outcome{}, false
	}
}

func TestNextDeliversEventWithHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		event   string
		timeout time.Duration
	}{
		{name: "api gateway event", event: `{"version":"2.0","rawPath":"/x"}`, timeout: 30 * time.Second},
		{name: "empty object, short timeout", event: `{}`, timeout: 3 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api, srv := newTestAPI(t, tc.timeout)
			id := api.enqueue([]byte(tc.event))

			before := time.Now()
			resp, body := get(t, srv.URL+pathNext)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200 (%s)", resp.StatusCode, body)
			}
			if string(body) != tc.event {
				t.Errorf("body = %s, want %s", body, tc.event)
			}
			if got := resp.Header.Get(headerRequestID); got != id {
				t.Errorf("%s = %q, want %q", headerRequestID, got, id)
			}
			if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
				t.Errorf("request id %q is not a v4 UUID", id)
			}
			if got := resp.Header.Get(headerFunctionARN); got != testARN {
				t.Errorf("%s = %q, want %q", headerFunctionARN, got, testARN)
			}
			if got := resp.Header.Get(headerTraceID); !regexp.MustCompile(`^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=0$`).MatchString(got) {
				t.Errorf("%s = %q, not an X-Ray trace header", headerTraceID, got)
			}
			ms, err := strconv.ParseInt(resp.Header.Get(headerDeadline), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", headerDeadline, err)
			}
			deadline := time.UnixMilli(ms)
			if lo, hi := before.Add(tc.timeout-time.Second), time.Now().Add(tc.timeout+time.Second); deadline.Before(lo) || deadline.After(hi) {
				t.Errorf("deadline %v not within [%v, %v]", deadline, lo, hi)
			}
			select {
			case <-api.firstNext:
			default:
				t.Error("firstNext not closed after the first /next")
			}
			if api.firstNextTime().IsZero() || api.deliveredAt(id).IsZero() {
				t.Error("first /next or delivery time not recorded")
			}
		})
	}
}

func TestNextLongPoll(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		release func(api *runtimeAPI, cancel context.CancelFunc)
		want    int // status; 0: the client gave up
	}{
		{name: "shutdown answers 410", release: func(api *runtimeAPI, _ context.CancelFunc) { api.shutdown() }, want: http.StatusGone},
		{name: "client gives up", release: func(_ *runtimeAPI, cancel context.CancelFunc) { cancel() }, want: 0},
		{name: "a later event is delivered", release: func(api *runtimeAPI, _ context.CancelFunc) { api.enqueue([]byte(`{"n":2}`)) }, want: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api, srv := newTestAPI(t, time.Minute)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+pathNext, nil)
			type result struct {
				status int
				err    error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- result{err: err}
					return
				}
				resp.Body.Close()
				done <- result{status: resp.StatusCode}
			}()
			select {
			case r := <-done:
				t.Fatalf("/next returned with nothing queued: %+v", r)
			case <-time.After(100 * time.Millisecond):
			}
			tc.release(api, cancel)
			select {
			case r := <-done:
				if tc.want == 0 {
					if r.err == nil {
						t.Errorf("want a canceled request, got status %d", r.status)
					}
				} else if r.err != nil || r.status != tc.want {
					t.Errorf("got %+v, want status %d", r, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("/next still blocked")
			}
		})
	}
}

func TestInvocationReports(t *testing.T) {
	t.Parallel()
	trailerBody := base64.StdEncoding.EncodeToString([]byte(`{"errorMessage":"stream broke","errorType":"errorString"}`))
	tests := []struct {
		name       string
		deliver    bool   // hand the event out before reporting
		pathID     string // "" means the queued request's id
		path       string // pathResponse, pathError or pathInitError
		body       string
		header     http.Header
		trailer    http.Header
		twice      bool // report twice; the second answer is checked
		wantStatus int
		wantKind   outcomeKind
		wantType   string
		wantBody   string // "" skips the check
		noOutcome  bool
	}{
		{name: "response accepted", deliver: true, path: pathResponse, body: `{"statusCode":201}`,
			header: http.Header{"Content-Type": {"application/octet-stream"}}, wantStatus: 202,
			wantKind: outcomeResponse, wantBody: `{"statusCode":201}`},
		{name: "error type from header", deliver: true, path: pathError, body: `{"errorMessage":"x"}`,
			header: http.Header{headerErrorType: {"Custom.Error"}}, wantStatus: 202, wantKind: outcomeError, wantType: "Custom.Error"},
		{name: "error type from body", deliver: true, path: pathError, body: `{"errorMessage":"boom","errorType":"errorString"}`,
			wantStatus: 202, wantKind: outcomeError, wantType: "errorString", wantBody: `{"errorMessage":"boom","errorType":"errorString"}`},
		{name: "error without a type", deliver: true, path: pathError, body: `not json`,
			wantStatus: 202, wantKind: outcomeError, wantType: "Function.Unhandled"},
		{name: "error in response trailers", deliver: true, path: pathResponse, body: `{"partial":`,
			trailer:    http.Header{headerErrorType: {"errorString"}, trailerErrorBody: {trailerBody}},
			wantStatus: 202, wantKind: outcomeError, wantType: "errorString", wantBody: `{"errorMessage":"stream broke","errorType":"errorString"}`},
		{name: "response too large", deliver: true, path: pathResponse, body: strings.Repeat("x", maxResponseBytes+1),
			wantStatus: 413, wantKind: outcomeError, wantType: "Function.ResponseSizeTooLarge"},
		{name: "unknown request id", deliver: true, pathID: "00000000-0000-4000-8000-000000000000", path: pathResponse, body: `{}`,
			wantStatus: 400, noOutcome: true},
		{name: "event not handed out yet", deliver: false, path: pathResponse, body: `{}`, wantStatus: 400, noOutcome: true},
		{name: "second report refused", deliver: true, path: pathResponse, body: `{}`, twice: true, wantStatus: 403,
			wantKind: outcomeResponse},
		{name: "init error", path: pathInitError, body: `{"errorMessage":"no config","errorType":"Fixture.InitFailed"}`,
			wantStatus: 202, wantKind: outcomeInitError, wantType: "Fixture.InitFailed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api, srv := newTestAPI(t, time.Minute)
			id := api.enqueue([]byte(`{}`))
			if tc.deliver {
				if resp, _ := get(t, srv.URL+pathNext); resp.StatusCode != 200 {
					t.Fatalf("/next: %d", resp.StatusCode)
				}
			}
			if tc.pathID != "" {
				id = tc.pathID
			}
			url := srv.URL + strings.Replace(tc.path, "{id}", id, 1)

			send := func() (*http.Response, []byte) {
				var body io.Reader = strings.NewReader(tc.body)
				if tc.trailer != nil {
					body = io.MultiReader(body) // unknown length: chunked, so trailers can follow
				}
				req, err := http.NewRequest(http.MethodPost, url, body)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range tc.header {
					req.Header[k] = v
				}
				req.Trailer = tc.trailer
				return do(t, req)
			}
			resp, body := send()
			if tc.twice {
				resp, body = send()
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tc.wantStatus, body)
			}
			if !json.Valid(body) {
				t.Errorf("API answer is not JSON: %q", body)
			}

			if tc.noOutcome {
				if o, ok := nextOutcome(t, api, 100*time.Millisecond); ok {
					t.Fatalf("unexpected outcome %+v", o)
				}
				return
			}
			o, ok := nextOutcome(t, api, 10*time.Second)
			if !ok {
				t.Fatal("no outcome recorded")
			}
			if o.kind != tc.wantKind {
				t.Errorf("kind = %v, want %v", o.kind, tc.wantKind)
			}
			if tc.wantType != "" && o.errorType != tc.wantType {
				t.Errorf("errorType = %q, want %q", o.errorType, tc.wantType)
			}
			if tc.wantBody != "" && string(o.body) != tc.wantBody {
				t.Errorf("body = %s, want %s", o.body, tc.wantBody)
			}
			if o.kind != outcomeInitError && o.requestID != id {
				t.Errorf("requestID = %q, want %q", o.requestID, id)
			}
			if o.at.IsZero() {
				t.Error("arrival time not recorded")
			}
			if tc.twice {
				if extra, ok := nextOutcome(t, api, 100*time.Millisecond); ok {
					t.Errorf("second report recorded: %+v", extra)
				}
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		method string
		path   string
		want   int
	}{
		{name: "next needs GET", method: http.MethodPost, path: pathNext, want: http.StatusMethodNotAllowed},
		{name: "response needs POST", method: http.MethodGet, path: "/2018-06-01/runtime/invocation/abc/response", want: http.StatusMethodNotAllowed},
		{name: "unknown API version", method: http.MethodGet, path: "/2099-01-01/runtime/invocation/next", want: http.StatusNotFound},
		{name: "extension register", method: http.MethodPost, path: pathExtRegister, want: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := newTestAPI(t, time.Minute)
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(`{"events":[]}`))
			resp, body := do(t, req)
			if resp.StatusCode != tc.want {
				t.Errorf("status = %d, want %d (%s)", resp.StatusCode, tc.want, body)
			}
			if tc.path == pathExtRegister && resp.Header.Get(headerExtensionID) == "" {
				t.Errorf("no %s header", headerExtensionID)
			}
		})
	}
}

func TestErrorTypeOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, header, body, want string
	}{
		{name: "header wins", header: "H", body: `{"errorType":"B"}`, want: "H"},
		{name: "body", body: `{"errorType":"B"}`, want: "B"},
		{name: "fallback on non-JSON", body: `oops`, want: "F"},
		{name: "fallback on empty type", body: `{"errorMessage":"m"}`, want: "F"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorTypeOf(tc.header, []byte(tc.body), "F"); got != tc.want {
				t.Errorf("errorTypeOf = %q, want %q", got, tc.want)
			}
		})
	}
}
