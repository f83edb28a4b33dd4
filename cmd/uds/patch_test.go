package main

import (
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

func TestPatch(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	if code, _, stderr := uds(t, srv, "", "create", app, "prefs", "u1", "--data", `{"theme":"dark","level":3}`, "--class", "Prefs"); code != 0 {
		t.Fatalf("create: %s", stderr)
	}
	runCases(t, srv, []cliCase{
		{"a merge patch from --data", []string{"patch", app, "prefs", "u1", "--data", `{"theme":null,"lang":"en"}`}, "", 0, `"data":{"level":3,"lang":"en"},"className":"Prefs"`, ""},
		{"a JSON Patch from standard input", []string{"patch", app, "prefs", "u1", "--json-patch", "--class", "Prefs2"},
			`[{"op":"test","path":"/level","value":3},{"op":"replace","path":"/level","value":4}]`, 0, `"data":{"level":4,"lang":"en"},"className":"Prefs2"`, ""},
		{"a test that fails", []string{"patch", app, "prefs", "u1", "--json-patch", "--data", `[{"op":"test","path":"/level","value":3}]`}, "", 1, "",
			`uds patch: 409 Patch does not apply: operation 0 (test "/level")`},
		{"a stale If-Match", []string{"patch", app, "prefs", "u1", "--if-match", `"1-x"`, "--data", `{"a":1}`}, "", 1, "", "uds patch: 412"},
		{"a malformed JSON Patch", []string{"patch", app, "prefs", "u1", "--json-patch", "--data", `{"op":"add"}`}, "", 1, "", "uds patch: 400 Invalid patch"},
		{"nothing there", []string{"patch", app, "prefs", "missing", "--data", `{"a":1}`}, "", 1, "", "uds patch: 404"},
		{"a patch that is not JSON", []string{"patch", app, "prefs", "u1", "--data", `{nope`}, "", 2, "", "--data is not JSON"},
	})
}
