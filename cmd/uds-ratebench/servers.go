package main

import (
	"encoding/json"
	"errors"
	"sync"

	"github.com/udsproject/uds/internal/localbench"
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
	localbench.Log
	mu       sync.Mutex
	requests map[string][]requestLine
}

func newServerLogs() *serverLogs {
	l := &serverLogs{requests: map[string][]requestLine{}}
	l.OnRequest = l.add
	return l
}

// add files one request line under its caller.
func (l *serverLogs) add(line []byte) {
	var r requestLine
	if json.Unmarshal(line, &r) != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests[r.Subject] = append(l.requests[r.Subject], r)
}

// of returns the request lines of one caller.
func (l *serverLogs) of(subject string) []requestLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests[subject]
}

// startFleet starts n servers over one engine: the first alone (it
// creates the tables), then the others side by side. On failure the ones
// started are stopped.
func startFleet(bin string, n int, env []string, logs *serverLogs) ([]*localbench.Server, error) {
	first, err := localbench.Start(bin, env, "", &logs.Log)
	if err != nil {
		return nil, err
	}
	fleet := make([]*localbench.Server, n)
	fleet[0] = first
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fleet[i], errs[i] = localbench.Start(bin, env, "", &logs.Log)
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
func stopFleet(fleet []*localbench.Server) error {
	var errs []error
	for _, s := range fleet {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	return errors.Join(errs...)
}
