package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A caller over its limit is answered 429, with Retry-After and the
// limits' headers, and nothing is done; another caller of the app is
// not; a batch pays a token per operation; a user's override and the
// app's limit apply, and removing them lifts the limit.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A rate of one a second would refill between requests on a loaded
	// machine: time stands still instead, so the test counts tokens, not
	// the machine's speed.
	e.clock.Freeze()
	alice, bob := []string{"X-Uds-Subject", "alice"}, []string{"X-Uds-Subject", "bob"}
	e.do("PUT", adminApps+"/rate-limits", `{"perCaller": {"requestsPerSecond": 1, "burst": 3}}`).expect(t, 200)
	r := e.do("GET", adminApps+"/rate-limits", "").expect(t, 200)
	if string(r.raw) != `{"applicationUuid":"`+app+`","perCaller":{"requestsPerSecond":1,"burst":3},"perApp":null}`+"\n" {
		t.Errorf("limits shown as %s", r.raw)
	}
	for i := range 3 {
		r := e.do("POST", base+"/limited/a"+string(rune('0'+i)), `{"data":1}`, alice...).expect(t, 201)
		if r.header.Get("RateLimit-Policy") != `"caller";q=1;w=1` || !strings.HasPrefix(r.header.Get("RateLimit"), `"caller";r=`) {
			t.Errorf("headers %q, %q", r.header.Get("RateLimit-Policy"), r.header.Get("RateLimit"))
		}
	}
	r = e.do("POST", base+"/limited/a9", `{"data":1}`, alice...).expect(t, http.StatusTooManyRequests)
	if r.body["error"] != "Too many requests" || r.header.Get("Retry-After") != "1" || !strings.Contains(r.body["details"].(string), "caller rate limit of 1") {
		t.Errorf("429: %s, Retry-After %q", r.raw, r.header.Get("Retry-After"))
	}
	e.do("GET", base+"/limited/a9", "", "X-Uds-Subject", "carol").expect(t, 404) // nothing was written
	// bob's batch of 3 operations takes his whole burst of 3.
	e.do("POST", base+"/batch", batchOf(3, "POST", "limited", `{"data":1}`, false), bob...).expect(t, 200)
	e.do("GET", base+"/limited/a0", "", bob...).expect(t, http.StatusTooManyRequests)
	// An override lifts alice's limit; admin routes are never limited.
	e.do("PUT", adminApps+"/users/alice/rate-limits", `{"perCaller": {"requestsPerSecond": -1}}`).expect(t, 200)
	for range 5 {
		e.do("GET", base+"/limited/a0", "", alice...).expect(t, 200)
	}
	// The app as a whole.
	e.do("PUT", adminApps+"/rate-limits", `{"perApp": {"requestsPerSecond": 1, "burst": 1}}`).expect(t, 200)
	e.do("GET", base+"/limited/a0", "", alice...).expect(t, 200)
	r = e.do("GET", base+"/limited/a0", "", alice...).expect(t, http.StatusTooManyRequests)
	if !strings.Contains(r.body["details"].(string), "app rate limit") {
		t.Errorf("the app's limit: %s", r.raw)
	}
	e.do("DELETE", adminApps+"/rate-limits", "").expect(t, 204)
	e.do("GET", base+"/limited/a0", "", bob...).expect(t, 200)
}

// A batch costs a token per operation, of the caller's limit and of the
// app's, atomic or not; one of more operations than a limit's burst can
// never pass and is a 429 that says so, without a Retry-After (waiting
// does not help), having done nothing and spent nothing.
func TestRateLimitBatchCost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.clock.Freeze()
	for _, tc := range []struct {
		limit, limits string
	}{
		{"caller", `{"perCaller": {"requestsPerSecond": 1, "burst": 1}}`},
		{"app", `{"perApp": {"requestsPerSecond": 1, "burst": 1}}`},
	} {
		for _, atomic := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s atomic=%v", tc.limit, atomic), func(t *testing.T) {
				e := e.on(t)
				e.clock.Advance(time.Hour) // every bucket is full again
				e.do("PUT", adminApps+"/rate-limits", tc.limits).expect(t, 200)
				items := fmt.Sprintf("burst-%s-%v", tc.limit, atomic)
				r := e.do("POST", base+"/batch", batchOf(2, "POST", items+"a", `{"data":1}`, atomic)).expect(t, http.StatusTooManyRequests)
				want := "a batch of 2 operations costs 2 tokens, more than the burst of the " + tc.limit + " rate limit of 1 request a second (burst 1) ever holds"
				if d, _ := r.body["details"].(string); !strings.HasPrefix(d, want) || !strings.Contains(d, "split it into batches of at most 1 operations") {
					t.Errorf("details %q, want them to start %q and say how to split the batch", d, want)
				}
				if got := r.header.Get("Retry-After"); got != "" {
					t.Errorf("Retry-After %q on a batch no wait lets through", got)
				}
				// The refusal did nothing and spent nothing: the burst's one
				// token serves a read, which finds no item, and is then spent.
				e.do("GET", base+"/"+items+"a/0", "").expect(t, 404)
				e.do("GET", base+"/"+items+"a/0", "").expect(t, http.StatusTooManyRequests)
				// Within a burst of 3, a batch of 2 spends 2 tokens: one
				// request is left, and the next is refused.
				e.clock.Advance(time.Hour)
				e.do("PUT", adminApps+"/rate-limits", strings.ReplaceAll(tc.limits, `"burst": 1`, `"burst": 3`)).expect(t, 200)
				e.do("POST", base+"/batch", batchOf(2, "POST", items+"b", `{"data":1}`, atomic)).expect(t, 200)
				e.do("GET", base+"/"+items+"b/0", "").expect(t, 200)
				r = e.do("GET", base+"/"+items+"b/1", "").expect(t, http.StatusTooManyRequests)
				if r.header.Get("Retry-After") != "1" {
					t.Errorf("a request over the rate: Retry-After %q, want 1", r.header.Get("Retry-After"))
				}
				e.do("DELETE", adminApps+"/rate-limits", "").expect(t, 204)
			})
		}
	}
}

// Rate limit bodies that cannot work are refused with a 400 naming the
// field.
func TestRateLimitRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct{ name, path, body, field, details string }{
		{"zero rate", "/rate-limits", `{"perCaller": {"requestsPerSecond": 0, "burst": 1}}`, "Invalid perCaller.requestsPerSecond", ""},
		// A form's empty burst field sends none: the answer says it is
		// missing rather than naming a 0 nobody sent.
		{"no burst", "/rate-limits", `{"perApp": {"requestsPerSecond": 5}}`, "Invalid perApp.burst", "is required with a rate"},
		{"negative burst", "/rate-limits", `{"perApp": {"requestsPerSecond": 5, "burst": -3}}`, "Invalid perApp.burst", "got -3"},
		{"fraction", "/rate-limits", `{"perCaller": {"requestsPerSecond": 1.5, "burst": 2}}`, "Invalid perCaller.requestsPerSecond", ""},
		{"string", "/rate-limits", `{"perCaller": {"requestsPerSecond": "5", "burst": 2}}`, "Invalid perCaller.requestsPerSecond", ""},
		{"too fast", "/rate-limits", `{"perCaller": {"requestsPerSecond": 2000000, "burst": 2}}`, "Invalid perCaller.requestsPerSecond", ""},
		{"unknown member", "/rate-limits", `{"perCaller": {"rps": 5, "burst": 2}}`, "Invalid perCaller", ""},
		{"empty object", "/rate-limits", `{"perCaller": {}}`, "Invalid perCaller.requestsPerSecond", ""},
		{"unknown part", "/rate-limits", `{"perUser": {"requestsPerSecond": 5, "burst": 2}}`, "Invalid body", ""},
		{"per app on a user", "/users/alice/rate-limits", `{"perApp": {"requestsPerSecond": 5, "burst": 2}}`, "Invalid body", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.on(t).do("PUT", adminApps+tc.path, tc.body).expect(t, 400)
			if r.body["error"] != tc.field || !strings.Contains(string(r.raw), tc.details) {
				t.Errorf("answer %s, want %s (%s)", r.raw, tc.field, tc.details)
			}
		})
	}
}
