package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// requestLine is what the benchmark reads of a server's request line.
type requestLine struct {
	Subject     string  `json:"subject"`
	Status      int     `json:"status"`
	LatencyMs   float64 `json:"latencyMs"`
	Calls       int     `json:"dynamodbCalls"`
	WriteUnits  float64 `json:"writeUnits"`
	RateLimiter string  `json:"rateLimiter"`
}

// serverLogs gathers the lines of every server: request lines by caller,
// and the lines at WARN and above (the limiter failing open among them).
type serverLogs struct {
	mu       sync.Mutex
	requests map[string][]requestLine
	problems []string
}

func newServerLogs() *serverLogs {
	return &serverLogs{requests: map[string][]requestLine{}}
}

// of returns the request lines of one caller.
func (l *serverLogs) of(subject string) []requestLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests[subject]
}

// read takes one server's JSON log lines until it closes its output. The
// first "UDS listening" line's URL goes to listening.
func (l *serverLogs) read(out io.Reader, listening chan<- string) {
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		var head struct {
			Msg   string `json:"msg"`
			Level string `json:"level"`
			URL   string `json:"url"`
		}
		if json.Unmarshal(lines.Bytes(), &head) != nil {
			continue
		}
		switch {
		case head.Msg == "UDS listening":
			listening <- head.URL
		case head.Msg == "request":
			var r requestLine
			if json.Unmarshal(lines.Bytes(), &r) == nil {
				l.mu.Lock()
				l.requests[r.Subject] = append(l.requests[r.Subject], r)
				l.mu.Unlock()
			}
		}
		if head.Level == "WARN" || head.Level == "ERROR" {
			l.mu.Lock()
			l.problems = append(l.problems, lines.Text())
			l.mu.Unlock()
		}
	}
}

// server is one uds-local process.
type server struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{} // closed when its output is read to the end
}

// startServer starts bin with env added to this process's environment and
// waits until it listens.
func startServer(bin string, env []string, logs *serverLogs) (*server, error) {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = stopWithParent()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	listening := make(chan string, 1)
	go func() {
		defer close(s.done)
		logs.read(out, listening)
	}()
	select {
	case s.url = <-listening:
		return s, nil
	case <-s.done:
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s exited before it listened (%v)", bin, cmd.ProcessState)
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, fmt.Errorf("%s did not listen within a minute", bin)
	}
}

// stop ends the server as make run's Ctrl-C would (SIGTERM: it finishes
// the requests in hand and logs them), or kills it after 10 s, and waits
// until its output is read.
func (s *server) stop() error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	err := s.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("server at %s: %v", s.url, exit)
	}
	return err
}

// startFleet starts n servers over one engine: the first alone (it
// creates the tables), then the others side by side. On failure the ones
// started are stopped.
func startFleet(bin string, n int, env []string, logs *serverLogs) ([]*server, error) {
	first, err := startServer(bin, env, logs)
	if err != nil {
		return nil, err
	}
	fleet := make([]*server, n)
	fleet[0] = first
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fleet[i], errs[i] = startServer(bin, env, logs)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		stopFleet(fleet)
		return nil, err
	}
	return fleet, nil
}

// stopFleet stops every server started (nil entries are skipped).
func stopFleet(fleet []*server) error {
	var errs []error
	for _, s := range fleet {
		if s != nil {
			errs = append(errs, s.stop())
		}
	}
	return errors.Join(errs...)
}
