package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/uds"
)

// wantAcceptPatch is the Accept-Patch an item's answers carry.
const wantAcceptPatch = httpapi.MergePatchType + ", " + httpapi.JSONPatchType

// patch sends a PATCH with the given content type.
func (e *env) patch(path, contentType, body string, headers ...string) response {
	e.t.Helper()
	r := e.send("PATCH", path, []byte(body), append([]string{"Content-Type", contentType}, headers...)...)
	if len(r.raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(r.raw))
		dec.UseNumber()
		if err := dec.Decode(&r.body); err != nil {
			e.t.Fatalf("PATCH %s: body is not a JSON object: %q", path, r.raw)
		}
	}
	return r
}

// Every answer of PATCH, on a key-value item and a list item alike.
func TestPatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, path string }{{"key-value item", "/ns/p"}, {"list item", "/ns/l/s1"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			path := base + tc.path
			e.patch(path, httpapi.MergePatchType, `{"a":1}`).expect(t, 404)
			created := e.do("POST", path, `{"data":{"keep":1.50,"a":{"b":1,"c":2}},"className":"Prefs"}`).expect(t, 201)

			// A merge patch changes what it names and keeps the rest's
			// bytes, the class name and the version's successor.
			r := e.patch(path, httpapi.MergePatchType, `{"a":{"c":null,"d":[1]}}`).expect(t, 200)
			if got := string(r.body["data"].(map[string]any)["keep"].(json.Number)); got != "1.50" {
				t.Errorf("an untouched member reads %s", got)
			}
			if !strings.Contains(string(r.raw), `"data":{"keep":1.50,"a":{"b":1,"d":[1]}}`) || r.body["className"] != "Prefs" ||
				r.body["version"] != json.Number("2") || r.header.Get("ETag") == "" || r.header.Get("ETag") == created.header.Get("ETag") {
				t.Errorf("after a merge patch: %s %v", r.raw, r.header)
			}
			// A JSON Patch, its test included.
			r = e.patch(path, httpapi.JSONPatchType+"; charset=utf-8", `[{"op":"test","path":"/a/b","value":1},{"op":"add","path":"/a/d/-","value":2},{"op":"move","from":"/keep","path":"/kept"}]`).expect(t, 200)
			if !strings.Contains(string(r.raw), `"data":{"a":{"b":1,"d":[1,2]},"kept":1.50}`) {
				t.Errorf("after a JSON Patch: %s", r.raw)
			}
			// A failed test and a missing path: 409, naming the operation.
			r = e.patch(path, httpapi.JSONPatchType, `[{"op":"replace","path":"/a/b","value":5},{"op":"test","path":"/a/b","value":2}]`).expect(t, 409)
			if r.body["code"] != "conflict" || !strings.Contains(r.body["details"].(string), "operation 1") ||
				fmt.Sprint(r.body["patchOperation"]) != "map[index:1 op:test path:/a/b]" {
				t.Errorf("a failed test: %s", r.raw)
			}
			r = e.patch(path, httpapi.JSONPatchType, `[{"op":"remove","path":"/nothing"}]`).expect(t, 409)
			if !strings.Contains(r.body["details"].(string), "/nothing") {
				t.Errorf("a missing path: %s", r.raw)
			}
			// A malformed document: 400 naming what is wrong.
			r = e.patch(path, httpapi.JSONPatchType, `[{"op":"jump","path":"/a"}]`).expect(t, 400)
			if d := r.body["details"].(string); r.body["error"] != "Invalid patch" || !strings.HasPrefix(d, `operation 0, member "op": `) || !strings.Contains(d, "jump") {
				t.Errorf("an unknown operation: %s", r.raw)
			}
			e.patch(path, httpapi.MergePatchType, `{"a":`).expect(t, 400)
			// Another type: 415 with Accept-Patch.
			r = e.patch(path, "application/json", `{"a":1}`).expect(t, 415)
			if r.header.Get("Accept-Patch") != wantAcceptPatch || r.body["error"] != "Unsupported patch document" ||
				!strings.Contains(r.body["details"].(string), `not "application/json"`) {
				t.Errorf("415 without Accept-Patch or its reason: %v %s", r.header, r.raw)
			}
			if got := e.send("HEAD", path, nil).expect(t, 200).header.Get("Accept-Patch"); got != wantAcceptPatch {
				t.Errorf("HEAD answers Accept-Patch %q", got)
			}
			if got := e.do("GET", path, "").expect(t, 200).header.Get("Accept-Patch"); got != wantAcceptPatch {
				t.Errorf("GET answers Accept-Patch %q", got)
			}
			// If-Match of another revision: 412; of this one: applied.
			e.patch(path, httpapi.MergePatchType, `{"x":1}`, "If-Match", created.header.Get("ETag")).expect(t, 412)
			now := e.do("GET", path, "").expect(t, 200)
			e.patch(path, httpapi.MergePatchType, `{"x":1}`, "If-Match", now.header.Get("ETag")).expect(t, 200)
			// Headers set the class name and the expiry; without them the
			// item keeps its own.
			r = e.patch(path, httpapi.MergePatchType, `{"y":1}`, httpapi.HeaderClassName, "Other", httpapi.HeaderTTL, "3600").expect(t, 200)
			if r.body["className"] != "Other" || r.body["expiresAt"] == nil {
				t.Errorf("headers did not set the class name and expiry: %s", r.raw)
			}
			r = e.patch(path, httpapi.MergePatchType, `{"y":2}`).expect(t, 200)
			if r.body["className"] != "Other" || r.body["expiresAt"] == nil {
				t.Errorf("a patch without headers changed the class name or expiry: %s", r.raw)
			}
			// A result too large: 413; a null result: 400.
			e.patch(path, httpapi.MergePatchType, `{"big":"`+strings.Repeat("x", 1<<20)+`"}`).expect(t, 413)
			e.patch(path, httpapi.MergePatchType, `null`).expect(t, 400)
		})
	}
}

// A patch's result meets the namespace's rules: its JSON Schema (422),
// the owner-write rule (403), the quota (403); a binary value is not
// patched (409).
func TestPatchRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setPolicy(t, "typed", `{"access":"shared","schema":{"type":"object","required":["title"]}}`)
	e.do("POST", base+"/typed/t", `{"data":{"title":"x"}}`).expect(t, 201)
	e.patch(base+"/typed/t", httpapi.MergePatchType, `{"title":null}`).expect(t, 422)

	e.setPolicy(t, "posts", `{"access":"owner-write"}`)
	e.do("PUT", admin+"/apps/"+app+"/users/olga/quota", `{"limitBytes": 400}`).expect(t, 200)
	e.do("POST", base+"/posts/p", `{"data":{"a":1}}`, "X-Uds-Subject", "olga").expect(t, 201)
	e.patch(base+"/posts/p", httpapi.MergePatchType, `{"a":2}`, "X-Uds-Subject", "peter").expect(t, 403)
	e.patch(base+"/posts/p", httpapi.MergePatchType, `{"a":2}`, "X-Uds-Subject", "olga").expect(t, 200)

	r := e.patch(base+"/posts/p", httpapi.MergePatchType, `{"a":"`+strings.Repeat("x", 500)+`"}`, "X-Uds-Subject", "olga").expect(t, 403)
	if r.body["error"] != "Quota exceeded" {
		t.Errorf("over the quota: %s", r.raw)
	}

	e.send("POST", base+"/ns/bin", []byte{1, 2, 3}, "Content-Type", "image/png")
	r = e.patch(base+"/ns/bin", httpapi.MergePatchType, `{"a":1}`).expect(t, 409)
	if !strings.Contains(r.body["details"].(string), "binary") {
		t.Errorf("a binary value: %s", r.raw)
	}

	// A patch is a request the caller's rate limit counts, with the
	// clock stopped so that no token comes back.
	e.clock.Freeze()
	e.do("PUT", admin+"/apps/"+app+"/users/rita/rate-limits", `{"perCaller": {"requestsPerSecond": 1, "burst": 2}}`).expect(t, 200)
	e.do("POST", base+"/ns/rated", `{"data":{"n":0}}`, "X-Uds-Subject", "rita").expect(t, 201)
	e.patch(base+"/ns/rated", httpapi.MergePatchType, `{"n":1}`, "X-Uds-Subject", "rita").expect(t, 200)
	e.patch(base+"/ns/rated", httpapi.MergePatchType, `{"n":2}`, "X-Uds-Subject", "rita").expect(t, 429)
	if r := e.do("GET", base+"/ns/rated", ""); !strings.Contains(string(r.raw), `"data":{"n":1}`) {
		t.Errorf("the patch refused for the rate wrote: %s", r.raw)
	}
}

// A patch document is read as every JSON body is: one that names a member
// twice or is not UTF-8 is refused (400), and so is a class name header
// that is not UTF-8, so that a patch never stores what a PUT refuses (a
// value checked against the schema as one thing and read as another).
// An item a patch stored so before these checks answers a patch into the
// object at fault with 409 and its reason, and a PUT replaces it.
func TestPatchKeepsTheRulesOfJSONBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setPolicy(t, "typed", `{"access":"shared","schema":{"properties":{"age":{"type":"integer","minimum":0}}}}`)
	path := base + "/typed/p"
	e.do("POST", path, `{"data":{"x":1,"age":1}}`).expect(t, 201)
	for _, tc := range []struct {
		name, contentType, body string
		headers                 []string
		field                   string
	}{
		{"a merge patch naming a member twice", httpapi.MergePatchType, `{"q":{"a":1,"a":2}}`, nil, "names member \"a\" twice"},
		{"a merge patch that is not an object", httpapi.MergePatchType, `[{"k":1,"k":2}]`, nil, "names member \"k\" twice"},
		{"a JSON Patch value naming a member twice", httpapi.JSONPatchType, `[{"op":"add","path":"/q","value":{"a":1,"a":2}}]`, nil, "names member \"a\" twice"},
		{"a JSON Patch past the schema", httpapi.JSONPatchType, `[{"op":"replace","path":"","value":{"age":-5,"age":3}}]`, nil, "names member \"age\" twice"},
		{"the same name spelled with an escape", httpapi.MergePatchType, `{"q":{"a":1,"\u0061":2}}`, nil, "names member \"a\" twice"},
		{"a merge patch not UTF-8", httpapi.MergePatchType, "{\"s\":\"\xff\"}", nil, "not valid UTF-8"},
		{"a JSON Patch not UTF-8", httpapi.JSONPatchType, "[{\"op\":\"add\",\"path\":\"/\xff\",\"value\":1}]", nil, "not valid UTF-8"},
		{"a class name not UTF-8", httpapi.MergePatchType, `{"x":2}`, []string{httpapi.HeaderClassName, "A\xffB"}, "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.patch(path, tc.contentType, tc.body, tc.headers...).expect(t, 400)
			if d, _ := r.body["details"].(string); r.body["code"] != "invalid" || !strings.Contains(d, tc.field) {
				t.Errorf("answered %s, want a 400 saying it %s", r.raw, tc.field)
			}
		})
	}
	if r := e.do("GET", path, "").expect(t, 200); string(mustField(t, r.raw, "data")) != `{"x":1,"age":1}` || r.body["version"] != json.Number("1") {
		t.Errorf("a refused patch wrote: %s", r.raw)
	}

	// An item holding such an object, as a patch could store one before.
	legacy := base + "/ns/legacy"
	key, err := uds.NewKey(app, "ns", "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Create(context.Background(), uds.Write{Key: key, Subject: "anonymous", Data: json.RawMessage(`{"x":1,"q":{"a":1,"a":2}}`)}); err != nil {
		t.Fatal(err)
	}
	r := e.patch(legacy, httpapi.MergePatchType, `{"q":{"a":5}}`).expect(t, 409)
	if d, _ := r.body["details"].(string); r.body["code"] != "conflict" || !strings.Contains(d, `names member "a" twice`) || !strings.Contains(d, "PUT") {
		t.Errorf("a patch into the object answered %s, want a 409 saying why and what to do", r.raw)
	}
	e.do("PUT", legacy, `{"data":{"x":1,"q":{"a":2}}}`).expect(t, 200)
	e.patch(legacy, httpapi.MergePatchType, `{"q":{"a":5}}`).expect(t, 200)
}
