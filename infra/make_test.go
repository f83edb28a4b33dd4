package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMakeChecksAuthorizerFirst runs make's deploying goals on a copy of
// the repository's makefiles, with no authorizer chosen: make must refuse
// at once, in the app's words, before it builds or installs anything
// (the app itself would say so only after minutes of building). With a
// choice made, by a make variable or a CDK context file, the goals go on.
// make runs with -n, so a goal that goes on only prints its commands.
func TestMakeChecksAuthorizerFirst(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	makefiles, err := filepath.Glob(filepath.Join(root, "mk", "*.mk"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "mk"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range append(makefiles, filepath.Join(root, "Makefile")) {
		copyFile(t, f, filepath.Join(dir, strings.TrimPrefix(f, root)))
	}
	// The prerequisites make looks for, empty: nothing runs under -n.
	for _, f := range []string{"go.mod", "go.sum", "package.json", "package-lock.json", "cdk.json"} {
		writeFile(t, filepath.Join(dir, f), "{}")
	}
	run := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-n"}, args...)...)
		cmd.Dir = dir
		// The environment chooses nothing: make reads variables from it,
		// and ~/.cdk.json from HOME.
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			switch name {
			case "JWT_ISSUER", "JWT_AUDIENCE", "PUBLIC_DATA_ROUTES", "MAKEFLAGS", "MFLAGS", "HOME":
			default:
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "HOME="+dir)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("make %v took %s", args, d)
		}
		return string(out), err
	}
	for _, goal := range []string{"synth", "cdk-diff", "deploy"} {
		t.Run(goal+" refused", func(t *testing.T) {
			out, err := run(t, goal)
			if err == nil || !strings.Contains(out, noAuthorizer) {
				t.Errorf("make -n %s: %v, output %q; want a refusal saying %q", goal, err, out, noAuthorizer)
			}
			for _, step := range []string{"go build", "npm ci", "cdk"} {
				if strings.Contains(strings.ReplaceAll(out, noAuthorizer, ""), step) {
					t.Errorf("make -n %s would run %q before refusing: %q", goal, step, out)
				}
			}
		})
	}
	t.Run("chosen by a make variable", func(t *testing.T) {
		if out, err := run(t, "synth", "PUBLIC_DATA_ROUTES=true"); err != nil || !strings.Contains(out, "cdk synth") {
			t.Errorf("make -n synth PUBLIC_DATA_ROUTES=true: %v, output %q", err, out)
		}
	})
	t.Run("chosen by a context file", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "cdk.context.json"), `{"publicDataRoutes": true}`)
		defer os.Remove(filepath.Join(dir, "cdk.context.json"))
		if out, err := run(t, "synth"); err != nil || !strings.Contains(out, "cdk synth") {
			t.Errorf("make -n synth with cdk.context.json choosing: %v, output %q", err, out)
		}
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
