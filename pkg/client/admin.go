package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// The admin routes: IAM authorization (WithSigV4) on a deployed stack, open
// on the local server.

func adminApp(app string) string { return "/admin/apps/" + url.PathEscape(app) }

func adminUser(app, user string) string { return adminApp(app) + "/users/" + url.PathEscape(user) }

// acrossApps is the path of a user's routes that span every app.
func acrossApps(user string) string { return "/admin/users/" + url.PathEscape(user) }

func adminNamespace(app, namespace string) string {
	return adminApp(app) + "/namespaces/" + url.PathEscape(namespace)
}

// UserUsage is what one user stores in an app; HistoryBytes is the part
// of Bytes their kept versions hold.
type UserUsage struct {
	User         string `json:"user"`
	Bytes        int64  `json:"bytes"`
	Items        int64  `json:"items"`
	HistoryBytes int64  `json:"historyBytes"`
}

// AppUsage is what a user stores in one app; HistoryBytes is the part of
// Bytes their kept versions hold.
type AppUsage struct {
	ApplicationUUID string `json:"applicationUuid"`
	Bytes           int64  `json:"bytes"`
	Items           int64  `json:"items"`
	HistoryBytes    int64  `json:"historyBytes"`
}

// AppUsersPage reads one page of the users storing data in app, in user
// order, after cursor; limit 0 takes the server's default.
func (c *Client) AppUsersPage(ctx context.Context, app, cursor string, limit int) ([]UserUsage, string, error) {
	var p struct {
		Users  []UserUsage `json:"users"`
		Cursor string      `json:"cursor"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminApp(app) + "/users", query: limitQuery(cursor, limit), retry: always}, &p, http.StatusOK)
	return p.Users, p.Cursor, err
}

// AppUsers iterates over every user storing data in app.
func (c *Client) AppUsers(ctx context.Context, app string) iter.Seq2[UserUsage, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]UserUsage, string, error) {
		return c.AppUsersPage(ctx, app, cursor, 1000)
	})
}

// UserAppsPage reads one page of the apps user stores data in, in app
// order, after cursor.
func (c *Client) UserAppsPage(ctx context.Context, user, cursor string, limit int) ([]AppUsage, string, error) {
	var p struct {
		Apps   []AppUsage `json:"apps"`
		Cursor string     `json:"cursor"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: acrossApps(user) + "/apps", query: limitQuery(cursor, limit), retry: always}, &p, http.StatusOK)
	return p.Apps, p.Cursor, err
}

// UserApps iterates over every app user stores data in.
func (c *Client) UserApps(ctx context.Context, user string) iter.Seq2[AppUsage, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]AppUsage, string, error) {
		return c.UserAppsPage(ctx, user, cursor, 1000)
	})
}

// UserQuota reads a user's usage in app and the limits in effect.
func (c *Client) UserQuota(ctx context.Context, app, user string) (Quota, error) {
	var q Quota
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminUser(app, user) + "/quota", retry: always}, &q, http.StatusOK)
	return q, err
}

// Limits is one level of quota configuration: 0 leaves a dimension to the
// next level (user override, app default, global default), -1 lifts it.
type Limits struct {
	LimitBytes int64 `json:"limitBytes"`
	LimitItems int64 `json:"limitItems"`
}

// AppLimits reads app's default limits per user.
func (c *Client) AppLimits(ctx context.Context, app string) (Limits, error) {
	var l Limits
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminApp(app) + "/quota", retry: always}, &l, http.StatusOK)
	return l, err
}

// SetAppLimits sets app's default limits per user and returns them as
// the server stored them.
func (c *Client) SetAppLimits(ctx context.Context, app string, l Limits) (Limits, error) {
	var out Limits
	err := c.putJSON(ctx, adminApp(app)+"/quota", l, &out)
	return out, err
}

// SetUserLimits overrides app's limits for one user and returns the user's
// quota as it now stands.
func (c *Client) SetUserLimits(ctx context.Context, app, user string, l Limits) (Quota, error) {
	var q Quota
	err := c.putJSON(ctx, adminUser(app, user)+"/quota", l, &q)
	return q, err
}

// ClearUserLimits removes a user's override: app's defaults apply again.
func (c *Client) ClearUserLimits(ctx context.Context, app, user string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: adminUser(app, user) + "/quota", retry: always}, http.StatusNoContent)
	return err
}

// Recomputed is a recompute's answer: the usage now recorded, the drift it
// found (recorded minus actual; HistoryBytes is the part of Bytes in kept
// versions) and whether it was applied; when not, the owner wrote too
// recently and RetryAfter says when to ask again.
type Recomputed struct {
	Quota
	Drift struct {
		Bytes        int64 `json:"bytes"`
		Items        int64 `json:"items"`
		HistoryBytes int64 `json:"historyBytes"`
	} `json:"drift"`
	Applied    bool          `json:"applied"`
	RetryAfter time.Duration `json:"-"`
}

// Recompute rebuilds a user's usage in app from the data and reports the
// drift.
func (c *Client) Recompute(ctx context.Context, app, user string) (Recomputed, error) {
	var r Recomputed
	res, err := c.call(ctx, request{method: http.MethodPost, path: adminUser(app, user) + "/quota/recompute", retry: always}, &r, http.StatusOK)
	if err == nil {
		r.RetryAfter = retryAfter(res.header)
	}
	return r, err
}

// Policy is a namespace's policy: access "shared", "private" or
// "owner-write", an optional JSON Schema for its data, an optional
// history, and the indexes its items are queried by.
type Policy struct {
	ApplicationUUID string          `json:"applicationUuid,omitempty"`
	Namespace       string          `json:"namespace,omitempty"`
	Access          string          `json:"access"`
	Schema          json.RawMessage `json:"schema,omitempty"`
	// History is what the namespace keeps of the versions its writes
	// replace; nil when it keeps none. A change of it applies at once,
	// even beside a change into or out of private.
	History *HistoryPolicy `json:"history,omitempty"`
	// Indexes are the fields Query selects and orders the namespace's
	// items by, at most 5; nil declares none.
	Indexes []Index `json:"indexes,omitempty"`
	// Binary is the namespace's binary rule; nil when it has none (it
	// then takes any binary value, or none when it has a Schema).
	Binary *BinaryRule `json:"binary,omitempty"`
	// IndexBuild is the work a change of Indexes left, while it remains
	// (BuildIndexes does it); nil when there is none.
	IndexBuild  *IndexBuild `json:"indexBuild,omitempty"`
	Version     int64       `json:"version,omitempty"`
	UpdatedDate string      `json:"updatedDate,omitempty"`
	// Pending is a change into or out of private under way; the policy
	// above is in effect until it completes.
	Pending *PolicyChange `json:"pending,omitempty"`
	// HasPolicy says, in Namespaces, whether the namespace has a policy
	// of its own (nil elsewhere): one without shows the defaults.
	HasPolicy *bool `json:"policy,omitempty"`
	// HeldSince is when the namespace first held data, as the server's
	// catalogue marked it; "" when not marked.
	HeldSince string `json:"heldSince,omitempty"`
}

// HistoryPolicy keeps up to Versions (1 to 100) replaced versions of each
// item, each for at most Days days (1 to 3650; 0 for no age limit).
// Versions 0 keeps none.
type HistoryPolicy struct {
	Versions int `json:"versions"`
	Days     int `json:"days,omitempty"`
}

// BinaryRule limits the binary values a namespace takes to the
// ContentTypes named (media types such as "image/png", or whole types
// such as "image/*"), each of at most MaxBytes bytes (0: the store's own
// limit).
type BinaryRule struct {
	ContentTypes []string `json:"contentTypes"`
	MaxBytes     int64    `json:"maxBytes,omitempty"`
}

// PolicyChange is a change into or out of private under way: the access
// and schema it sets, when it was announced, from when it may be completed
// (by setting the same policy again) and when it lapses if it is not.
type PolicyChange struct {
	Access    string          `json:"access"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	Since     time.Time       `json:"since"`
	SettlesAt time.Time       `json:"settlesAt"`
	LapsesAt  time.Time       `json:"lapsesAt"`
}

// PoliciesPage reads one page of app's namespace policies after cursor.
func (c *Client) PoliciesPage(ctx context.Context, app, cursor string, limit int) ([]Policy, string, error) {
	var p struct {
		Namespaces []Policy `json:"namespaces"`
		Cursor     string   `json:"cursor"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminApp(app) + "/namespaces", query: limitQuery(cursor, limit), retry: always}, &p, http.StatusOK)
	return p.Namespaces, p.Cursor, err
}

// Policies iterates over every namespace of app that has a policy.
func (c *Client) Policies(ctx context.Context, app string) iter.Seq2[Policy, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]Policy, string, error) {
		return c.PoliciesPage(ctx, app, cursor, 1000)
	})
}

// Policy reads a namespace's policy (the defaults, at version 0, when none
// is set).
func (c *Client) Policy(ctx context.Context, app, namespace string) (Policy, error) {
	var p Policy
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminNamespace(app, namespace), retry: always}, &p, http.StatusOK)
	return p, err
}

// SetPolicy sets a namespace's access, schema, history, indexes and
// binary rule (only those fields of p are sent, and of each index its
// name, path and type; a nil History keeps no versions, nil Indexes drop
// every index the namespace declares, a nil Binary sets no binary
// rule) and returns the policy stored. An index declared
// again with its name, path and type keeps its entries; a new one is
// built from the items stored, and a dropped one's entries are removed,
// by BuildIndexes. A change into or out of private is announced first
// and the namespace takes no writes while functions still holding the old
// policy drain (about a minute on a default deployment, docs/policies.md): SetPolicy waits until the change settles and completes it,
// or returns ctx's error; the announced change then lapses on its own
// (the history and indexes, which apply at once, stay set). progress, if
// not nil, is told of each wait.
func (c *Client) SetPolicy(ctx context.Context, app, namespace string, p Policy, progress ...func(Policy)) (Policy, error) {
	body, err := jsonBody(Policy{Access: p.Access, Schema: p.Schema, History: p.History, Indexes: declared(p.Indexes), Binary: p.Binary})
	if err != nil {
		return Policy{}, err
	}
	r := request{method: http.MethodPut, path: adminNamespace(app, namespace), body: body, retry: always}
	return c.settlePolicy(ctx, r, progress)
}

// DeletePolicy restores a namespace's defaults (shared, no schema, no
// history, no indexes), waiting as SetPolicy does when the namespace was
// private.
func (c *Client) DeletePolicy(ctx context.Context, app, namespace string, progress ...func(Policy)) error {
	r := request{method: http.MethodDelete, path: adminNamespace(app, namespace), retry: always}
	_, err := c.settlePolicy(ctx, r, progress)
	return err
}

// settlePolicy sends a policy change until it is done: while the server
// answers 202 (announced, settling) it waits until the change settles and
// sends it again, which completes it.
func (c *Client) settlePolicy(ctx context.Context, r request, progress []func(Policy)) (Policy, error) {
	for {
		var out Policy
		res, err := c.call(ctx, r, &out, http.StatusOK, http.StatusNoContent, http.StatusAccepted)
		if err != nil || res.status != http.StatusAccepted {
			return out, err
		}
		if out.Pending == nil {
			return out, fmt.Errorf("%s %s answered 202 without the pending change", r.method, r.path)
		}
		for _, f := range progress {
			f(out)
		}
		// A little past the instant, for clocks that differ.
		wait := time.Until(out.Pending.SettlesAt) + 100*time.Millisecond
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(max(wait, 100*time.Millisecond)):
		}
	}
}

// putJSON PUTs v and decodes the answer into out.
func (c *Client) putJSON(ctx context.Context, path string, v, out any) error {
	b, err := jsonBody(v)
	if err != nil {
		return err
	}
	_, err = c.call(ctx, request{method: http.MethodPut, path: path, body: b, retry: always}, out, http.StatusOK)
	return err
}
