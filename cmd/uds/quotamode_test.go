package main

import (
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// TestQuotaModeCommand shows and sets an app's quota mode, in order: each
// command's exit status and output must be as given, and a mode the
// server does not know is its refusal, naming the mode.
func TestQuotaModeCommand(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		out    string
		stderr string // its start
	}{
		{"never set", []string{"quota-mode", app}, 0, "strict\n", ""},
		{"set streamed", []string{"quota-mode", app, "streamed"}, 0, "streamed\n", ""},
		{"shown", []string{"quota-mode", app}, 0, "streamed\n", ""},
		{"a mode there is not", []string{"quota-mode", app, "eventual"}, 1, "",
			`uds quota-mode: 400 Invalid mode: must be "strict" or "streamed", got "eventual"`},
		{"a mode in another case", []string{"quota-mode", app, "Strict"}, 1, "", "uds quota-mode: 400 Invalid mode"},
		{"unchanged by the refusals", []string{"quota-mode", app}, 0, "streamed\n", ""},
		{"set strict", []string{"quota-mode", app, "strict"}, 0, "strict\n", ""},
		{"shown strict", []string{"quota-mode", app}, 0, "strict\n", ""},
		{"an app that is no UUID", []string{"quota-mode", "not-an-app"}, 1, "", "uds quota-mode: 400 Invalid applicationUuid"},
		{"no app", []string{"quota-mode"}, 2, "", "uds quota-mode: quota-mode takes APP [strict|streamed]"},
		{"too many arguments", []string{"quota-mode", app, "strict", "now"}, 2, "", "uds quota-mode: quota-mode takes APP [strict|streamed]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := uds(t, srv, "", c.args...)
			if code != c.code || out != c.out || !strings.HasPrefix(errOut, c.stderr) || (c.stderr == "") != (errOut == "") {
				t.Errorf("%v: %d %q %q; want %d, %q and stderr starting %q", c.args, code, out, errOut, c.code, c.out, c.stderr)
			}
		})
	}
}
