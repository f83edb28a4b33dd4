package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	t.Parallel()
	hello, fixture := bootstraps(t)
	dir := t.TempDir()
	eventFile := filepath.Join(dir, "event.json")
	if err := os.WriteFile(eventFile, []byte(apigwEvent), 0o644); err != nil {
		t.Fatal(err)
	}
	badEvent := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(badEvent, []byte(`{"version":`), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		args       []string
		mode       string // FIXTURE_MODE
		stdin      string
		wantCode   int
		wantStdout *regexp.Regexp // nil: not checked
		wantStderr *regexp.Regexp
		noStdout   bool
	}{
		{
			name:       "single cold start prints pretty response and summary",
			args:       []string{"-bootstrap", hello, "-event", eventFile},
			wantCode:   exitOK,
			wantStdout: regexp.MustCompile(`(?s)^\{\n  "statusCode": 200,\n.*"body": "\{\\"message\\":\\"hello\\"\}"`),
			wantStderr: regexp.MustCompile(`(?m)^init_duration_ms=\d+\.\d\d duration_ms=\d+\.\d\d status=200( max_rss_mb=[\d.]+)?$`),
		},
		{
			name:       "event from stdin",
			args:       []string{"-bootstrap", fixture, "-event", "-"},
			mode:       "echo",
			stdin:      `{"from":"stdin"}`,
			wantCode:   exitOK,
			wantStdout: regexp.MustCompile(`^\{\n  "from": "stdin"\n\}\n$`),
		},
		{
			name:       "repeat reports min and median init",
			args:       []string{"-bootstrap", hello, "-event", eventFile, "-repeat", "3", "-quiet"},
			wantCode:   exitOK,
			noStdout:   true,
			wantStderr: regexp.MustCompile(`(?s)run=1/3 init_duration_ms=.*run=3/3 .*\ncold_starts=3 init_min_ms=\d+\.\d\d init_median_ms=\d+\.\d\d init_max_ms=\d+\.\d\d duration_median_ms=\d+\.\d\d failures=0\n$`),
		},
		{
			name:       "function error exits 1 and prints the error",
			args:       []string{"-bootstrap", fixture},
			mode:       "error",
			wantCode:   exitFunctionError,
			wantStdout: regexp.MustCompile(`"errorType": "errorString"`),
			wantStderr: regexp.MustCompile(`(?m)status=error phase=invoke error_type=errorString`),
		},
		{
			name:       "init error exits 3",
			args:       []string{"-bootstrap", fixture, "-quiet"},
			mode:       "init-exit",
			wantCode:   exitInitError,
			wantStdout: regexp.MustCompile(`Runtime.ExitError`),
			wantStderr: regexp.MustCompile(`(?m)^init_duration_ms=[\d.]+ duration_ms=[\d.]+ status=error phase=init error_type=Runtime.ExitError`),
		},
		{
			name:       "timeout exits 4",
			args:       []string{"-bootstrap", fixture, "-timeout", "200ms"},
			mode:       "sleep",
			wantCode:   exitTimeout,
			wantStderr: regexp.MustCompile(`status=timeout phase=invoke error_type=Sandbox.Timedout`),
		},
		{
			name:       "repeat stops at the first failure",
			args:       []string{"-bootstrap", fixture, "-repeat", "5", "-quiet"},
			mode:       "error",
			wantCode:   exitFunctionError,
			wantStderr: regexp.MustCompile(`(?s)run=1/5 .*cold_starts=1 failures=1\n$`),
		},
		{name: "missing -bootstrap", args: nil, wantCode: exitUsage, wantStderr: regexp.MustCompile(`-bootstrap is required`)},
		{name: "event is not JSON", args: []string{"-bootstrap", hello, "-event", badEvent}, wantCode: exitUsage,
			wantStderr: regexp.MustCompile(`not valid JSON`)},
		{name: "event file missing", args: []string{"-bootstrap", hello, "-event", filepath.Join(dir, "nope.json")}, wantCode: exitUsage},
		{
			name:       "init timeout exits 4",
			args:       []string{"-bootstrap", fixture, "-init-timeout", "200ms"},
			mode:       "init-sleep",
			wantCode:   exitTimeout,
			wantStderr: regexp.MustCompile(`status=timeout phase=init error_type=Sandbox.Timedout`),
		},
		{name: "repeat 0", args: []string{"-bootstrap", hello, "-repeat", "0"}, wantCode: exitUsage},
		{name: "bootstrap missing", args: []string{"-bootstrap", filepath.Join(dir, "nope")}, wantCode: exitUsage},
		{name: "zero timeout", args: []string{"-bootstrap", hello, "-timeout", "0s"}, wantCode: exitUsage},
		{name: "stray argument", args: []string{"-bootstrap", hello, "extra"}, wantCode: exitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := testEnv("FIXTURE_MODE=" + tc.mode)
			code := run(context.Background(), tc.args, env, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			if tc.wantStdout != nil && !tc.wantStdout.MatchString(stdout.String()) {
				t.Errorf("stdout does not match %s:\n%s", tc.wantStdout, stdout.String())
			}
			if tc.noStdout && stdout.Len() > 0 {
				t.Errorf("stdout not empty:\n%s", stdout.String())
			}
			if tc.wantStderr != nil && !tc.wantStderr.MatchString(stderr.String()) {
				t.Errorf("stderr does not match %s:\n%s", tc.wantStderr, stderr.String())
			}
		})
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name string
		in   []time.Duration
		want time.Duration
	}{
		{name: "one", in: []time.Duration{3 * ms}, want: 3 * ms},
		{name: "odd, unsorted", in: []time.Duration{9 * ms, 1 * ms, 5 * ms}, want: 5 * ms},
		{name: "even takes the mean of the middle two", in: []time.Duration{4 * ms, 1 * ms, 2 * ms, 8 * ms}, want: 3 * ms},
		{name: "empty", in: nil, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.in...)
			if got := median(tc.in); got != tc.want {
				t.Errorf("median = %v, want %v", got, tc.want)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatal("median reordered its input")
				}
			}
		})
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  Result
		want string
	}{
		{name: "success", res: Result{Init: 12300 * time.Microsecond, Duration: 4500 * time.Microsecond, Response: []byte(`{"statusCode":201}`)},
			want: "init_duration_ms=12.30 duration_ms=4.50 status=201"},
		{name: "with memory", res: Result{Init: time.Millisecond, Duration: time.Millisecond, Response: []byte(`{}`), MaxRSSBytes: 15 << 20},
			want: "init_duration_ms=1.00 duration_ms=1.00 status=200 max_rss_mb=15.0"},
		{name: "function error", res: Result{Init: time.Millisecond, Err: &FunctionError{Phase: PhaseInvoke, Type: "errorString"}},
			want: "init_duration_ms=1.00 duration_ms=0.00 status=error phase=invoke error_type=errorString"},
		{name: "timeout", res: Result{Init: time.Second, Err: &FunctionError{Phase: PhaseInit, Type: "Sandbox.Timedout", Timeout: true}},
			want: "init_duration_ms=1000.00 duration_ms=0.00 status=timeout phase=init error_type=Sandbox.Timedout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := summary(&tc.res); got != tc.want {
				t.Errorf("summary =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{name: "indents, keeps order and number text", in: `{"b":1.50,"a":12345678901234567890}`, want: "{\n  \"b\": 1.50,\n  \"a\": 12345678901234567890\n}\n"},
		{name: "non-JSON printed as is", in: "plain text", want: "plain text\n"},
		{name: "newline not doubled", in: "text\n", want: "text\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeJSON(&b, []byte(tc.in))
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}
