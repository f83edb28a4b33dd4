package httpapi_test

import (
	"strings"
	"testing"
)

// TestNotFoundNamesTheNearestRoute checks the 404 of an unknown route: it
// names the served route nearest to the request, and repeats at most a
// bounded part of the client's path.
func TestNotFoundNamesTheNearestRoute(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name, method, path string
		details            string
	}{
		{"a misspelt route", "GET", adminApps + "/quotas",
			"GET " + adminApps + "/quotas is not a UDS route; did you mean GET /rest/api/v1/admin/apps/{applicationUuid}/quota?"},
		{"the seed's doubled rest", "POST", "/rest/rest/api/v1/data/" + app + "/prefs/u1",
			"POST /rest/rest/api/v1/data/" + app + "/prefs/u1 is not a UDS route; did you mean POST /rest/api/v1/data/{applicationUuid}/{namespace}/{id}?"},
		{"nothing near", "GET", "/favicon.ico",
			"GET /favicon.ico is not a UDS route"},
		{"a long path, cut", "GET", "/rest/api/v1/admin/apps/" + app + "/" + long,
			"GET " + ("/rest/api/v1/admin/apps/" + app + "/" + long)[:200] + "… is not a UDS route; did you mean GET /rest/api/v1/admin/apps/{applicationUuid}/users?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, "").expect(t, 404)
			if r.body["error"] != "Route not found" || r.body["details"] != tc.details {
				t.Errorf("error %q, details %q; want Route not found, %q", r.body["error"], r.body["details"], tc.details)
			}
		})
	}
}
