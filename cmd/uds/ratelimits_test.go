package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// TestRateLimitCommands sets, shows and clears an app's rate limits and a
// user's override, in order: each command's output must be out exactly.
func TestRateLimitCommands(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	appJSON := func(perCaller, perApp string) string {
		return `{"applicationUuid":"` + app + `","perCaller":` + perCaller + `,"perApp":` + perApp + "}\n"
	}
	userJSON := func(perCaller string) string {
		return `{"applicationUuid":"` + app + `","user":"alice","perCaller":` + perCaller + "}\n"
	}
	for _, c := range []struct {
		name string
		args []string
		out  string
	}{
		{"none set", []string{"rate-limits", app}, appJSON("null", "null")},
		{"set both", []string{"set-rate-limits", app, "--per-caller", "10/20", "--per-app", "100/200"},
			appJSON(`{"requestsPerSecond":10,"burst":20}`, `{"requestsPerSecond":100,"burst":200}`)},
		{"set one: the other is removed", []string{"set-rate-limits", app, "--per-app", "-1"}, appJSON("null", `{"requestsPerSecond":-1}`)},
		{"shown", []string{"rate-limits", app}, appJSON("null", `{"requestsPerSecond":-1}`)},
		{"a user's override", []string{"set-rate-limits", app, "alice", "--per-caller", "1/5"}, userJSON(`{"requestsPerSecond":1,"burst":5}`)},
		{"a user's override shown", []string{"rate-limits", app, "alice"}, userJSON(`{"requestsPerSecond":1,"burst":5}`)},
		{"a user's override cleared", []string{"set-rate-limits", app, "alice", "--clear"}, ""},
		{"no override shown", []string{"rate-limits", app, "alice"}, userJSON("null")},
		{"an app's cleared", []string{"set-rate-limits", app, "--clear"}, ""},
		{"none shown", []string{"rate-limits", app}, appJSON("null", "null")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, out, errOut := uds(t, srv, "", c.args...); code != 0 || out != c.out || errOut != "" {
				t.Errorf("%v: %d %q %q; want 0 and %q", c.args, code, out, errOut, c.out)
			}
		})
	}
}

// TestRateLimitedCommand runs a data command against a server that
// refuses its first requests as a rate limit does: the command sends the
// request again, and fails with the refusal only when the client's
// attempts are spent.
func TestRateLimitedCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		refusals int32
		code     int
		calls    int32
		stderr   string // its start
	}{
		{"passes after two refusals", 2, 0, 3, ""},
		{"refused every time", 1000, 1, 5, "uds get: 429 Too many requests: over the caller rate limit of 1 request a second (burst 1); " +
			"nothing was done: send it again after the Retry-After delay (sent 5 times over "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if calls.Add(1) <= tc.refusals {
					// Retry-After 0 leaves the pauses to the client's
					// backoff: the test takes no seconds.
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = w.Write([]byte(`{"code":"rate_limited","error":"Too many requests","details":"over the caller rate limit of 1 request a second (burst 1); nothing was done: send it again after the Retry-After delay"}`))
					return
				}
				_, _ = w.Write([]byte(`{"applicationUuid":"` + app + `","namespace":"n","id":"i","data":1,"version":1}`))
			}))
			defer srv.Close()
			code, _, stderr := uds(t, srv.URL, "", "get", app, "n", "i")
			if code != tc.code || calls.Load() != tc.calls || !strings.HasPrefix(stderr, tc.stderr) {
				t.Errorf("exit %d after %d requests, stderr %q; want %d after %d, stderr starting %q", code, calls.Load(), stderr, tc.code, tc.calls, tc.stderr)
			}
		})
	}
}
