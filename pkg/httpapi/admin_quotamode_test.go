package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/store"
)

// TestQuotaMode takes an app through its quota modes, in order: each
// step's answer must be as it gives. A refused body is a 400 that names
// what was wrong, and changes nothing: the mode read after the refusals
// is the one set before them.
func TestQuotaMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	route := adminApps + "/quota-mode"
	answer := func(mode string) string { return `{"applicationUuid":"` + app + `","mode":"` + mode + `"}` + "\n" }
	for _, step := range []struct {
		name, method, path, body string
		status                   int
		want                     string // the whole answer, of a 200
		error, details           string // of a refusal; details in part
	}{
		{name: "strict until set", method: "GET", path: route, status: 200, want: answer("strict")},
		{name: "set streamed", method: "PUT", path: route, body: `{"mode": "streamed"}`, status: 200, want: answer("streamed")},
		{name: "read back", method: "GET", path: route, status: 200, want: answer("streamed")},
		{name: "the app's id in upper case", method: "GET", path: admin + "/apps/" + strings.ToUpper(app) + "/quota-mode", status: 200, want: answer("streamed")},
		{name: "set streamed again", method: "PUT", path: route, body: `{"mode":"streamed"}`, status: 200, want: answer("streamed")},
		{name: "a mode of none of the names", method: "PUT", path: route, body: `{"mode": "lazy"}`, status: 400,
			error: "Invalid mode", details: `must be "strict" or "streamed", got "lazy"`},
		{name: "a mode in another case", method: "PUT", path: route, body: `{"mode": "Strict"}`, status: 400,
			error: "Invalid mode", details: `got "Strict"`},
		{name: "an empty mode", method: "PUT", path: route, body: `{"mode": ""}`, status: 400, error: "Invalid mode", details: `got ""`},
		{name: "no mode", method: "PUT", path: route, body: `{}`, status: 400, error: "Invalid mode", details: "is required"},
		{name: "a null mode", method: "PUT", path: route, body: `{"mode": null}`, status: 400, error: "Invalid mode", details: "is required"},
		{name: "a mode that is no string", method: "PUT", path: route, body: `{"mode": 1}`, status: 400,
			error: "Invalid body", details: "mode has the wrong type"},
		{name: "an unknown member", method: "PUT", path: route, body: `{"mode": "strict", "applicationUuid": "` + app + `"}`, status: 400,
			error: "Invalid body", details: `has no member "applicationUuid"; its members are "mode"`},
		{name: "a member misspelt", method: "PUT", path: route, body: `{"Mode": "strict"}`, status: 400,
			error: "Invalid body", details: `did you mean "mode"?`},
		{name: "the mode twice", method: "PUT", path: route, body: `{"mode": "strict", "mode": "streamed"}`, status: 400,
			error: "Invalid body", details: `names member "mode" twice`},
		{name: "a body that is no object", method: "PUT", path: route, body: `"strict"`, status: 400,
			error: "Invalid body", details: `is not {"mode": "strict" | "streamed"}`},
		{name: "a body that is no JSON", method: "PUT", path: route, body: `mode=strict`, status: 400, error: "Invalid body"},
		{name: "no body", method: "PUT", path: route, status: 400, error: "Invalid body"},
		{name: "a body past its bound", method: "PUT", path: route, body: `{"mode": "` + strings.Repeat("s", 2000) + `"}`, status: 413,
			error: "Payload too large", details: "at most 1 KiB"},
		{name: "unchanged by the refusals", method: "GET", path: route, status: 200, want: answer("streamed")},
		{name: "switch back to strict", method: "PUT", path: route, body: `{"mode": "strict"}`, status: 200, want: answer("strict")},
		{name: "read back strict", method: "GET", path: route, status: 200, want: answer("strict")},
		{name: "read of an app id that is no UUID", method: "GET", path: admin + "/apps/not-an-app/quota-mode", status: 400,
			error: "Invalid applicationUuid", details: `"not-an-app" is not a UUID`},
		{name: "set of an app id that is no UUID", method: "PUT", path: admin + "/apps/not-an-app/quota-mode", body: `{"mode": "streamed"}`, status: 400,
			error: "Invalid applicationUuid", details: `"not-an-app" is not a UUID`},
		{name: "a method the route does not take", method: "DELETE", path: route, status: 405, error: "Method not allowed", details: "allowed: GET, HEAD, PUT"},
	} {
		t.Run(step.name, func(t *testing.T) {
			r := e.on(t).do(step.method, step.path, step.body).expect(t, step.status)
			if step.want != "" && string(r.raw) != step.want {
				t.Errorf("answer %s, want %s", r.raw, step.want)
			}
			if step.error != "" && (r.body["error"] != step.error || !strings.Contains(fmt.Sprint(r.body["details"]), step.details)) {
				t.Errorf("error %q, details %q; want %q, %q", r.body["error"], r.body["details"], step.error, step.details)
			}
		})
	}
}

// A deployment whose data tables' streams nothing reads (tables imported
// from a seed deployment) refuses the streamed mode, saying why, and keeps
// strict.
func TestQuotaModeWithoutStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.WithoutStreams())
	route := adminApps + "/quota-mode"
	r := e.on(t).do("PUT", route, `{"mode": "streamed"}`).expect(t, 501)
	if r.body["error"] != "Streamed quotas not available" || !strings.Contains(fmt.Sprint(r.body["details"]), "imported without streams") {
		t.Errorf("refusal %s", r.raw)
	}
	e.on(t).do("PUT", route, `{"mode": "strict"}`).expect(t, 200)
	if r := e.on(t).do("GET", route, "").expect(t, 200); r.body["mode"] != "strict" {
		t.Errorf("mode after the refusal: %s", r.raw)
	}
}
