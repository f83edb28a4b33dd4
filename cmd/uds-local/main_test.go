package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/console"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/store/storetest"
)

func TestTrustsSubjectHeader(t *testing.T) {
	on, off := true, false
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080} }
	for _, tc := range []struct {
		name    string
		addr    net.Addr
		setting *bool
		want    bool
	}{
		{"IPv4 loopback", tcp("127.0.0.1"), nil, true},
		{"anywhere in 127.0.0.0/8", tcp("127.20.30.40"), nil, true},
		{"IPv6 loopback", tcp("::1"), nil, true},
		{"every IPv4 interface", tcp("0.0.0.0"), nil, false},
		{"every IPv6 interface", tcp("::"), nil, false},
		{"a LAN address", tcp("192.168.1.20"), nil, false},
		{"IPv4-mapped loopback", tcp("::ffff:127.0.0.1"), nil, true},
		{"explicitly on, anywhere", tcp("0.0.0.0"), &on, true},
		{"explicitly off, even on loopback", tcp("127.0.0.1"), &off, false},
		{"not TCP", &net.UnixAddr{Name: "/tmp/uds.sock", Net: "unix"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := trustsSubjectHeader(tc.addr, tc.setting); got != tc.want {
				t.Errorf("trusted %v, want %v", got, tc.want)
			}
		})
	}
	// A host name counts as the address it was listened on.
	ln, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !trustsSubjectHeader(ln.Addr(), nil) {
		t.Errorf("localhost listened on %s: not trusted", ln.Addr())
	}
}

// TestAddressInUse: a port already taken is an error before anything is
// built, and the server never says it listens.
func TestAddressInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var out bytes.Buffer
	cfg := config.Config{Endpoint: "http://127.0.0.1:1", ListenAddr: taken.Addr().String(), LogFormat: "text"}
	err = run(context.Background(), cfg, "", newLogger(&out, cfg), &out)
	var listen listenError
	if !errors.Is(err, syscall.EADDRINUSE) || !errors.As(err, &listen) || listen.variable != config.EnvListenAddr {
		t.Fatalf("error %v, want the address in use, naming %s", err, config.EnvListenAddr)
	}
	if strings.Contains(out.String(), "listening") {
		t.Errorf("printed a listening line before failing:\n%s", &out)
	}
}

// TestLogLevelAppliesToEverything: at WARN the startup line, an INFO line
// like the request lines, is not printed.
func TestLogLevelAppliesToEverything(t *testing.T) {
	var out bytes.Buffer
	logger := newLogger(&out, config.Config{LogLevel: slog.LevelWarn, LogFormat: "json"})
	logger.Info("UDS listening")
	logger.Warn("kept")
	if got := out.String(); strings.Contains(got, "listening") || !strings.Contains(got, `"msg":"kept"`) {
		t.Errorf("at WARN: %s", got)
	}
}

func TestReachable(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080} }
	for _, tc := range []struct {
		name string
		addr net.Addr
		want string
	}{
		{"loopback as it is", tcp("127.0.0.1"), "127.0.0.1:8080"},
		{"IPv6 loopback as it is", tcp("::1"), "[::1]:8080"},
		{"every IPv4 interface", tcp("0.0.0.0"), "localhost:8080"},
		{"every IPv6 interface", tcp("::"), "localhost:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reachable(tc.addr); got != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
}

// TestEMFOnlyWhenAsked serves a request with and without UDS_EMF=1: a
// person reading the output gets the request line, and the EMF record only
// when asked for. Stopping ends run without an error.
func TestEMFOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name string
		emf  bool
	}{
		{"by default, lines only", false},
		{"UDS_EMF=1, a record after each line", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Config{
				Tables: storetest.NewTables(t), Endpoint: os.Getenv(config.EnvDynamoDBEndpoint),
				ListenAddr: "127.0.0.1:0", S3ListenAddr: "127.0.0.1:0", LogFormat: "text", CursorSecret: []byte("k"), EMF: tc.emf,
			}
			url, out, stop := serve(t, cfg)
			res, err := http.Get(url + "/data/d53065bd-f932-4841-83fb-849717d8df0f/quota")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			// The console beside the API, where the start line says.
			page := listeningLine.FindStringSubmatch(out.String())[2]
			res, err = http.Get(page)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/html; charset=utf-8" || page != strings.TrimSuffix(url, httpapi.BasePath)+console.Path {
				t.Errorf("the console at %s: %d %s", page, res.StatusCode, res.Header.Get("Content-Type"))
			}
			if err := stop(); err != nil {
				t.Fatalf("run: %v", err)
			}
			got := out.String()
			if !strings.Contains(got, " msg=request ") || !strings.HasSuffix(got, "msg=\"UDS stopped\"\n") {
				t.Errorf("no request line, or not stopped last:\n%s", got)
			}
			if strings.Contains(got, `"_aws"`) != tc.emf {
				t.Errorf("EMF records %v, want %v:\n%s", !tc.emf, tc.emf, got)
			}
		})
	}
}

// TestBanner: after the startup line comes the start banner, a block that
// names the API, the console and the OpenAPI document at the URLs the
// line gives, the DynamoDB engine with the data folder the engine script
// named, the local S3 engine with its objects' folder, and how to stop.
func TestBanner(t *testing.T) {
	t.Setenv(envDynamoDBData, ".data/dynamodb")
	cfg := config.Config{
		Tables: storetest.NewTables(t), Endpoint: os.Getenv(config.EnvDynamoDBEndpoint),
		ListenAddr: "127.0.0.1:0", S3ListenAddr: "127.0.0.1:0", LogFormat: "text", CursorSecret: []byte("k"),
	}
	url, out, stop := serve(t, cfg)
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	got := out.String()
	m := listeningLine.FindStringSubmatch(got)
	root := strings.TrimSuffix(url, httpapi.BasePath)
	_, after, _ := strings.Cut(got, m[0])
	lines := strings.Split(after, "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^UDS is running; Ctrl-C stops it\.$`),
		regexp.MustCompile(`^  API +` + regexp.QuoteMeta(url) + `$`),
		regexp.MustCompile(`^  Console +` + regexp.QuoteMeta(m[2]) + `$`),
		regexp.MustCompile(`^  OpenAPI +` + regexp.QuoteMeta(root+"/openapi.json") + `$`),
		regexp.MustCompile(`^  DynamoDB +` + regexp.QuoteMeta(cfg.Endpoint+", data in .data/dynamodb") + `$`),
		regexp.MustCompile(`^  S3 +http://127\.0\.0\.1:\d+, bucket uds-local, data in /\S+$`),
		regexp.MustCompile(`^  Callers +trusting X-Uds-Subject`),
	}
	if len(lines) < len(want)+1 {
		t.Fatalf("no banner after the startup line:\n%s", got)
	}
	for i, re := range want {
		if !re.MatchString(lines[i+1]) {
			t.Errorf("banner line %d is %q, want %s:\n%s", i+1, lines[i+1], re, got)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(withoutBanner(got)), "\n") {
		if !strings.HasPrefix(line, "time=") {
			t.Errorf("withoutBanner left %q", line)
		}
	}
}

// TestQuietBackground: a write's stream record, handed to the expiry
// handler, releases and counts nothing, and its batch line is at DEBUG:
// at INFO the server prints the request line alone. Before, each write
// printed an INFO "expiry batch" line beside it.
func TestQuietBackground(t *testing.T) {
	t.Parallel()
	cfg := config.Config{
		Tables: storetest.NewStreamedTables(t), Endpoint: os.Getenv(config.EnvDynamoDBEndpoint),
		ListenAddr: "127.0.0.1:0", S3ListenAddr: "127.0.0.1:0", LogFormat: "text", LogLevel: slog.LevelDebug, CursorSecret: []byte("k"),
	}
	url, out, stop := serve(t, cfg)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	res, err := http.Post(url+"/data/d53065bd-f932-4841-83fb-849717d8df0f/notes/n1", "application/json", strings.NewReader(`{"data": {"text": "hi"}}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("POST: %d", res.StatusCode)
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), `msg="expiry batch" records=1`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the write's stream record never reached the handler:\n%s", out)
		}
	}
	// The changes function's line of the batch that wrote the write's row
	// is work done, as the request line is; a batch that wrote none would
	// be at DEBUG.
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), `msg="changes batch" records=1 rows=1`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the write's stream record never reached the changes feed:\n%s", out)
		}
	}
	for _, line := range strings.Split(withoutBanner(out.String()), "\n") {
		if strings.Contains(line, "level=INFO") && !strings.Contains(line, `msg="UDS listening"`) && !strings.Contains(line, "msg=request") &&
			!strings.Contains(line, `msg="changes batch" records=1 rows=1`) {
			t.Errorf("a line at INFO with nothing done: %s", line)
		}
	}
}

// withoutBanner is out without the start banner: its log lines only.
func withoutBanner(out string) string {
	var kept []string
	inBanner := false
	for _, line := range strings.SplitAfter(out, "\n") {
		inBanner = line == bannerTitle+"\n" || inBanner && strings.HasPrefix(line, "  ")
		if !inBanner {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "")
}

// serve runs the server of cfg, with its S3 engine's objects in a
// directory of the test's, until stop, which answers what run returned.
// It returns the API's base URL, as the startup line says it, and the
// output.
func serve(t *testing.T, cfg config.Config) (url string, out *lockedBuffer, stop func() error) {
	t.Helper()
	out = &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, t.TempDir(), newLogger(out, cfg), out) }()
	stop = func() error {
		cancel()
		return <-done
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := listeningLine.FindStringSubmatch(out.String()); m != nil {
			return m[1], out, stop
		}
	}
	t.Fatalf("not listening: %v\n%s", stop(), out.String())
	return "", nil, nil
}

// listeningLine is the startup line, with the API's and the console's
// URLs.
var listeningLine = regexp.MustCompile(`msg="UDS listening" url=(\S+) console=(\S+)`)

// lockedBuffer takes the logger's and the EMF writer's writes, which come
// from different goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
