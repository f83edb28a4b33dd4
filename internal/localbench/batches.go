package localbench

import (
	"encoding/json"
	"sync"
	"time"
)

// Batch is what a benchmark reads of the server's "changes batch" line
// (pkg/changes): one batch of stream records written to the changes feed.
type Batch struct {
	Time      time.Time `json:"time"`
	Records   int       `json:"records"`
	Rows      int       `json:"rows"`
	LatencyMs float64   `json:"latencyMs"`
}

// Batches gathers a server's changes batch lines: its Add is a Log's
// OnLine.
type Batches struct {
	mu    sync.Mutex
	lines []Batch
}

// Add takes one log line, and keeps it if it is a changes batch line.
func (l *Batches) Add(msg string, line []byte) {
	var b Batch
	if msg != "changes batch" || json.Unmarshal(line, &b) != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, b)
}

// Within returns the lines written from start to end.
func (l *Batches) Within(start, end time.Time) []Batch {
	l.mu.Lock()
	defer l.mu.Unlock()
	var in []Batch
	for _, b := range l.lines {
		if !b.Time.Before(start) && !b.Time.After(end) {
			in = append(in, b)
		}
	}
	return in
}
