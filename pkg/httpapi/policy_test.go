package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
)

const adminApps = "/rest/api/v1/admin/apps/" + app

// as sends a request as subject ("" for the anonymous caller).
func (e *env) as(subject, method, path, body string, headers ...string) response {
	e.t.Helper()
	if subject != "" {
		headers = append(headers, httpapi.SubjectHeader, subject)
	}
	return e.do(method, path, body, headers...)
}

// setPolicy sets a namespace's policy and fails the test unless it is taken.
// setPolicy sets a namespace's policy and, for a change into or out of
// private (announced with 202), completes it once it settles.
func (e *env) setPolicy(t *testing.T, namespace, body string) response {
	t.Helper()
	return completePolicy(t, e.now, 200, func() response { return e.do("PUT", adminApps+"/namespaces/"+namespace, body) })
}

// testSettle is how long a change into or out of private settles in tests
// that do not race writes against it.
const testSettle = 50 * time.Millisecond

// completePolicy sends a policy change and, while it is answered 202
// (announced), waits until it settles on the API's clock (now) and sends it
// again: want is expected in the end.
func completePolicy(t *testing.T, now func() time.Time, want int, send func() response) response {
	t.Helper()
	for range 10 {
		r := send()
		if r.status != http.StatusAccepted {
			return r.expect(t, want)
		}
		pending, _ := r.body["pending"].(map[string]any)
		settles, err := time.Parse(time.RFC3339Nano, fmt.Sprint(pending["settlesAt"]))
		if err != nil {
			t.Fatalf("202 without pending.settlesAt: %s", r.raw)
		}
		time.Sleep(settles.Sub(now()) + 5*time.Millisecond)
	}
	t.Fatal("the policy change never completed")
	return response{}
}

// listSortKeys returns the sort keys of a list page.
func listSortKeys(t *testing.T, r response) []string {
	t.Helper()
	var keys []string
	for _, it := range r.body["list"].([]any) {
		keys = append(keys, it.(map[string]any)["sortKey"].(string))
	}
	return keys
}

func TestPrivateNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setPolicy(t, "prefs", `{"access":"private"}`)
	item, list := base+"/prefs/settings", base+"/prefs/feed"

	e.as("alice", "POST", item, `{"data":{"theme":"dark"}}`).expect(t, 201)
	// Bob's prefs/settings is another item: his create does not conflict.
	created := e.as("bob", "POST", item, `{"data":{"theme":"light"}}`).expect(t, 201)
	if loc := created.header.Get("Location"); loc != item {
		t.Errorf("Location %q, want the public path %q", loc, item)
	}
	for _, sk := range []string{"a", "b", "c"} {
		e.as("alice", "POST", list+"/"+sk, `{"data":1}`).expect(t, 201)
	}
	e.as("bob", "POST", list+"/z", `{"data":2}`).expect(t, 201)

	t.Run("read", func(t *testing.T) {
		for who, theme := range map[string]string{"alice": "dark", "bob": "light"} {
			r := e.as(who, "GET", item, "").expect(t, 200)
			if data := r.body["data"].(map[string]any); data["theme"] != theme || r.body["id"] != "settings" {
				t.Errorf("%s reads %s", who, r.raw)
			}
		}
		e.as("carol", "GET", item, "").expect(t, 404)
		e.as("carol", "HEAD", item, "").expect(t, 404)
	})
	t.Run("anonymous", func(t *testing.T) {
		for _, m := range []struct{ method, path, body string }{
			{"GET", item, ""}, {"POST", base + "/prefs/anon", `{"data":1}`}, {"PUT", item, `{"data":1}`},
			{"DELETE", item, ""}, {"GET", list + "/list", ""}, {"DELETE", list + "/list", ""},
		} {
			r := e.as("", m.method, m.path, m.body).expect(t, 401)
			if !strings.Contains(fmt.Sprint(r.body["details"]), "private") {
				t.Errorf("%s %s: 401 body %s does not say why", m.method, m.path, r.raw)
			}
		}
	})
	t.Run("list and range", func(t *testing.T) {
		if got := listSortKeys(t, e.as("alice", "GET", list+"/list", "").expect(t, 200)); strings.Join(got, ",") != "a,b,c" {
			t.Errorf("alice lists %v", got)
		}
		if got := listSortKeys(t, e.as("bob", "GET", list+"/list?startKey=a&endKey=zz", "").expect(t, 200)); strings.Join(got, ",") != "z" {
			t.Errorf("bob's range lists %v", got)
		}
		if got := e.as("carol", "GET", list+"/list", "").expect(t, 200).body["list"].([]any); len(got) != 0 {
			t.Errorf("carol lists %v", got)
		}
	})
	t.Run("cursor reuse", func(t *testing.T) {
		page := e.as("alice", "GET", list+"/list?limit=1", "").expect(t, 200)
		cursor, _ := page.body["cursor"].(string)
		if cursor == "" {
			t.Fatalf("no cursor: %s", page.raw)
		}
		e.as("bob", "GET", list+"/list?limit=1&cursor="+cursor, "").expect(t, 400)
		if got := listSortKeys(t, e.as("alice", "GET", list+"/list?limit=1&cursor="+cursor, "").expect(t, 200)); strings.Join(got, ",") != "b" {
			t.Errorf("alice's next page %v", got)
		}
	})
	t.Run("update and delete stay in the caller's space", func(t *testing.T) {
		e.as("carol", "PUT", item, `{"data":{"theme":"x"}}`).expect(t, 404)
		e.as("bob", "PUT", item, `{"data":{"theme":"blue"}}`).expect(t, 200)
		e.as("bob", "DELETE", item, "").expect(t, 204)
		e.as("bob", "GET", item, "").expect(t, 404)
		if r := e.as("alice", "GET", item, "").expect(t, 200); r.body["data"].(map[string]any)["theme"] != "dark" {
			t.Errorf("bob's writes reached alice's item: %s", r.raw)
		}
	})
	t.Run("delete-all", func(t *testing.T) {
		e.as("bob", "DELETE", list+"/list", "").expect(t, 204)
		if got := listSortKeys(t, e.as("alice", "GET", list+"/list", "").expect(t, 200)); len(got) != 3 {
			t.Errorf("bob's delete-all left alice %v", got)
		}
	})
	t.Run("batch", func(t *testing.T) {
		r := e.as("alice", "POST", base+"/batch", `{"operations":[{"method":"GET","path":"prefs/settings"},{"method":"POST","path":"prefs/b1","body":{"data":1}}]}`).expect(t, 200)
		res := r.body["results"].([]any)
		if s := res[0].(map[string]any)["status"]; s != json.Number("200") {
			t.Errorf("alice's batch read answered %v", s)
		}
		e.as("bob", "GET", base+"/prefs/b1", "").expect(t, 404)
		r = e.as("", "POST", base+"/batch", `{"operations":[{"method":"GET","path":"prefs/settings"},{"method":"GET","path":"open/x"}]}`).expect(t, 200)
		res = r.body["results"].([]any)
		if a, b := res[0].(map[string]any)["status"], res[1].(map[string]any)["status"]; a != json.Number("401") || b != json.Number("404") {
			t.Errorf("anonymous batch answered %v, %v; want 401 for the private namespace, 404 beside it", a, b)
		}
		r = e.as("", "POST", base+"/batch", `{"atomic":true,"operations":[{"method":"POST","path":"open/y","body":{"data":1}},{"method":"POST","path":"prefs/y","body":{"data":1}}]}`).expect(t, 401)
		if r.body["failedIndex"] != json.Number("1") {
			t.Errorf("atomic refusal %s", r.raw)
		}
		e.as("", "GET", base+"/open/y", "").expect(t, 404)
	})
	t.Run("stored keys and usage are per owner", func(t *testing.T) {
		out, err := e.client.GetItem(context.Background(), &dynamodb.GetItemInput{
			TableName: aws.String(e.tables.Data),
			Key:       map[string]types.AttributeValue{"dataKey": &types.AttributeValueMemberS{Value: app + "|prefs|settings|alice"}},
		})
		if err != nil || out.Item == nil {
			t.Fatalf("alice's item is not under her key: %v", err)
		}
		users := e.do("GET", adminApps+"/users", "").expect(t, 200)
		seen := map[string]json.Number{}
		for _, u := range users.body["users"].([]any) {
			row := u.(map[string]any)
			seen[row["user"].(string)] = row["items"].(json.Number)
		}
		if seen["alice"] != "5" || seen["bob"] != "0" {
			t.Errorf("usage by owner %v; want alice 5 items (settings, 3 list items, b1), bob 0", seen)
		}
	})
}

func TestOwnerWriteNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setPolicy(t, "posts", `{"access":"owner-write"}`)
	item, list := base+"/posts/p1", base+"/posts/thread"
	created := e.as("alice", "POST", item, `{"data":{"title":"hi"}}`).expect(t, 201)
	etag := created.header.Get("ETag")

	t.Run("anyone reads", func(t *testing.T) {
		for _, who := range []string{"bob", ""} {
			e.as(who, "GET", item, "").expect(t, 200)
		}
	})
	t.Run("others may not change", func(t *testing.T) {
		for _, c := range []struct {
			name, method, body string
			headers            []string
		}{
			{"PUT", "PUT", `{"data":{"title":"mine now"}}`, nil},
			{"PUT with its ETag", "PUT", `{"data":{"title":"mine now"}}`, []string{"If-Match", etag}},
			{"PUT with a stale ETag", "PUT", `{"data":{"title":"mine now"}}`, []string{"If-Match", `"9-abc"`}},
			{"DELETE", "DELETE", "", nil},
			{"DELETE with a stale ETag", "DELETE", "", []string{"If-Match", `"9-abc"`}},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.as("bob", c.method, item, c.body, c.headers...).expect(t, 403)
				if r.body["error"] != "Forbidden" || r.body["user"] != nil || strings.Contains(string(r.raw), "alice") {
					t.Errorf("403 body %s", r.raw)
				}
			})
		}
		if r := e.as("bob", "GET", item, "").expect(t, 200); r.header.Get("ETag") != etag {
			t.Errorf("the refused writes changed the item: %s", r.raw)
		}
	})
	t.Run("missing items", func(t *testing.T) {
		e.as("bob", "PUT", base+"/posts/none", `{"data":1}`).expect(t, 404)
		e.as("bob", "DELETE", base+"/posts/none", "").expect(t, 204)
	})
	t.Run("batch", func(t *testing.T) {
		r := e.as("bob", "POST", base+"/batch", `{"operations":[{"method":"PUT","path":"posts/p1","body":{"data":2}},{"method":"POST","path":"posts/p2","body":{"data":2}}]}`).expect(t, 200)
		res := r.body["results"].([]any)
		if a, b := res[0].(map[string]any)["status"], res[1].(map[string]any)["status"]; a != json.Number("403") || b != json.Number("201") {
			t.Errorf("bob's batch answered %v, %v", a, b)
		}
		r = e.as("bob", "POST", base+"/batch", `{"atomic":true,"operations":[{"method":"PUT","path":"posts/p2","body":{"data":3}},{"method":"DELETE","path":"posts/p1"}]}`).expect(t, 403)
		if r.body["failedIndex"] != json.Number("1") {
			t.Errorf("atomic refusal %s", r.raw)
		}
		if r := e.as("bob", "GET", base+"/posts/p2", "").expect(t, 200); r.body["data"] != json.Number("2") {
			t.Errorf("the refused atomic batch wrote: %s", r.raw)
		}
	})
	t.Run("delete-all needs every item", func(t *testing.T) {
		e.as("alice", "POST", list+"/a", `{"data":1}`).expect(t, 201)
		e.as("bob", "POST", list+"/b", `{"data":1}`).expect(t, 201)
		r := e.as("alice", "DELETE", list+"/list", "").expect(t, 403)
		if !strings.Contains(fmt.Sprint(r.body["details"]), "other callers") {
			t.Errorf("403 body %s", r.raw)
		}
		if got := listSortKeys(t, e.as("", "GET", list+"/list", "").expect(t, 200)); strings.Join(got, ",") != "a,b" {
			t.Errorf("a refused delete-all deleted: %v", got)
		}
		e.as("bob", "DELETE", list+"/b", "").expect(t, 204)
		e.as("alice", "DELETE", list+"/list", "").expect(t, 204)
		if got := listSortKeys(t, e.as("", "GET", list+"/list", "").expect(t, 200)); len(got) != 0 {
			t.Errorf("left %v", got)
		}
	})
	t.Run("the creator changes and deletes", func(t *testing.T) {
		e.as("alice", "PUT", item, `{"data":{"title":"edited"}}`).expect(t, 200)
		e.as("alice", "DELETE", item, "").expect(t, 204)
	})
}

// draftCases hold, per draft UDS accepts, a schema using a keyword whose
// meaning that draft settles, and data it refuses only under that draft.
var draftCases = []struct {
	draft, schema, valid, invalid, keyword string
}{
	{"2020-12 (default)", `{"type":"object","properties":{"t":{"prefixItems":[{"type":"string"}]}}}`, `{"t":["a",1]}`, `{"t":[1]}`, "/properties/t/prefixItems/0/type"},
	{"2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"n":{"exclusiveMinimum":5}}}`, `{"n":6}`, `{"n":5}`, "/properties/n/exclusiveMinimum"},
	{"2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","properties":{"t":{"items":[{"type":"string"}]}}}`, `{"t":["a",1]}`, `{"t":[1]}`, "/properties/t/items/0/type"},
	{"7", `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"n":{"if":{"minimum":10},"then":{"multipleOf":2}}}}`, `{"n":12}`, `{"n":11}`, "/properties/n/then/multipleOf"},
	{"6", `{"$schema":"http://json-schema.org/draft-06/schema#","properties":{"n":{"exclusiveMinimum":5}}}`, `{"n":6}`, `{"n":5}`, "/properties/n/exclusiveMinimum"},
	{"4", `{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"minimum":5,"exclusiveMinimum":true}}}`, `{"n":6}`, `{"n":5}`, "/properties/n/exclusiveMinimum"},
}

func TestNamespaceSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i, c := range draftCases {
		t.Run(c.draft, func(t *testing.T) {
			ns := fmt.Sprintf("schema%d", i)
			e.setPolicy(t, ns, `{"access":"shared","schema":`+c.schema+`}`)
			e.do("POST", base+"/"+ns+"/ok", `{"data":`+c.valid+`}`).expect(t, 201)
			r := e.do("POST", base+"/"+ns+"/bad", `{"data":`+c.invalid+`}`).expect(t, 422)
			if r.body["error"] != "Schema validation failed" || r.body["id"] != "bad" {
				t.Errorf("422 body %s", r.raw)
			}
			vs, _ := r.body["violations"].([]any)
			if len(vs) == 0 {
				t.Fatalf("no violations: %s", r.raw)
			}
			v := vs[0].(map[string]any)
			if v["keywordLocation"] != c.keyword || v["message"] == "" || v["instanceLocation"] == nil {
				t.Errorf("violation %v, want keywordLocation %s", v, c.keyword)
			}
			e.do("GET", base+"/"+ns+"/bad", "").expect(t, 404)
			e.do("PUT", base+"/"+ns+"/ok", `{"data":`+c.invalid+`}`).expect(t, 422)
			if r := e.do("GET", base+"/"+ns+"/ok", "").expect(t, 200); r.body["version"] != json.Number("1") {
				t.Errorf("a refused PUT wrote: %s", r.raw)
			}
		})
	}
	t.Run("local references", func(t *testing.T) {
		e.setPolicy(t, "refs", `{"access":"shared","schema":{"$defs":{"age":{"type":"integer","minimum":0}},"properties":{"age":{"$ref":"#/$defs/age"}}}}`)
		e.do("POST", base+"/refs/a", `{"data":{"age":3}}`).expect(t, 201)
		r := e.do("POST", base+"/refs/b", `{"data":{"age":-1}}`).expect(t, 422)
		if v := r.body["violations"].([]any)[0].(map[string]any); v["instanceLocation"] != "/age" {
			t.Errorf("violation %v", v)
		}
	})
	t.Run("batches", func(t *testing.T) {
		e.setPolicy(t, "typed", `{"access":"shared","schema":{"type":"integer"}}`)
		r := e.do("POST", base+"/batch", `{"operations":[{"method":"POST","path":"typed/a","body":{"data":1}},{"method":"POST","path":"typed/b","body":{"data":"x"}}]}`).expect(t, 200)
		res := r.body["results"].([]any)
		if a, b := res[0].(map[string]any)["status"], res[1].(map[string]any)["status"]; a != json.Number("201") || b != json.Number("422") {
			t.Errorf("batch answered %v, %v", a, b)
		}
		r = e.do("POST", base+"/batch", `{"atomic":true,"operations":[{"method":"POST","path":"typed/c","body":{"data":1}},{"method":"POST","path":"typed/d","body":{"data":"x"}}]}`).expect(t, 422)
		if r.body["failedIndex"] != json.Number("1") || r.body["violations"] == nil {
			t.Errorf("atomic refusal %s", r.raw)
		}
		e.do("GET", base+"/typed/c", "").expect(t, 404)
	})
	t.Run("numbers past math/big", func(t *testing.T) {
		e.setPolicy(t, "huge", `{"access":"shared","schema":{"properties":{"n":{"minimum":0,"maximum":1e1000001,"multipleOf":0.5},"u":{"uniqueItems":true}}}}`)
		e.do("POST", base+"/huge/ok", `{"data":{"n":1e1000001,"u":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,1e1000001,1e1000000]}}`).expect(t, 201)
		r := e.do("POST", base+"/huge/bad", `{"data":{"n":1e-1000001,"u":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,1e1000001,10e1000000]}}`).expect(t, 422)
		if vs, _ := r.body["violations"].([]any); len(vs) != 2 {
			t.Errorf("want violations of multipleOf and uniqueItems: %s", r.raw)
		}
		r = e.do("PUT", adminApps+"/namespaces/huge", `{"access":"shared","schema":{"minItems":1e-1000001}}`).expect(t, 400)
		if !strings.Contains(fmt.Sprint(r.body["details"]), "minItems") {
			t.Errorf("400 body %s does not name minItems", r.raw)
		}
	})
	t.Run("refused schemas", func(t *testing.T) {
		for _, c := range []struct{ name, body, says string }{
			{"not a schema", `{"access":"shared","schema":{"type":12}}`, "not a valid JSON Schema"},
			{"remote reference", `{"access":"shared","schema":{"$ref":"https://example.com/s.json"}}`, "remote references"},
			{"file reference", `{"access":"shared","schema":{"$ref":"file:///etc/passwd"}}`, "remote references"},
			{"relative reference", `{"access":"shared","schema":{"$ref":"other.json"}}`, "remote references"},
			{"unsupported draft", `{"access":"shared","schema":{"$schema":"http://json-schema.org/draft-03/schema#"}}`, "no supported draft"},
			{"a reference to itself", `{"access":"shared","schema":{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}}`, "#/$defs/a to the value it is applying to"},
			{"array", `{"access":"shared","schema":[]}`, "JSON object"},
			{"too large", `{"access":"shared","schema":{"description":"` + strings.Repeat("x", 66000) + `"}}`, "at most 65536"},
			{"unknown access", `{"access":"public"}`, "owner-write"},
			{"no access", `{"schema":null}`, "required"},
			{"unknown field", `{"access":"shared","rules":1}`, "rules"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.do("PUT", adminApps+"/namespaces/refused", c.body).expect(t, 400)
				if !strings.Contains(fmt.Sprint(r.body["details"]), c.says) {
					t.Errorf("400 body %s does not say %q", r.raw, c.says)
				}
			})
		}
		if r := e.do("GET", adminApps+"/namespaces/refused", "").expect(t, 200); r.body["version"] != json.Number("0") {
			t.Errorf("a refused policy was stored: %s", r.raw)
		}
	})
}

func TestPolicyAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := adminApps + "/namespaces/profiles"
	r := e.do("GET", path, "").expect(t, 200)
	if r.body["access"] != "shared" || r.body["schema"] != nil || r.body["version"] != json.Number("0") {
		t.Errorf("defaults %s", r.raw)
	}
	r = e.setPolicy(t, "profiles", `{"access":"owner-write","schema":{"type":"object"}}`)
	if r.body["access"] != "owner-write" || r.body["version"] != json.Number("1") || r.body["updatedDate"] == nil {
		t.Errorf("PUT answered %s", r.raw)
	}
	if got := e.do("GET", path, "").expect(t, 200); string(got.raw) != string(r.raw) {
		t.Errorf("GET %s, PUT answered %s", got.raw, r.raw)
	}
	t.Run("listing", func(t *testing.T) {
		for _, ns := range []string{"a1", "a2", "a3"} {
			e.setPolicy(t, ns, `{"access":"shared"}`)
		}
		e.do("PUT", path+"x", `{"access":"shared"}`).expect(t, 200)
		e.do("DELETE", path+"x", "").expect(t, 204) // deleted: not listed
		var seen []string
		next := ""
		for page := 0; page < 5; page++ {
			r := e.do("GET", adminApps+"/namespaces?limit=2"+next, "").expect(t, 200)
			for _, p := range r.body["namespaces"].([]any) {
				seen = append(seen, p.(map[string]any)["namespace"].(string))
			}
			c, _ := r.body["cursor"].(string)
			if c == "" {
				break
			}
			next = "&cursor=" + c
		}
		if strings.Join(seen, ",") != "a1,a2,a3,profiles" {
			t.Errorf("listed %v", seen)
		}
	})
	t.Run("key space changes need an empty namespace", func(t *testing.T) {
		e.as("alice", "POST", base+"/profiles/alice", `{"data":{}}`).expect(t, 201)
		r := e.do("PUT", path, `{"access":"private"}`).expect(t, 409)
		if r.body["error"] != "Namespace holds data" {
			t.Errorf("409 body %s", r.raw)
		}
		// Shared and owner-write share a key space: no data check.
		e.setPolicy(t, "profiles", `{"access":"shared"}`)
		e.as("alice", "DELETE", base+"/profiles/alice", "").expect(t, 204)
		e.as("alice", "POST", base+"/profiles/feed/1", `{"data":{}}`).expect(t, 201)
		e.do("PUT", path, `{"access":"private"}`).expect(t, 409) // list items count too
		e.as("alice", "DELETE", base+"/profiles/feed/list", "").expect(t, 204)
		e.setPolicy(t, "profiles", `{"access":"private"}`)
		e.as("alice", "POST", base+"/profiles/mine", `{"data":{}}`).expect(t, 201)
		e.do("DELETE", path, "").expect(t, 409)
		e.do("PUT", path, `{"access":"owner-write"}`).expect(t, 409)
		e.as("alice", "DELETE", base+"/profiles/mine", "").expect(t, 204)
		completePolicy(t, e.now, 204, func() response { return e.do("DELETE", path, "") })
		if r := e.do("GET", path, "").expect(t, 200); r.body["access"] != "shared" || r.body["schema"] != nil {
			t.Errorf("after DELETE %s", r.raw)
		}
	})
	t.Run("bad paths", func(t *testing.T) {
		e.do("GET", "/rest/api/v1/admin/apps/not-a-uuid/namespaces/x", "").expect(t, 400)
		e.do("PUT", adminApps+"/namespaces/a%7Cb", `{"access":"shared"}`).expect(t, 400)
	})
}

// historyOf is the history member of a policy as answered, "" when left
// out.
func historyOf(t *testing.T, r response) string {
	t.Helper()
	var b struct {
		History json.RawMessage `json:"history"`
	}
	if err := json.Unmarshal(r.raw, &b); err != nil {
		t.Fatalf("policy %s: %v", r.raw, err)
	}
	return string(b.History)
}

// listedHistory is the history member of a namespace's row in the policy
// listing ("" when left out); the namespace must be listed.
func (e *env) listedHistory(t *testing.T, namespace string) string {
	t.Helper()
	r := e.do("GET", adminApps+"/namespaces?limit=1000", "").expect(t, 200)
	var page struct {
		Namespaces []struct {
			Namespace string          `json:"namespace"`
			History   json.RawMessage `json:"history"`
		} `json:"namespaces"`
	}
	if err := json.Unmarshal(r.raw, &page); err != nil {
		t.Fatalf("listing %s: %v", r.raw, err)
	}
	for _, p := range page.Namespaces {
		if p.Namespace == namespace {
			return string(p.History)
		}
	}
	t.Fatalf("%s is not listed: %s", namespace, r.raw)
	return ""
}

// TestPolicyHistory sets, shows and refuses history policies: a history is
// shown while it keeps versions and left out otherwise, it applies at once
// even beside a change into private, and a malformed one is a 400 naming
// its member.
func TestPolicyHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	t.Run("set and shown", func(t *testing.T) {
		for i, c := range []struct{ name, body, want string }{
			{"versions and days", `{"access":"shared","history":{"versions":10,"days":30}}`, `{"versions":10,"days":30}`},
			{"no age limit", `{"access":"owner-write","history":{"versions":3}}`, `{"versions":3}`},
			{"days null is no age limit", `{"access":"shared","history":{"days":null,"versions":3}}`, `{"versions":3}`},
			{"the bounds", `{"access":"private","history":{"versions":100,"days":3650}}`, `{"versions":100,"days":3650}`},
			{"the least", `{"access":"shared","history":{"versions":1,"days":1}}`, `{"versions":1,"days":1}`},
			{"versions 0 is none", `{"access":"shared","history":{"versions":0}}`, ``},
			{"null is none", `{"access":"shared","history":null}`, ``},
			{"absent is none", `{"access":"shared"}`, ``},
		} {
			t.Run(c.name, func(t *testing.T) {
				ns := fmt.Sprintf("history%d", i)
				r := e.setPolicy(t, ns, c.body)
				if got := historyOf(t, r); got != c.want {
					t.Errorf("PUT answered history %q, want %q: %s", got, c.want, r.raw)
				}
				if got := e.do("GET", adminApps+"/namespaces/"+ns, "").expect(t, 200); string(got.raw) != string(r.raw) {
					t.Errorf("GET %s, PUT answered %s", got.raw, r.raw)
				}
				if got := e.listedHistory(t, ns); got != c.want {
					t.Errorf("listed with history %q, want %q", got, c.want)
				}
			})
		}
	})
	t.Run("a new policy replaces the history", func(t *testing.T) {
		e.setPolicy(t, "replaced", `{"access":"shared","history":{"versions":10,"days":30}}`)
		if got := historyOf(t, e.setPolicy(t, "replaced", `{"access":"shared","history":{"versions":2}}`)); got != `{"versions":2}` {
			t.Errorf("lowered to %q", got)
		}
		if got := historyOf(t, e.setPolicy(t, "replaced", `{"access":"shared"}`)); got != "" {
			t.Errorf("a policy without history kept %q", got)
		}
		e.setPolicy(t, "replaced", `{"access":"shared","history":{"versions":4}}`)
		e.do("DELETE", adminApps+"/namespaces/replaced", "").expect(t, 204)
		if got := historyOf(t, e.do("GET", adminApps+"/namespaces/replaced", "").expect(t, 200)); got != "" {
			t.Errorf("DELETE kept history %q", got)
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct{ name, history, field, says string }{
			{"unknown member", `{"versions":1,"keep":2}`, "history", `"keep"`},
			{"member in another case", `{"Versions":1}`, "history", `did you mean "versions"`},
			{"member named twice", `{"versions":1,"versions":2}`, "body", "twice"},
			{"no versions", `{"days":30}`, "history.versions", "required"},
			{"empty", `{}`, "history.versions", "required"},
			{"versions null", `{"versions":null}`, "history.versions", "required"},
			{"versions past 100", `{"versions":101}`, "history.versions", "from 1 to 100"},
			{"versions negative", `{"versions":-1}`, "history.versions", "got -1"},
			{"versions a fraction", `{"versions":1.5}`, "history.versions", "whole number"},
			{"versions 1.0", `{"versions":1.0}`, "history.versions", "whole number"},
			{"versions an exponent", `{"versions":1e1}`, "history.versions", "whole number"},
			{"versions a string", `{"versions":"5"}`, "history.versions", "whole number"},
			{"versions past int64", `{"versions":9223372036854775808}`, "history.versions", "from 1 to 100"},
			{"days past 3650", `{"versions":1,"days":3651}`, "history.days", "from 1 to 3650"},
			{"days negative", `{"versions":1,"days":-1}`, "history.days", "or absent for no age limit"},
			{"days 0", `{"versions":3,"days":0}`, "history.days", "from 1 to 3650, or absent for no age limit; got 0"},
			{"days a fraction", `{"versions":1,"days":2.5}`, "history.days", "whole number"},
			{"days without versions", `{"versions":0,"days":30}`, "history.days", "history.versions 1 or more"},
			{"not an object", `5`, "body", "history has the wrong type"},
			{"an array", `[{"versions":1}]`, "body", "history has the wrong type"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.do("PUT", adminApps+"/namespaces/refused", `{"access":"shared","history":`+c.history+`}`).expect(t, 400)
				if r.body["error"] != "Invalid "+c.field || !strings.Contains(fmt.Sprint(r.body["details"]), c.says) {
					t.Errorf("400 body %s; want Invalid %s saying %q", r.raw, c.field, c.says)
				}
			})
		}
		if r := e.do("GET", adminApps+"/namespaces/refused", "").expect(t, 200); r.body["version"] != json.Number("0") {
			t.Errorf("a refused policy was stored: %s", r.raw)
		}
	})
	t.Run("at once beside a change into private", func(t *testing.T) {
		// A settle time the requests cannot reach: the change settles
		// when the clock is moved.
		e := newEnv(t, store.WithPolicySettle(time.Hour))
		path := adminApps + "/namespaces/diary"
		r := e.do("PUT", path, `{"access":"private","history":{"versions":5}}`).expect(t, 202)
		if got := historyOf(t, r); got != `{"versions":5}` || r.body["access"] != "shared" || r.body["pending"] == nil {
			t.Errorf("announcement %s: want the history in effect beside the pending change", r.raw)
		}
		settles := r.body["pending"].(map[string]any)["settlesAt"]
		// The same change with another history, before it settles: the
		// history applies, the change keeps its times.
		r = e.do("PUT", path, `{"access":"private","history":{"versions":7,"days":2}}`).expect(t, 202)
		if got := historyOf(t, r); got != `{"versions":7,"days":2}` || r.body["pending"].(map[string]any)["settlesAt"] != settles {
			t.Errorf("repeated with another history: %s", r.raw)
		}
		if got := historyOf(t, e.do("GET", path, "").expect(t, 200)); got != `{"versions":7,"days":2}` {
			t.Errorf("GET during the change shows history %q", got)
		}
		e.clock.Advance(time.Hour)
		r = e.do("PUT", path, `{"access":"private","history":{"versions":7,"days":2}}`).expect(t, 200)
		if got := historyOf(t, r); got != `{"versions":7,"days":2}` || r.body["access"] != "private" || r.body["pending"] != nil {
			t.Errorf("completed %s", r.raw)
		}
	})
	t.Run("a refused change into private stores no history", func(t *testing.T) {
		e.as("alice", "POST", base+"/busy/x", `{"data":1}`).expect(t, 201)
		e.do("PUT", adminApps+"/namespaces/busy", `{"access":"private","history":{"versions":5}}`).expect(t, 409)
		if got := historyOf(t, e.do("GET", adminApps+"/namespaces/busy", "").expect(t, 200)); got != "" {
			t.Errorf("the refused change stored history %q", got)
		}
	})
}

// TestPolicyChangeReachesOtherContainers checks how soon a change made
// through one container applies in another: within the cache TTL.
func TestPolicyChangeReachesOtherContainers(t *testing.T) {
	t.Parallel()
	tables := storetest.NewTables(t)
	client := storetest.Client(t)
	clock := &storetest.Clock{}
	serve := func() *env {
		st := store.New(client, tables, store.WithClock(clock.Now), store.WithPolicySettle(testSettle))
		api := httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
			Subject: httpapi.HeaderSubject, CursorSecret: []byte("k"), RequestBudget: apitest.Budget, Logger: apitest.Logger(t), Now: clock.Now,
		})
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		return &env{t: t, srv: srv, tables: tables, client: client, clock: clock}
	}
	admin, data := serve(), serve()
	data.as("", "GET", base+"/late/x", "").expect(t, 404) // caches "shared"
	admin.setPolicy(t, "late", `{"access":"private"}`)
	clock.Advance(store.DefaultLimitsTTL)
	data.as("", "GET", base+"/late/x", "").expect(t, 401)
}

// In a namespace without a policy every caller reaches every item, as
// before policies existed.
func TestSharedNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	item, list := base+"/open/item", base+"/open/feed"
	e.as("alice", "POST", item, `{"data":1}`).expect(t, 201)
	for _, sk := range []string{"a", "b"} {
		e.as("alice", "POST", list+"/"+sk, `{"data":1}`).expect(t, 201)
	}
	e.as("bob", "GET", item, "").expect(t, 200)
	e.as("", "GET", item, "").expect(t, 200)
	page := e.as("alice", "GET", list+"/list?limit=1", "").expect(t, 200)
	cursor, _ := page.body["cursor"].(string)
	if got := listSortKeys(t, e.as("bob", "GET", list+"/list?limit=1&cursor="+cursor, "").expect(t, 200)); strings.Join(got, ",") != "b" {
		t.Errorf("bob continues alice's cursor with %v", got)
	}
	if got := listSortKeys(t, e.as("bob", "GET", list+"/list?startKey=b", "").expect(t, 200)); strings.Join(got, ",") != "b" {
		t.Errorf("bob's range %v", got)
	}
	if r := e.as("bob", "PUT", item, `{"data":2}`).expect(t, 200); r.body["createdBySubject"] != "alice" || r.body["updatedBySubject"] != "bob" {
		t.Errorf("bob's update %s", r.raw)
	}
	e.as("bob", "DELETE", item, "").expect(t, 204)
	e.as("bob", "DELETE", list+"/list", "").expect(t, 204)
	if got := listSortKeys(t, e.as("alice", "GET", list+"/list", "").expect(t, 200)); len(got) != 0 {
		t.Errorf("left %v", got)
	}
}
