package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// A namespace's changes feed (docs/changes.md) lists its items as they are
// now and then every change after, page by page: a client that starts
// from the beginning ("" cursor) with an empty replica, applies every page
// in order and reads on until a page is UpToDate holds the namespace's
// items, as far as the writes older than the feed's bound go. It keeps the
// last page's Cursor to read on from there later.

// Change is one entry of the feed: an item as a read of it answers now
// (without its ETag, which the feed does not carry), or, when Deleted, the
// tombstone of an item that is gone (deleted or expired), which holds its
// key, the version removed and when (UpdatedDate) only. A replica upserts
// an item by its key (ID and SortKey) and removes a tombstone's.
type Change struct {
	Item
	Deleted bool `json:"deleted,omitempty"`
}

// ChangesPage is one page of the feed: its entries, in the order to apply
// them, the cursor to read on from, and whether the feed was read up to
// its horizon (a page after it holds only what changed since).
type ChangesPage struct {
	Changes  []Change `json:"changes"`
	Cursor   string   `json:"cursor"`
	UpToDate bool     `json:"upToDate"`
}

// ChangesPage reads the page of namespace's feed after cursor ("" for the
// beginning: the items as they are, then the changes), up to limit entries
// (1..1000; 0: the server's 100). A cursor too old for the feed (30 days),
// or taken before the namespace changed into or out of private, is
// ErrCursorExpired: the replica must be emptied and read again from "".
func (c *Client) ChangesPage(ctx context.Context, app, namespace, cursor string, limit int) (ChangesPage, error) {
	// The cursor goes even when empty: ?changes with no value is the
	// feed's beginning, without it the route is an index query.
	q := url.Values{"changes": {cursor}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p ChangesPage
	r := request{method: http.MethodGet, path: "/data/" + url.PathEscape(app) + "/" + url.PathEscape(namespace), query: q, retry: always}
	_, err := c.call(ctx, r, &p, http.StatusOK)
	return p, err
}

// Changes iterates over the pages of namespace's feed from cursor, of up
// to limit entries each as ChangesPage reads them, until one is UpToDate,
// which it yields last. Pages, not entries, are what it
// yields: a replica applies a page's entries and then keeps its Cursor,
// from which a later call reads on. The iteration stops at the first
// error, which it yields (ErrCursorExpired: start again from "" with an
// empty replica).
func (c *Client) Changes(ctx context.Context, app, namespace, cursor string, limit int) iter.Seq2[ChangesPage, error] {
	return func(yield func(ChangesPage, error) bool) {
		for {
			p, err := c.ChangesPage(ctx, app, namespace, cursor, limit)
			if !yield(p, err) || err != nil || p.UpToDate {
				return
			}
			cursor = p.Cursor
		}
	}
}
