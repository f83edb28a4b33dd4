package realtime

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/udsproject/uds/pkg/store"
)

// Caps on subscriptions: a connection takes up to MaxPerConnection, an app
// up to MaxPerApp on one server; a subscribe past either is refused 429.
const (
	MaxPerConnection = 100
	MaxPerApp        = 10_000
)

// recentWindow is how long the hub keeps what landed, for subscriptions
// that join meanwhile: a row that landed before a subscription joined but
// after the instant its catch-up read up to (at most store.ChangesSettle
// before the read) is given to it from here.
const recentWindow = store.ChangesSettle + time.Second

// Hub is the local server's fan-out: the changes function's handler hands
// it the feed's rows as they land (Landed, store.WithLanded's function),
// and it shows them once for every subscription of their key space, in
// the order they landed. Deployed, the same rows reach the connections
// through API Gateway (pkg/wsgateway).
type Hub struct {
	feed Feed
	now  func() time.Time
	log  *slog.Logger

	mu sync.Mutex
	// queue is what landed and has not been shown yet, recent what landed
	// within recentWindow, both in the order it landed.
	queue, recent []landing
	wake          chan struct{}
	// feeds holds the subscriptions by feed (Scope.feed), apps counts
	// them by app, sessions are the open connections.
	feeds    map[string]map[*subscription]struct{}
	apps     map[string]int
	sessions map[*session]struct{}
	closed   bool
}

// landing is rows that landed together, and when.
type landing struct {
	rows []store.FeedRow
	at   time.Time
}

// HubOption configures a Hub.
type HubOption func(*Hub)

// WithClock replaces time.Now as the hub's clock; it must be the store's.
func WithClock(now func() time.Time) HubOption { return func(h *Hub) { h.now = now } }

// NewHub is a hub that reads and shows the feed through feed. Run shows
// what lands; Close ends every connection.
func NewHub(feed Feed, log *slog.Logger, opts ...HubOption) *Hub {
	h := &Hub{feed: feed, now: time.Now, log: log, wake: make(chan struct{}, 1),
		feeds: map[string]map[*subscription]struct{}{}, apps: map[string]int{}, sessions: map[*session]struct{}{}}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Landed takes rows the changes function has just written. It does not
// wait: they are shown by Run. A row written in advance, at an item's
// expiry still ahead, is left out: each session shows an expiry when it
// comes, from the items it has shown (session.expire).
func (h *Hub) Landed(rows []store.FeedRow) {
	now := h.now()
	kept := make([]store.FeedRow, 0, len(rows))
	for _, r := range rows {
		if !r.Instant().After(now) {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return
	}
	h.mu.Lock()
	l := landing{rows: kept, at: now}
	h.queue = append(h.queue, l)
	h.recent = append(h.recent, l)
	for len(h.recent) > 0 && now.Sub(h.recent[0].at) > recentWindow {
		h.recent = h.recent[1:]
	}
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Run shows what lands until ctx ends. What landed since its last turn is
// shown together, its rows in the feed's order (by sequence): rows land
// in one order per stream shard, and two shards' rows, written at once,
// may land in either order.
func (h *Hub) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		}
		h.mu.Lock()
		queue := h.queue
		h.queue = nil
		h.mu.Unlock()
		if len(queue) == 0 {
			continue
		}
		// The landing shown together counts as landed when the last of
		// them did: each row of it is shown before any cursor that
		// counts on it (session.showLive).
		l := landing{at: queue[len(queue)-1].at}
		for _, q := range queue {
			l.rows = append(l.rows, q.rows...)
		}
		slices.SortStableFunc(l.rows, func(a, b store.FeedRow) int { return strings.Compare(a.Seq, b.Seq) })
		h.show(ctx, l)
	}
}

// show reads the rows of l that a subscription takes, and hands the
// entries to those subscriptions.
func (h *Hub) show(ctx context.Context, l landing) {
	h.mu.Lock()
	var rows []store.FeedRow
	subs := map[*subscription]struct{}{}
	for _, r := range l.rows {
		for s := range h.feeds[feedOf(r.Key.App, r.Key.Namespace, r.Key.Owner)] {
			subs[s] = struct{}{}
		}
		if _, ok := h.feeds[feedOf(r.Key.App, r.Key.Namespace, r.Key.Owner)]; ok {
			rows = append(rows, r)
		}
	}
	h.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	shownAt := h.now()
	entries, err := h.feed.Current(ctx, rows)
	if err != nil {
		h.log.Error("showing the changes that landed failed; their subscribers reconnect", slog.String("cause", err.Error()))
	}
	for s := range subs {
		s.session.enqueue(event{sub: s, live: &liveEvent{rows: rows, entries: entries, at: l.at, shownAt: shownAt, err: err}})
	}
}

// join files a subscription with the hub and returns the rows of its feed
// that landed within recentWindow. It refuses one past MaxPerApp.
func (h *Hub) join(s *subscription) ([]store.FeedRow, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.apps[s.scope.App] >= MaxPerApp {
		return nil, false
	}
	feed := s.scope.feed()
	if h.feeds[feed] == nil {
		h.feeds[feed] = map[*subscription]struct{}{}
	}
	h.feeds[feed][s] = struct{}{}
	h.apps[s.scope.App]++
	var recent []store.FeedRow
	for _, l := range h.recent {
		for _, r := range l.rows {
			if feedOf(r.Key.App, r.Key.Namespace, r.Key.Owner) == feed {
				recent = append(recent, r)
			}
		}
	}
	return recent, true
}

// leave removes a subscription.
func (h *Hub) leave(s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	feed := s.scope.feed()
	if _, ok := h.feeds[feed][s]; !ok {
		return
	}
	delete(h.feeds[feed], s)
	if len(h.feeds[feed]) == 0 {
		delete(h.feeds, feed)
	}
	if h.apps[s.scope.App]--; h.apps[s.scope.App] == 0 {
		delete(h.apps, s.scope.App)
	}
}

// open files a connection's session, so that Close ends it; false when
// the hub is closed.
func (h *Hub) open(s *session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.sessions[s] = struct{}{}
	return true
}

// done removes a session and its subscriptions.
func (h *Hub) done(s *session) {
	h.mu.Lock()
	delete(h.sessions, s)
	h.mu.Unlock()
}

// Close ends every connection, with the status that tells a client the
// server is going away (it reconnects and resumes), and refuses new ones.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	sessions := make([]*session, 0, len(h.sessions))
	for s := range h.sessions {
		sessions = append(sessions, s)
	}
	h.mu.Unlock()
	for _, s := range sessions {
		s.end(closeGoingAway, "the server is stopping")
	}
}
