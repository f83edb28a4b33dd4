package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/config"
)

// engineScript is the script make run starts its engine with.
const engineScript = "../../scripts/with-dynamodb.sh"

// runEngineScript runs the engine script with args and env added to a
// clean environment (no UDS_DYNAMODB_ENDPOINT of the test's), returning
// its combined output and exit status.
func runEngineScript(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(engineScript, args...)
	cmd.Env = append(cleanEnv(os.Environ()), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("%s: %v\n%s", engineScript, err, out)
	return "", 0
}

// TestEngineScriptRefusesAnotherProcess: a port where a process other than
// make engine-up's engine listens is refused, with exit status 1, before
// the command runs, naming the process and how to choose another port;
// also when a pid file names that process, and with --detach (make
// engine-up). An endpoint set explicitly is used whatever the port holds.
func TestEngineScriptRefusesAnotherProcess(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	data := filepath.Join(dir, "dynamodb")
	ran := filepath.Join(dir, "ran")
	for _, tc := range []struct {
		name    string
		pidFile bool
		args    []string
	}{
		{"make run", false, []string{"--db-path", data, "--port", strconv.Itoa(port), "--", "touch", ran}},
		{"a pid file naming another process", true, []string{"--db-path", data, "--port", strconv.Itoa(port), "--", "touch", ran}},
		{"make engine-up", false, []string{"--detach", "--db-path", data, "--port", strconv.Itoa(port)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(data + ".pid")
			if tc.pidFile {
				if err := os.MkdirAll(data, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(data+".pid", []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, status := runEngineScript(t, nil, tc.args...)
			if status != 1 {
				t.Fatalf("exit status %d, want 1:\n%s", status, out)
			}
			for _, want := range []string{
				fmt.Sprintf("port %d is taken by pid %d: %s", port, os.Getpid(), os.Args[0]),
				"not the engine of " + data,
				fmt.Sprintf("make run ENGINE_PORT=%d", port+1),
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the output does not say %q:\n%s", want, out)
				}
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("the command ran")
			}
		})
	}
	t.Run("an endpoint set explicitly", func(t *testing.T) {
		endpoint := "http://" + taken.Addr().String()
		out, status := runEngineScript(t, []string{config.EnvDynamoDBEndpoint + "=" + endpoint},
			"--db-path", data, "--port", strconv.Itoa(port), "--", "sh", "-c", "echo $"+config.EnvDynamoDBEndpoint)
		if status != 0 || strings.TrimSpace(out) != endpoint {
			t.Errorf("exit status %d, output %q; want 0 and %s", status, out, endpoint)
		}
	})
}

// TestEngineScriptAdoptsEngineUp: the engine make engine-up left running
// (--detach) serves a later command on its port with the same data
// folder, which learns the folder; with another data folder the same
// engine is refused, named as DynamoDB Local; without its pid file it is
// named as another make run's; and no second engine starts
// over its folder on another port.
func TestEngineScriptAdoptsEngineUp(t *testing.T) {
	t.Parallel()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	free.Close()
	dir := t.TempDir()
	data := filepath.Join(dir, "dynamodb")
	if out, status := runEngineScript(t, nil, "--detach", "--db-path", data, "--port", port); status != 0 {
		t.Fatalf("--detach: exit status %d\n%s", status, out)
	}
	pid, err := os.ReadFile(data + ".pid")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopEngine(t, strings.TrimSpace(string(pid))) })

	out, status := runEngineScript(t, nil, "--db-path", data, "--port", port, "--",
		"sh", "-c", "echo $"+config.EnvDynamoDBEndpoint+" $"+envDynamoDBData)
	if want := "http://127.0.0.1:" + port + " " + data; status != 0 || !strings.HasSuffix(out, want+"\n") {
		t.Errorf("exit status %d, output:\n%s\nwant 0 and %s last", status, out, want)
	}
	other := filepath.Join(dir, "other")
	out, status = runEngineScript(t, nil, "--db-path", other, "--port", port, "--", "true")
	if want := "port " + port + " is taken by pid " + strings.TrimSpace(string(pid)) + ": java"; status != 1 || !strings.Contains(out, want) || !strings.Contains(out, "DynamoDBLocal.jar") {
		t.Errorf("another data folder: exit status %d, output:\n%s\nwant 1 and %q", status, out, want)
	}
	// Without its pid file, the engine is as a make run in another
	// terminal leaves it: the same folder and port are refused, saying so.
	if err := os.Rename(data+".pid", data+".pid.aside"); err != nil {
		t.Fatal(err)
	}
	out, status = runEngineScript(t, nil, "--db-path", data, "--port", port, "--", "true")
	if want := "the engine of another make run over " + data; status != 1 || !strings.Contains(out, want) {
		t.Errorf("a make run's engine: exit status %d, output:\n%s\nwant 1 and %q", status, out, want)
	}
	if err := os.Rename(data+".pid.aside", data+".pid"); err != nil {
		t.Fatal(err)
	}
	// The same data folder on another port: a second engine over the
	// engine's files is refused before it starts.
	free, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	another := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	free.Close()
	out, status = runEngineScript(t, nil, "--db-path", data, "--port", another, "--", "true")
	if want := "The data folder " + data + " is in use by another DynamoDB engine, pid " + strings.TrimSpace(string(pid)) + ": java"; status != 1 || !strings.Contains(out, want) {
		t.Errorf("the same data folder on another port: exit status %d, output:\n%s\nwant 1 and %q", status, out, want)
	}
}

// stopEngine stops the detached engine of pid and waits until it is gone.
func stopEngine(t *testing.T, pid string) {
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	p, err := os.FindProcess(n)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stopping the engine: %v", err)
	}
	// Not a child of the test (the script that started it has ended):
	// its end is seen as the process disappearing, within ten seconds.
	for deadline := time.Now().Add(10 * time.Second); p.Signal(syscall.Signal(0)) == nil && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}
