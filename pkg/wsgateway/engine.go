package wsgateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/udsproject/uds/pkg/realtime"
	"github.com/udsproject/uds/pkg/store"
)

// Engine is the realtime protocol as one connection's session runs it:
// it takes the connection's events one at a time, in order, and answers
// the messages to send to the client, in order. The deliverer keeps the
// session's state between events in the connections table, so the engine
// holds none of its own.
type Engine interface {
	Handle(ctx context.Context, s *Session, ev Event) ([][]byte, error)
}

// Session is what the engine knows of a connection while it takes one of
// its events.
type Session struct {
	Connection, Subject string
	// State is the engine's: nil before the connection's first event, and
	// saved as the engine leaves it.
	State []byte
	// Watches registers the feeds the session's subscriptions read. A
	// subscription is watched before the engine picks the instant it
	// starts from, so that every row landing after that instant reaches
	// the connection as an event of its own.
	Watches Watcher
}

// Watcher registers and drops a session's subscriptions to feeds.
type Watcher interface {
	Watch(ctx context.Context, feed, subscription string) error
	Unwatch(ctx context.Context, feed, subscription string) error
}

// connectionWatcher is a connection's Watcher over the connections table:
// its subscribers' records leave the table with the connection's.
type connectionWatcher struct {
	conns   *Connections
	id      string
	expires time.Time
}

func (w connectionWatcher) Watch(ctx context.Context, feed, subscription string) error {
	return w.conns.Watch(ctx, w.id, feed, subscription, w.expires)
}

func (w connectionWatcher) Unwatch(ctx context.Context, feed, subscription string) error {
	return w.conns.Unwatch(ctx, w.id, feed, subscription)
}

// StepsEngine is the realtime protocol as the deployed endpoint runs it
// (realtime.Steps), the session's state kept as JSON.
type StepsEngine struct {
	Steps *realtime.Steps
}

// Handle takes a client's message, or rows that landed.
func (e StepsEngine) Handle(ctx context.Context, s *Session, ev Event) ([][]byte, error) {
	var st realtime.State
	if len(s.State) > 0 {
		if err := json.Unmarshal(s.State, &st); err != nil {
			return nil, fmt.Errorf("the session's state: %w", err)
		}
	}
	var out [][]byte
	var err error
	if ev.Message != nil {
		out, err = e.Steps.Message(ctx, s.Subject, &st, s.Watches, ev.Message)
	} else {
		rows := make([]store.FeedRow, len(ev.Rows))
		for i, r := range ev.Rows {
			rows[i] = r.feedRow()
		}
		out, err = e.Steps.Landed(ctx, &st, rows, ev.Landed)
	}
	if err != nil {
		return nil, err
	}
	state, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	s.State = state
	return out, nil
}
