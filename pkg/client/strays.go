package client

import (
	"context"
	"iter"
	"net/http"
)

// A namespace's strays are its items in the key space its policy does not
// use, which no data route reaches (docs/policies.md): the
// operator lists them (as export records, to keep a copy) and removes them.

func straysPath(app, namespace string) string {
	return adminNamespace(app, namespace) + "/strays"
}

// StraysPage reads one page of a namespace's strays after cursor.
func (c *Client) StraysPage(ctx context.Context, app, namespace, cursor string, limit int) ([]Record, string, error) {
	var p struct {
		Records []Record `json:"records"`
		Cursor  string   `json:"cursor"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: straysPath(app, namespace), query: limitQuery(cursor, limit), retry: always}, &p, http.StatusOK)
	return p.Records, p.Cursor, err
}

// Strays iterates over every stray of a namespace.
func (c *Client) Strays(ctx context.Context, app, namespace string) iter.Seq2[Record, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]Record, string, error) {
		return c.StraysPage(ctx, app, namespace, cursor, 1000)
	})
}

// RemoveStrays removes every stray of a namespace, releasing their usage,
// in as many requests as the server needs, and returns how many it
// removed.
func (c *Client) RemoveStrays(ctx context.Context, app, namespace string) (int, error) {
	return c.deleteInRounds(ctx, straysPath(app, namespace))
}
