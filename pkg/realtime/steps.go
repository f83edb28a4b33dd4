package realtime

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Steps is the protocol for a host that keeps a session's state between
// its events and hands it each event in turn: the deployed endpoint
// (pkg/wsgateway), where one worker at a time takes a connection's events
// from a queue and keeps the session in a table. It answers as a local
// session does, from the same feed, with the same messages; what differs
// is how a subscription learns what lands. Locally the hub holds every
// subscription and keeps what landed a moment ago; deployed, a
// subscription is filed (Watcher) before it picks the instant it starts
// from, and what lands in its feed from then on comes to it as an event
// of its own (Landed).
type Steps struct {
	feed Feed
	now  func() time.Time
	// sleep waits for the feed's horizon to pass an instant.
	sleep func(context.Context, time.Duration) error
}

// NewSteps answers from feed. now is the clock, which must be the
// changes function's as closely as the feed's own guarantee needs (the
// feed rests on the two functions' clocks within a second).
func NewSteps(feed Feed, now func() time.Time) *Steps {
	return &Steps{feed: feed, now: now, sleep: sleepCtx}
}

// Watcher files a session's subscriptions where the feed's rows are
// handed out: once Watch returns, every row of feed that lands is handed
// to the session (Landed).
type Watcher interface {
	Watch(ctx context.Context, feed, subscription string) error
	Unwatch(ctx context.Context, feed, subscription string) error
}

// State is a session's state between its events.
type State struct {
	Subs []SubState `json:"subs,omitempty"`
	// Expiries are the items the session has shown that expire, the
	// soonest first.
	Expiries []ExpiryState `json:"expiries,omitempty"`
}

// SubState is a subscription: its scope, the instant up to which its
// start covered the feed (rows at or before it are not shown live), and
// the cursor its changes carry, at CursorAt.
type SubState struct {
	ID       string    `json:"id"`
	Scope    Scope     `json:"scope"`
	Floor    time.Time `json:"floor"`
	Cursor   string    `json:"cursor"`
	CursorAt time.Time `json:"cursorAt"`
}

// ExpiryState is an item a subscription showed that expires at At.
type ExpiryState struct {
	At      time.Time `json:"at"`
	Sub     string    `json:"sub"`
	Key     uds.Key   `json:"key"`
	Version int64     `json:"version"`
}

func (s *State) sub(id string) *SubState {
	for i := range s.Subs {
		if s.Subs[i].ID == id {
			return &s.Subs[i]
		}
	}
	return nil
}

// Message takes a client's message and answers it. An error is a failure
// of the server: the host takes the event again, or ends the connection.
func (st *Steps) Message(ctx context.Context, caller string, s *State, w Watcher, msg []byte) ([][]byte, error) {
	out, err := st.expire(ctx, s)
	if err != nil {
		return nil, err
	}
	req, err := ParseRequest(msg)
	if err != nil {
		return append(out, errorMessage(req.ID, st.feed.Refusal(Scope{Caller: caller}, err))), nil
	}
	var more [][]byte
	if req.Action == ActionSubscribe {
		more, err = st.subscribe(ctx, caller, s, w, req)
	} else {
		more, err = st.unsubscribe(ctx, s, w, req.ID)
	}
	return append(out, more...), err
}

func (st *Steps) subscribe(ctx context.Context, caller string, s *State, w Watcher, req Request) ([][]byte, error) {
	switch {
	case s.sub(req.ID) != nil:
		return [][]byte{errorMessage(req.ID, Refusal{Status: http.StatusBadRequest, Error: "Invalid id",
			Details: "a subscription of this connection has that id already: unsubscribe it first, or choose another"})}, nil
	case len(s.Subs) >= MaxPerConnection:
		return [][]byte{errorMessage(req.ID, Refusal{Status: http.StatusTooManyRequests, Error: "Too many subscriptions",
			Details: "a connection holds at most 100 subscriptions: unsubscribe one, or open another connection"})}, nil
	}
	sc, err := st.feed.Open(ctx, caller, req)
	if err != nil {
		return st.refuse(req.ID, sc, err)
	}
	if err := w.Watch(ctx, sc.feed(), req.ID); err != nil {
		return nil, err
	}
	// Every row that lands from now on comes as an event of its own.
	watched := st.now()
	sub := SubState{ID: req.ID, Scope: sc}
	if req.Cursor == nil {
		// Live from now on; the cursor stands a settle time back, where
		// a read of the feed is sure to have every row before it.
		sub.Floor, sub.CursorAt = watched, watched.Add(-store.ChangesSettle)
		if sub.Cursor, err = st.feed.CursorAt(sc, sub.CursorAt); err != nil {
			return nil, err
		}
		s.Subs = append(s.Subs, sub)
		return [][]byte{subscribedMessage(sub.ID, sub.Cursor)}, nil
	}
	out, ok, err := st.catchUp(ctx, s, &sub, *req.Cursor, watched)
	if err != nil || !ok {
		if uerr := w.Unwatch(ctx, sc.feed(), req.ID); err == nil {
			err = uerr
		}
		return out, err
	}
	s.Subs = append(s.Subs, sub)
	return out, nil
}

// catchUp reads the feed's pages from cursor until they reach past the
// instant the subscription was watched from: the rows before that
// instant were handed out before the session watched, so only the pages
// show them, and a page's horizon stands a settle time behind its read.
// It reports false when the subscription ended there (refused, or
// resync).
func (st *Steps) catchUp(ctx context.Context, s *State, sub *SubState, cursor string, watched time.Time) ([][]byte, bool, error) {
	var out [][]byte
	for first := true; ; first = false {
		page, err := st.feed.Page(ctx, sub.Scope, cursor)
		if err != nil {
			if errors.Is(err, uds.ErrCursorExpired) ||
				!first && st.feed.Refusal(sub.Scope, err).Status < http.StatusInternalServerError {
				return append(out, idMessage(TypeResync, sub.ID)), false, nil
			}
			more, err := st.refuse(sub.ID, sub.Scope, err)
			return append(out, more...), false, err
		}
		if first {
			out = append(out, subscribedMessage(sub.ID, cursor))
		}
		for i := range page.Entries {
			e := &page.Entries[i]
			if !sub.Scope.shows(e) {
				continue
			}
			at := cursor
			if i == len(page.Entries)-1 {
				at = page.Cursor
			}
			out = append(out, changeMessage(sub.ID, e.JSON, at))
			st.watchExpiry(s, sub.ID, e)
		}
		cursor = page.Cursor
		if !page.UpToDate {
			continue
		}
		if !page.At.Before(watched) {
			sub.Floor, sub.Cursor, sub.CursorAt = page.At, cursor, page.At
			return out, true, nil
		}
		// The horizon passes the watch a settle time after it.
		if err := st.sleep(ctx, watched.Add(store.ChangesSettle).Sub(st.now())+time.Millisecond); err != nil {
			return nil, false, err
		}
	}
}

// refuse answers a request refused with err; a failure of the server
// (a 5xx) is returned instead, for the host to try again or end the
// connection, as a local session ends it.
func (st *Steps) refuse(id string, sc Scope, err error) ([][]byte, error) {
	r := st.feed.Refusal(sc, err)
	if r.Status >= http.StatusInternalServerError && !errors.Is(err, uds.ErrNoChangesFeed) {
		return nil, err
	}
	return [][]byte{errorMessage(id, r)}, nil
}

func (st *Steps) unsubscribe(ctx context.Context, s *State, w Watcher, id string) ([][]byte, error) {
	sub := s.sub(id)
	if sub == nil {
		return [][]byte{errorMessage(id, Refusal{Status: http.StatusNotFound, Error: "Subscription not found",
			Details: "this connection has no subscription with that id"})}, nil
	}
	if err := w.Unwatch(ctx, sub.Scope.feed(), id); err != nil {
		return nil, err
	}
	st.drop(s, id)
	return [][]byte{idMessage(TypeUnsubscribed, id)}, nil
}

// drop removes a subscription and the expiries it watched.
func (st *Steps) drop(s *State, id string) {
	s.Subs = slices.DeleteFunc(s.Subs, func(sub SubState) bool { return sub.ID == id })
	s.Expiries = slices.DeleteFunc(s.Expiries, func(x ExpiryState) bool { return x.Sub == id })
}

// Landed shows rows that landed in the feeds the session watches. at is
// an instant every row that landed before it has been handed to the
// session by now (in this event or an earlier one): a subscription's
// cursor moves to a settle time before it, as a local session's moves
// with each landing the hub shows.
func (st *Steps) Landed(ctx context.Context, s *State, rows []store.FeedRow, at time.Time) ([][]byte, error) {
	out, err := st.expire(ctx, s)
	if err != nil {
		return nil, err
	}
	now := st.now()
	// A row written in advance, at an item's expiry still ahead, is
	// shown when its time comes, from the items the session has shown.
	rows = slices.DeleteFunc(slices.Clone(rows), func(r store.FeedRow) bool { return r.Instant().After(now) })
	if len(rows) == 0 {
		return out, nil
	}
	entries, err := st.feed.Current(ctx, rows)
	if err != nil {
		return nil, err
	}
	for i := range s.Subs {
		sub := &s.Subs[i]
		if c := at.Add(-store.ChangesSettle); c.After(sub.CursorAt) {
			cursor, err := st.feed.CursorAt(sub.Scope, c)
			if err != nil {
				return nil, err
			}
			sub.Cursor, sub.CursorAt = cursor, c
		}
		feed := sub.Scope.feed()
		for j, r := range rows {
			if !r.Instant().After(sub.Floor) || feedOf(r.Key.App, r.Key.Namespace, r.Key.Owner) != feed || !sub.Scope.shows(&entries[j]) {
				continue
			}
			out = append(out, changeMessage(sub.ID, entries[j].JSON, sub.Cursor))
			st.watchExpiry(s, sub.ID, &entries[j])
		}
	}
	return out, nil
}

// watchExpiry keeps a shown item's expiry, in order.
func (st *Steps) watchExpiry(s *State, sub string, e *Entry) {
	if e.ExpiresAt.IsZero() {
		return
	}
	x := ExpiryState{At: e.ExpiresAt, Sub: sub, Key: e.Key, Version: e.Version}
	i, _ := slices.BinarySearchFunc(s.Expiries, x, func(a, b ExpiryState) int { return a.At.Compare(b.At) })
	s.Expiries = slices.Insert(s.Expiries, i, x)
}

// expire shows the tombstones of the watched items whose expiry has
// come. The host has no timer of the session's: an expiry is shown with
// the session's next event after it, and the feed holds it for a
// subscriber that resumes from a cursor.
func (st *Steps) expire(ctx context.Context, s *State) ([][]byte, error) {
	now := st.now()
	n := 0
	for n < len(s.Expiries) && !s.Expiries[n].At.After(now) {
		n++
	}
	if n == 0 {
		return nil, nil
	}
	due := s.Expiries[:n]
	rows := make([]store.FeedRow, n)
	for i, x := range due {
		rows[i] = store.FeedRow{Key: x.Key, Version: x.Version, At: x.At}
	}
	entries, err := st.feed.Current(ctx, rows)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for i, x := range due {
		sub := s.sub(x.Sub)
		if sub == nil || !entries[i].Removed {
			continue
		}
		out = append(out, changeMessage(sub.ID, entries[i].JSON, sub.Cursor))
	}
	s.Expiries = slices.Clone(s.Expiries[n:])
	return out, nil
}

// sleepCtx waits d, or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
