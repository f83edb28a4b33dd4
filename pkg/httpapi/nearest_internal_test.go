package httpapi

import (
	"strings"
	"testing"
)

func TestNearestRoute(t *testing.T) {
	const app = "d53065bd-f932-4841-83fb-849717d8df0f"
	for _, tc := range []struct {
		name, method, path string
		groups             Group
		want               string
	}{
		{"a letter too many", "GET", "/rest/api/v1/admin/apps/" + app + "/quotas", GroupAll,
			"GET /rest/api/v1/admin/apps/{applicationUuid}/quota"},
		{"HEAD weighed as GET", "HEAD", "/rest/api/v1/admin/apps/" + app + "/quotas/", GroupAll,
			"GET /rest/api/v1/admin/apps/{applicationUuid}/quota"},
		{"a namespace's query is a route", "GET", "/rest/api/v1/data/" + app + "/quotas", GroupAll,
			"GET /rest/api/v1/data/{applicationUuid}/{namespace}"},
		{"the seed's doubled rest", "PUT", "/rest/rest/api/v1/data/" + app + "/prefs/u1", GroupAll,
			"PUT /rest/api/v1/data/{applicationUuid}/{namespace}/{id}"},
		{"a base path segment missing", "DELETE", "/api/v1/data/" + app + "/feed/u1/list", GroupAll,
			"DELETE /rest/api/v1/data/{applicationUuid}/{namespace}/{id}/list"},
		{"a misspelt admin segment", "GET", "/rest/api/v1/admin/apps/" + app + "/user", GroupAll,
			"GET /rest/api/v1/admin/apps/{applicationUuid}/users"},
		{"a singular collection", "PUT", "/rest/api/v1/admin/app/" + app + "/quota", GroupAll,
			"PUT /rest/api/v1/admin/apps/{applicationUuid}/quota"},
		{"another method: the route's own", "GET", "/rest/api/v1/admin/apps/" + app + "/users/alice/quota/recomputes", GroupAll,
			"POST /rest/api/v1/admin/apps/{applicationUuid}/users/{user}/quota/recompute"},
		{"the request's method first", "POST", "/rest/api/v1/data/" + app, GroupAll,
			"POST /rest/api/v1/data/{applicationUuid}/batch"},
		{"only the function's routes", "GET", "/rest/api/v1/data/" + app + "/quotas", GroupAdmin, ""},
		{"the admin function's own", "GET", "/rest/api/v1/admin/apps/" + app + "/namespace", GroupAdmin,
			"GET /rest/api/v1/admin/apps/{applicationUuid}/namespaces"},
		{"nothing near", "GET", "/favicon.ico", GroupAll, ""},
		{"the root", "GET", "/", GroupAll, ""},
		{"a tie: the first route of the table", "PATCH", "/rest/api/v1/data/" + app, GroupAll,
			"GET /rest/api/v1/data/{applicationUuid}/quota"},
		{"a wrong segment and one missing", "GET", "/rest/api/v1/items/" + app, GroupAll, ""},
		{"more segments than any route", "GET", "/rest/api/v1/admin" + strings.Repeat("/x", 20), GroupAll, ""},
		{"a long segment, as wrong as any", "GET", "/rest/api/v1/admin/apps/" + app + "/" + strings.Repeat("users", 1000), GroupAll,
			"GET /rest/api/v1/admin/apps/{applicationUuid}/users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nearestRoute(tc.groups, tc.method, tc.path); got != tc.want {
				t.Errorf("nearestRoute(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
			}
		})
	}
}

func TestSegmentDistance(t *testing.T) {
	const app = "d53065bd-f932-4841-83fb-849717d8df0f"
	for _, tc := range []struct {
		name          string
		pattern, path string
		want          float64
	}{
		{"the same", "a/{x}/b", "a/anything/b", 0},
		{"a segment missing", "a/{x}/b", "a/b", 1},
		{"a segment extra", "a/b", "a/x/b", 1},
		{"a letter off", "data/quota", "data/quotas", 1.0 / 6},
		{"two letters of five off", "data/quota", "data/quo", 0.4},
		{"three letters of five off", "data/quota", "data/qu", 1},
		{"nothing alike", "data/quota", "data/zzzzz", 1},
		{"an app", "data/{applicationUuid}", "data/" + app, 0},
		{"not an app", "data/{applicationUuid}", "data/apps", 1},
		{"the rest of the path, one segment", "a/{k...}", "a/b", 0},
		{"the rest of the path, several", "a/{k...}", "a/b/c/d", 0},
		{"the rest of the path, none", "a/{k...}", "a", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs := strings.Split(tc.path, "/")
			apps := make([]bool, len(segs))
			for j, s := range segs {
				apps[j] = s == app
			}
			got := segmentDistance(strings.Split(tc.pattern, "/"), segs, apps)
			if diff := got - tc.want; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("segmentDistance(%s, %s) = %v, want %v", tc.pattern, tc.path, got, tc.want)
			}
		})
	}
}
