package httpapi_test

import (
	"strings"
	"testing"
)

// TestBodiesAndQueriesMeanOneThing checks that every JSON body UDS reads
// refuses member names in another case, unknown members and repeated
// members (at any depth), and every route unknown query parameters, each
// with a 400 whose details say what was wrong; and that nothing is
// written.
func TestBodiesAndQueriesMeanOneThing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := admin + "/apps/" + app + "/namespaces/"
	for _, tc := range []struct {
		name, method, path, body string
		error, details           string
	}{
		{"item member in another case", "POST", base + "/kv/a", `{"Data":1}`, "Invalid body", `did you mean "data"?`},
		{"item member repeated", "POST", base + "/kv/a", `{"data":99,"data":1}`, "Invalid body", `member "data" twice`},
		{"item data member repeated", "POST", base + "/kv/a", `{"data":{"x":[{"n":99,"n":1}]}}`, "Invalid body", `/data/x/0/n`},
		{"batch envelope in another case", "POST", base + "/batch", `{"operations":[],"OPERATIONS":[{"method":"GET","path":"kv/a"}]}`, "Invalid body", `did you mean "operations"?`},
		{"batch envelope repeated", "POST", base + "/batch", `{"operations":[{"method":"GET","path":"kv/a"}],"operations":[{"method":"POST","path":"kv/a","body":{"data":1}}]}`, "Invalid body", `member "operations" twice`},
		{"batch operation member in another case", "POST", base + "/batch", `{"operations":[{"Method":"POST","path":"kv/a","body":{"data":1}}]}`, "Invalid operations[0]", `did you mean "method"?`},
		{"batch operation unknown member", "POST", base + "/batch", `{"operations":[{"method":"POST","path":"kv/a","body":{"data":1},"owner":"x"}]}`, "Invalid operations[0]", `has no member "owner"`},
		{"batch operation body member in another case", "POST", base + "/batch", `{"operations":[{"method":"POST","path":"kv/a","body":{"DATA":1}}]}`, "Invalid operations[0].body", `did you mean "data"?`},
		{"batch operation data member repeated", "POST", base + "/batch", `{"operations":[{"method":"POST","path":"kv/a","body":{"data":{"n":99,"n":1}}}]}`, "Invalid body", `/operations/0/body/data/n`},
		{"batch sort key ending with a slash", "POST", base + "/batch", `{"operations":[{"method":"POST","path":"kv/a/z//","body":{"data":1}}]}`, "Invalid operations[0].sortKey", `must not end with "/"`},
		{"policy member in another case", "PUT", ns + "p", `{"Access":"private"}`, "Invalid body", `did you mean "access"?`},
		{"policy schema member repeated", "PUT", ns + "p", `{"access":"shared","schema":{"type":"number","type":"string"}}`, "Invalid body", `/schema/type`},
		{"limits member in another case", "PUT", admin + "/apps/" + app + "/quota", `{"LimitBytes":5}`, "Invalid body", `did you mean "limitBytes"?`},
		{"limits member repeated", "PUT", admin + "/apps/" + app + "/quota", `{"limitBytes":5,"limitBytes":-1}`, "Invalid body", `member "limitBytes" twice`},
		{"registration member in another case", "PUT", admin + "/apps/" + app, `{"NAME":"a"}`, "Invalid body", `did you mean "name"?`},
		{"registration member repeated", "PUT", admin + "/apps/" + app, `{"name":"a","description":"","name":"b"}`, "Invalid body", `member "name" twice`},
		{"import member in another case", "POST", admin + "/apps/" + app + "/import", `{"Records":[]}`, "Invalid body", `did you mean "records"?`},
		{"misspelt list parameter", "GET", base + "/kv/a/list?limt=5", "", "Invalid query", `did you mean "limit"?`},
		{"list parameter in another case", "GET", base + "/kv/a/list?SORTORDER=desc", "", "Invalid query", `did you mean "sortOrder"?`},
		{"parameter on an item update", "PUT", base + "/kv/a?version=3", `{"data":1}`, "Invalid query", `takes no query parameters`},
		{"misspelt item parameter", "GET", base + "/kv/a?verison=3", "", "Invalid query", `did you mean "version"?`},
		{"another method's item parameter", "POST", base + "/kv/a?version=3", "", "Invalid query", `(this route takes restore, upload, commit)`},
		{"misspelt admin parameter", "GET", admin + "/apps/" + app + "/users?cursr=x", "", "Invalid query", `did you mean "cursor"?`},
		{"unrelated parameter", "GET", base + "/kv/a/list?zebra=1", "", "Invalid query", `takes startKey, endKey, limit, sortOrder, cursor`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.body).expect(t, 400)
			if r.body["error"] != tc.error {
				t.Errorf("error %q, want %q (%s)", r.body["error"], tc.error, r.raw)
			}
			if d, _ := r.body["details"].(string); !strings.Contains(d, tc.details) {
				t.Errorf("details %q, want them to say %q", d, tc.details)
			}
		})
	}
	if n := e.count(e.tables.Data) + e.count(e.tables.List) + e.count(e.tables.Namespaces) + e.count(e.tables.Apps); n != 0 {
		t.Errorf("refused requests wrote %d items", n)
	}
}

// TestContentTypeIsOneMediaType checks that a write's Content-Type names
// one media type: a range of them (as Accept names them) is refused, and
// so is a request that sends the header twice, JSON writes and batches
// included, each with a 400 that says so; and that nothing is written.
func TestContentTypeIsOneMediaType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name, path, body string
		contentTypes     []string
		details          string
	}{
		{"any type", base + "/kv/a", "bytes", []string{"*/*"}, "is */*, a range of media types"},
		{"any image", base + "/kv/a", "bytes", []string{"image/*"}, "is image/*, a range of media types"},
		{"two types on a binary write", base + "/kv/a", "bytes", []string{"image/png", "text/html"}, "is sent more than once"},
		{"two types on a JSON write", base + "/kv/a", `{"data":1}`, []string{"application/json", "text/html"}, "is sent more than once"},
		{"one type twice", base + "/kv/a", `{"data":1}`, []string{"application/json", "application/json"}, "is sent more than once"},
		{"two types on one line", base + "/kv/a", `{"data":1}`, []string{"application/json, text/html"}, "lists several types"},
		{"two types on a batch", base + "/batch", `{"operations":[{"method":"POST","path":"kv/a","body":{"data":1}}]}`, []string{"application/json", "text/plain"}, "is sent more than once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var headers []string
			for _, ct := range tc.contentTypes {
				headers = append(headers, "Content-Type", ct)
			}
			r := e.send("POST", tc.path, []byte(tc.body), headers...).expect(t, 400)
			body := decodeJSON(t, r.raw)
			if body["error"] != "Invalid Content-Type" {
				t.Errorf("error %q, want Invalid Content-Type (%s)", body["error"], r.raw)
			}
			if d, _ := body["details"].(string); !strings.Contains(d, tc.details) {
				t.Errorf("details %q, want them to say %q", d, tc.details)
			}
		})
	}
	if n := e.count(e.tables.Data); n != 0 {
		t.Errorf("refused requests wrote %d items", n)
	}
}
