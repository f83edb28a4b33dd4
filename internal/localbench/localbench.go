// Package localbench holds what the benchmarks that drive uds-local
// processes over a DynamoDB engine share (cmd/uds-ratebench,
// cmd/uds-loadbench, cmd/uds-realtimebench, cmd/uds-patchbench): starting
// and stopping the servers and reading their log lines, the environment
// they run in, a proxy that counts calls at the wire, timed requests,
// quantiles, and the name of the machine the figures come from.
package localbench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
)

// Main runs a benchmark command, name, once its flags are parsed (err: a
// flag's problem, if any): run, over the engine at UDS_DYNAMODB_ENDPOINT,
// as Run does. Without an engine, the error names makeTarget, the make
// target that starts one.
func Main(name, makeTarget string, err error, run func(ctx context.Context, endpoint string, w io.Writer) error) {
	endpoint := os.Getenv(config.EnvDynamoDBEndpoint)
	if err == nil && endpoint == "" {
		err = fmt.Errorf("%s is not set: run it under scripts/with-dynamodb.sh (make %s)", config.EnvDynamoDBEndpoint, makeTarget)
	}
	Run(name, err, func(ctx context.Context, w io.Writer) error { return run(ctx, endpoint, w) })
}

// Run runs a benchmark command, name, once its flags are parsed (err: a
// flag's problem, if any): run, with its report to standard output, until
// it returns or Ctrl-C or SIGTERM stops it. An error is said on standard
// error, and the process exits 1.
func Run(name string, err error, run func(ctx context.Context, w io.Writer) error) {
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, os.Stdout)
		stop()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Env is the environment of a benchmark's server over the engine at
// endpoint: any port, said in JSON request lines at INFO, the caller taken
// from X-Uds-Subject, no EMF records, no sweep, and limits and namespace
// policies cached for LimitsCacheTTL. The sweep stands in for DynamoDB's
// TTL, which a Lambda function has no part in: its scans would only add
// noise. Settings added after these replace them.
func Env(endpoint string) []string {
	return []string{
		config.EnvLimitsCacheTTL + "=" + LimitsCacheTTL(),
		config.EnvDynamoDBEndpoint + "=" + endpoint,
		config.EnvListenAddr + "=127.0.0.1:0",
		// Each server serves its own S3 engine (in memory), which the
		// benchmarks do not use: on a port of its own.
		config.EnvS3ListenAddr + "=127.0.0.1:0",
		config.EnvLogFormat + "=json", config.EnvLogLevel + "=INFO", config.EnvEMF + "=0",
		config.EnvTrustSubjectHeader + "=1",
		config.EnvSweepInterval + "=0s",
	}
}

// LimitsCacheTTL is how long a benchmark's servers cache limits and
// namespace policies: UDS_LIMITS_CACHE_TTL, unless set, a deployment's
// default (the first release's too). The local server's own default
// caches nothing, so that an admin change applies at once, which adds two
// reads to every request: figures meant to stand for a deployment would
// be off.
func LimitsCacheTTL() string {
	return cmp.Or(os.Getenv(config.EnvLimitsCacheTTL), config.DefaultLimitsCacheTTL.String())
}

// Outcome is one request's answer as the caller saw it.
type Outcome struct {
	// Status is the answer's status, 0 when none came.
	Status int
	// Latency is the time from sending the request to reading the
	// answer's end.
	Latency time.Duration
	// Problem says what went wrong: the start of the answer's body when
	// it was not 2xx, or why none came.
	Problem string
	// Header is the answer's header, nil when none came.
	Header http.Header
}

// maxProblem bounds the part of an answer an Outcome keeps.
const maxProblem = 300

// Do sends one request, as subject unless that is empty, and reads its
// answer to the end, so that the connection is kept for the next.
func Do(ctx context.Context, client *http.Client, method, url, subject, body string) Outcome {
	var reader io.Reader
	if body != "" {
		reader = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		return Outcome{Problem: err.Error()}
	}
	if subject != "" {
		req.Header.Set(httpapi.SubjectHeader, subject)
	}
	return DoRequest(client, req)
}

// DoRequest sends a request built by the caller (one that needs headers
// of its own) and reads its answer as Do does.
func DoRequest(client *http.Client, req *http.Request) Outcome {
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return Outcome{Latency: time.Since(start), Problem: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return Outcome{Status: resp.StatusCode, Latency: time.Since(start), Header: resp.Header}
	}
	answer, _ := io.ReadAll(resp.Body)
	o := Outcome{Status: resp.StatusCode, Latency: time.Since(start), Problem: strings.TrimSpace(string(answer)), Header: resp.Header}
	if len(o.Problem) > maxProblem {
		o.Problem = o.Problem[:maxProblem] + "…"
	}
	return o
}

// Send makes one setup request and checks that it was answered with one
// of the statuses wanted.
func Send(ctx context.Context, client *http.Client, method, url, subject, body string, want ...int) error {
	o := Do(ctx, client, method, url, subject, body)
	for _, s := range want {
		if o.Status == s {
			return nil
		}
	}
	if o.Status == 0 {
		return fmt.Errorf("%s %s: no answer: %s", method, url, o.Problem)
	}
	return fmt.Errorf("%s %s: %d %s", method, url, o.Status, o.Problem)
}

// Quantile returns the q-quantile of sorted values (nearest rank), 0 of
// none.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Machine names the CPU (on Linux), the cores and Go.
func Machine() string {
	cpu := runtime.GOOS + "/" + runtime.GOARCH
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		lines := bufio.NewScanner(f)
		for lines.Scan() {
			if name, ok := strings.CutPrefix(lines.Text(), "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":")) + ", " + cpu
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores, %s", cpu, runtime.NumCPU(), runtime.Version())
}

// LoadAverage returns the machine's load averages over 1, 5 and 15
// minutes, or "unknown" where /proc/loadavg does not give them.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], ", ")
	}
	return "unknown"
}
