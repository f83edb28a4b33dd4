package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// The app registry (admin): names for apps, unique whatever their case,
// by which operators find them. Data paths keep the app's id.

// App is an app's entry in the registry, or (AllApps) an app that holds
// data and is not registered: Registered false, no name, description or
// dates.
type App struct {
	ApplicationUUID string `json:"applicationUuid"`
	Name            string `json:"name,omitempty"`
	// Description is "" when the app has none.
	Description string    `json:"description,omitempty"`
	CreatedDate time.Time `json:"createdDate,omitzero"`
	UpdatedDate time.Time `json:"updatedDate,omitzero"`
	// Limits are the app's default limits per user (AppLimits), nil when
	// none is set.
	Limits *Limits `json:"limits,omitempty"`
	// Registered is false for an app that holds data and has no name.
	Registered bool `json:"registered"`
	// HeldSince is when the app first held data, as the server's
	// catalogue marked it; zero when not marked, and in listings, which
	// do not carry it.
	HeldSince time.Time `json:"heldSince,omitzero"`
}

// RegisterApp registers app under name with a description ("" for none),
// or replaces its registration: a description not given is removed. A
// name another app holds, compared case-insensitively, or one the
// deployment reserves for its created-content app ("hmh"), is
// ErrConflict, whose APIError names the holder.
func (c *Client) RegisterApp(ctx context.Context, app, name, description string) (App, error) {
	var out App
	err := c.putJSON(ctx, adminApp(app), struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
	}{name, description}, &out)
	return out, err
}

// App reads app's registration: ErrNotFound when it is not registered.
func (c *Client) App(ctx context.Context, app string) (App, error) {
	var out App
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminApp(app), retry: always}, &out, http.StatusOK)
	return out, err
}

// UnregisterApp removes app's registration and frees its name; its data,
// limits and policies stay. An app that is not registered is no error.
func (c *Client) UnregisterApp(ctx context.Context, app string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: adminApp(app), retry: always}, http.StatusNoContent)
	return err
}

// AppsPage reads one page of the registry, in the order of the apps'
// names compared case-insensitively, after cursor; limit 0 takes the
// server's default.
func (c *Client) AppsPage(ctx context.Context, cursor string, limit int) ([]App, string, error) {
	var p struct {
		Apps   []App  `json:"apps"`
		Cursor string `json:"cursor"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/admin/apps", query: limitQuery(cursor, limit), retry: always}, &p, http.StatusOK)
	return p.Apps, p.Cursor, err
}

// Apps iterates over every registered app, by name. The server lists them
// from an index DynamoDB keeps eventually consistent: an app registered a
// moment ago may not be listed yet (App and AppByName read at once).
func (c *Client) Apps(ctx context.Context) iter.Seq2[App, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]App, string, error) {
		return c.AppsPage(ctx, cursor, 1000)
	})
}

// AppByName finds the app registered under name, compared
// case-insensitively: ErrNotFound when no app has it.
func (c *Client) AppByName(ctx context.Context, name string) (App, error) {
	var p struct {
		Apps []App `json:"apps"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/admin/apps", query: url.Values{"name": {name}}, retry: always}, &p, http.StatusOK)
	switch {
	case err != nil:
		return App{}, err
	case len(p.Apps) == 0:
		return App{}, fmt.Errorf("no app is registered under the name %q: %w", name, ErrNotFound)
	}
	return p.Apps[0], nil
}
