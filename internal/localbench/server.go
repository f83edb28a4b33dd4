package localbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/udsproject/uds/pkg/httpapi"
)

// Log gathers what the servers of a benchmark print on their standard
// output, as JSON log lines: each request line goes to OnRequest, and the
// lines at WARN and above are kept for the report (the rate limiter
// failing open, a 5xx's cause).
type Log struct {
	// OnRequest, when set, is given each request line. It is called from
	// the goroutines that read the servers' outputs, one per server, so
	// it must be safe for concurrent use; the line is its own to keep.
	OnRequest func(line []byte)
	// OnLine, when set, is given every JSON line with its message, request
	// lines included, as OnRequest is.
	OnLine func(msg string, line []byte)

	mu       sync.Mutex
	problems []string
}

// Problems returns the lines logged at WARN or ERROR so far.
func (l *Log) Problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.problems
}

// read takes one server's output until it is closed. The first "UDS
// listening" line's URL goes to listening; text that is not JSON (the
// first release logs text, to standard error) is skipped.
func (l *Log) read(out io.Reader, listening chan<- string) {
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	announced := false
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
		case head.Msg == "UDS listening" && !announced:
			announced = true
			offer(listening, head.URL)
		case head.Msg == "request" && l.OnRequest != nil:
			l.OnRequest(append([]byte(nil), lines.Bytes()...))
		}
		if l.OnLine != nil {
			l.OnLine(head.Msg, append([]byte(nil), lines.Bytes()...))
		}
		if head.Level == "WARN" || head.Level == "ERROR" {
			l.mu.Lock()
			l.problems = append(l.problems, lines.Text())
			l.mu.Unlock()
		}
	}
}

// Server is one uds-local process.
type Server struct {
	// URL is the API's base URL (http://host:port/rest/api/v1).
	URL  string
	cmd  *exec.Cmd
	done chan struct{} // closed when its output is read to the end
}

// Start starts bin with env added to this process's environment, its
// output read into log, and waits until it serves. With addr empty the
// server says where it listens: its "UDS listening" line gives the URL
// (env sets UDS_LISTEN_ADDR to a port 0, and no two servers race for a
// port). A server that does not say so in JSON (the first release) is
// given addr in env and is taken to serve once addr accepts connections.
func Start(bin string, env []string, addr string, log *Log) (*Server, error) {
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
	s := &Server{cmd: cmd, done: make(chan struct{})}
	listening := make(chan string, 1)
	go func() {
		defer close(s.done)
		log.read(out, listening)
	}()
	if addr != "" {
		go func() {
			if answers(addr, s.done) {
				offer(listening, "http://"+addr+httpapi.BasePath)
			}
		}()
	}
	select {
	case s.URL = <-listening:
		return s, nil
	case <-s.done:
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s exited before it listened (%v)", bin, cmd.ProcessState)
	case <-time.After(60 * time.Second):
		_ = s.Stop()
		return nil, fmt.Errorf("%s did not listen within a minute", bin)
	}
}

// PID is the server process's id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// offer gives listening the server's URL unless it has one already: a
// server given an address may say where it listens too.
func offer(listening chan<- string, url string) {
	select {
	case listening <- url:
	default:
	}
}

// answers waits until addr accepts a connection, and says whether it did
// before done was closed (the server exited) or a minute passed.
func answers(addr string, done <-chan struct{}) bool {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
		select {
		case <-done:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// Stop ends the server as make run's Ctrl-C would (SIGTERM: it finishes
// the requests in hand and logs them), or kills it after 10 s, and waits
// until its output is read.
func (s *Server) Stop() error {
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
		return fmt.Errorf("server at %s: %v", s.URL, exit)
	}
	return err
}

// Command is a command that ctx's end stops as Stop stops a server
// (SIGTERM, then SIGKILL after 30 s), and that is sent SIGTERM when the
// benchmark dies: a benchmark that runs part of itself in another process
// (under an engine of its own) leaves nothing running.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = stopWithParent()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	return cmd
}

// FreeAddr returns a loopback address with a port free at the moment, for
// a server that cannot be told to take any port and say which (Start's
// addr). Another process may take the port before the server does:
// unlikely on a machine given to a benchmark, and then the server exits
// on the address in use, which its Stop reports.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
