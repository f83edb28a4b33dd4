package lambdamain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/internal/emf/emftest"
	"github.com/udsproject/uds/internal/lambdalog"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
	"github.com/udsproject/uds/pkg/lambdamain"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// stdoutLogger returns the functions' logger at level, built while
// os.Stdout is a pipe (aws-lambda-go's handler takes os.Stdout when it is
// built), and a function that returns what it wrote.
func stdoutLogger(t *testing.T, level slog.Level) (*slog.Logger, func() string) {
	t.Helper()
	read, write, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = write
	logger := lambdamain.NewLogger(level)
	os.Stdout = stdout
	return logger, func() string {
		_ = write.Close()
		out, _ := io.ReadAll(read)
		return string(out)
	}
}

// TestRequestLineThroughLambdaLogHandler runs a request through the logger
// the functions use (aws-lambda-go's slog handler, which writes to stdout
// and adds the invocation's request id) and reads the line it wrote. At
// WARN the line is left out, and the EMF record is written all the same.
func TestRequestLineThroughLambdaLogHandler(t *testing.T) {
	cfg := config.Config{
		Tables: storetest.NewTables(t), Endpoint: os.Getenv(config.EnvDynamoDBEndpoint),
		SubjectClaim: "sub", CursorSecret: []byte("k"), LimitsCacheTTL: time.Second,
	}
	for _, tc := range []struct {
		name  string
		level slog.Level
		want  []string // what the line holds; none: no line
	}{
		// The function's first request reads the namespace's policy, the
		// caller's and app's records (their rate limits), and the item.
		{name: "INFO", level: slog.LevelInfo, want: []string{
			"level=INFO", "message=request", "requestId=8f5e1c2a-lambda-request", "apiRequestId=gw-request-1",
			`route="GET /data/{applicationUuid}/{namespace}/{id}"`, "status=404", "namespace=logs", "subject=anonymous",
			`traceId="Root=1-65a50929-5fd752fe2505473870faf985"`, "dynamodbCalls=3", `error="Key not found"`,
		}},
		{name: "WARN", level: slog.LevelWarn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, written := stdoutLogger(t, tc.level)
			var metrics bytes.Buffer
			h, err := lambdahost.New(context.Background(), cfg, httpapi.GroupKV, logger, nil, emf.NewWriter(&metrics))
			if err != nil {
				t.Fatal(err)
			}
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "8f5e1c2a-lambda-request"})
			const path = "/rest/api/v1/data/d53065bd-f932-4841-83fb-849717d8df0f/logs/missing"
			ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path,
				Headers: map[string]string{"x-amzn-trace-id": "Root=1-65a50929-5fd752fe2505473870faf985"},
				RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "gw-request-1",
					HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path}},
			}
			if res, err := h(ctx, ev); err != nil || res.StatusCode != 404 {
				t.Fatalf("answer %d, %v", res.StatusCode, err)
			}
			out := written()
			if len(tc.want) == 0 && out != "" {
				t.Errorf("wrote %s", out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("the line lacks %s: %s", want, out)
				}
			}
			if err := emftest.Check(metrics.Bytes()); err != nil || !strings.Contains(metrics.String(), `"ClientErrors":1`) {
				t.Errorf("EMF record %v: %s", err, metrics.Bytes())
			}
		})
	}
}

// TestLoggerLevel checks that the functions' logger keeps the records at
// its level or above, also through a logger derived with attributes and
// a group. (DEBUG lines also need aws-lambda-go's handler at DEBUG, which
// follows Lambda's level: the stack sets both, this process has neither.)
func TestLoggerLevel(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  []string
	}{
		{slog.LevelInfo, []string{"INFO", "WARN", "ERROR"}},
		{slog.LevelWarn, []string{"WARN", "ERROR"}},
		{slog.LevelError, []string{"ERROR"}},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			logger, written := stdoutLogger(t, tc.level)
			derived := logger.With("function", "kv").WithGroup("g")
			for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
				derived.Log(context.Background(), l, "line", "at", l.String())
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(written()), "\n") {
				if _, level, ok := strings.Cut(line, " g.at="); ok {
					got = append(got, level)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("lines at %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStartFailureIsAnErrorLine runs Start in a child process, as Lambda
// would run a function's main, with a configuration or an init that
// fails: the process logs the cause as one JSON line at ERROR, whatever
// the level, and exits with status 1.
func TestStartFailureIsAnErrorLine(t *testing.T) {
	if os.Getenv("LAMBDAMAIN_TEST_START") == "1" {
		lambdamain.Start(func(context.Context, config.Config, *slog.Logger) (any, error) {
			return nil, errors.New("no table to serve")
		})
		return
	}
	for _, tc := range []struct {
		name, cause string
		env         []string
	}{
		{"configuration", "configuration: " + config.EnvLogFormat, []string{config.EnvLogLevel + "=WARN", config.EnvLogFormat + "=xml"}},
		{"unknown level", "configuration: " + config.EnvLogLevel, []string{config.EnvLogLevel + "=LOUD"}},
		{"init", "init: no table to serve", []string{config.EnvLogLevel + "=ERROR"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestStartFailureIsAnErrorLine$")
			cmd.Env = append(os.Environ(), append(tc.env, "LAMBDAMAIN_TEST_START=1", "AWS_LAMBDA_LOG_FORMAT=JSON")...)
			out, err := cmd.Output()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit %v, want status 1; stdout %s", err, out)
			}
			var line struct{ Level, Message, Cause string }
			if err := json.Unmarshal(out, &line); err != nil {
				t.Fatalf("stdout is not one JSON line: %v: %s", err, out)
			}
			if line.Level != "ERROR" || line.Message != "init failed" || !strings.HasPrefix(line.Cause, tc.cause) {
				t.Errorf("line %+v, want an ERROR with a cause starting %q", line, tc.cause)
			}
		})
	}
}

// TestDirectLineIsLambdaHandlers runs, in a child process whose log format
// is Lambda's JSON as the stack sets it, the same request through a
// function whose request lines go through aws-lambda-go's handler and
// through one whose lines are written directly (LambdaLog), and expects
// the same line but for its time and latency.
func TestDirectLineIsLambdaHandlers(t *testing.T) {
	if os.Getenv("LAMBDAMAIN_TEST_JSON") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDirectLineIsLambdaHandlers$", "-test.v")
		cmd.Env = append(os.Environ(), "LAMBDAMAIN_TEST_JSON=1", "AWS_LAMBDA_LOG_FORMAT=JSON")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	if lambdamain.LambdaLog() == nil {
		t.Fatal("no direct writer in Lambda's JSON format")
	}
	cfg := config.Config{
		Tables: storetest.NewTables(t), Endpoint: os.Getenv(config.EnvDynamoDBEndpoint),
		SubjectClaim: "sub", CursorSecret: []byte("k"), LimitsCacheTTL: time.Second,
	}
	const path = "/rest/api/v1/data/d53065bd-f932-4841-83fb-849717d8df0f/logs/missing\"\u2028"
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path,
		Headers: map[string]string{"x-amzn-trace-id": "Root=1-65a50929-5fd752fe2505473870faf985;\"x\""},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "gw-request-1",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path}},
	}
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "8f5e1c2a-lambda-request"})
	var lines []string
	for _, direct := range []bool{false, true} {
		// Both writers take os.Stdout when they are built.
		read, write, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout := os.Stdout
		os.Stdout = write
		logger := lambdamain.NewLogger(slog.LevelInfo)
		var w *lambdalog.Writer
		if direct {
			w = lambdamain.LambdaLog()
		}
		os.Stdout = stdout
		h, err := lambdahost.New(context.Background(), cfg, httpapi.GroupKV, logger, w, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := h(ctx, ev); err != nil || res.StatusCode != 404 {
			t.Fatalf("answer %d, %v: %s", res.StatusCode, err, res.Body)
		}
		_ = write.Close()
		out, _ := io.ReadAll(read)
		lines = append(lines, varying.ReplaceAllString(string(out), `"$1":0`))
	}
	if lines[0] != lines[1] || !strings.Contains(lines[0], `"requestId":"8f5e1c2a-lambda-request"`) {
		t.Errorf("direct line\n%s\nwant the handler's\n%s", lines[1], lines[0])
	}
}

// varying matches a line's members that differ from one request to the
// next.
var varying = regexp.MustCompile(`"(timestamp|latencyMs)":("[^"]*"|[0-9.e+-]+)`)
