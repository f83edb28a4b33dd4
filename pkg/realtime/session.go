package realtime

import (
	"container/heap"
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// maxQueued bounds what waits for a connection: a client that falls that
// far behind is disconnected (closeTryAgainLater), and resumes from the
// last cursor it received rather than holding the server's memory.
const maxQueued = 10_000

// The WebSocket close statuses the server ends a connection with.
const (
	closeGoingAway     = 1001
	closeInternalError = 1011
	closeTryAgainLater = 1013
)

// transport is a connection as a session writes to it.
type transport interface {
	write(ctx context.Context, msg []byte) error
	close(status int, reason string)
}

// A session is one connection's subscriptions. One goroutine (run) does
// everything a connection sees, in the order its events came: a client's
// requests, what the hub shows, expiries. That order is what keeps a
// subscription's changes in feed order and every item's versions going
// forward: each entry is read when it is shown, and a session reads again
// what the hub read before the session's own latest read (renderedAt).
type session struct {
	hub    *Hub
	caller string
	conn   transport
	// ctx ends with the session; base only with the server, so that the
	// write of a closing status is not cut short by the session's end.
	ctx, base context.Context
	cancel    context.CancelFunc

	mu       sync.Mutex
	inbox    []event
	overflow bool
	wake     chan struct{}

	// What follows belongs to run.
	subs map[string]*subscription
	// subscribed counts the subscriptions opened and sent the messages
	// sent, for the connection's log line.
	subscribed, sent int
	expiries         expiryHeap
	timer            *time.Timer
	renderedAt       time.Time
}

// event is one thing a session handles: a client's message (req, or
// reqErr when it was not a valid one), what the hub showed for a
// subscription (live), or its expiry timer (tick).
type event struct {
	req    *Request
	reqErr error
	sub    *subscription
	live   *liveEvent
	tick   bool
}

// liveEvent is a landing as the hub showed it: its rows, an entry per row
// read at shownAt, and when they landed; err when they could not be read.
type liveEvent struct {
	rows        []store.FeedRow
	entries     []Entry
	at, shownAt time.Time
	err         error
}

// subscription is one subscription of a session.
type subscription struct {
	id      string
	scope   Scope
	session *session
	// floor is the instant up to which the subscription's start covers
	// the feed: rows at or before it are not shown live.
	floor time.Time
	// cursor is the cursor the subscription's changes carry, at
	// cursorAt: every row of its feed at or before that instant has been
	// sent, or was before its start.
	cursor   string
	cursorAt time.Time
}

func newSession(base context.Context, hub *Hub, caller string, conn transport) *session {
	ctx, cancel := context.WithCancel(base)
	return &session{hub: hub, caller: caller, conn: conn, ctx: ctx, base: base, cancel: cancel,
		wake: make(chan struct{}, 1), subs: map[string]*subscription{}}
}

// enqueue hands the session an event; a session that falls maxQueued
// behind is ended.
func (s *session) enqueue(e event) {
	s.mu.Lock()
	if s.overflow {
		s.mu.Unlock()
		return
	}
	if len(s.inbox) >= maxQueued {
		s.overflow = true
		s.mu.Unlock()
		s.end(closeTryAgainLater, "the connection fell behind its changes: reconnect and resume from the last cursor")
		return
	}
	s.inbox = append(s.inbox, e)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// end closes the connection with status and stops the session.
func (s *session) end(status int, reason string) {
	s.conn.close(status, reason)
	s.cancel()
}

// run handles the session's events until the connection ends, then
// removes its subscriptions from the hub.
func (s *session) run() {
	defer func() {
		for _, sub := range s.subs {
			s.hub.leave(sub)
		}
		s.hub.done(s)
		if s.timer != nil {
			s.timer.Stop()
		}
	}()
	for {
		var tick <-chan time.Time
		if s.timer != nil {
			tick = s.timer.C
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-tick:
			s.timer = nil
			s.enqueue(event{tick: true})
			continue
		}
		s.mu.Lock()
		events := s.inbox
		s.inbox = nil
		s.mu.Unlock()
		for _, e := range events {
			if err := s.handle(e); err != nil {
				if s.ctx.Err() == nil {
					s.hub.log.Error("a realtime connection failed; its client reconnects", "cause", err.Error())
					s.end(closeInternalError, "the server could not read the changes: reconnect and resume from the last cursor")
				}
				return
			}
		}
	}
}

// handle handles one event. An error ends the connection.
func (s *session) handle(e event) error {
	switch {
	case e.reqErr != nil:
		id := ""
		if e.req != nil {
			id = e.req.ID
		}
		return s.send(errorMessage(id, s.hub.feed.Refusal(Scope{Caller: s.caller}, e.reqErr)))
	case e.req != nil && e.req.Action == ActionSubscribe:
		return s.subscribe(*e.req)
	case e.req != nil:
		return s.unsubscribe(e.req.ID)
	case e.live != nil:
		if s.subs[e.sub.id] != e.sub {
			return nil
		}
		return s.showLive(e.sub, e.live)
	case e.tick:
		return s.expire()
	}
	return nil
}

func (s *session) send(msg []byte) error {
	ctx, cancel := context.WithTimeout(s.base, writeTimeout)
	defer cancel()
	s.sent++
	return s.conn.write(ctx, msg)
}

// writeTimeout bounds one message's write: a client that takes longer is
// gone or too slow, and reconnects.
const writeTimeout = 10 * time.Second

// subscribe opens a subscription, catches it up from its cursor when it
// has one, and files it with the hub for what lands from then on.
func (s *session) subscribe(req Request) error {
	switch {
	case s.subs[req.ID] != nil:
		return s.send(errorMessage(req.ID, Refusal{Status: http.StatusBadRequest, Error: "Invalid id",
			Details: "a subscription of this connection has that id already: unsubscribe it first, or choose another"}))
	case len(s.subs) >= MaxPerConnection:
		return s.send(errorMessage(req.ID, Refusal{Status: http.StatusTooManyRequests, Error: "Too many subscriptions",
			Details: "a connection holds at most 100 subscriptions: unsubscribe one, or open another connection"}))
	}
	sc, err := s.hub.feed.Open(s.ctx, s.caller, req)
	if err != nil {
		return s.refuse(req.ID, sc, err)
	}
	sub := &subscription{id: req.ID, scope: sc, session: s}
	now := s.hub.now()
	recent, ok := s.hub.join(sub)
	if !ok {
		return s.send(errorMessage(req.ID, Refusal{Status: http.StatusTooManyRequests, Error: "Too many subscriptions",
			Details: "the app has 10,000 subscriptions on this server, the most it takes: try again later"}))
	}
	s.subs[req.ID] = sub
	s.subscribed++
	if req.Cursor == nil {
		// Live from now on. The cursor stands a settle time back, where
		// a read of the feed is sure to have every row before it.
		sub.floor, sub.cursorAt = now, now.Add(-store.ChangesSettle)
		if sub.cursor, err = s.hub.feed.CursorAt(sc, sub.cursorAt); err != nil {
			return err
		}
		return s.send(subscribedMessage(sub.id, sub.cursor))
	}
	return s.catchUp(sub, *req.Cursor, recent)
}

// refuse answers a request refused with err; a failure of the server
// (a 5xx) ends the connection instead, so that its client resumes.
func (s *session) refuse(id string, sc Scope, err error) error {
	r := s.hub.feed.Refusal(sc, err)
	if r.Status >= http.StatusInternalServerError && !errors.Is(err, uds.ErrNoChangesFeed) {
		return err
	}
	return s.send(errorMessage(id, r))
}

// catchUp sends what the feed holds after cursor, page by page, until it
// is up to date; then the rows that landed since the last page's horizon,
// and, from the hub, everything after.
func (s *session) catchUp(sub *subscription, cursor string, recent []store.FeedRow) error {
	for first := true; ; first = false {
		page, err := s.hub.feed.Page(s.ctx, sub.scope, cursor)
		if err != nil {
			s.drop(sub)
			if errors.Is(err, uds.ErrCursorExpired) {
				return s.send(idMessage(TypeResync, sub.id))
			}
			if !first && s.hub.feed.Refusal(sub.scope, err).Status < http.StatusInternalServerError {
				// A later page refused: its subscriber starts again.
				return s.send(idMessage(TypeResync, sub.id))
			}
			return s.refuse(sub.id, sub.scope, err)
		}
		s.renderedAt = s.hub.now()
		if first {
			if err := s.send(subscribedMessage(sub.id, cursor)); err != nil {
				return err
			}
		}
		for i := range page.Entries {
			e := &page.Entries[i]
			if !sub.scope.shows(e) {
				continue
			}
			// An entry but the page's last carries the cursor before the
			// page: only the page's end is a position of the feed.
			at := cursor
			if i == len(page.Entries)-1 {
				at = page.Cursor
			}
			if err := s.show(sub, e, at); err != nil {
				return err
			}
		}
		cursor = page.Cursor
		if page.UpToDate {
			sub.floor, sub.cursor, sub.cursorAt = page.At, cursor, page.At
			break
		}
	}
	var pending []store.FeedRow
	for _, r := range recent {
		if r.Instant().After(sub.floor) {
			pending = append(pending, r)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	return s.showLive(sub, &liveEvent{rows: pending})
}

// showLive sends a subscription what landed: the rows after its floor
// that its scope takes, read again when the hub read them before the
// session's latest read of its own (or not at all).
func (s *session) showLive(sub *subscription, ev *liveEvent) error {
	if ev.err != nil {
		return ev.err
	}
	entries := ev.entries
	if entries == nil || ev.shownAt.Before(s.renderedAt) {
		s.renderedAt = s.hub.now()
		var err error
		if entries, err = s.hub.feed.Current(s.ctx, ev.rows); err != nil {
			return err
		}
	}
	if !ev.at.IsZero() {
		// Every row at least a settle time older than this landing
		// landed before it, and this session has shown it: rows land
		// within half a settle time of their instant (store.LogChanges),
		// and the hub shows landings in order.
		if at := ev.at.Add(-store.ChangesSettle); at.After(sub.cursorAt) {
			cursor, err := s.hub.feed.CursorAt(sub.scope, at)
			if err != nil {
				return err
			}
			sub.cursor, sub.cursorAt = cursor, at
		}
	}
	feed := sub.scope.feed()
	for i, r := range ev.rows {
		if !r.Instant().After(sub.floor) || feedOf(r.Key.App, r.Key.Namespace, r.Key.Owner) != feed || !sub.scope.shows(&entries[i]) {
			continue
		}
		if err := s.show(sub, &entries[i], sub.cursor); err != nil {
			return err
		}
	}
	return nil
}

// show sends one entry, and watches a shown item's expiry.
func (s *session) show(sub *subscription, e *Entry, cursor string) error {
	if err := s.send(changeMessage(sub.id, e.JSON, cursor)); err != nil {
		return err
	}
	if !e.ExpiresAt.IsZero() {
		heap.Push(&s.expiries, expiry{at: e.ExpiresAt, sub: sub, key: e.Key, version: e.Version})
		s.arm()
	}
	return nil
}

// unsubscribe ends a subscription.
func (s *session) unsubscribe(id string) error {
	sub := s.subs[id]
	if sub == nil {
		return s.send(errorMessage(id, Refusal{Status: http.StatusNotFound, Error: "Subscription not found",
			Details: "this connection has no subscription with that id"}))
	}
	s.drop(sub)
	return s.send(idMessage(TypeUnsubscribed, id))
}

// drop removes a subscription.
func (s *session) drop(sub *subscription) {
	s.hub.leave(sub)
	delete(s.subs, sub.id)
}
