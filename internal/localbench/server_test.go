package localbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/config"
)

// fakeServer, set in the environment, makes the test binary stand in for
// a server: "json" says where it listens as uds-local does, "text" as the
// first release does (in text, to standard error, at UDS_LISTEN_ADDR),
// "exit" fails before it listens.
const fakeServer = "LOCALBENCH_FAKE_SERVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeServer); mode != "" {
		os.Exit(serveFake(mode))
	}
	os.Exit(m.Run())
}

// serveFake answers every request 204 until SIGTERM, and logs a request
// line for each as uds-local would.
func serveFake(mode string) int {
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "fake: failing at start")
		return 1
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	ln, err := net.Listen("tcp", os.Getenv(config.EnvListenAddr))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		if mode == "json" {
			mu.Lock()
			fmt.Printf(`{"level":"INFO","msg":"request","route":"%s %s","status":204}`+"\n", r.Method, r.URL.Path)
			mu.Unlock()
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	if mode == "json" {
		fmt.Printf(`{"level":"INFO","msg":"UDS listening","url":"http://%s/rest/api/v1"}`+"\n", ln.Addr())
	} else {
		fmt.Fprintf(os.Stderr, "UDS listening on http://%s/rest/api/v1\n", ln.Addr())
	}
	<-stop
	_ = srv.Shutdown(context.Background())
	return 0
}

// A server is ready once it says where it listens, or once the address it
// was given answers; its request lines reach OnRequest, and it stops on
// SIGTERM. One that exits at start is an error.
func TestStart(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, mode string
		given      bool // the server is given its address
		wantErr    string
	}{
		{"says where it listens", "json", false, ""},
		{"given an address", "text", true, ""},
		{"exits at start", "exit", false, "exited before it listened"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{fakeServer + "=" + tc.mode, config.EnvListenAddr + "=127.0.0.1:0"}
			addr := ""
			if tc.given {
				if addr, err = FreeAddr(); err != nil {
					t.Fatal(err)
				}
				env = append(env, config.EnvListenAddr+"="+addr)
			}
			var mu sync.Mutex
			var lines []string
			log := &Log{OnRequest: func(line []byte) {
				mu.Lock()
				defer mu.Unlock()
				lines = append(lines, string(line))
			}}
			s, err := Start(bin, env, addr, log)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || !strings.HasSuffix(s.URL, "/rest/api/v1") || (tc.given && s.URL != "http://"+addr+"/rest/api/v1") {
				t.Errorf("URL %q", s.URL)
			}
			o := Do(context.Background(), http.DefaultClient, http.MethodGet, s.URL+"/x", "", "")
			if err := s.Stop(); err != nil {
				t.Errorf("stopping: %v", err)
			}
			if o.Status != http.StatusNoContent {
				t.Errorf("answer %+v", o)
			}
			// Stopped, the server has written every request line.
			switch {
			case tc.mode == "json" && (len(lines) != 1 || !strings.Contains(lines[0], `"route":"GET /rest/api/v1/x"`)):
				t.Errorf("request lines %q, want the GET's", lines)
			case tc.mode != "json" && len(lines) != 0:
				t.Errorf("request lines %q, want none", lines)
			}
		})
	}
}

// A server's output gives its URL once, its request lines, and its
// warnings and errors; other lines and text that is not JSON are skipped.
func TestLogRead(t *testing.T) {
	out := strings.Join([]string{
		`{"level":"INFO","msg":"UDS listening","url":"http://127.0.0.1:1234/rest/api/v1"}`,
		`{"level":"INFO","msg":"request","subject":"a","status":200}`,
		`not JSON`,
		`{"level":"INFO","msg":"UDS listening","url":"http://127.0.0.1:5678/rest/api/v1"}`,
		`{"level":"ERROR","msg":"rate limiter cannot reach its state: requests pass unchecked"}`,
		`{"level":"WARN","msg":"request","subject":"b","status":503}`,
		`{"level":"INFO","msg":"index built"}`,
	}, "\n")
	var lines []string
	log := &Log{OnRequest: func(line []byte) { lines = append(lines, string(line)) }}
	listening := make(chan string, 1)
	log.read(strings.NewReader(out), listening)
	if url := <-listening; url != "http://127.0.0.1:1234/rest/api/v1" {
		t.Errorf("listening at %q", url)
	}
	if len(lines) != 2 || !strings.Contains(lines[0], `"subject":"a"`) || !strings.Contains(lines[1], `"subject":"b"`) {
		t.Errorf("request lines %q", lines)
	}
	if p := log.Problems(); len(p) != 2 || !strings.Contains(p[0], "cannot reach") || !strings.Contains(p[1], `"status":503`) {
		t.Errorf("problems %q", p)
	}
}

// answers gives up when the server has exited.
func TestAnswersServerGone(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	close(done)
	start := time.Now()
	if answers(addr, done) {
		t.Errorf("%s answered, want nothing there", addr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v to give up", took)
	}
}

// A Command is stopped as a server is when its context ends: SIGTERM, on
// which it finishes cleanly (the fake exits 0), not SIGKILL.
func TestCommandStopsOnCancel(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := Command(ctx, bin)
	cmd.Env = append(os.Environ(), fakeServer+"=json", config.EnvListenAddr+"=127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening, read := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(read)
		new(Log).read(out, listening)
	}()
	select {
	case <-listening:
	case <-time.After(time.Minute):
		t.Fatal("the fake did not listen within a minute")
	}
	cancel()
	// The output is read to its end, as Wait wants, once the fake exits.
	<-read
	if err := cmd.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait: %v, want the context's end", err)
	}
	if !cmd.ProcessState.Success() {
		t.Errorf("the command ended %v, want a clean exit on SIGTERM", cmd.ProcessState)
	}
}
