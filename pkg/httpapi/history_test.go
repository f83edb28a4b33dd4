package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store"
)

// newHistoryEnv is newEnv whose namespaces named in policies have those
// policies, set through the admin routes.
func newHistoryEnv(t *testing.T, policies map[string]string) *env {
	t.Helper()
	e := newEnv(t)
	for ns, body := range policies {
		e.setPolicy(t, ns, body)
	}
	return e
}

// historyEntry is one entry of a GET ?history answer.
type historyEntry struct {
	Version          int64  `json:"version"`
	UpdatedDate      string `json:"updatedDate"`
	UpdatedBySubject string `json:"updatedBySubject"`
	Size             *int64 `json:"size"`
	Deleted          bool   `json:"deleted"`
	Current          bool   `json:"current"`
}

// historyAnswer decodes a GET ?history answer, checking that every entry
// has its size.
func historyAnswer(t *testing.T, r response) (entries []historyEntry, cursor string) {
	t.Helper()
	var page struct {
		Versions []historyEntry `json:"versions"`
		Cursor   string         `json:"cursor"`
	}
	dec := json.NewDecoder(strings.NewReader(string(r.raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&page); err != nil || page.Versions == nil {
		t.Fatalf("history answer %s: %v", r.raw, err)
	}
	for _, v := range page.Versions {
		if v.Size == nil {
			t.Fatalf("history entry without size: %s", r.raw)
		}
	}
	return page.Versions, page.Cursor
}

// versionList renders history entries as "3* 2x 1": the current entry
// marked *, delete markers x.
func versionList(entries []historyEntry) string {
	var b strings.Builder
	for i, v := range entries {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, v.Version)
		if v.Deleted {
			b.WriteByte('x')
		}
		if v.Current {
			b.WriteByte('*')
		}
	}
	return b.String()
}

// history is an item's whole history, in one page, as versionList renders
// it.
func (e *env) history(t *testing.T, path string, headers ...string) string {
	t.Helper()
	entries, cursor := historyAnswer(t, e.do("GET", path+"?history", "", headers...).expect(t, 200))
	if cursor != "" {
		t.Fatalf("a cursor after %d entries of the default page", len(entries))
	}
	return versionList(entries)
}

// TestHistoryCycle takes an item through its versions on both route
// groups: updates keep versions, which are listed, paged and read back
// with their ETags, restored under If-Match, and restored after a delete;
// a version not kept restores nothing; dropping the history leaves the
// current item alone.
func TestHistoryCycle(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"hist": `{"access":"shared","history":{"versions":10}}`})
	for _, tc := range []struct{ name, path, other string }{
		{"key-value item", base + "/hist/doc", base + "/hist/other"},
		{"list item", base + "/hist/l/2024%2F01", base + "/hist/l/2024%2F02"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.on(t)
			created := e.as("alice", "POST", tc.path, `{"data":{"n":1},"ttl":3600}`).expect(t, 201)
			etag1 := created.header.Get("ETag")
			e.as("bob", "PUT", tc.path, `{"data":{"n":2},"className":"C"}`).expect(t, 200)
			etag3 := e.as("alice", "PUT", tc.path, `{"data":{"n":3}}`).expect(t, 200).header.Get("ETag")

			entries, cursor := historyAnswer(t, e.do("GET", tc.path+"?history", "").expect(t, 200))
			if got := versionList(entries); got != "3* 2 1" || cursor != "" {
				t.Fatalf("history %q, cursor %q; want 3* 2 1 and none", got, cursor)
			}
			if v := entries[1]; v.UpdatedBySubject != "bob" || v.UpdatedDate == "" || *v.Size <= 0 {
				t.Errorf("version 2 listed as %+v", v)
			}

			// A version reads as the item read at that version, ETag and
			// all, without the expiry of the item it was.
			v1 := e.do("GET", tc.path+"?version=1", "").expect(t, 200)
			if string(mustField(t, v1.raw, "data")) != `{"n":1}` || v1.body["version"] != json.Number("1") ||
				v1.body["expiresAt"] != nil || v1.header.Get("ETag") != etag1 || v1.body["createdBySubject"] != "alice" {
				t.Errorf("version 1 = %s, ETag %s (created with %s)", v1.raw, v1.header.Get("ETag"), etag1)
			}
			e.do("GET", tc.path+"?version=1", "", "If-None-Match", etag1).expect(t, 304)
			e.do("GET", tc.path+"?version=1", "", "If-None-Match", etag3).expect(t, 200)
			if r := e.do("GET", tc.path+"?version=3", "").expect(t, 200); r.header.Get("ETag") != etag3 {
				t.Errorf("the current version read with ETag %s, the item's is %s", r.header.Get("ETag"), etag3)
			}
			if r := e.do("HEAD", tc.path+"?version=2", "").expect(t, 200); r.header.Get("ETag") == "" || len(r.raw) != 0 {
				t.Errorf("HEAD of a version: ETag %q, %d bytes of body", r.header.Get("ETag"), len(r.raw))
			}
			if r := e.do("GET", tc.path+"?version=7", "").expect(t, 404); !strings.Contains(fmt.Sprint(r.body["details"]), "version 7") {
				t.Errorf("404 of a version not kept: %s", r.raw)
			}

			// Pages of two, the cursor bound to this item's history.
			entries, cursor = historyAnswer(t, e.do("GET", tc.path+"?history&limit=2", "").expect(t, 200))
			if got := versionList(entries); got != "3* 2" || cursor == "" {
				t.Fatalf("first page %q, cursor %q", got, cursor)
			}
			e.do("GET", tc.other+"?history&cursor="+url.QueryEscape(cursor), "").expect(t, 400)
			entries, last := historyAnswer(t, e.do("GET", tc.path+"?history&limit=2&cursor="+url.QueryEscape(cursor), "").expect(t, 200))
			if got := versionList(entries); got != "1" || last != "" {
				t.Fatalf("second page %q, cursor %q", got, last)
			}

			// A restore is an update under If-Match, which keeps the
			// version it replaces.
			e.as("carol", "POST", tc.path+"?restore=1", "", "If-Match", etag1).expect(t, 412)
			if got := e.history(t, tc.path); got != "3* 2 1" {
				t.Fatalf("a refused restore left the history %q", got)
			}
			r := e.as("carol", "POST", tc.path+"?restore=1", "", "If-Match", etag3).expect(t, 200)
			if string(mustField(t, r.raw, "data")) != `{"n":1}` || r.body["version"] != json.Number("4") || r.body["className"] != nil ||
				r.body["expiresAt"] != nil || r.body["updatedBySubject"] != "carol" || r.body["createdBySubject"] != "alice" ||
				r.header.Get("ETag") == "" || r.header.Get("Location") != "" {
				t.Errorf("restore of version 1 answered %s, headers %v", r.raw, r.header)
			}
			r = e.as("carol", "POST", tc.path+"?restore=2", "").expect(t, 200)
			if string(mustField(t, r.raw, "data")) != `{"n":2}` || r.body["version"] != json.Number("5") || r.body["className"] != "C" {
				t.Errorf("restore of version 2 answered %s", r.raw)
			}
			if got := e.history(t, tc.path); got != "5* 4 3 2 1" {
				t.Errorf("history after two restores %q", got)
			}

			// A version not kept restores nothing; nor does a restore
			// with a body.
			if r := e.do("POST", tc.path+"?restore=99", "").expect(t, 404); !strings.Contains(fmt.Sprint(r.body["details"]), "version 99") {
				t.Errorf("restore of a version not kept: %s", r.raw)
			}
			if r := e.do("POST", tc.path+"?restore=1", `{"data":1}`).expect(t, 400); r.body["error"] != "Invalid body" {
				t.Errorf("restore with a body: %s", r.raw)
			}
			if got := e.do("GET", tc.path, "").expect(t, 200).body["version"]; got != json.Number("5") {
				t.Errorf("refused restores moved the item to version %v", got)
			}

			// After a delete the history stays, led by the delete marker;
			// a restore without If-Match creates the item again, with the
			// number after the marker's.
			e.do("DELETE", tc.path, "").expect(t, 204)
			e.do("GET", tc.path, "").expect(t, 404)
			if got := e.history(t, tc.path); got != "6x* 5 4 3 2 1" {
				t.Errorf("history after the delete %q", got)
			}
			e.do("GET", tc.path+"?version=5", "").expect(t, 200)
			e.do("GET", tc.path+"?version=6", "").expect(t, 404) // a delete marker has no data
			e.do("POST", tc.path+"?restore=5", "", "If-Match", "*").expect(t, 404)
			r = e.as("dave", "POST", tc.path+"?restore=5", "").expect(t, 201)
			if string(mustField(t, r.raw, "data")) != `{"n":2}` || r.body["version"] != json.Number("7") || r.body["createdBySubject"] != "dave" ||
				r.header.Get("Location") == "" || r.header.Get("ETag") == "" {
				t.Errorf("restore after the delete answered %s, headers %v", r.raw, r.header)
			}

			// Dropping the history leaves the item.
			if r := e.do("DELETE", tc.path+"?history", "").expect(t, 200); r.body["removed"] != json.Number("5") || len(r.body) != 1 {
				t.Errorf("DELETE ?history answered %s, want {\"removed\":5}", r.raw)
			}
			if got := e.history(t, tc.path); got != "7*" {
				t.Errorf("history after the drop %q", got)
			}
			e.do("GET", tc.path+"?version=5", "").expect(t, 404)
			e.do("GET", tc.path, "").expect(t, 200)
			if r := e.do("DELETE", tc.path+"?history", "").expect(t, 200); r.body["removed"] != json.Number("0") {
				t.Errorf("a second drop answered %s", r.raw)
			}
		})
	}
	// Without item or history, there is nothing to list or read.
	e.do("GET", base+"/hist/never?history", "").expect(t, 404)
	e.do("GET", base+"/hist/never?version=1", "").expect(t, 404)
	e.do("POST", base+"/hist/never?restore=1", "").expect(t, 404)
	e.do("GET", base+"/hist/never", "").expect(t, 404)
}

// TestHistoryWithoutPolicy: an item in a namespace that keeps no versions
// lists only itself, and reads and restores its current version.
func TestHistoryWithoutPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := base + "/plain/doc"
	e.do("POST", path, `{"data":1}`).expect(t, 201)
	e.do("PUT", path, `{"data":2}`).expect(t, 200)
	if got := e.history(t, path); got != "2*" {
		t.Errorf("history %q, want 2*", got)
	}
	e.do("GET", path+"?version=1", "").expect(t, 404)
	if r := e.do("POST", path+"?restore=2", "").expect(t, 200); r.body["version"] != json.Number("3") {
		t.Errorf("restore of the current version answered %s", r.raw)
	}
	if r := e.do("DELETE", path+"?history", "").expect(t, 200); r.body["removed"] != json.Number("0") {
		t.Errorf("DELETE ?history answered %s", r.raw)
	}
}

// TestHistoryRefusals: the history parameters are checked per method, and
// what is not a version number, a limit or a cursor is a 400 naming it.
func TestHistoryRefusals(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"hist": `{"access":"shared","history":{"versions":3}}`})
	path := base + "/hist/doc"
	etag := e.do("POST", path, `{"data":1}`).expect(t, 201).header.Get("ETag")
	e.do("PUT", path, `{"data":2}`).expect(t, 200)
	for _, tc := range []struct {
		name, method, query, error string
		headers                    []string
	}{
		{"a version that is not a number", "GET", "version=latest", "Invalid version", nil},
		{"a version with a leading zero", "GET", "version=01", "Invalid version", nil},
		{"a version with a sign", "GET", "version=%2B1", "Invalid version", nil},
		{"a negative version", "GET", "version=-1", "Invalid version", nil},
		{"a version past the largest", "GET", "version=9007199254740992", "Invalid version", nil},
		{"an empty version", "GET", "version=", "Invalid version", nil},
		{"a version given twice", "GET", "version=1&version=1", "Invalid version", nil},
		{"history with a value", "GET", "history=1", "Invalid history", nil},
		{"history with version", "GET", "history&version=1", "Invalid version", nil},
		{"a limit of zero", "GET", "history&limit=0", "Invalid limit", nil},
		{"a limit past the largest", "GET", "history&limit=1001", "Invalid limit", nil},
		{"a forged cursor", "GET", "history&cursor=abc.def", "Invalid cursor", nil},
		{"a limit without history", "GET", "limit=5", "Invalid limit", nil},
		{"a cursor without history", "GET", "version=1&cursor=x", "Invalid cursor", nil},
		{"restore on GET", "GET", "restore=1", "Invalid query", nil},
		{"restore on PUT", "PUT", "restore=1", "Invalid query", nil},
		{"version on POST", "POST", "version=1", "Invalid query", nil},
		{"history on POST", "POST", "history", "Invalid query", nil},
		{"an empty restore", "POST", "restore=", "Invalid restore", nil},
		{"a restore that is not a number", "POST", "restore=1.0", "Invalid restore", nil},
		{"a restore with a malformed If-Match", "POST", "restore=1", "Invalid If-Match", []string{"If-Match", "1-x"}},
		{"version on DELETE", "DELETE", "version=1", "Invalid query", nil},
		{"history with a value on DELETE", "DELETE", "history=all", "Invalid history", nil},
		{"history with If-Match on DELETE", "DELETE", "history", "Invalid If-Match", []string{"If-Match", etag}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if tc.method == "PUT" {
				body = `{"data":3}`
			}
			r := e.on(t).do(tc.method, path+"?"+tc.query, body, tc.headers...).expect(t, 400)
			if r.body["error"] != tc.error || r.body["details"] == nil {
				t.Errorf("answered %s, want error %q", r.raw, tc.error)
			}
		})
	}
	// Nothing the refusals carried changed the item or its history.
	if got := e.history(t, path); got != "2* 1" {
		t.Errorf("history %q after the refusals, want 2* 1", got)
	}
}

// TestHistoryOwnerWrite: in an owner-write namespace anyone reads an
// item's history and versions, and only its creator restores them or
// drops them; only the creator of a deleted item's version restores it.
func TestHistoryOwnerWrite(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"posts": `{"access":"owner-write","history":{"versions":5}}`})
	path := base + "/posts/p1"
	e.as("alice", "POST", path, `{"data":{"title":"one"}}`).expect(t, 201)
	e.as("alice", "PUT", path, `{"data":{"title":"two"}}`).expect(t, 200)
	if got := e.history(t, path, "X-Uds-Subject", "bob"); got != "2* 1" {
		t.Errorf("bob reads the history %q", got)
	}
	e.as("bob", "GET", path+"?version=1", "").expect(t, 200)
	for _, tc := range []struct{ name, method, query string }{
		{"restore", "POST", "?restore=1"},
		{"drop", "DELETE", "?history"},
	} {
		t.Run("another caller may not "+tc.name, func(t *testing.T) {
			if r := e.on(t).as("bob", tc.method, path+tc.query, "").expect(t, 403); r.body["error"] != "Forbidden" {
				t.Errorf("answered %s", r.raw)
			}
		})
	}
	e.as("alice", "POST", path+"?restore=1", "").expect(t, 200)
	e.as("alice", "DELETE", path, "").expect(t, 204)
	e.as("bob", "POST", path+"?restore=3", "").expect(t, 403)
	e.as("bob", "DELETE", path+"?history", "").expect(t, 403)
	if got := e.history(t, path); got != "4x* 3 2 1" {
		t.Errorf("history after the refusals %q", got)
	}
	if r := e.as("alice", "POST", path+"?restore=3", "").expect(t, 201); r.body["createdBySubject"] != "alice" {
		t.Errorf("alice's restore answered %s", r.raw)
	}
	e.as("alice", "DELETE", path+"?history", "").expect(t, 200)
}

// TestHistoryOwnerWriteNewCreator: once an item of an owner-write
// namespace is deleted and another caller creates its key again, the
// versions kept of the first item still answer to its creator. The new
// creator reads them, as every caller reads the namespace, but neither
// restores nor drops them; their own versions are theirs to drop. The
// first creator drops theirs, and restores them once the key is free, not
// over the other's item.
func TestHistoryOwnerWriteNewCreator(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"posts": `{"access":"owner-write","history":{"versions":5}}`})
	path := base + "/posts/p1"
	e.as("alice", "POST", path, `{"data":"alice one"}`).expect(t, 201)
	e.as("alice", "PUT", path, `{"data":"alice two"}`).expect(t, 200)
	e.as("alice", "DELETE", path, "").expect(t, 204)
	e.as("bob", "POST", path, `{"data":"bob four"}`).expect(t, 201)
	e.as("bob", "PUT", path, `{"data":"bob five"}`).expect(t, 200)
	if got := e.history(t, path); got != "5* 4 3x 2 1" {
		t.Fatalf("history %q", got)
	}
	e.as("bob", "GET", path+"?version=1", "").expect(t, 200)
	e.as("bob", "POST", path+"?restore=1", "").expect(t, 403)
	e.as("alice", "POST", path+"?restore=1", "").expect(t, 403)
	if r := e.as("bob", "DELETE", path+"?history", "").expect(t, 200); num(t, r.body["removed"]) != 1 {
		t.Errorf("bob's drop answered %s, want his one version dropped", r.raw)
	}
	if got := e.history(t, path); got != "5* 3x 2 1" {
		t.Errorf("history after bob's drop %q, want alice's versions kept", got)
	}
	e.as("bob", "DELETE", path+"?history", "").expect(t, 403)
	e.as("bob", "DELETE", path, "").expect(t, 204)
	if r := e.as("alice", "POST", path+"?restore=1", "").expect(t, 201); r.body["data"] != "alice one" || r.body["createdBySubject"] != "alice" {
		t.Errorf("alice's restore answered %s", r.raw)
	}
	if r := e.as("alice", "DELETE", path+"?history", "").expect(t, 200); num(t, r.body["removed"]) != 2 {
		t.Errorf("alice's drop answered %s, want her two versions dropped", r.raw)
	}
	if got := e.history(t, path); got != "7* 6x 5" {
		t.Errorf("history after alice's drop %q, want bob's last version and delete marker kept", got)
	}
}

// TestHistoryPrivate: in a private namespace each caller's items have
// their own histories, which no other caller lists, reads, restores or
// pages with a cursor of theirs.
func TestHistoryPrivate(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"notes": `{"access":"private","history":{"versions":5}}`})
	path := base + "/notes/todo"
	e.as("alice", "POST", path, `{"data":"milk"}`).expect(t, 201)
	e.as("alice", "PUT", path, `{"data":"milk, eggs"}`).expect(t, 200)
	e.as("alice", "PUT", path, `{"data":"milk, eggs, tea"}`).expect(t, 200)
	if got := e.history(t, path, "X-Uds-Subject", "alice"); got != "3* 2 1" {
		t.Errorf("alice's history %q", got)
	}
	e.as("bob", "GET", path+"?history", "").expect(t, 404)
	e.as("bob", "GET", path+"?version=1", "").expect(t, 404)
	e.as("bob", "POST", path+"?restore=1", "").expect(t, 404)
	if r := e.as("bob", "DELETE", path+"?history", "").expect(t, 200); r.body["removed"] != json.Number("0") {
		t.Errorf("bob dropped %s of alice's history", r.raw)
	}
	e.as("", "GET", path+"?history", "").expect(t, 401)
	_, cursor := historyAnswer(t, e.as("alice", "GET", path+"?history&limit=1", "").expect(t, 200))
	e.as("bob", "GET", path+"?history&cursor="+url.QueryEscape(cursor), "").expect(t, 400)
	e.as("alice", "GET", path+"?history&cursor="+url.QueryEscape(cursor), "").expect(t, 200)
	if r := e.as("alice", "POST", path+"?restore=1", "").expect(t, 200); string(mustField(t, r.raw, "data")) != `"milk"` {
		t.Errorf("alice's restore answered %s", r.raw)
	}
	if got := e.history(t, path, "X-Uds-Subject", "alice"); got != "4* 3 2 1" {
		t.Errorf("alice's history after her restore %q", got)
	}
}

// TestHistoryRestoreMeetsTodaysSchema: a restore is checked against the
// schema in effect, and a version that fails it writes nothing.
func TestHistoryRestoreMeetsTodaysSchema(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"typed": `{"access":"shared","history":{"versions":5}}`})
	path := base + "/typed/doc"
	e.do("POST", path, `{"data":{"note":"no title"}}`).expect(t, 201)
	e.do("PUT", path, `{"data":{"title":"titled"}}`).expect(t, 200)
	e.setPolicy(t, "typed", `{"access":"shared","schema":{"type":"object","required":["title"]},"history":{"versions":5}}`)
	r := e.do("POST", path+"?restore=1", "").expect(t, 422)
	if r.body["error"] != "Schema validation failed" || r.body["violations"] == nil {
		t.Errorf("restore of a version the schema refuses answered %s", r.raw)
	}
	if got := e.history(t, path); got != "2* 1" {
		t.Errorf("history after the refused restore %q", got)
	}
	e.do("POST", path+"?restore=2", "").expect(t, 200)
}

// TestHistoryBytesInUsage: kept versions count in their owner's bytes and
// show apart as historyBytes in every usage answer; dropping them
// releases exactly that; a write that needs room for the version it keeps
// and has none is a 403 whose body shows it.
func TestHistoryBytesInUsage(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"hist": `{"access":"shared","history":{"versions":5}}`})
	path := base + "/hist/doc"
	e.as("alice", "POST", path, `{"data":"one"}`).expect(t, 201)
	e.as("bob", "PUT", path, `{"data":"two, longer"}`).expect(t, 200)
	e.as("bob", "PUT", path, `{"data":"three, longer still"}`).expect(t, 200)
	entries, _ := historyAnswer(t, e.do("GET", path+"?history", "").expect(t, 200))
	current, kept := *entries[0].Size, int64(0)
	for _, v := range entries[1:] {
		kept += *v.Size
	}
	if len(entries) != 3 || kept <= 0 {
		t.Fatalf("history %s", versionList(entries))
	}
	users := admin + "/apps/" + app + "/users"
	for _, tc := range []struct {
		name, method, path, subject string
		fields                      func(r response) (bytes, history any)
	}{
		{"the owner's quota", "GET", users + "/alice/quota", "", func(r response) (any, any) { return r.body["usedBytes"], r.body["historyBytes"] }},
		{"the caller's own quota", "GET", base + "/quota", "alice", func(r response) (any, any) { return r.body["usedBytes"], r.body["historyBytes"] }},
		{"the app's users", "GET", users, "", func(r response) (any, any) { return usageRow(t, r, "users", "user", "alice") }},
		{"the user's apps", "GET", admin + "/users/alice/apps", "", func(r response) (any, any) {
			return usageRow(t, r, "apps", "applicationUuid", app)
		}},
		{"a recompute", "POST", users + "/alice/quota/recompute", "", func(r response) (any, any) {
			if drift := r.body["drift"].(map[string]any); drift["historyBytes"] != json.Number("0") {
				t.Errorf("recompute found a drift: %s", r.raw)
			}
			return r.body["usedBytes"], r.body["historyBytes"]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.on(t).as(tc.subject, tc.method, tc.path, "").expect(t, 200)
			bytes, history := tc.fields(r)
			if num(t, bytes) != current+kept || num(t, history) != kept {
				t.Errorf("answered %s; want bytes %d, historyBytes %d", r.raw, current+kept, kept)
			}
		})
	}
	e.as("alice", "DELETE", path+"?history", "").expect(t, 200)
	r := e.do("GET", users+"/alice/quota", "").expect(t, 200)
	if num(t, r.body["usedBytes"]) != current || num(t, r.body["historyBytes"]) != 0 {
		t.Errorf("after the drop: %s; want bytes %d and no historyBytes", r.raw, current)
	}

	// An update of the same size needs room for the version it keeps. The
	// limit applies once the write path's cache of it lapses.
	e.do("PUT", users+"/alice/quota", fmt.Sprintf(`{"limitBytes": %d}`, current+1)).expect(t, 200)
	e.clock.Advance(store.DefaultLimitsTTL + time.Second)
	r = e.as("alice", "PUT", path, `{"data":"three, longer STILL"}`).expect(t, 403)
	if r.body["error"] != "Quota exceeded" || r.body["historyBytes"] != json.Number("0") || num(t, r.body["usedBytes"]) != current {
		t.Errorf("refused update answered %s", r.raw)
	}
	if got := e.history(t, path); got != "3*" {
		t.Errorf("history after the refused update %q", got)
	}
}

// usageRow returns bytes and historyBytes of the row of a usage listing
// whose key field is want.
func usageRow(t *testing.T, r response, list, key, want string) (bytes, history any) {
	t.Helper()
	rows, _ := r.body[list].([]any)
	for _, row := range rows {
		if m := row.(map[string]any); m[key] == want {
			return m["bytes"], m["historyBytes"]
		}
	}
	t.Fatalf("no row %s in %s", want, r.raw)
	return nil, nil
}

// TestHistoryBatch: batch operations read versions (GET ?version=V) and
// restore them (POST ?restore=V) as their routes do, atomic batches
// included, and nothing else follows ? in an operation's path.
func TestHistoryBatch(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"b": `{"access":"shared","history":{"versions":5}}`})
	etag1 := e.do("POST", base+"/b/a", `{"data":{"n":1}}`).expect(t, 201).header.Get("ETag")
	e.do("PUT", base+"/b/a", `{"data":{"n":2}}`).expect(t, 200)
	e.do("POST", base+"/b/l/s1", `{"data":"x1"}`).expect(t, 201)
	e.do("PUT", base+"/b/l/s1", `{"data":"x2"}`).expect(t, 200)
	quoted := strings.ReplaceAll(etag1, `"`, `\"`)
	rs, _ := e.batch(t, 200, `{"operations":[
		{"method":"GET","path":"b/a?version=1"},
		{"method":"GET","path":"b/a?version=1","ifNoneMatch":"`+quoted+`"},
		{"method":"GET","path":"b/a?version=9"},
		{"method":"GET","path":"b/a"},
		{"method":"POST","path":"b/l/s1?restore=1"},
		{"method":"POST","path":"b/a?restore=1","ifMatch":"\"9-zz\""},
		{"method":"GET","path":"b/l/s1?version=2"},
		{"method":"POST","path":"b/never?restore=1"}
	]}`)
	if want := "[200 304 404 200 200 412 200 404]"; fmt.Sprint(statuses(rs)) != want {
		t.Fatalf("statuses %v, want %s", statuses(rs), want)
	}
	if !strings.Contains(string(rs[0].Body), `"data":{"n":1}`) || rs[0].ETag != etag1 {
		t.Errorf("version read: %s, ETag %s", rs[0].Body, rs[0].ETag)
	}
	if !strings.Contains(string(rs[4].Body), `"data":"x1"`) || !strings.Contains(string(rs[4].Body), `"version":3`) || rs[4].ETag == "" {
		t.Errorf("restore: %+v", rs[4])
	}
	if !strings.Contains(string(rs[6].Body), `"data":"x2"`) {
		t.Errorf("version read of a list item: %s", rs[6].Body)
	}
	if got := e.history(t, base+"/b/l/s1"); got != "3* 2 1" {
		t.Errorf("list item history %q", got)
	}
	if got := e.history(t, base+"/b/a"); got != "2* 1" {
		t.Errorf("the refused restore left the history %q", got)
	}

	e.do("DELETE", base+"/b/a", "").expect(t, 204)
	rs, _ = e.batch(t, 200, `{"operations":[{"method":"POST","path":"b/a?restore=1"}]}`)
	if rs[0].Status != 201 || !strings.Contains(string(rs[0].Body), `"data":{"n":1}`) {
		t.Errorf("restore after a delete: %+v", rs[0])
	}

	// In an atomic batch a restore is an update, or a create of a deleted
	// item, all or none with the batch's other writes.
	e.do("DELETE", base+"/b/l/s1", "").expect(t, 204)
	rs, _ = e.batch(t, 200, `{"atomic":true,"operations":[
		{"method":"POST","path":"b/a?restore=2"},
		{"method":"POST","path":"b/l/s1?restore=1"},
		{"method":"POST","path":"b/n","body":{"data":"new"}}
	]}`)
	if want := "[200 201 201]"; fmt.Sprint(statuses(rs)) != want {
		t.Fatalf("atomic restores: statuses %v, want %s", statuses(rs), want)
	}
	if !strings.Contains(string(rs[0].Body), `"data":{"n":2}`) || !strings.Contains(string(rs[1].Body), `"data":"x1"`) {
		t.Errorf("atomic restores wrote %s and %s", rs[0].Body, rs[1].Body)
	}
	if got := e.history(t, base+"/b/l/s1"); got != "5* 4x 3 2 1" {
		t.Errorf("list item history after an atomic restore %q", got)
	}
	_, r := e.batch(t, 404, `{"atomic":true,"operations":[
		{"method":"POST","path":"b/m","body":{"data":"m"}},
		{"method":"POST","path":"b/a?restore=99"}
	]}`)
	if !strings.Contains(string(r.raw), "99") {
		t.Errorf("a restore of a version not kept in an atomic batch: %s", r.raw)
	}
	e.do("GET", base+"/b/m", "").expect(t, 404)
	// If-Match: * restores an item that exists, as on the route: a
	// deleted one is not created again.
	e.do("DELETE", base+"/b/a", "").expect(t, 204)
	e.batch(t, 404, `{"atomic":true,"operations":[{"method":"POST","path":"b/a?restore=1","ifMatch":"*"}]}`)
	e.do("GET", base+"/b/a", "").expect(t, 404)

	for _, tc := range []struct{ name, ops, field string }{
		{"a version on a PUT", `"operations":[{"method":"PUT","path":"b/a?version=1","body":{"data":1}}]`, "operations[0].path"},
		{"history", `"operations":[{"method":"GET","path":"b/a?history"}]`, "operations[0].path"},
		{"another parameter", `"operations":[{"method":"GET","path":"b/a?version=1&limit=2"}]`, "operations[0].path"},
		{"a version that is not a number", `"operations":[{"method":"GET","path":"b/a"},{"method":"GET","path":"b/a?version=x"}]`, "operations[1].path"},
		{"a restore given twice", `"operations":[{"method":"POST","path":"b/a?restore=1&restore=2"}]`, "operations[0].path"},
		{"a restore with a body", `"operations":[{"method":"POST","path":"b/a?restore=1","body":{"data":1}}]`, "operations[0].body"},
		{"ifMatch on a create", `"operations":[{"method":"POST","path":"b/z","body":{"data":1},"ifMatch":"*"}]`, "operations[0].ifMatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r := e.on(t).batch(t, 400, "{"+tc.ops+"}")
			if r.body["error"] != "Invalid "+tc.field {
				t.Errorf("answered %s, want it to name %s", r.raw, tc.field)
			}
		})
	}
}

// Restores of a deleted item sent at once, on the route and in a batch:
// one creates the item again (201) and the others update what it made
// (200), as they would one after another. An update that found nothing
// followed by a create lost to the restore that got in between (409).
func TestConcurrentRestoresOfADeletedItem(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"hr": `{"access":"shared","history":{"versions":50}}`})
	path := base + "/hr/r1"
	e.do("POST", path, `{"data":1}`).expect(t, 201)
	e.do("PUT", path, `{"data":2}`).expect(t, 200)
	const restorers = 6
	version := 2
	for round := range 4 {
		e.do("DELETE", path, "").expect(t, 204)
		version++ // the delete marker
		statuses := make([]int, restorers)
		var wg sync.WaitGroup
		for i := range restorers {
			wg.Go(func() {
				if i%2 == 0 {
					statuses[i] = e.do("POST", path+"?restore=1", "").status
					return
				}
				rs, _ := e.batch(t, 200, `{"operations":[{"method":"POST","path":"hr/r1?restore=1"}]}`)
				statuses[i] = rs[0].Status
			})
		}
		wg.Wait()
		slices.Sort(statuses)
		if want := append(slices.Repeat([]int{200}, restorers-1), 201); !slices.Equal(statuses, want) {
			t.Fatalf("round %d: restores answered %v, want one 201 and 200s", round, statuses)
		}
		version += restorers
		r := e.do("GET", path, "").expect(t, 200)
		if string(mustField(t, r.raw, "data")) != "1" || r.body["version"] != json.Number(fmt.Sprint(version)) {
			t.Fatalf("round %d: the item is %s, want version %d of the data restored", round, r.raw, version)
		}
	}
}

// TestLoweredHistoryPrunesOldestFirst lowers a namespace's history below
// what an item keeps, writes once (which prunes at most 25 versions, of
// the 29 the policy no longer keeps), and raises the policy again: the
// history lists its newest versions without a gap, the oldest having
// gone first.
func TestLoweredHistoryPrunesOldestFirst(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"low": `{"access":"shared","history":{"versions":40}}`})
	path := base + "/low/a"
	e.do("POST", path, `{"data":0}`).expect(t, 201)
	for v := 1; v <= 30; v++ {
		e.do("PUT", path, fmt.Sprintf(`{"data":%d}`, v)).expect(t, 200)
	}
	e.setPolicy(t, "low", `{"access":"shared","history":{"versions":1}}`)
	e.do("PUT", path, `{"data":99}`).expect(t, 200)
	e.setPolicy(t, "low", `{"access":"shared","history":{"versions":40}}`)
	entries, _ := historyAnswer(t, e.do("GET", path+"?history", "").expect(t, 200))
	if got := versionList(entries); got != "32* 31 30 29 28 27 26" {
		t.Errorf("the history lists %s, want 32* 31 30 29 28 27 26: versions 1 to 25 pruned", got)
	}
}
