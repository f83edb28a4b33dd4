package httpapi_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

func TestBadInputIsRefusedAndWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	kv := base + "/ns/existing"
	li := base + "/ns/list/existing"
	e.do("POST", kv, `{"data":{"v":1}}`).expect(t, 201)
	e.do("POST", li, `{"data":{"v":1}}`).expect(t, 201)

	longID := strings.Repeat("i", 2100)
	longSort := strings.Repeat("s", 1025)
	longNamespace := strings.Repeat("n", 1025)
	huge := `{"data":"` + strings.Repeat("a", 1<<20) + `"}`
	noise := make([]byte, 450_000)
	_, _ = rand.Read(noise)
	incompressible := `{"data":"` + base64.StdEncoding.EncodeToString(noise) + `"}`
	const good = `{"data":{"ok":true}}`

	for _, tc := range []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		error                    string // expected "error" field; "" skips the check
	}{
		// Path.
		{"app not a UUID", "POST", "/rest/api/v1/data/not-a-uuid/ns/new", good, nil, 400, "Invalid applicationUuid"},
		{"app UUID too short", "POST", "/rest/api/v1/data/d53065bd-f932-4841-83fb-849717d8df0/ns/new", good, nil, 400, "Invalid applicationUuid"},
		{"app UUID with braces", "POST", "/rest/api/v1/data/{d53065bd-f932-4841-83fb-849717d8df0f}/ns/new", good, nil, 400, "Invalid applicationUuid"},
		{"namespace with the key delimiter", "POST", base + "/a%7Cb/new", good, nil, 400, "Invalid namespace"},
		{"id with the key delimiter", "POST", base + "/ns/a|b", good, nil, 400, "Invalid id"},
		{"namespace with an encoded slash", "POST", base + "/a%2Fb/new", good, nil, 400, "Invalid namespace"},
		{"id with a control character", "POST", base + "/ns/a%01b", good, nil, 400, "Invalid id"},
		{"namespace with a newline", "POST", base + "/a%0Ab/new", good, nil, 400, "Invalid namespace"},
		{"id not UTF-8", "POST", base + "/ns/%ff%fe", good, nil, 400, "Invalid id"},
		{"empty namespace", "POST", base + "//new", good, nil, 400, "Invalid namespace"},
		{"data key over 2048 bytes", "POST", base + "/ns/" + longID, good, nil, 400, "Invalid id"},
		{"sort key over 1024 bytes", "POST", base + "/ns/list/" + longSort, good, nil, 400, "Invalid sortKey"},
		// A namespace is the sort key of its policy's record.
		{"namespace over 1024 bytes", "POST", base + "/" + longNamespace + "/new", good, nil, 400, "Invalid namespace"},
		{"namespace over 1024 bytes on a read", "GET", base + "/" + longNamespace + "/new", "", nil, 400, "Invalid namespace"},
		{"namespace over 1024 bytes on a list", "GET", base + "/" + longNamespace + "/list", "", nil, 400, "Invalid namespace"},
		{"namespace over 1024 bytes on its policy", "PUT", "/rest/api/v1/admin/apps/" + app + "/namespaces/" + longNamespace, `{"access":"shared"}`, nil, 400, "Invalid namespace"},
		{"sort key with a control character", "POST", base + "/ns/list/a%7Fb", good, nil, 400, "Invalid sortKey"},
		{"empty sort key", "POST", base + "/ns/list//", good, nil, 400, "Invalid sortKey"},
		{"reserved sort key on POST", "POST", base + "/ns/list/list", good, nil, 400, "Invalid sortKey"},
		{"reserved sort key on PUT", "PUT", base + "/ns/list/list/", good, nil, 400, "Invalid sortKey"},
		{"sort key ending with a slash", "POST", base + "/ns/list/z//", good, nil, 400, "Invalid sortKey"},
		{"sort key ending with an encoded slash", "GET", base + "/ns/list/z%2F", "", nil, 400, "Invalid sortKey"},
		{"unknown route", "POST", "/rest/api/v1/data/" + app, good, nil, 404, "Route not found"},
		{"unknown method", "TRACE", kv, good, nil, 405, "Method not allowed"},
		{"unknown method on a list", "TRACE", base + "/ns/list/list", good, nil, 405, "Method not allowed"},
		{"reserved sort key on PATCH", "PATCH", base + "/ns/list/list", good, nil, 400, "Invalid sortKey"},
		// Body.
		{"empty body", "POST", base + "/ns/new", "", nil, 400, "Invalid body"},
		{"not JSON", "POST", base + "/ns/new", "data=1", nil, 400, "Invalid body"},
		{"truncated JSON", "POST", base + "/ns/new", `{"data":{"a":`, nil, 400, "Invalid body"},
		{"array body", "POST", base + "/ns/new", `[1,2]`, nil, 400, "Invalid body"},
		{"no data field", "POST", base + "/ns/new", `{"className":"x"}`, nil, 400, "Invalid data"},
		{"null data", "POST", base + "/ns/new", `{"data":null}`, nil, 400, "Invalid data"},
		{"unknown field", "POST", base + "/ns/new", `{"data":1,"createdBySubject":"mallory"}`, nil, 400, "Invalid body"},
		{"member name in another case", "POST", base + "/ns/new", `{"Data":1}`, nil, 400, "Invalid body"},
		{"member names in another case beside the right one", "POST", base + "/ns/new", `{"data":1,"DATA":2}`, nil, 400, "Invalid body"},
		{"ttl in capitals", "POST", base + "/ns/new", `{"data":1,"TTL":60}`, nil, 400, "Invalid body"},
		{"repeated member", "POST", base + "/ns/new", `{"data":1,"data":2}`, nil, 400, "Invalid body"},
		{"repeated member inside data", "POST", base + "/ns/new", `{"data":{"n":99,"n":1}}`, nil, 400, "Invalid body"},
		{"repeated member deep inside data", "PUT", kv, `{"data":[{"a":{"b":1,"c":{},"b":2}}]}`, nil, 400, "Invalid body"},
		{"repeated member spelled with an escape", "POST", base + "/ns/new", `{"data":{"n":1,"\u006e":2}}`, nil, 400, "Invalid body"},
		{"className not a string", "POST", base + "/ns/new", `{"data":1,"className":5}`, nil, 400, "Invalid body"},
		{"className with a control character", "POST", base + "/ns/new", `{"data":1,"className":"a\u0000b"}`, nil, 400, "Invalid className"},
		{"trailing content", "POST", base + "/ns/new", `{"data":1} {"data":2}`, nil, 400, "Invalid body"},
		{"invalid UTF-8", "POST", base + "/ns/new", "{\"data\":\"\xff\"}", nil, 400, "Invalid body"},
		{"data over 1 MiB", "POST", base + "/ns/new", huge, nil, 413, "Payload too large"},
		{"incompressible data over the item limit", "POST", base + "/ns/new", incompressible, nil, 413, "Payload too large"},
		{"body over 2 MiB", "POST", base + "/ns/new", `{"data":"` + strings.Repeat("a", 2<<20) + `"}`, nil, 413, "Payload too large"},
		{"PUT with null data", "PUT", kv, `{"data":null}`, nil, 400, "Invalid data"},
		{"PUT list item with bad body", "PUT", li, `{"data":}`, nil, 400, "Invalid body"},
		// Headers.
		{"If-Match not quoted", "PUT", kv, good, []string{"If-Match", "1-abc"}, 400, "Invalid If-Match"},
		{"If-Match empty", "PUT", kv, good, []string{"If-Match", " "}, 400, "Invalid If-Match"},
		{"If-Match stale", "PUT", kv, good, []string{"If-Match", `"99-xyz"`}, 412, "Precondition failed"},
		{"If-Match weak", "PUT", kv, good, []string{"If-Match", `W/"1-abc"`}, 412, "Precondition failed"},
		{"If-Match on DELETE stale", "DELETE", li, "", []string{"If-Match", `"7-abc"`}, 412, "Precondition failed"},
		// A write's condition is If-Match: the others, ignored, would let
		// through a write their client meant to stop.
		{"If-None-Match on PUT", "PUT", kv, good, []string{"If-None-Match", "*"}, 400, "Invalid If-None-Match"},
		{"If-None-Match on DELETE", "DELETE", li, "", []string{"If-None-Match", "*"}, 400, "Invalid If-None-Match"},
		{"If-Unmodified-Since on PUT", "PUT", kv, good, []string{"If-Unmodified-Since", "Sat, 01 Jan 2000 00:00:00 GMT"}, 400, "Invalid If-Unmodified-Since"},
		{"If-None-Match on a restore", "POST", kv + "?restore=1", "", []string{"If-None-Match", "*"}, 400, "Invalid If-None-Match"},
		{"If-Match on a list's delete-all", "DELETE", base + "/ns/list/list", "", []string{"If-Match", `"1-abc"`}, 400, "Invalid If-Match"},
		{"If-None-Match on a list's delete-all", "DELETE", base + "/ns/list/list", "", []string{"If-None-Match", "*"}, 400, "Invalid If-None-Match"},
		{"If-None-Match on DELETE ?history", "DELETE", kv + "?history", "", []string{"If-None-Match", "*"}, 400, "Invalid If-None-Match"},
		{"If-None-Match malformed", "GET", kv, "", []string{"If-None-Match", "abc"}, 400, "Invalid If-None-Match"},
		// Two subjects that differ only in bytes that are not UTF-8 would
		// share one owner record and key space once stored.
		{"subject not valid UTF-8", "POST", base + "/ns/new", good, []string{"X-Uds-Subject", "al\xffce"}, 401, "Unauthenticated"},
		// Query.
		{"limit zero", "GET", base + "/ns/list/list?limit=0", "", nil, 400, "Invalid limit"},
		{"limit over 1000", "GET", base + "/ns/list/list?limit=1001", "", nil, 400, "Invalid limit"},
		{"limit not a number", "GET", base + "/ns/list/list?limit=ten", "", nil, 400, "Invalid limit"},
		{"limit negative", "GET", base + "/ns/list/list?limit=-5", "", nil, 400, "Invalid limit"},
		{"limit repeated", "GET", base + "/ns/list/list?limit=5&limit=6", "", nil, 400, "Invalid limit"},
		{"sortOrder unknown", "GET", base + "/ns/list/list?sortOrder=sideways", "", nil, 400, "Invalid sortOrder"},
		{"startKey with a control character", "GET", base + "/ns/list/list?startKey=%01", "", nil, 400, "Invalid startKey"},
		{"endKey too long", "GET", base + "/ns/list/list?endKey=" + longSort, "", nil, 400, "Invalid endKey"},
		{"malformed query encoding", "GET", base + "/ns/list/list?limit=%zz", "", nil, 400, "Invalid query"},
		{"misspelt query parameter", "GET", base + "/ns/list/list?limt=5", "", nil, 400, "Invalid query"},
		{"query parameter in another case", "GET", base + "/ns/list/list?Limit=5", "", nil, 400, "Invalid query"},
		{"query parameter on a route that takes none", "PUT", kv + "?ttl=60", good, nil, 400, "Invalid query"},
		{"forged cursor", "GET", base + "/ns/list/list?cursor=abc.def", "", nil, 400, "Invalid cursor"},
		{"bad app on delete-all", "DELETE", "/rest/api/v1/data/nope/ns/list/list", "", nil, 400, "Invalid applicationUuid"},
		// null is no object: read as one, it set no limit, clearing them.
		{"null limits", "PUT", admin + "/apps/" + app + "/quota", "null", nil, 400, "Invalid body"},
		{"null rate limits", "PUT", admin + "/apps/" + app + "/rate-limits", "null", nil, 400, "Invalid body"},
		{"null write", "POST", base + "/ns/null-body", "null", nil, 400, "Invalid body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.body, tc.headers...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d; body %.300s", r.status, tc.status, r.raw)
			}
			if r.body == nil || r.body["timestamp"] == nil {
				t.Fatalf("error body lacks a timestamp: %.300s", r.raw)
			}
			if want := map[int]string{400: "invalid", 401: "unauthenticated", 404: "not_found", 405: "method_not_allowed", 412: "precondition_failed", 413: "too_large"}[tc.status]; r.body["code"] != want {
				t.Errorf("code %v, want %q: %.300s", r.body["code"], want, r.raw)
			}
			if tc.error != "" && r.body["error"] != tc.error {
				t.Errorf("error %q, want %q (details %q)", r.body["error"], tc.error, r.body["details"])
			}
			if tc.status == 400 && tc.error != "" && tc.error != "Route not found" && r.body["details"] == nil {
				t.Errorf("400 without details: %s", r.raw)
			}
		})
	}
	// Nothing was written: each table still holds its one item, unchanged.
	if n := e.count(e.tables.Data); n != 1 {
		t.Errorf("data table holds %d items, want 1", n)
	}
	if n := e.count(e.tables.List); n != 1 {
		t.Errorf("list table holds %d items, want 1", n)
	}
	for _, p := range []string{kv, li} {
		if r := e.do("GET", p, "").expect(t, 200); string(mustField(t, r.raw, "data")) != `{"v":1}` || r.body["version"] != json.Number("1") {
			t.Errorf("%s changed: %s", p, r.raw)
		}
	}
}
