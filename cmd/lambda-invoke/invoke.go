package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults of the simulated execution environment.
const (
	defaultRegion    = "us-east-1"
	defaultAccountID = "123456789012"
	defaultMemoryMB  = 128
	// defaultInitTimeout is Lambda's limit on the init phase of an
	// on-demand function.
	defaultInitTimeout = 10 * time.Second
	// shutdownGrace is how long the process has between SIGTERM and
	// SIGKILL, as Lambda gives a runtime with registered extensions.
	shutdownGrace = 500 * time.Millisecond
)

// Config describes one cold start: a fresh process that receives one event.
type Config struct {
	Bootstrap    string        // path of the executable
	Event        []byte        // the invocation payload
	Timeout      time.Duration // limit of the invocation (the function timeout)
	InitTimeout  time.Duration // limit of the init phase; defaultInitTimeout when 0
	FunctionName string        // AWS_LAMBDA_FUNCTION_NAME; derived from Bootstrap when empty
	MemoryMB     int           // AWS_LAMBDA_FUNCTION_MEMORY_SIZE
	Env          []string      // the environment passed through (os.Environ() in the CLI)
	Logs         io.Writer     // the bootstrap's stdout and stderr; /dev/null when nil
}

// Phase names the step a failure happened in.
const (
	PhaseInit   = "init"
	PhaseInvoke = "invoke"
)

// FunctionError is a failure of the function: an error reported through the
// Runtime API, a process that exited or a timeout.
type FunctionError struct {
	Phase   string // PhaseInit or PhaseInvoke
	Type    string // e.g. "Runtime.ExitError", "Sandbox.Timedout", or the errorType reported
	Payload []byte // the error document (JSON), as Lambda would return it
	Timeout bool
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("%s failed: %s: %s", e.Phase, e.Type, e.Payload)
}

// Result is what one cold start produced.
type Result struct {
	RequestID   string
	Init        time.Duration // process start until the first /next
	Duration    time.Duration // event handed out until the response or error arrived
	Response    []byte        // the response payload (nil on error)
	ContentType string
	Err         *FunctionError // nil when the function answered
	MaxRSSBytes int64          // peak resident set size of the process, 0 if unknown
}

// Status is the HTTP status API Gateway (HTTP API, payload 2.0) would answer
// with: the response's statusCode, 200 when the function returned some other
// JSON (the gateway infers it), 0 on a function error.
func (r *Result) Status() int {
	if r.Err != nil {
		return 0
	}
	var doc struct {
		StatusCode *int `json:"statusCode"`
	}
	if json.Unmarshal(r.Response, &doc) == nil && doc.StatusCode != nil {
		return *doc.StatusCode
	}
	return 200
}

type exitInfo struct {
	err   error
	state *os.ProcessState
}

// Invoke runs one cold start of cfg.Bootstrap with the Runtime API served on
// a fresh loopback port. The error is for problems of the runner itself
// (no such file, no port); failures of the function are in Result.Err.
func Invoke(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Timeout <= 0 {
		return nil, errors.New("timeout must be positive")
	}
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = defaultInitTimeout
	}
	if cfg.MemoryMB <= 0 {
		cfg.MemoryMB = defaultMemoryMB
	}
	bootstrap, err := filepath.Abs(cfg.Bootstrap)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(bootstrap); err != nil {
		return nil, err
	} else if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not an executable", bootstrap)
	}
	if cfg.FunctionName == "" {
		cfg.FunctionName = functionNameOf(bootstrap)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtime API listener: %w", err)
	}
	region := regionOf(cfg.Env)
	arn := fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", region, defaultAccountID, cfg.FunctionName)
	api := newRuntimeAPI(cfg.FunctionName, arn, cfg.Timeout)
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		api.shutdown()
		_ = srv.Close()
	}()

	requestID := api.enqueue(cfg.Event)

	cmd := exec.Command(bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = lambdaEnv(cfg.Env, envSettings{
		runtimeAPI:   ln.Addr().String(),
		functionName: cfg.FunctionName,
		memoryMB:     cfg.MemoryMB,
		region:       region,
		taskRoot:     filepath.Dir(bootstrap),
	})
	if cfg.Logs != nil { // else /dev/null
		cmd.Stdout = cfg.Logs
		cmd.Stderr = cfg.Logs
	}
	cmd.WaitDelay = time.Second // do not hang on a grandchild holding the log pipe

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bootstrap, err)
	}
	exited := make(chan exitInfo, 1)
	go func() {
		err := cmd.Wait()
		exited <- exitInfo{err: err, state: cmd.ProcessState}
	}()

	res := &Result{RequestID: requestID}
	var exit *exitInfo
	res.Err, exit = await(ctx, api, requestID, start, cfg.InitTimeout, cfg.Timeout, exited, res)

	if exit == nil {
		e := terminate(cmd, exited)
		exit = &e
	}
	res.MaxRSSBytes = maxRSS(exit.state)
	return res, nil
}

// await follows the environment through init and the invocation and fills
// res. It returns the function's failure, if any, and the process exit if
// the process has already ended.
func await(ctx context.Context, api *runtimeAPI, requestID string, start time.Time, initTimeout, timeout time.Duration,
	exited <-chan exitInfo, res *Result) (*FunctionError, *exitInfo) {

	// Init: until the first /next, an init error report, an exit or the timeout.
	initTimer := time.NewTimer(initTimeout)
	defer initTimer.Stop()
	select {
	case <-api.firstNext:
		res.Init = api.firstNextTime().Sub(start)
	case o := <-api.outcomes:
		if o.kind != outcomeInitError {
			// A fast function took the event at its first /next and
			// answered before this select ran, and select chose the
			// answer over the closed firstNext: init ended at that /next.
			res.Init = api.firstNextTime().Sub(start)
			return invoked(api, requestID, o, res), nil
		}
		res.Init = o.at.Sub(start)
		return &FunctionError{Phase: PhaseInit, Type: o.errorType, Payload: o.body}, nil
	case e := <-exited:
		res.Init = time.Since(start)
		if o, ok := pending(api); ok {
			return &FunctionError{Phase: PhaseInit, Type: o.errorType, Payload: o.body}, &e
		}
		return exitError(PhaseInit, e), &e
	case <-initTimer.C:
		res.Init = initTimeout
		return timeoutError(PhaseInit, initTimeout), nil
	case <-ctx.Done():
		res.Init = time.Since(start)
		return &FunctionError{Phase: PhaseInit, Type: "Runner.Canceled", Payload: errorJSON("Runner.Canceled", ctx.Err().Error())}, nil
	}

	// Invoke: the event was queued before the process started, so the
	// first /next takes it at once; the invocation timeout runs from there.
	invokeTimer := time.NewTimer(timeout)
	defer invokeTimer.Stop()
	delivered := func() time.Time { return startedAt(api, requestID) }
	for {
		select {
		case o := <-api.outcomes:
			return invoked(api, requestID, o, res), nil
		case e := <-exited:
			res.Duration = time.Since(delivered())
			if o, ok := pending(api); ok {
				if o.kind == outcomeResponse {
					res.Response, res.ContentType = o.body, o.contentType
					return nil, &e
				}
				return &FunctionError{Phase: PhaseInvoke, Type: o.errorType, Payload: o.body}, &e
			}
			return exitError(PhaseInvoke, e), &e
		case <-invokeTimer.C:
			res.Duration = timeout
			return timeoutError(PhaseInvoke, timeout), nil
		case <-ctx.Done():
			res.Duration = time.Since(delivered())
			return &FunctionError{Phase: PhaseInvoke, Type: "Runner.Canceled", Payload: errorJSON("Runner.Canceled", ctx.Err().Error())}, nil
		}
	}
}

// startedAt is when the invocation requestID began: its event's delivery,
// or the first /next when that is not recorded.
func startedAt(api *runtimeAPI, requestID string) time.Time {
	if t := api.deliveredAt(requestID); !t.IsZero() {
		return t
	}
	return api.firstNextTime()
}

// invoked records the outcome of the invocation requestID in res: its
// duration from the event's delivery, and its response or error.
func invoked(api *runtimeAPI, requestID string, o outcome, res *Result) *FunctionError {
	res.Duration = o.at.Sub(startedAt(api, requestID))
	switch o.kind {
	case outcomeResponse:
		res.Response, res.ContentType = o.body, o.contentType
		return nil
	case outcomeError:
		return &FunctionError{Phase: PhaseInvoke, Type: o.errorType, Payload: o.body}
	default: // an init error after init: report it as what it is
		return &FunctionError{Phase: PhaseInit, Type: o.errorType, Payload: o.body}
	}
}

// pending returns a report that arrived together with the process exit.
func pending(api *runtimeAPI) (outcome, bool) {
	select {
	case o := <-api.outcomes:
		return o, true
	default:
		return outcome{}, false
	}
}

func exitError(phase string, e exitInfo) *FunctionError {
	msg := "the process exited"
	if e.state != nil {
		msg = "Runtime exited with error: " + e.state.String()
	} else if e.err != nil {
		msg = "Runtime exited with error: " + e.err.Error()
	}
	if phase == PhaseInit {
		msg += " (before its first /next: init failed)"
	}
	return &FunctionError{Phase: phase, Type: "Runtime.ExitError", Payload: errorJSON("Runtime.ExitError", msg)}
}

func timeoutError(phase string, timeout time.Duration) *FunctionError {
	msg := fmt.Sprintf("Task timed out after %.2f seconds", timeout.Seconds())
	if phase == PhaseInit {
		msg = fmt.Sprintf("Init timed out after %.2f seconds", timeout.Seconds())
	}
	return &FunctionError{Phase: phase, Type: "Sandbox.Timedout", Payload: errorJSON("Sandbox.Timedout", msg), Timeout: true}
}

// terminate ends the process: SIGTERM, then SIGKILL after shutdownGrace.
func terminate(cmd *exec.Cmd, exited <-chan exitInfo) exitInfo {
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = cmd.Process.Kill()
	}
	select {
	case e := <-exited:
		return e
	case <-time.After(shutdownGrace):
	}
	_ = cmd.Process.Kill()
	return <-exited
}

type envSettings struct {
	runtimeAPI, functionName, region, taskRoot string
	memoryMB                                   int
}

// lambdaEnv is base plus the variables Lambda sets for a provided.al2023
// function. The reserved ones replace what base has; region, credentials
// and the log format and level are only filled in when base has none.
func lambdaEnv(base []string, s envSettings) []string {
	set := map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          s.runtimeAPI,
		"AWS_LAMBDA_FUNCTION_NAME":        s.functionName,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(s.memoryMB),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + s.functionName,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + strings.ReplaceAll(newUUID(), "-", ""),
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_REGION":                      s.region,
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                s.taskRoot,
	}
	if lookup(base, "AWS_DEFAULT_REGION") == "" {
		set["AWS_DEFAULT_REGION"] = s.region
	}
	if lookup(base, "TZ") == "" {
		set["TZ"] = ":UTC"
	}
	// The log format and level Lambda sets from the function's logging
	// configuration: JSON and INFO, as the stack configures UDS's (it
	// passes its LOG_LEVEL to the functions as UDS_LOG_LEVEL, which base
	// may hold, and leaves Lambda at INFO so that EMF records are kept).
	if lookup(base, "AWS_LAMBDA_LOG_FORMAT") == "" {
		set["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
	}
	if lookup(base, "AWS_LAMBDA_LOG_LEVEL") == "" {
		set["AWS_LAMBDA_LOG_LEVEL"] = "INFO"
	}
	if lookup(base, "AWS_ACCESS_KEY_ID") == "" && lookup(base, "AWS_SECRET_ACCESS_KEY") == "" &&
		lookup(base, "AWS_PROFILE") == "" {
		set["AWS_ACCESS_KEY_ID"] = "local"
		set["AWS_SECRET_ACCESS_KEY"] = "local"
	}

	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, override := set[k]; !override {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+set[k])
	}
	return out
}

// regionOf is AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1.
func regionOf(env []string) string {
	if r := lookup(env, "AWS_REGION"); r != "" {
		return r
	}
	if r := lookup(env, "AWS_DEFAULT_REGION"); r != "" {
		return r
	}
	return defaultRegion
}

// lookup is the last value of key in env ("" when unset).
func lookup(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// functionNameOf names a function after its bootstrap: the directory of a
// file called "bootstrap" (build/host/kv/bootstrap is "kv"), else the file.
func functionNameOf(bootstrap string) string {
	base := filepath.Base(bootstrap)
	if base == "bootstrap" {
		if dir := filepath.Base(filepath.Dir(bootstrap)); dir != "." && dir != string(filepath.Separator) {
			return dir
		}
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}
