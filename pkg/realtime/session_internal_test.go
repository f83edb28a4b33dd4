package realtime

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store"
)

// blockedConn is a connection whose writes wait until it is closed, as a
// client that stopped reading, and that records how it was closed.
type blockedConn struct {
	mu     sync.Mutex
	status int
	closed chan struct{}
}

func (c *blockedConn) write(ctx context.Context, _ []byte) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return context.Canceled
	}
}

func (c *blockedConn) close(status int, _ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == 0 {
		c.status = status
		close(c.closed)
	}
}

func (c *blockedConn) closedWith() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// A session that falls maxQueued events behind is ended with 1013, so
// that its client resumes from its cursor instead of the server holding
// what it cannot write; and the hub's Close ends every session with 1001.
func TestSessionEnds(t *testing.T) {
	hub := NewHub(nil, slog.New(slog.DiscardHandler))
	t.Run("a client that falls behind", func(t *testing.T) {
		conn := &blockedConn{closed: make(chan struct{})}
		s := newSession(t.Context(), hub, "alice", conn)
		sub := &subscription{id: "s", session: s}
		s.subs["s"] = sub
		for range maxQueued + 1 {
			s.enqueue(event{sub: sub, live: &liveEvent{rows: []store.FeedRow{{}}}})
		}
		if got := conn.closedWith(); got != closeTryAgainLater {
			t.Fatalf("closed with %d, want %d", got, closeTryAgainLater)
		}
		if s.ctx.Err() == nil {
			t.Fatal("the session goes on")
		}
	})
	t.Run("the server stopping", func(t *testing.T) {
		conn := &blockedConn{closed: make(chan struct{})}
		s := newSession(t.Context(), hub, "alice", conn)
		if !hub.open(s) {
			t.Fatal("the hub refused a session")
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.run()
		}()
		hub.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the session did not stop")
		}
		if got := conn.closedWith(); got != closeGoingAway {
			t.Fatalf("closed with %d, want %d", got, closeGoingAway)
		}
		if hub.open(newSession(t.Context(), hub, "bob", conn)) {
			t.Fatal("a closed hub took a session")
		}
	})
}
