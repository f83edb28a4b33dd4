package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// registryApp is the i-th app of a registry test: a UUID of its own.
func registryApp(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i) }

const registry = admin + "/apps"

// registration decodes a registration answer.
type registration struct {
	ApplicationUUID, Name, Description string
	CreatedDate, UpdatedDate           string
	Limits                             *struct{ LimitBytes, LimitItems int64 }
}

func decodeRegistration(t *testing.T, raw []byte) registration {
	t.Helper()
	var reg registration
	if err := json.Unmarshal(raw, &reg); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return reg
}

// TestAppRegistry takes apps through their registration, in order: each
// step's answer must be as it gives, and a registration as read back.
func TestAppRegistry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	one, two := registryApp(1), registryApp(2)
	var created string // the first registration's createdDate
	for _, step := range []struct {
		name, method, path, body string
		status                   int
		error, details           string                    // of a refusal
		check                    func(registration) string // of an answer: what is wrong, or ""
	}{
		{name: "not registered", method: "GET", path: registry + "/" + one, status: 404, error: "App not registered"},
		{name: "register, trimmed", method: "PUT", path: registry + "/" + one, body: `{"name": "  Fitness ", "description": "Workouts and goals"}`, status: 200,
			check: func(r registration) string {
				created = r.CreatedDate
				if r.ApplicationUUID != one || r.Name != "Fitness" || r.Description != "Workouts and goals" || r.CreatedDate == "" ||
					r.UpdatedDate != r.CreatedDate || r.Limits != nil {
					return "not the registration sent"
				}
				return ""
			}},
		{name: "read back", method: "GET", path: registry + "/" + strings.ToUpper(one), status: 200,
			check: func(r registration) string {
				if r.Name != "Fitness" || r.Description != "Workouts and goals" || r.CreatedDate != created {
					return "not the registration stored"
				}
				return ""
			}},
		{name: "the same again", method: "PUT", path: registry + "/" + one, body: `{"name": "Fitness", "description": "Workouts and goals"}`, status: 200,
			check: func(r registration) string {
				if r.UpdatedDate != created {
					return "a registration unchanged was written again"
				}
				return ""
			}},
		{name: "another app, the name in another case", method: "PUT", path: registry + "/" + two, body: `{"name": "FITNESS"}`, status: 409,
			error: "App name taken", details: `the name "FITNESS" is registered by app ` + one},
		{name: "renamed, without its description", method: "PUT", path: registry + "/" + one, body: `{"name": "Fitness Pro"}`, status: 200,
			check: func(r registration) string {
				if r.Name != "Fitness Pro" || r.Description != "" || r.CreatedDate != created || r.UpdatedDate <= created {
					return "not renamed, or its dates wrong"
				}
				return ""
			}},
		{name: "the old name is free", method: "PUT", path: registry + "/" + two, body: `{"name": "fitness", "description": null}`, status: 200,
			check: func(r registration) string {
				if r.Name != "fitness" || r.ApplicationUUID != two {
					return "not registered"
				}
				return ""
			}},
		{name: "limits set", method: "PUT", path: registry + "/" + one + "/quota", body: `{"limitBytes": 5000, "limitItems": -1}`, status: 200},
		{name: "limits shown", method: "GET", path: registry + "/" + one, status: 200,
			check: func(r registration) string {
				if r.Limits == nil || r.Limits.LimitBytes != 5000 || r.Limits.LimitItems != -1 {
					return "the app's limits are not shown"
				}
				return ""
			}},
		{name: "unregister", method: "DELETE", path: registry + "/" + one, status: 204},
		{name: "unregister again", method: "DELETE", path: registry + "/" + one, status: 204},
		{name: "gone", method: "GET", path: registry + "/" + one, status: 404, error: "App not registered"},
		{name: "its name is free", method: "PUT", path: registry + "/" + registryApp(3), body: `{"name": "fitness pro"}`, status: 200},
	} {
		t.Run(step.name, func(t *testing.T) {
			// Every write is a millisecond after the one before, so that
			// a date that changes shows it.
			e.clock.Advance(time.Millisecond)
			r := e.do(step.method, step.path, step.body).expect(t, step.status)
			if step.error != "" && (r.body["error"] != step.error || !strings.Contains(fmt.Sprint(r.body["details"]), step.details)) {
				t.Errorf("error %q, details %q; want %q, %q", r.body["error"], r.body["details"], step.error, step.details)
			}
			if step.check != nil {
				if wrong := step.check(decodeRegistration(t, r.raw)); wrong != "" {
					t.Errorf("%s: %s", wrong, r.raw)
				}
			}
		})
	}
	if r := e.do("GET", registry+"/"+one+"/quota", "").expect(t, 200); num(t, r.body["limitBytes"]) != 5000 {
		t.Errorf("unregistering changed the app's limits: %s", r.raw)
	}
}

// TestAppNamesFoldCase checks that app names are unique under Unicode case
// folding, not lower-casing alone: a name whose fold another app's name
// shares is a 409 naming that app, and finds it.
func TestAppNamesFoldCase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i, pair := range [][2]string{{"ΟΔΟΣ", "οδος"}, {"stats", "ſtats"}} {
		holder, twin := registryApp(10+2*i), registryApp(11+2*i)
		e.do("PUT", registry+"/"+holder, `{"name": "`+pair[0]+`"}`).expect(t, 200)
		r := e.do("PUT", registry+"/"+twin, `{"name": "`+pair[1]+`"}`).expect(t, 409)
		if d, _ := r.body["details"].(string); r.body["error"] != "App name taken" || !strings.Contains(d, holder) {
			t.Errorf("%s beside %s: %s", pair[1], pair[0], r.raw)
		}
		found := e.do("GET", registry+"?name="+url.QueryEscape(pair[1]), "").expect(t, 200)
		if apps, _ := found.body["apps"].([]any); len(apps) != 1 || apps[0].(map[string]any)["applicationUuid"] != holder {
			t.Errorf("?name=%s found %s, want %s", pair[1], found.raw, holder)
		}
	}
}

// TestAppRegistrationRefusals sends registrations and listings the API
// refuses: each answer is a 400 naming what was wrong, and nothing is
// written.
func TestAppRegistrationRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := registry + "/" + registryApp(1)
	for _, user := range []string{"alice", "bob"} {
		e.as(user, "POST", base+"/prefs/"+user, `{"data": 1}`).expect(t, 201)
	}
	foreign := e.do("GET", admin+"/apps/"+app+"/users?limit=1", "").expect(t, 200).body["cursor"]
	before := e.count(e.tables.Apps)
	for _, tc := range []struct {
		name, method, path, body string
		error, details           string
	}{
		{"no name", "PUT", path, `{"description": "x"}`, "Invalid name", "is required"},
		{"a null name", "PUT", path, `{"name": null}`, "Invalid name", "is required"},
		{"an empty name", "PUT", path, `{"name": ""}`, "Invalid name", "must not be empty"},
		{"a name of white space", "PUT", path, `{"name": " \t "}`, "Invalid name", "must not be empty"},
		{"a name of 101 characters", "PUT", path, `{"name": "` + strings.Repeat("é", 101) + `"}`, "Invalid name", "is 101 characters; at most 100"},
		{"a name with a control character", "PUT", path, `{"name": "a\u0007b"}`, "Invalid name", "control characters"},
		{"a name that is no string", "PUT", path, `{"name": 5}`, "Invalid body", "name has the wrong type"},
		{"a description with a newline", "PUT", path, `{"name": "a", "description": "one\ntwo"}`, "Invalid description", "newlines"},
		{"a description of 1001 bytes", "PUT", path, `{"name": "a", "description": "` + strings.Repeat("d", 1001) + `"}`, "Invalid description", "is 1001 bytes; at most 1000"},
		{"an unknown member", "PUT", path, `{"name": "a", "owner": "x"}`, "Invalid body", `has no member "owner"`},
		{"a member in another case", "PUT", path, `{"Name": "a"}`, "Invalid body", `did you mean "name"?`},
		{"a member twice", "PUT", path, `{"name": "a", "name": "b"}`, "Invalid body", `member "name" twice`},
		{"not JSON", "PUT", path, `name=a`, "Invalid body", `is not {"name": "...", "description": "..."}`},
		{"an empty body", "PUT", path, ``, "Invalid body", ""},
		{"an app that is no UUID", "PUT", registry + "/fitness", `{"name": "a"}`, "Invalid applicationUuid", "is not a UUID"},
		{"a read of an app that is no UUID", "GET", registry + "/fitness", "", "Invalid applicationUuid", "is not a UUID"},
		{"a removal of an app that is no UUID", "DELETE", registry + "/fitness", "", "Invalid applicationUuid", "is not a UUID"},
		{"a query parameter on a registration", "GET", path + "?name=a", "", "Invalid query", "takes no query parameters"},
		{"an empty name looked up", "GET", registry + "?name=", "", "Invalid name", "must not be empty"},
		{"a name looked up with a limit", "GET", registry + "?name=a&limit=5", "", "Invalid query", "neither limit nor cursor"},
		{"a name looked up with a cursor", "GET", registry + "?cursor=x&name=a", "", "Invalid query", "neither limit nor cursor"},
		{"a name looked up twice", "GET", registry + "?name=a&name=b", "", "Invalid name", "is given 2 times"},
		{"a limit of 0", "GET", registry + "?limit=0", "", "Invalid limit", "from 1 to 1000"},
		{"a limit of 1001", "GET", registry + "?limit=1001", "", "Invalid limit", "from 1 to 1000"},
		{"a forged cursor", "GET", registry + "?cursor=abc.def", "", "Invalid cursor", "was not issued for this listing"},
		{"another listing's cursor", "GET", registry + "?cursor=" + url.QueryEscape(fmt.Sprint(foreign)), "", "Invalid cursor", "was not issued for this listing"},
		{"a misspelt parameter", "GET", registry + "?nmae=a", "", "Invalid query", `did you mean "name"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.body).expect(t, 400)
			if r.body["error"] != tc.error || !strings.Contains(fmt.Sprint(r.body["details"]), tc.details) {
				t.Errorf("error %q, details %q; want %q, %q", r.body["error"], r.body["details"], tc.error, tc.details)
			}
		})
	}
	if n := e.count(e.tables.Apps) - before; n != 0 {
		t.Errorf("refused registrations wrote %d items", n)
	}
	t.Run("a name of 100 characters", func(t *testing.T) {
		name := strings.Repeat("é", 100)
		if r := e.do("PUT", path, `{"name": "`+name+`"}`).expect(t, 200); r.body["name"] != name {
			t.Errorf("registered as %s", r.raw)
		}
	})
	t.Run("a body past the bound", func(t *testing.T) {
		e.do("PUT", path, `{"name": "`+strings.Repeat("n", 17<<10)+`"}`).expect(t, 413)
	})
}

// TestAppNameReserved registers seed 000's reserved name "hmh" in a
// deployment with a created-content app, where only that app may have it,
// and in one without, where it is a name like any other.
func TestAppNameReserved(t *testing.T) {
	t.Parallel()
	createdContent, other := registryApp(10), registryApp(11)
	t.Run("with a created-content app", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, store.WithCreatedContentApp(createdContent))
		r := e.do("PUT", registry+"/"+other, `{"name": "HMH"}`).expect(t, 409)
		if r.body["error"] != "App name reserved" || !strings.Contains(fmt.Sprint(r.body["details"]), "reserved for app "+createdContent) {
			t.Errorf("refusal %s", r.raw)
		}
		e.do("PUT", registry+"/"+createdContent, `{"name": "hmh", "description": "Content users create"}`).expect(t, 200)
		found := e.do("GET", registry+"?name=HmH", "").expect(t, 200)
		if apps := found.body["apps"].([]any); len(apps) != 1 || apps[0].(map[string]any)["applicationUuid"] != createdContent {
			t.Errorf("hmh found as %s", found.raw)
		}
	})
	t.Run("without one", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.do("PUT", registry+"/"+other, `{"name": "HMH"}`).expect(t, 200)
	})
}

// TestAppRegistryListing lists registered apps a page at a time, in the
// order of their names whatever their case, and finds apps by name.
func TestAppRegistryListing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	names := []string{"delta", "Alpha", "charlie", "Bravo", "echo"}
	byName := map[string]string{}
	for i, n := range names {
		byName[n] = registryApp(i + 1)
		e.do("PUT", registry+"/"+byName[n], `{"name": "`+n+`"}`).expect(t, 200)
	}
	// Apps with data, limits or policies but no name are not listed.
	e.do("PUT", registry+"/"+registryApp(99)+"/quota", `{"limitItems": 5}`).expect(t, 200)
	e.do("PUT", registry+"/"+byName["echo"]+"/quota", `{"limitItems": 5}`).expect(t, 200)

	t.Run("paged", func(t *testing.T) {
		var got, pages []string
		cursor := ""
		for range len(names) + 1 {
			q := "?limit=2"
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			r := e.do("GET", registry+q, "").expect(t, 200)
			var page []string
			for _, a := range r.body["apps"].([]any) {
				reg := a.(map[string]any)
				if reg["applicationUuid"] != byName[reg["name"].(string)] {
					t.Errorf("row %v", reg)
				}
				page = append(page, reg["name"].(string))
			}
			got = append(got, page...)
			pages = append(pages, strings.Join(page, ","))
			cursor, _ = r.body["cursor"].(string)
			if cursor == "" {
				break
			}
		}
		if want := []string{"Alpha,Bravo", "charlie,delta", "echo"}; !slices.Equal(pages, want) {
			t.Errorf("pages %q, want %q", pages, want)
		}
	})
	t.Run("one page", func(t *testing.T) {
		r := e.do("GET", registry, "").expect(t, 200)
		if apps := r.body["apps"].([]any); len(apps) != len(names) || r.body["cursor"] != nil {
			t.Errorf("the default page: %s", r.raw)
		}
		if limits := r.body["apps"].([]any)[4].(map[string]any)["limits"]; fmt.Sprint(limits) != "map[limitBytes:0 limitItems:5]" {
			t.Errorf("echo's limits shown as %v", limits)
		}
	})
	for _, tc := range []struct{ name, query, want string }{
		{"by name", "Bravo", byName["Bravo"]},
		{"in another case", "bRAVO", byName["Bravo"]},
		{"with white space around it", " alpha ", byName["Alpha"]},
		{"a name nobody has", "foxtrot", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", registry+"?name="+url.QueryEscape(tc.query), "").expect(t, 200)
			var ids []string
			for _, a := range r.body["apps"].([]any) {
				ids = append(ids, a.(map[string]any)["applicationUuid"].(string))
			}
			if strings.Join(ids, ",") != tc.want || r.body["cursor"] != nil {
				t.Errorf("found %s, want %q", r.raw, tc.want)
			}
		})
	}
}

// TestBehaviorApp serves the values computed about each user (seed 000's
// data.cb.*) under the reserved behavior app: its namespaces are private
// without a policy, so a caller reads and writes only its own values,
// while operators read every user's and set the app's quota as for any
// app.
func TestBehaviorApp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cb := "/rest/api/v1/data/" + uds.BehaviorApp
	value := cb + "/behavior/x"
	e.as("alice", "POST", value, `{"data": {"streak": 3}}`).expect(t, 201)
	t.Run("the caller's own", func(t *testing.T) {
		r := e.as("alice", "GET", value, "").expect(t, 200)
		if fmt.Sprint(r.body["data"]) != "map[streak:3]" {
			t.Errorf("alice reads %s", r.raw)
		}
	})
	t.Run("another caller's", func(t *testing.T) {
		e.as("bob", "GET", value, "").expect(t, 404)
		// Bob's behavior/x is another value: his create does not conflict.
		e.as("bob", "POST", value, `{"data": {"streak": 1}}`).expect(t, 201)
	})
	t.Run("anonymous", func(t *testing.T) {
		e.as("", "GET", value, "").expect(t, 401)
		e.as("", "POST", cb+"/behavior/y", `{"data": 1}`).expect(t, 401)
	})
	t.Run("the policy shown", func(t *testing.T) {
		r := e.do("GET", admin+"/apps/"+uds.BehaviorApp+"/namespaces/behavior", "").expect(t, 200)
		if r.body["access"] != "private" || num(t, r.body["version"]) != 0 {
			t.Errorf("the behavior app's namespace without a policy shows %s", r.raw)
		}
	})
	t.Run("an operator reads every user's", func(t *testing.T) {
		r := e.do("GET", admin+"/apps/"+uds.BehaviorApp+"/export", "").expect(t, 200)
		got := map[string]string{}
		for _, rec := range r.body["records"].([]any) {
			rec := rec.(map[string]any)
			got[fmt.Sprint(rec["owner"])] = fmt.Sprintf("%s/%s %v", rec["namespace"], rec["id"], rec["data"])
		}
		if want := map[string]string{"alice": "behavior/x map[streak:3]", "bob": "behavior/x map[streak:1]"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("exported %v, want %v", got, want)
		}
	})
	t.Run("its quota", func(t *testing.T) {
		// Carol writes first after the change: the API has not cached
		// limits of hers that predate it.
		e.do("PUT", admin+"/apps/"+uds.BehaviorApp+"/quota", `{"limitItems": 1}`).expect(t, 200)
		e.as("carol", "POST", value, `{"data": 1}`).expect(t, 201)
		r := e.as("carol", "POST", cb+"/behavior/z", `{"data": 1}`).expect(t, 403)
		if r.body["error"] != "Quota exceeded" || num(t, r.body["limitItems"]) != 1 {
			t.Errorf("refusal %s", r.raw)
		}
		if q := e.do("GET", admin+"/apps/"+uds.BehaviorApp+"/users/carol/quota", "").expect(t, 200); num(t, q.body["usedItems"]) != 1 || num(t, q.body["limitItems"]) != 1 {
			t.Errorf("carol's quota %s", q.raw)
		}
	})
}
