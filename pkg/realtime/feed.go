package realtime

import (
	"context"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Feed is the changes feed as a subscription reads it. The HTTP API has
// it (httpapi.API.RealtimeFeed), so that a subscription is refused, read
// and shown exactly as GET ?changes= is, and its cursors are that route's.
type Feed interface {
	// Open checks that caller may read the feed a subscribe names (the
	// namespace's policy, the keys, the rate limits) and returns its
	// scope.
	Open(ctx context.Context, caller string, req Request) (Scope, error)
	// Page reads one page of the feed after cursor ("" is the beginning).
	Page(ctx context.Context, sc Scope, cursor string) (Page, error)
	// Current shows rows as a read of the feed shows them now, one entry
	// per row.
	Current(ctx context.Context, rows []store.FeedRow) ([]Entry, error)
	// CursorAt is a cursor of sc's feed at instant t.
	CursorAt(sc Scope, t time.Time) (string, error)
	// Refusal is how err answers a request of sc's caller.
	Refusal(sc Scope, err error) Refusal
}

// Scope is what a subscription reads: one namespace's feed in one key
// space (the caller's, in a private namespace), narrowed to one item or
// list (Key) or list item (Key and SortKey) when they are set.
type Scope struct {
	App, Namespace, KeySpace string
	Caller                   string
	Key, SortKey             string
}

// feedOf names the feed of a key space, as the hub files subscriptions.
func feedOf(app, namespace, keySpace string) string {
	return app + uds.KeyDelimiter + namespace + uds.KeyDelimiter + keySpace
}

func (sc Scope) feed() string { return feedOf(sc.App, sc.Namespace, sc.KeySpace) }

// shows says whether an entry is one the subscription takes.
func (sc Scope) shows(e *Entry) bool {
	return sc.Key == "" || e.Key.ID == sc.Key && (sc.SortKey == "" || e.Key.SortKey == sc.SortKey)
}

// Entry is one entry of the feed: an item as a GET shows it, or a
// tombstone.
type Entry struct {
	// Key is the item's, in its key space.
	Key uds.Key
	// Version is the version shown, or removed when Removed: the entry
	// is then a tombstone.
	Version int64
	Removed bool
	// ExpiresAt is when a shown item expires; zero when it does not, and
	// for a tombstone.
	ExpiresAt time.Time
	// JSON is the entry as the feed's pages show it.
	JSON []byte
}

// Page is one page of the feed.
type Page struct {
	Entries []Entry
	// Cursor is where the page ends, UpToDate whether more pages follow
	// now.
	Cursor   string
	UpToDate bool
	// At is the instant an up-to-date page reached: every row at or
	// before it has been read.
	At time.Time
}
