package main

import (
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// TestRegistryCommands registers, shows, finds, lists and unregisters
// apps, in order: each command's exit status, and parts of its output
// and errors (the registration's dates vary).
func TestRegistryCommands(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	const other = "0b4e7c4e-6f0a-4b43-9d53-2f6c1e0f6a11"
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		out    string // a part of the output; the whole of it where exact
		exact  bool
		errOut string // a part of the errors
	}{
		{"register", []string{"register-app", app, "--name", "Fitness", "--description", "Workouts and goals"}, 0,
			`{"applicationUuid":"` + app + `","name":"Fitness","description":"Workouts and goals","createdDate":"`, false, ""},
		{"without --name", []string{"register-app", other}, 2, "", true, "--name is required"},
		{"the name in another case", []string{"register-app", other, "--name", "FITNESS"}, 1, "", true,
			`uds register-app: 409 App name taken: the name "FITNESS" is registered by app ` + app},
		{"an empty name", []string{"register-app", other, "--name", ""}, 1, "", true, "400 Invalid name: must not be empty"},
		{"shown", []string{"app", app}, 0, `"name":"Fitness","description":"Workouts and goals"`, false, ""},
		{"its id by name", []string{"app-id", "fitness"}, 0, app + "\n", true, ""},
		{"the registry", []string{"registry"}, 0, `{"applicationUuid":"` + app + `","name":"Fitness"`, false, ""},
		{"renamed, its description removed", []string{"register-app", app, "--name", "Fitness Pro"}, 0, `"name":"Fitness Pro","createdDate":"`, false, ""},
		{"unregistered", []string{"unregister-app", app}, 0, "", true, ""},
		{"unregistered again", []string{"unregister-app", app}, 0, "", true, ""},
		{"the registry empty", []string{"registry"}, 0, "", true, ""},
		{"an item in a new namespace", []string{"create", app, "notes", "n1", "--data", `{"a":1}`}, 0, "", false, ""},
		{"the registry and the apps holding data", []string{"registry", "--held"}, 0, `{"applicationUuid":"` + app + `","registered":false}` + "\n", true, ""},
		{"the namespaces", []string{"namespaces", app}, 0, `"namespace":"notes","access":"shared"`, false, ""},
		{"the namespace's keys", []string{"ls-namespace", app, "notes"}, 0, `{"id":"n1","owner":"anonymous"`, false, ""},
		{"one owner's keys", []string{"ls-namespace", app, "notes", "--user", "bob"}, 0, "", true, ""},
		{"a name nobody has", []string{"app-id", "fitness pro"}, 1, "", true, `uds app-id: no app is registered under the name "fitness pro"`},
		{"not registered", []string{"app", app}, 1, "", true, "uds app: 404 App not registered"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := uds(t, srv, "", c.args...)
			if code != c.code || (c.exact && out != c.out) || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.errOut) {
				t.Errorf("%v: %d %q %q; want %d, %q, errors with %q", c.args, code, out, errOut, c.code, c.out, c.errOut)
			}
		})
	}
}
