package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store/storetest"
)

const taskIndexes = `{"access": "shared", "indexes": [
	{"name": "byStatus", "path": "/status", "type": "string"},
	{"name": "byRank", "path": "/rank", "type": "number"}]}`

// buildIndexes steps a namespace's index build until it is done.
func (e *env) buildIndexes(t *testing.T, namespace string) response {
	t.Helper()
	for range 100 {
		r := e.do("POST", adminApps+"/namespaces/"+namespace+"/indexes/build", "")
		switch r.status {
		case http.StatusOK:
			return r
		case http.StatusAccepted:
			time.Sleep(20 * time.Millisecond)
		default:
			t.Fatalf("build: %d %s", r.status, r.raw)
		}
	}
	t.Fatal("the build did not end")
	return response{}
}

// queryAll runs a query to its end through its cursors and lists the
// items' ids (id/sortKey for list items).
func (e *env) queryAll(t *testing.T, namespace, params string, headers ...string) string {
	t.Helper()
	var ids []string
	cursor := ""
	for range 100 {
		path := base + "/" + namespace + "?" + params
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.do("GET", path, "", headers...).expect(t, http.StatusOK)
		for _, raw := range r.body["items"].([]any) {
			it := raw.(map[string]any)
			if it["applicationUuid"] != app || it["namespace"] != namespace || it["data"] == nil || it["createdDate"] == nil {
				t.Fatalf("item not shown whole: %v", it)
			}
			id := it["id"].(string)
			if sk, ok := it["sortKey"].(string); ok {
				id += "/" + sk
			}
			ids = append(ids, id)
		}
		c, more := r.body["cursor"].(string)
		if !more {
			return strings.Join(ids, " ")
		}
		cursor = c
	}
	t.Fatal("the query did not end")
	return ""
}

// A namespace's indexes are declared with its policy, built from the items
// it holds, and answer queries over key-value and list items alike, paged
// and in either order, seeing every write acknowledged before them.
func TestIndexQueryRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("POST", base+"/tasks/t1", `{"data":{"status":"open","rank":2}}`).expect(t, 201)
	e.do("POST", base+"/tasks/t2", `{"data":{"status":"done","rank":1}}`).expect(t, 201)
	r := e.do("PUT", adminApps+"/namespaces/tasks", taskIndexes).expect(t, 200)
	if !strings.Contains(string(r.raw), `"state":"building"`) || r.body["indexBuild"] == nil {
		t.Fatalf("a new index is building: %s", r.raw)
	}
	r = e.do("GET", base+"/tasks?index=byStatus&eq=open", "").expect(t, http.StatusConflict)
	if r.body["error"] != "Index not ready" {
		t.Errorf("query of a building index: %s", r.raw)
	}
	r = e.buildIndexes(t, "tasks")
	if strings.Contains(string(r.raw), "building") || r.body["indexBuild"] != nil || !strings.Contains(string(r.raw), `"itemsIndexed":2`) {
		t.Fatalf("built: %s", r.raw)
	}
	e.do("POST", base+"/tasks/t3", `{"data":{"status":"open","rank":3}}`).expect(t, 201)
	e.do("POST", base+"/tasks/list/a", `{"data":{"status":"open","rank":0}}`).expect(t, 201)
	e.do("PUT", base+"/tasks/t2", `{"data":{"status":"open","rank":5}}`).expect(t, 200)
	for _, tc := range []struct{ name, params, want string }{
		{"eq", "index=byStatus&eq=open", "list/a t1 t2 t3"},
		{"eq paged", "index=byStatus&eq=open&limit=1", "list/a t1 t2 t3"},
		{"desc", "index=byStatus&eq=open&sortOrder=DESC&limit=3", "t3 t2 t1 list/a"},
		{"prefix", "index=byStatus&prefix=op", "list/a t1 t2 t3"},
		{"numbers", "index=byRank&limit=2", "list/a t1 t3 t2"},
		{"range", "index=byRank&from=1&to=3", "t1"},
		{"no match", "index=byStatus&eq=done", ""},
		{"empty prefix", "index=byStatus&prefix=", "list/a t1 t2 t3"},
		{"from the empty string", "index=byStatus&from=", "list/a t1 t2 t3"},
		{"to the empty string", "index=byStatus&to=", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := e.on(t).queryAll(t, "tasks", tc.params); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	e.do("DELETE", base+"/tasks/t1", "").expect(t, 204)
	if got := e.queryAll(t, "tasks", "index=byStatus&eq=open"); got != "list/a t2 t3" {
		t.Errorf("after a delete: %q", got)
	}
	// A cursor continues only its own query.
	r = e.do("GET", base+"/tasks?index=byStatus&eq=open&limit=1", "").expect(t, 200)
	e.do("GET", base+"/tasks?index=byStatus&eq=done&cursor="+url.QueryEscape(r.body["cursor"].(string)), "").expect(t, 400)
}

// Queries and declarations that cannot work are refused with a 400 that
// says why.
func TestIndexQueryRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("PUT", adminApps+"/namespaces/tasks", taskIndexes).expect(t, 200)
	e.buildIndexes(t, "tasks")
	for _, tc := range []struct{ name, path, field string }{
		{"no index", "/tasks", "Invalid index"},
		{"unknown index", "/tasks?index=byStatsu", "Invalid index"},
		{"namespace without indexes", "/other?index=byStatus", "Invalid index"},
		{"two selections", "/tasks?index=byStatus&eq=a&prefix=b", "Invalid prefix"},
		{"prefix of numbers", "/tasks?index=byRank&prefix=1", "Invalid prefix"},
		{"not a number", "/tasks?index=byRank&eq=abc", "Invalid eq"},
		{"number not JSON", "/tasks?index=byRank&from=0x10", "Invalid from"},
		{"limit", "/tasks?index=byStatus&limit=0", "Invalid limit"},
		{"order", "/tasks?index=byStatus&sortOrder=UP", "Invalid sortOrder"},
		{"cursor", "/tasks?index=byStatus&cursor=xyz", "Invalid cursor"},
		{"unknown parameter", "/tasks?index=byStatus&equals=a", "Invalid query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.on(t).do("GET", base+tc.path, "").expect(t, 400)
			if r.body["error"] != tc.field || r.body["details"] == "" {
				t.Errorf("answer %s, want %s", r.raw, tc.field)
			}
		})
	}
	for _, tc := range []struct{ name, namespace, body, field string }{
		{"six", "tasks", `{"access":"shared","indexes":[` + strings.Repeat(`{"name":"a","path":"/a","type":"string"},`, 5) + `{"name":"f","path":"/f","type":"string"}]}`, "Invalid indexes"},
		{"twice", "tasks", `{"access":"shared","indexes":[{"name":"a","path":"/a","type":"string"},{"name":"a","path":"/b","type":"number"}]}`, "Invalid indexes[1].name"},
		{"pointer", "tasks", `{"access":"shared","indexes":[{"name":"a","path":"a","type":"string"}]}`, "Invalid indexes[0].path"},
		{"escape", "tasks", `{"access":"shared","indexes":[{"name":"a","path":"/a~2","type":"string"}]}`, "Invalid indexes[0].path"},
		{"no path", "tasks", `{"access":"shared","indexes":[{"name":"a","type":"string"}]}`, "Invalid indexes[0].path"},
		{"type", "tasks", `{"access":"shared","indexes":[{"name":"a","path":"/a","type":"boolean"}]}`, "Invalid indexes[0].type"},
		{"name", "tasks", `{"access":"shared","indexes":[{"name":"a b","path":"/a","type":"string"}]}`, "Invalid indexes[0].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.on(t).do("PUT", adminApps+"/namespaces/"+tc.namespace, tc.body).expect(t, 400)
			if r.body["error"] != tc.field {
				t.Errorf("answer %s, want %s", r.raw, tc.field)
			}
		})
	}
}

// In a private namespace a query sees the caller's items only.
func TestIndexQueryPrivate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setPolicy(t, "notes", `{"access": "private", "indexes": [{"name": "byTag", "path": "/tag", "type": "string"}]}`)
	e.buildIndexes(t, "notes")
	alice, bob := []string{"X-Uds-Subject", "alice"}, []string{"X-Uds-Subject", "bob"}
	e.do("POST", base+"/notes/n1", `{"data":{"tag":"x"}}`, alice...).expect(t, 201)
	e.do("POST", base+"/notes/n2", `{"data":{"tag":"x"}}`, bob...).expect(t, 201)
	e.do("POST", base+"/notes/n3", `{"data":{"tag":"x"}}`, alice...).expect(t, 201)
	if got := e.queryAll(t, "notes", "index=byTag&eq=x", alice...); got != "n1 n3" {
		t.Errorf("alice sees %q", got)
	}
	if got := e.queryAll(t, "notes", "index=byTag&eq=x", bob...); got != "n2" {
		t.Errorf("bob sees %q", got)
	}
}

// In a private namespace an owner's entries are in a partition of their
// own, named by the app, namespace, index ID and owner. A namespace and
// identities near their limits make an item's key that fits DynamoDB's
// 2,048 bytes and a partition named so that would not (the index ID is
// longer than the ids here): every write of such an owner's item, and the
// build that indexed what they stored before, answered 500. Their items
// are indexed, queried, changed and removed like anyone's.
func TestIndexPrivateLongKeySpaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := strings.Repeat("n", 1000)
	long1, long2 := strings.Repeat("s", 989)+"1", strings.Repeat("s", 989)+"2"
	as := func(subject string) []string { return []string{"X-Uds-Subject", subject} }
	index := strings.Repeat("x", 64)
	e.setPolicy(t, ns, `{"access":"private"}`)
	// Stored before the index is declared: its build indexes it.
	e.do("POST", base+"/"+ns+"/a", `{"data":{"tag":"x"}}`, as(long1)...).expect(t, 201)
	e.setPolicy(t, ns, `{"access":"private","indexes":[{"name":"`+index+`","path":"/tag","type":"string"}]}`)
	e.buildIndexes(t, ns)
	e.do("POST", base+"/"+ns+"/b", `{"data":{"tag":"x"}}`, as(long2)...).expect(t, 201)
	e.do("POST", base+"/"+ns+"/c", `{"data":{"tag":"x"}}`, as("alice")...).expect(t, 201)
	for subject, want := range map[string]string{long1: "a", long2: "b", "alice": "c"} {
		if got := e.queryAll(t, ns, "index="+index+"&eq=x", as(subject)...); got != want {
			t.Errorf("%.8s… sees %q, want %q", subject, got, want)
		}
	}
	e.do("PUT", base+"/"+ns+"/a", `{"data":{"tag":"y"}}`, as(long1)...).expect(t, 200)
	if got := e.queryAll(t, ns, "index="+index+"&eq=x", as(long1)...); got != "" {
		t.Errorf("after the update, tag x lists %q", got)
	}
	if got := e.queryAll(t, ns, "index="+index+"&eq=y", as(long1)...); got != "a" {
		t.Errorf("after the update, tag y lists %q", got)
	}
	e.do("DELETE", base+"/"+ns+"/a", "", as(long1)...).expect(t, 204)
	e.do("DELETE", base+"/"+ns+"/b", "", as(long2)...).expect(t, 204)

	// The removals took their entries with them: alice's is all that is
	// left, and no partition is past DynamoDB's bound.
	p, err := e.st.StoredPolicy(context.Background(), app, ns)
	if err != nil {
		t.Fatal(err)
	}
	entries := storetest.IndexEntries(t, e.client, e.tables, app, ns, p.Indexes[0].ID)
	if len(entries) != 1 || entries[0].Key.Owner != "alice" {
		t.Errorf("entries left: %+v", entries)
	}

	// A caller whose identity leaves no room for an item's id in the
	// namespace has no items there: its queries and changes feed say so,
	// where the feed's partition (as long as an item's key with a one-byte
	// id) would have been past DynamoDB's bound.
	tooLong := as(strings.Repeat("s", 1009))
	for _, query := range []string{"index=" + index + "&eq=x", "changes="} {
		r := e.do("GET", base+"/"+ns+"?"+query, "", tooLong...).expect(t, 400)
		if r.body["error"] != "Invalid namespace" || !strings.Contains(r.body["details"].(string), "no items here") {
			t.Errorf("%s: %s", query, r.raw)
		}
	}
}
