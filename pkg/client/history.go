package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// In a namespace whose policy keeps history, every update and delete of
// an item keeps the version it replaces, for as many versions and days as
// the policy says: the item's routes list them, read them back, restore
// one as the item's current version and drop them.

// Version is one entry of an item's history: the item as it stands
// (Current), a kept version, or a delete marker (Deleted, Size 0), which
// is Current when the item is deleted.
type Version struct {
	Version          int64     `json:"version"`
	UpdatedDate      time.Time `json:"updatedDate"`
	UpdatedBySubject string    `json:"updatedBySubject,omitempty"`
	// Size is the stored size the version holds.
	Size    int64 `json:"size"`
	Deleted bool  `json:"deleted,omitempty"`
	Current bool  `json:"current,omitempty"`
}

// historyQuery is the query of a history route: the "history" switch and,
// for a listing, its page.
func historyQuery(cursor string, limit int) url.Values {
	q := limitQuery(cursor, limit)
	q.Set("history", "")
	return q
}

// HistoryPage reads the page of k's history after cursor ("" for the
// first; limit 0: the server's default), newest first, and the cursor of
// the next page ("" after the last). It is ErrNotFound when the key has
// neither an item nor kept versions.
func (c *Client) HistoryPage(ctx context.Context, k Key, cursor string, limit int) ([]Version, string, error) {
	var p struct {
		Versions []Version `json:"versions"`
		Cursor   string    `json:"cursor"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: k.path(), refused: k.checkItem(), query: historyQuery(cursor, limit), retry: always}, &p, http.StatusOK)
	return p.Versions, p.Cursor, err
}

// History iterates over k's whole history, newest first.
func (c *Client) History(ctx context.Context, k Key) iter.Seq2[Version, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]Version, string, error) {
		return c.HistoryPage(ctx, k, cursor, 0)
	})
}

func versionQuery(name string, version int64) url.Values {
	return url.Values{name: {strconv.FormatInt(version, 10)}}
}

// GetVersion reads version of k as a read of the item showed it then, with
// that version's ETag: ErrNotFound if it is not kept (never was, pruned,
// expired, or a delete marker).
func (c *Client) GetVersion(ctx context.Context, k Key, version int64) (Item, error) {
	r := request{method: http.MethodGet, path: k.path(), refused: k.checkItem(), query: versionQuery("version", version), retry: always}
	return c.read(ctx, k, r)
}

// Restore writes version of k (its data and className) as the item's new
// current version, also after the item was deleted, and returns the item
// written. It is a write like Update: ErrNotFound if the version is not
// kept, ErrSchema if its data fails the namespace's schema today,
// ErrQuotaExceeded, ErrForbidden; with IfMatch, ErrPreconditionFailed
// unless the current item is at that revision. IfMatch is the one option
// it takes (the others are not sent). It is retried as Update is.
func (c *Client) Restore(ctx context.Context, k Key, version int64, opts ...CallOption) (Item, error) {
	o := callOptions{ifMatch: collect(opts).ifMatch}
	r := request{method: http.MethodPost, path: k.path(), refused: k.checkItem(), query: versionQuery("restore", version), header: o.header(), retry: o.writeRetry()}
	return c.item(ctx, r, http.StatusOK, http.StatusCreated)
}

// DropHistory removes k's kept versions and delete markers, releasing the
// bytes they hold; the item itself stays. It returns how many versions it
// removed: a repeat after an answer was lost (it is retried like a read)
// finds them gone and counts none.
func (c *Client) DropHistory(ctx context.Context, k Key) (int, error) {
	var out struct {
		Removed int `json:"removed"`
	}
	_, err := c.call(ctx, request{method: http.MethodDelete, path: k.path(), refused: k.checkItem(), query: historyQuery("", 0), retry: always}, &out, http.StatusOK)
	return out.Removed, err
}
