package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"time"
)

// ListQuery selects list items: sort keys from Start (inclusive) to End
// (exclusive), either optional, in ascending order unless Descending; Limit
// items a page (1..1000; 0: the server's 100).
type ListQuery struct {
	Start, End string
	Descending bool
	Limit      int
}

// ListPage is one page of list items; Cursor continues the query ("" after
// the last page).
type ListPage struct {
	Items  []Item `json:"list"`
	Cursor string `json:"cursor"`
}

// ListPage reads the page of list (a Key without SortKey) after cursor
// ("" for the first page).
func (c *Client) ListPage(ctx context.Context, list Key, q ListQuery, cursor string) (ListPage, error) {
	query := limitQuery(cursor, q.Limit)
	if q.Start != "" {
		query.Set("startKey", q.Start)
	}
	if q.End != "" {
		query.Set("endKey", q.End)
	}
	if q.Descending {
		query.Set("sortOrder", "DESC")
	}
	var p ListPage
	_, err := c.call(ctx, request{method: http.MethodGet, path: list.path() + "/list", refused: list.checkList(), query: query, retry: always}, &p, http.StatusOK)
	return p, err
}

// List iterates over every item of the query, page after page.
func (c *Client) List(ctx context.Context, list Key, q ListQuery) iter.Seq2[Item, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]Item, string, error) {
		p, err := c.ListPage(ctx, list, q, cursor)
		return p.Items, p.Cursor, err
	})
}

// DeleteList removes every item of list. A large list takes the server
// more than one request's time: it answers 503 with how many items it
// removed, and DeleteList asks again (after Retry-After, or a pause drawn
// below the first backoff) until the list is empty or ctx ends; other
// transient failures are retried as usual, with growing pauses. It
// returns the items removed in the rounds cut short, as the server counted
// them (the last round does not say).
func (c *Client) DeleteList(ctx context.Context, list Key) (int, error) {
	if err := list.checkList(); err != nil {
		return 0, err
	}
	return c.deleteInRounds(ctx, list.path()+"/list")
}

// deleteInRounds sends a DELETE that the server may cut short (503 with
// how many it deleted) until it is done, and returns how many were deleted
// in the rounds cut short and, where the last answer says (200
// {"removed": n}), in the last.
func (c *Client) deleteInRounds(ctx context.Context, path string) (int, error) {
	deleted, failures := 0, 0
	for {
		var last struct {
			Removed int `json:"removed"`
		}
		_, err := c.call(ctx, request{method: http.MethodDelete, path: path, retry: unsent}, &last, http.StatusNoContent, http.StatusOK)
		var apiErr *APIError
		// A round cut short is no failure: its pause does not grow.
		attempt := 0
		switch {
		case err == nil:
			return deleted + last.Removed, nil
		case errors.As(err, &apiErr) && apiErr.Deleted != nil:
			// A round the server's time budget cut short: on a busy
			// table it may have deleted nothing yet, and the next
			// round goes on; only ctx bounds the rounds.
			deleted += *apiErr.Deleted
		case !transient(err) || failures >= c.maxRetries:
			return deleted, err
		default:
			attempt = failures
			failures++
		}
		select {
		case <-ctx.Done():
			return deleted, errors.Join(err, ctx.Err())
		case <-time.After(c.wait(err, attempt)):
		}
	}
}
