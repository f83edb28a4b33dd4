package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bootstraps built once for the tests that start processes.
var (
	buildOnce  sync.Once
	buildErr   error
	binDir     string
	helloBin   string // ./cmd/hello-lambda
	fixtureBin string // ./testdata/fixture, behaviour picked by FIXTURE_MODE
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// bootstraps builds the test functions as the Makefile builds real ones
// (host architecture, -tags lambda.norpc). Tests skip when no go command
// is available.
func bootstraps(t *testing.T) (hello, fixture string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes; skipped with -short")
	}
	buildOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("no go command: %w", err)
			return
		}
		if binDir, buildErr = os.MkdirTemp("", "lambda-invoke-test-"); buildErr != nil {
			return
		}
		// Named like the Makefile's output, so the function name is derived
		// from the directory.
		helloBin = filepath.Join(binDir, "hello", "bootstrap")
		fixtureBin = filepath.Join(binDir, "fixture", "bootstrap")
		for out, pkg := range map[string]string{helloBin: "../hello-lambda", fixtureBin: "./testdata/fixture"} {
			cmd := exec.Command(gobin, "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if buildErr != nil {
		if strings.HasPrefix(buildErr.Error(), "no go command") {
			t.Skip(buildErr)
		}
		t.Fatal(buildErr)
	}
	return helloBin, fixtureBin
}

// testEnv is a minimal, predictable environment for the child.
func testEnv(extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	return append(env, extra...)
}

const apigwEvent = `{"version":"2.0","routeKey":"GET /hello","rawPath":"/hello","rawQueryString":"","headers":{"accept":"application/json"},"requestContext":{"http":{"method":"GET","path":"/hello","protocol":"HTTP/1.1","sourceIp":"203.0.113.10","userAgent":"test"},"requestId":"r1","routeKey":"GET /hello","stage":"$default"},"isBase64Encoded":false}`

func TestInvoke(t *testing.T) {
	t.Parallel()
	hello, fixture := bootstraps(t)
	tests := []struct {
		name      string
		bootstrap string
		mode      string // FIXTURE_MODE
		event     string
		timeout   time.Duration
		initLimit time.Duration
		wantErr   *FunctionError // Phase, Type and Timeout compared
		check     func(t *testing.T, r *Result)
	}{
		{
			name: "hello world answers 200", bootstrap: hello, event: apigwEvent,
			check: func(t *testing.T, r *Result) {
				if r.Status() != 200 {
					t.Errorf("status = %d, want 200", r.Status())
				}
				var resp struct {
					Body    string            `json:"body"`
					Headers map[string]string `json:"headers"`
				}
				if err := json.Unmarshal(r.Response, &resp); err != nil {
					t.Fatalf("response %s: %v", r.Response, err)
				}
				if resp.Body != `{"message":"hello"}` || resp.Headers["content-type"] != "application/json" {
					t.Errorf("response = %s", r.Response)
				}
			},
		},
		{
			name: "event reaches the handler unchanged", bootstrap: fixture, mode: "echo", event: `{"b":12345678901234567890,"a":[1,2]}`,
			check: func(t *testing.T, r *Result) {
				if string(r.Response) != `{"b":12345678901234567890,"a":[1,2]}` {
					t.Errorf("response = %s", r.Response)
				}
			},
		},
		{
			name: "Lambda environment and invocation context", bootstrap: fixture, mode: "context", event: `{}`,
			check: func(t *testing.T, r *Result) {
				var got struct {
					RequestID    string            `json:"requestId"`
					FunctionARN  string            `json:"functionArn"`
					FunctionName string            `json:"functionName"`
					MemoryMB     int               `json:"memoryMB"`
					DeadlineMs   int64             `json:"deadlineMs"`
					TraceID      string            `json:"traceId"`
					Env          map[string]string `json:"env"`
					WD           string            `json:"wd"`
				}
				if err := json.Unmarshal(r.Response, &got); err != nil {
					t.Fatalf("response %s: %v", r.Response, err)
				}
				if got.RequestID != r.RequestID {
					t.Errorf("request id = %q, want %q", got.RequestID, r.RequestID)
				}
				if want := "arn:aws:lambda:us-east-1:123456789012:function:fixture"; got.FunctionARN != want {
					t.Errorf("ARN = %q, want %q", got.FunctionARN, want)
				}
				if got.FunctionName != "fixture" || got.MemoryMB != 128 {
					t.Errorf("function name %q, memory %d", got.FunctionName, got.MemoryMB)
				}
				if left := time.Until(time.UnixMilli(got.DeadlineMs)); left < 20*time.Second || left > 31*time.Second {
					t.Errorf("deadline %v away, want about 30s", left)
				}
				if !strings.HasPrefix(got.TraceID, "Root=1-") {
					t.Errorf("trace id %q", got.TraceID)
				}
				dir := filepath.Dir(fixtureBin)
				for k, want := range map[string]string{
					"AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
					"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
					"_HANDLER": "bootstrap", "LAMBDA_TASK_ROOT": dir, "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
					"FIXTURE_PASSED_THROUGH": "yes",
				} {
					if got.Env[k] != want {
						t.Errorf("%s = %q, want %q", k, got.Env[k], want)
					}
				}
				if !strings.HasPrefix(got.Env["AWS_LAMBDA_RUNTIME_API"], "127.0.0.1:") {
					t.Errorf("AWS_LAMBDA_RUNTIME_API = %q", got.Env["AWS_LAMBDA_RUNTIME_API"])
				}
				if got.WD != dir {
					t.Errorf("working directory %q, want %q", got.WD, dir)
				}
			},
		},
		{name: "handler error", bootstrap: fixture, mode: "error", wantErr: &FunctionError{Phase: PhaseInvoke, Type: "errorString"}},
		{name: "handler panic", bootstrap: fixture, mode: "panic", wantErr: &FunctionError{Phase: PhaseInvoke, Type: "string"}},
		{name: "response stream fails", bootstrap: fixture, mode: "stream-error", wantErr: &FunctionError{Phase: PhaseInvoke, Type: "errorString"}},
		{name: "response over 6 MB", bootstrap: fixture, mode: "big", wantErr: &FunctionError{Phase: PhaseInvoke, Type: "Function.ResponseSizeTooLarge"}},
		{name: "exit during init", bootstrap: fixture, mode: "init-exit", wantErr: &FunctionError{Phase: PhaseInit, Type: "Runtime.ExitError"}},
		{name: "init error reported", bootstrap: fixture, mode: "init-error", wantErr: &FunctionError{Phase: PhaseInit, Type: "Fixture.InitFailed"}},
		{name: "invocation timeout", bootstrap: fixture, mode: "sleep", timeout: 300 * time.Millisecond,
			wantErr: &FunctionError{Phase: PhaseInvoke, Type: "Sandbox.Timedout", Timeout: true}},
		{name: "init timeout", bootstrap: fixture, mode: "init-sleep", initLimit: 300 * time.Millisecond,
			wantErr: &FunctionError{Phase: PhaseInit, Type: "Sandbox.Timedout", Timeout: true}},
		{name: "SIGTERM extension registers", bootstrap: fixture, mode: "sigterm", event: `{"ok":true}`,
			check: func(t *testing.T, r *Result) {
				if string(r.Response) != `{"ok":true}` {
					t.Errorf("response = %s", r.Response)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.event == "" {
				tc.event = `{}`
			}
			if tc.timeout == 0 {
				tc.timeout = 30 * time.Second
			}
			var logs strings.Builder
			res, err := Invoke(context.Background(), Config{
				Bootstrap:   tc.bootstrap,
				Event:       []byte(tc.event),
				Timeout:     tc.timeout,
				InitTimeout: tc.initLimit,
				Env: testEnv("FIXTURE_MODE="+tc.mode, "FIXTURE_PASSED_THROUGH=yes",
					"FIXTURE_ENV=AWS_REGION,AWS_DEFAULT_REGION,AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY,_HANDLER,LAMBDA_TASK_ROOT,AWS_LAMBDA_FUNCTION_VERSION,AWS_LAMBDA_RUNTIME_API,FIXTURE_PASSED_THROUGH"),
				Logs: &syncWriter{w: &logs},
			})
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if res.Init <= 0 {
				t.Errorf("init duration %v, want > 0", res.Init)
			}
			if tc.wantErr == nil {
				if res.Err != nil {
					t.Fatalf("function failed: %v\nlogs:\n%s", res.Err, logs.String())
				}
				if res.Duration <= 0 {
					t.Errorf("duration %v, want > 0", res.Duration)
				}
			} else {
				if res.Err == nil {
					t.Fatalf("want %s error, function answered %s", tc.wantErr.Type, res.Response)
				}
				if res.Err.Phase != tc.wantErr.Phase || res.Err.Type != tc.wantErr.Type || res.Err.Timeout != tc.wantErr.Timeout {
					t.Errorf("error = {%s %s timeout=%v}, want {%s %s timeout=%v}", res.Err.Phase, res.Err.Type, res.Err.Timeout,
						tc.wantErr.Phase, tc.wantErr.Type, tc.wantErr.Timeout)
				}
				if !json.Valid(res.Err.Payload) {
					t.Errorf("error payload is not JSON: %q", res.Err.Payload)
				}
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// syncWriter serialises the process's stdout and stderr copies.
type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestInvokeRunnerErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
	}{
		{name: "missing bootstrap", cfg: Config{Bootstrap: filepath.Join(dir, "nope"), Timeout: time.Second}},
		{name: "bootstrap is a directory", cfg: Config{Bootstrap: dir, Timeout: time.Second}},
		{name: "zero timeout", cfg: Config{Bootstrap: os.Args[0]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Invoke(context.Background(), tc.cfg); err == nil {
				t.Error("want an error")
			}
		})
	}
}

func TestLambdaEnv(t *testing.T) {
	t.Parallel()
	s := envSettings{runtimeAPI: "127.0.0.1:9001", functionName: "kv", region: "eu-west-1", taskRoot: "/opt/kv", memoryMB: 256}
	tests := []struct {
		name string
		base []string
		want map[string]string // "" means unset
	}{
		{
			name: "empty environment gets Lambda's variables and dummy credentials",
			want: map[string]string{
				"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "AWS_LAMBDA_FUNCTION_NAME": "kv",
				"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256", "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
				"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1", "_HANDLER": "bootstrap",
				"LAMBDA_TASK_ROOT": "/opt/kv", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "TZ": ":UTC",
				"AWS_LAMBDA_LOG_FORMAT": "JSON", "AWS_LAMBDA_LOG_LEVEL": "INFO",
			},
		},
		{
			name: "reserved variables are replaced, others passed through",
			base: []string{"AWS_LAMBDA_RUNTIME_API=elsewhere:1", "_HANDLER=x", "UDS_DYNAMODB_ENDPOINT=http://127.0.0.1:8000"},
			want: map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "_HANDLER": "bootstrap",
				"UDS_DYNAMODB_ENDPOINT": "http://127.0.0.1:8000"},
		},
		{
			name: "real credentials are kept",
			base: []string{"AWS_ACCESS_KEY_ID=AKIA", "AWS_SECRET_ACCESS_KEY=secret", "AWS_SESSION_TOKEN=tok"},
			want: map[string]string{"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "tok"},
		},
		{
			name: "a profile means no dummy credentials",
			base: []string{"AWS_PROFILE=dev"},
			want: map[string]string{"AWS_PROFILE": "dev", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""},
		},
		{
			name: "a log format and level given are kept",
			base: []string{"AWS_LAMBDA_LOG_FORMAT=Text", "AWS_LAMBDA_LOG_LEVEL=WARN"},
			want: map[string]string{"AWS_LAMBDA_LOG_FORMAT": "Text", "AWS_LAMBDA_LOG_LEVEL": "WARN"},
		},
		{
			name: "default region and TZ are kept",
			base: []string{"AWS_DEFAULT_REGION=ap-south-1", "TZ=Europe/Paris"},
			want: map[string]string{"AWS_DEFAULT_REGION": "ap-south-1", "AWS_REGION": "eu-west-1", "TZ": "Europe/Paris"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := lambdaEnv(tc.base, s)
			seen := map[string]int{}
			for _, kv := range env {
				k, _, _ := strings.Cut(kv, "=")
				seen[k]++
			}
			for k, n := range seen {
				if n > 1 {
					t.Errorf("%s set %d times", k, n)
				}
			}
			for k, want := range tc.want {
				if got := lookup(env, k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestRegionOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{name: "default", want: "us-east-1"},
		{name: "AWS_REGION", env: []string{"AWS_REGION=eu-west-1", "AWS_DEFAULT_REGION=ap-south-1"}, want: "eu-west-1"},
		{name: "AWS_DEFAULT_REGION", env: []string{"AWS_DEFAULT_REGION=ap-south-1"}, want: "ap-south-1"},
		{name: "empty value ignored", env: []string{"AWS_REGION="}, want: "us-east-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := regionOf(tc.env); got != tc.want {
				t.Errorf("regionOf = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFunctionNameOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, want string
	}{
		{name: "bootstrap in a function directory", path: "/w/build/host/kv/bootstrap", want: "kv"},
		{name: "named executable", path: "/tmp/hello-lambda", want: "hello-lambda"},
		{name: "extension dropped", path: `/tmp/fn.exe`, want: "fn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := functionNameOf(tc.path); got != tc.want {
				t.Errorf("functionNameOf(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

func TestResultStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  Result
		want int
	}{
		{name: "proxy response", res: Result{Response: []byte(`{"statusCode":404,"body":"{}"}`)}, want: 404},
		{name: "plain JSON is inferred 200", res: Result{Response: []byte(`{"message":"hi"}`)}, want: 200},
		{name: "non-object JSON", res: Result{Response: []byte(`"hi"`)}, want: 200},
		{name: "function error", res: Result{Err: &FunctionError{Type: "x"}}, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.res.Status(); got != tc.want {
				t.Errorf("Status = %d, want %d", got, tc.want)
			}
		})
	}
}
