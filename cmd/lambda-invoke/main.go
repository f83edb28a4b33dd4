// Command lambda-invoke runs a Lambda function built for a custom runtime
// (provided.al2023, e.g. aws-lambda-go with -tags lambda.norpc) on this
// machine, without Docker: a no-container twin of `sam local invoke`.
//
// It serves the Lambda Runtime API on a loopback port, starts the bootstrap
// with the environment Lambda would give it, hands it one event, prints the
// function's response (pretty JSON) on stdout and a summary on stderr:
//
//	init_duration_ms=12.30 duration_ms=4.50 status=200 max_rss_mb=14.2
//
// init_duration_ms is Lambda's "Init Duration": from starting the process
// (the clock is read just before fork/exec) until the Runtime API receives
// its first GET /runtime/invocation/next. The event is queued before the
// process starts, so that /next returns at once; duration_ms runs from
// handing the event out until the response (or error) has fully arrived.
// max_rss_mb is the process's peak resident set size. status
// is the statusCode of an API Gateway proxy response (200 for any other
// JSON, "error" or "timeout" on failure).
//
// With -repeat N it runs N cold starts, each in a fresh process, and ends
// with a line of min/median/max init durations:
//
//	cold_starts=10 init_min_ms=3.10 init_median_ms=3.40 init_max_ms=5.00 duration_median_ms=0.80 failures=0
//
// Runs stop at the first failure.
//
// The bootstrap's own stdout and stderr (its logs) go to stderr, or to
// /dev/null with -quiet. After the invocation the process gets SIGTERM and,
// 500 ms later, SIGKILL. Exit status: 0 when the function answered (whatever its HTTP
// status), 1 on a function error, 3 on an init error, 4 on a timeout, 2 on
// a usage error or a failure of the runner itself.
//
// Usage:
//
//	lambda-invoke -bootstrap build/host/kv/bootstrap -event events/kv/01-create.json
//	lambda-invoke -bootstrap build/host/hello/bootstrap -event e.json -repeat 10 -quiet
//
// Flags: -bootstrap, -event (a file, - for stdin, {} when omitted),
// -timeout (function timeout, 30s), -init-timeout (10s, Lambda's init
// limit), -repeat, -function-name (default: the bootstrap's directory,
// build/host/kv/bootstrap is "kv"), -memory (MB, 128), -quiet.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Exit statuses.
const (
	exitOK            = 0
	exitFunctionError = 1
	exitUsage         = 2
	exitInitError     = 3
	exitTimeout       = 4
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command with its inputs and outputs made explicit for tests.
func run(ctx context.Context, args, env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lambda-invoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		bootstrap = fs.String("bootstrap", "", "path of the function's `executable` (required)")
		eventPath = fs.String("event", "", "`file` with the event JSON; - reads stdin; empty sends {}")
		timeout   = fs.Duration("timeout", 30*time.Second, "function timeout: limit of the invocation")
		initLimit = fs.Duration("init-timeout", defaultInitTimeout, "limit of the init phase (Lambda's is 10s)")
		repeat    = fs.Int("repeat", 1, "number of cold starts, each in a fresh process")
		name      = fs.String("function-name", "", "AWS_LAMBDA_FUNCTION_NAME (default: the bootstrap's directory name)")
		memory    = fs.Int("memory", defaultMemoryMB, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE in MB")
		quiet     = fs.Bool("quiet", false, "discard the function's logs and do not print its response")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lambda-invoke -bootstrap PATH [-event FILE] [-timeout 30s] [-init-timeout 10s] [-repeat N] [-quiet]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "lambda-invoke: unexpected arguments %q\n", fs.Args())
		return exitUsage
	case *bootstrap == "":
		fmt.Fprintln(stderr, "lambda-invoke: -bootstrap is required")
		fs.Usage()
		return exitUsage
	case *repeat < 1:
		fmt.Fprintln(stderr, "lambda-invoke: -repeat must be at least 1")
		return exitUsage
	case *timeout <= 0 || *initLimit <= 0:
		fmt.Fprintln(stderr, "lambda-invoke: -timeout and -init-timeout must be positive")
		return exitUsage
	}
	event, err := readEvent(*eventPath, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "lambda-invoke: %v\n", err)
		return exitUsage
	}

	cfg := Config{
		Bootstrap:    *bootstrap,
		Event:        event,
		Timeout:      *timeout,
		InitTimeout:  *initLimit,
		FunctionName: *name,
		MemoryMB:     *memory,
		Env:          env,
		Logs:         stderr,
	}
	if *quiet {
		cfg.Logs = nil
	}

	var results []*Result
	for i := 1; i <= *repeat; i++ {
		res, err := Invoke(ctx, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "lambda-invoke: %v\n", err)
			return exitUsage
		}
		results = append(results, res)
		line := summary(res)
		if *repeat > 1 {
			line = fmt.Sprintf("run=%d/%d %s", i, *repeat, line)
		}
		// The response of the last run, or the error that ended the runs.
		if res.Err != nil || (i == *repeat && !*quiet) {
			writeJSON(stdout, payloadOf(res))
		}
		fmt.Fprintln(stderr, line)
		if res.Err != nil {
			break
		}
	}
	if *repeat > 1 {
		fmt.Fprintln(stderr, repeatSummary(results))
	}
	return exitCode(results[len(results)-1])
}

// readEvent reads the event file ("-" is stdin) and checks it is JSON.
func readEvent(path string, stdin io.Reader) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	switch path {
	case "":
		return []byte("{}"), nil
	case "-":
		b, err = io.ReadAll(stdin)
	default:
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the event: %w", err)
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("the event in %s is not valid JSON", path)
	}
	return b, nil
}

func payloadOf(r *Result) []byte {
	if r.Err != nil {
		return r.Err.Payload
	}
	return r.Response
}

// writeJSON prints b indented when it is JSON (key order and number text
// kept), as is otherwise.
func writeJSON(w io.Writer, b []byte) {
	var buf bytes.Buffer
	if !json.Valid(b) || json.Indent(&buf, b, "", "  ") != nil {
		buf.Reset()
		buf.Write(b)
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
		buf.WriteByte('\n')
	}
	_, _ = w.Write(buf.Bytes())
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64)
}

// summary is the one-line report of a cold start.
func summary(r *Result) string {
	parts := []string{
		"init_duration_ms=" + ms(r.Init),
		"duration_ms=" + ms(r.Duration),
	}
	switch {
	case r.Err == nil:
		parts = append(parts, "status="+strconv.Itoa(r.Status()))
	case r.Err.Timeout:
		parts = append(parts, "status=timeout", "phase="+r.Err.Phase, "error_type="+r.Err.Type)
	default:
		parts = append(parts, "status=error", "phase="+r.Err.Phase, "error_type="+r.Err.Type)
	}
	if r.MaxRSSBytes > 0 {
		parts = append(parts, "max_rss_mb="+strconv.FormatFloat(float64(r.MaxRSSBytes)/(1<<20), 'f', 1, 64))
	}
	return strings.Join(parts, " ")
}

// repeatSummary reports init durations over several cold starts.
func repeatSummary(results []*Result) string {
	inits := make([]time.Duration, 0, len(results))
	durations := make([]time.Duration, 0, len(results))
	failures := 0
	for _, r := range results {
		if r.Err != nil {
			failures++
			continue
		}
		inits = append(inits, r.Init)
		durations = append(durations, r.Duration)
	}
	if len(inits) == 0 {
		return fmt.Sprintf("cold_starts=%d failures=%d", len(results), failures)
	}
	return fmt.Sprintf("cold_starts=%d init_min_ms=%s init_median_ms=%s init_max_ms=%s duration_median_ms=%s failures=%d",
		len(inits), ms(slices.Min(inits)), ms(median(inits)), ms(slices.Max(inits)), ms(median(durations)), failures)
}

// median of a non-empty sample (mean of the middle two when even).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func exitCode(r *Result) int {
	switch {
	case r.Err == nil:
		return exitOK
	case r.Err.Timeout:
		return exitTimeout
	case r.Err.Phase == PhaseInit:
		return exitInitError
	default:
		return exitFunctionError
	}
}
