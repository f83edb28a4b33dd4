package apitest

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// replayLines is how many of a failing test's last log lines Logger
// writes to its output.
const replayLines = 50

// Logger returns a logger for an API a test serves, in place of
// slog.Default(), which writes every request line of every test to the
// package's output. Its lines are kept, not printed: a passing test shows
// none, and a failing one shows its own last lines after its failure, so
// the failure reads first.
func Logger(t testing.TB) *slog.Logger {
	k := &keptLines{}
	t.Cleanup(func() {
		if t.Failed() {
			k.replay(t)
		}
	})
	return slog.New(slog.NewTextHandler(k, nil))
}

// keptLines keeps the last replayLines lines written to it. slog's
// handlers write a record as one line in one Write.
type keptLines struct {
	mu    sync.Mutex
	lines []string
	total int
}

func (k *keptLines) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.total++
	if len(k.lines) == replayLines {
		k.lines = k.lines[1:]
	}
	k.lines = append(k.lines, string(bytes.TrimSuffix(p, []byte("\n"))))
	return len(p), nil
}

func (k *keptLines) replay(t testing.TB) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.total == 0 {
		return
	}
	t.Logf("the last %d of the %d lines the API logged:", len(k.lines), k.total)
	for _, l := range k.lines {
		t.Log(l)
	}
}
