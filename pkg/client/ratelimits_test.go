package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/ratelimit"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// TestRateLimitsAdmin sets, reads and clears an app's rate limits and a
// user's override, in order, and has the server refuse numbers out of
// bounds, naming the field.
func TestRateLimitsAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := newClient(t, apitest.Server(t, 10*time.Second))
	rate := func(r, b int64) *client.Rate { return &client.Rate{RequestsPerSecond: r, Burst: b} }
	// asJSON is an answer as JSON, null for none.
	asJSON := func(v any, err error) (string, error) {
		b, _ := json.Marshal(v)
		return string(b), err
	}
	setApp := func(l client.RateLimits) func() (string, error) {
		return func() (string, error) { return asJSON(admin.SetAppRateLimits(ctx, app, l)) }
	}
	getApp := func() (string, error) { return asJSON(admin.AppRateLimits(ctx, app)) }
	setUser := func(r client.Rate) func() (string, error) {
		return func() (string, error) { return asJSON(admin.SetUserRateLimits(ctx, app, "carol", r)) }
	}
	getUser := func() (string, error) { return asJSON(admin.UserRateLimits(ctx, app, "carol")) }
	appJSON := func(perCaller, perApp string) string {
		return `{"applicationUuid":"` + app + `","perCaller":` + perCaller + `,"perApp":` + perApp + `}`
	}
	userJSON := func(perCaller string) string {
		return `{"applicationUuid":"` + app + `","user":"carol","perCaller":` + perCaller + `}`
	}
	runSteps(t, []step{
		{"an app without limits", getApp, appJSON("null", "null"), nil, ""},
		{"set both", setApp(client.RateLimits{PerCaller: rate(10, 20), PerApp: rate(100, 200)}),
			appJSON(`{"requestsPerSecond":10,"burst":20}`, `{"requestsPerSecond":100,"burst":200}`), nil, ""},
		{"read back", getApp, appJSON(`{"requestsPerSecond":10,"burst":20}`, `{"requestsPerSecond":100,"burst":200}`), nil, ""},
		{"set one: the other is removed", setApp(client.RateLimits{PerApp: rate(5, 5)}), appJSON("null", `{"requestsPerSecond":5,"burst":5}`), nil, ""},
		{"read back after setting one", getApp, appJSON("null", `{"requestsPerSecond":5,"burst":5}`), nil, ""},
		{"no limit per caller", setApp(client.RateLimits{PerCaller: rate(-1, 0)}), appJSON(`{"requestsPerSecond":-1}`, "null"), nil, ""},
		{"clear", func() (string, error) { return asJSON(nil, admin.ClearAppRateLimits(ctx, app)) }, "null", nil, ""},
		{"read back after clearing", getApp, appJSON("null", "null"), nil, ""},
		{"a rate of 0", setApp(client.RateLimits{PerCaller: rate(0, 1)}), "", client.ErrInvalid, "perCaller.requestsPerSecond"},
		{"a burst of 0", setApp(client.RateLimits{PerApp: rate(5, 0)}), "", client.ErrInvalid, "perApp.burst"},
		{"a rate past the bound", setApp(client.RateLimits{PerApp: rate(1_000_001, 1)}), "", client.ErrInvalid, "perApp.requestsPerSecond"},
		{"unchanged by the refusals", getApp, appJSON("null", "null"), nil, ""},
		{"a user without an override", getUser, userJSON("null"), nil, ""},
		{"a user's override", setUser(client.Rate{RequestsPerSecond: 3, Burst: 6}), userJSON(`{"requestsPerSecond":3,"burst":6}`), nil, ""},
		{"read back the override", getUser, userJSON(`{"requestsPerSecond":3,"burst":6}`), nil, ""},
		{"an override without a limit", setUser(client.Rate{RequestsPerSecond: -1}), userJSON(`{"requestsPerSecond":-1}`), nil, ""},
		{"an override with a burst of 0", setUser(client.Rate{RequestsPerSecond: 1}), "", client.ErrInvalid, "perCaller.burst"},
		{"clear the override", func() (string, error) { return asJSON(nil, admin.ClearUserRateLimits(ctx, app, "carol")) }, "null", nil, ""},
		{"read back after clearing the override", getUser, userJSON("null"), nil, ""},
		{"clear an override that is not there", func() (string, error) { return asJSON(nil, admin.ClearUserRateLimits(ctx, app, "dave")) }, "null", nil, ""},
		{"an app that is no UUID", func() (string, error) { return asJSON(admin.AppRateLimits(ctx, "not-an-app")) }, "", client.ErrInvalid, "applicationUuid"},
	})
}

// limitedServer serves the API as apitest.Server does, and enforces rate
// limits, which apitest's API does not; it returns the base URL.
func limitedServer(t *testing.T) string {
	t.Helper()
	st := store.New(storetest.Client(t), storetest.NewTables(t), store.WithLimitsTTL(0))
	api := httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("api tests"), DeleteAllBudget: apitest.Budget,
		RequestBudget: apitest.Budget, Logger: apitest.Logger(t), Limiter: ratelimit.New(st, time.Now),
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRateLimitsEnforced sends requests over the limits an app and a
// user's override set, against the API with its limiter and a real
// engine: a client allowed no retries sees the 429s, which did nothing;
// one allowed the default retries waits its turn and gets through.
func TestRateLimitsEnforced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := limitedServer(t)
	admin := newClient(t, url)
	oneASecond := &client.Rate{RequestsPerSecond: 1, Burst: 1}
	for i, tc := range []struct {
		name     string
		limits   client.RateLimits
		override *client.Rate // of the user "bulk"
		senders  []string     // who sends each request, in turn
		// limited: the requests are held to 1 a second (burst 1), and
		// each refusal says detail.
		limited bool
		detail  string
	}{
		{"per caller", client.RateLimits{PerCaller: oneASecond}, nil, []string{"alice", "alice", "alice"}, true,
			"over the caller rate limit of 1 request a second (burst 1); nothing was done"},
		{"per caller, each caller apart", client.RateLimits{PerCaller: oneASecond}, nil, []string{"alice", "bob", "carol"}, false, ""},
		{"per app, across callers", client.RateLimits{PerApp: oneASecond}, nil, []string{"alice", "bob", "carol"}, true,
			"over the app rate limit of 1 request a second (burst 1); nothing was done"},
		{"lifted by a user's override", client.RateLimits{PerCaller: oneASecond}, &client.Rate{RequestsPerSecond: -1}, []string{"bulk", "bulk", "bulk"}, false, ""},
		{"set by a user's override", client.RateLimits{}, oneASecond, []string{"bulk", "bulk", "bulk"}, true,
			"over the caller rate limit of 1 request a second (burst 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			app := fmt.Sprintf("9b2f7a10-3c4d-4e5f-8a6b-%012d", i)
			if _, err := admin.SetAppRateLimits(ctx, app, tc.limits); err != nil {
				t.Fatal(err)
			}
			if tc.override != nil {
				if _, err := admin.SetUserRateLimits(ctx, app, "bulk", *tc.override); err != nil {
					t.Fatal(err)
				}
			}
			passed, callers := 0, map[string]bool{}
			start := time.Now()
			for n, subject := range tc.senders {
				callers[subject] = true
				_, err := newClient(t, url, client.WithSubject(subject), client.WithRetries(0, 0)).Create(ctx, client.Key{App: app, Namespace: "n", ID: fmt.Sprint(n)}, n)
				var apiErr *client.APIError
				switch {
				case err == nil:
					passed++
				case !tc.limited:
					t.Errorf("request %d of %s: %v, want no limit", n, subject, err)
				case !errors.Is(err, client.ErrRateLimited) || !errors.Is(err, client.ErrThrottled) || !errors.As(err, &apiErr):
					t.Errorf("request %d of %s: %v, want ErrRateLimited", n, subject, err)
				case apiErr.RetryAfter != time.Second || apiErr.Attempts != 1 || !strings.Contains(apiErr.Details, tc.detail):
					t.Errorf("request %d of %s: Retry-After %v after %d attempts, %q; want 1s, 1 attempt and %q", n, subject, apiErr.RetryAfter, apiErr.Attempts, apiErr.Details, tc.detail)
				}
			}
			// At 1 a second with a burst of 1, one request passes at
			// once and one more each second after it.
			if elapsed := time.Since(start); tc.limited && (passed < 1 || passed > 1+int(elapsed/time.Second)) {
				t.Errorf("%d of %d requests passed in %v, want 1 and one a second after it", passed, len(tc.senders), elapsed)
			}
			// A refused create stored nothing.
			stored := int64(0)
			for subject := range callers {
				q, err := admin.UserQuota(ctx, app, subject)
				if err != nil {
					t.Fatal(err)
				}
				stored += q.UsedItems
			}
			if stored != int64(passed) {
				t.Errorf("%d items stored, want the %d created", stored, passed)
			}
		})
	}
	t.Run("the client waits its turn", func(t *testing.T) {
		t.Parallel()
		app := "9b2f7a10-3c4d-4e5f-8a6b-0000000000ff"
		if _, err := admin.SetAppRateLimits(ctx, app, client.RateLimits{PerCaller: oneASecond}); err != nil {
			t.Fatal(err)
		}
		c := newClient(t, url, client.WithSubject("alice"))
		start := time.Now()
		for n := range 3 {
			if _, err := c.Create(ctx, client.Key{App: app, Namespace: "n", ID: fmt.Sprint(n)}, n); err != nil {
				t.Fatalf("create %d: %v", n, err)
			}
		}
		// Three requests at 1 a second with a burst of 1 span 2 seconds.
		if elapsed := time.Since(start); elapsed < 2*time.Second {
			t.Errorf("3 creates in %v, faster than the limit lets through", elapsed)
		}
	})
}

// answered answers as ok does, and a batch with one result.
var answered = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/batch") {
		_, _ = w.Write([]byte(`{"results":[{"status":204}]}`))
		return
	}
	ok.ServeHTTP(w, r)
})

// TestRateLimitedRetries checks, against a fake server, that a request
// refused by a rate limit is sent again whatever its method (nothing was
// done), until the bounds of attempts and of the pauses in total, and
// that the call then returns the refusal.
func TestRateLimitedRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := client.Key{App: app, Namespace: "n", ID: "i"}
	list := client.Key{App: app, Namespace: "n", ID: "list"}
	for _, tc := range []struct {
		name string
		call func(*client.Client) error
	}{
		{"GET", func(c *client.Client) error { _, err := c.Get(ctx, key); return err }},
		{"POST", func(c *client.Client) error { _, err := c.Create(ctx, key, 1); return err }},
		{"PUT without If-Match", func(c *client.Client) error { _, err := c.Update(ctx, key, 1); return err }},
		{"restore without If-Match", func(c *client.Client) error { _, err := c.Restore(ctx, key, 1); return err }},
		{"DELETE", func(c *client.Client) error { return c.Delete(ctx, key) }},
		{"a batch", func(c *client.Client) error {
			_, err := c.Batch(ctx, app, true, []client.BatchOp{{Method: "DELETE", Key: key}})
			return err
		}},
		{"a list page", func(c *client.Client) error { _, err := c.ListPage(ctx, list, client.ListQuery{}, ""); return err }},
		{"a query page", func(c *client.Client) error {
			_, err := c.QueryPage(ctx, app, "n", client.IndexQuery{Index: "byStatus", Eq: "open"}, "")
			return err
		}},
		{"a list's delete", func(c *client.Client) error { _, err := c.DeleteList(ctx, list); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &flaky{failures: 2, status: http.StatusTooManyRequests, code: "rate_limited", message: "Too many requests", next: answered}
			srv := httptest.NewServer(f)
			defer srv.Close()
			if err := tc.call(newClient(t, srv.URL)); err != nil || f.calls.Load() != 3 {
				t.Errorf("after two 429s: %v after %d requests, want success after 3", err, f.calls.Load())
			}
			// Refused every time: the call gives up after the attempts
			// WithRetries allows (4 retries, so 5), a list's delete too
			// (its rounds do not retry what each round's request did).
			f = &flaky{failures: 1000, status: http.StatusTooManyRequests, code: "rate_limited", message: "Too many requests", next: answered}
			srv = httptest.NewServer(f)
			defer srv.Close()
			err := tc.call(newClient(t, srv.URL))
			var apiErr *client.APIError
			if !errors.Is(err, client.ErrRateLimited) || !errors.As(err, &apiErr) || apiErr.Attempts != 5 || f.calls.Load() != 5 ||
				!strings.Contains(err.Error(), "(sent 5 times over ") {
				t.Errorf("refused every time: %v after %d requests, want ErrRateLimited after 5", err, f.calls.Load())
			}
		})
	}
	t.Run("bounded by the pauses in total", func(t *testing.T) {
		for _, tc := range []struct {
			name, retryAfter string
			maxWait          time.Duration
			calls            int32
			min, max         time.Duration // the call's time; the upper bound leaves a loaded machine room
		}{
			// The first pause (1 s and up to half again) fits in 1.6 s,
			// a second one would not.
			{"two pauses past the bound", "1", 1600 * time.Millisecond, 2, time.Second, 10 * time.Second},
			{"a Retry-After past the bound", "3600", time.Minute, 1, 0, 10 * time.Second},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				f := &flaky{failures: 1000, status: http.StatusTooManyRequests, retryAfter: tc.retryAfter, code: "rate_limited", message: "Too many requests", next: answered}
				srv := httptest.NewServer(f)
				defer srv.Close()
				start := time.Now()
				_, err := newClient(t, srv.URL, client.WithMaxRetryWait(tc.maxWait)).Get(ctx, key)
				elapsed := time.Since(start)
				var apiErr *client.APIError
				if !errors.As(err, &apiErr) || !errors.Is(err, client.ErrRateLimited) || f.calls.Load() != tc.calls || apiErr.Attempts != int(tc.calls) ||
					apiErr.Waited > tc.maxWait || elapsed < tc.min || elapsed > tc.max {
					t.Errorf("%v after %d requests in %v; want ErrRateLimited after %d in %v to %v", err, f.calls.Load(), elapsed, tc.calls, tc.min, tc.max)
				}
			})
		}
	})
}
