package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The catalogue of what holds data (admin): the apps and namespaces that
// have held data, registered (with a policy) or not, and a namespace's
// keys page by page, which an operator browses data by. The catalogue
// lists what ever held an item: a superset of what holds one now.

// AllAppsPage reads one page of the registered apps by name, then of the
// apps that hold data and are not registered by id, after cursor; limit 0
// takes the server's default.
func (c *Client) AllAppsPage(ctx context.Context, cursor string, limit int) ([]App, string, error) {
	var p struct {
		Apps   []App  `json:"apps"`
		Cursor string `json:"cursor"`
	}
	q := limitQuery(cursor, limit)
	q.Set("include", "held")
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/admin/apps", query: q, retry: always}, &p, http.StatusOK)
	return p.Apps, p.Cursor, err
}

// AllApps iterates over every registered app, by name, then every app
// that holds data and is not registered (App.Registered false), by id.
func (c *Client) AllApps(ctx context.Context) iter.Seq2[App, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]App, string, error) {
		return c.AllAppsPage(ctx, cursor, 1000)
	})
}

// NamespacesPage reads one page of app's namespaces that have a policy or
// hold data, after cursor; each says whether it has a policy
// (Policy.HasPolicy), and one without shows the defaults.
func (c *Client) NamespacesPage(ctx context.Context, app, cursor string, limit int) ([]Policy, string, error) {
	var p struct {
		Namespaces []Policy `json:"namespaces"`
		Cursor     string   `json:"cursor"`
	}
	q := limitQuery(cursor, limit)
	q.Set("include", "held")
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminApp(app) + "/namespaces", query: q, retry: always}, &p, http.StatusOK)
	return p.Namespaces, p.Cursor, err
}

// Namespaces iterates over every namespace of app that has a policy or
// holds data, in namespace order.
func (c *Client) Namespaces(ctx context.Context, app string) iter.Seq2[Policy, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]Policy, string, error) {
		return c.NamespacesPage(ctx, app, cursor, 1000)
	})
}

// NamespaceItem is a key of a namespace and what a listing shows of its
// item.
type NamespaceItem struct {
	ID string `json:"id"`
	// SortKey is "" for a key-value item.
	SortKey     string    `json:"sortKey,omitempty"`
	Owner       string    `json:"owner"`
	Size        int64     `json:"size"`
	ClassName   string    `json:"className,omitempty"`
	UpdatedDate time.Time `json:"updatedDate"`
	// ContentType is a binary value's, "" for a JSON value.
	ContentType string `json:"contentType,omitempty"`
	// ExpiresAt is zero for an item that does not expire.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// NamespaceItemsQuery selects a page of a namespace's keys.
type NamespaceItemsQuery struct {
	// User, when set, keeps that owner's items: in a private namespace,
	// that caller's key space.
	User string
	// Limit is how many index entries the page evaluates (1 to 200; 0
	// takes the server's default, 50): it bounds the page's cost, and the
	// page may hold fewer keys, or none, with a cursor still.
	Limit  int
	Cursor string
	// Newest sorts the page's keys newest first instead of by key; the
	// order holds within a page, not across pages.
	Newest bool
}

// NamespaceItemsPage reads one page of a namespace's keys (its key-value
// items and list items); the cursor is "" once the listing has ended.
func (c *Client) NamespaceItemsPage(ctx context.Context, app, namespace string, q NamespaceItemsQuery) ([]NamespaceItem, string, error) {
	var p struct {
		Items  []NamespaceItem `json:"items"`
		Cursor string          `json:"cursor"`
	}
	v := url.Values{}
	if q.User != "" {
		v.Set("user", q.User)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	if q.Newest {
		v.Set("order", "newest")
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminNamespace(app, namespace) + "/items", query: v, retry: always}, &p, http.StatusOK)
	return p.Items, p.Cursor, err
}

// NamespaceItems iterates over every key of a namespace (user's only,
// when user is not ""), owner by owner.
func (c *Client) NamespaceItems(ctx context.Context, app, namespace, user string) iter.Seq2[NamespaceItem, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]NamespaceItem, string, error) {
		return c.NamespaceItemsPage(ctx, app, namespace, NamespaceItemsQuery{User: user, Limit: 200, Cursor: cursor})
	})
}
