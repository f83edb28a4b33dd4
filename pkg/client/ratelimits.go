package client

import (
	"context"
	"net/http"
)

// Rate is one rate limit: RequestsPerSecond requests a second, with bursts
// of up to Burst at once. A RequestsPerSecond of -1, without a Burst, sets
// no limit at its level, in place of the level below (the app's, the
// deployment's).
type Rate struct {
	RequestsPerSecond int64 `json:"requestsPerSecond"`
	Burst             int64 `json:"burst,omitempty"`
}

// RateLimits are an app's rate limits: PerCaller for each of its callers
// (a user's override, UserRateLimits, takes its place for that user) and
// PerApp for all its callers together. Nil sets none at the app's level:
// the deployment's applies, if it has one.
type RateLimits struct {
	ApplicationUUID string `json:"applicationUuid"`
	PerCaller       *Rate  `json:"perCaller"`
	PerApp          *Rate  `json:"perApp"`
}

// UserRateLimits is a user's override of an app's per-caller rate limit;
// a nil PerCaller sets none (the app's applies).
type UserRateLimits struct {
	ApplicationUUID string `json:"applicationUuid"`
	User            string `json:"user"`
	PerCaller       *Rate  `json:"perCaller"`
}

// AppRateLimits reads app's rate limits.
func (c *Client) AppRateLimits(ctx context.Context, app string) (RateLimits, error) {
	var l RateLimits
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminApp(app) + "/rate-limits", retry: always}, &l, http.StatusOK)
	return l, err
}

// SetAppRateLimits replaces app's rate limits, both of them: a nil one in
// l is removed, not left as it was. It returns them as the server stored
// them.
func (c *Client) SetAppRateLimits(ctx context.Context, app string, l RateLimits) (RateLimits, error) {
	var out RateLimits
	err := c.putJSON(ctx, adminApp(app)+"/rate-limits", struct {
		PerCaller *Rate `json:"perCaller"`
		PerApp    *Rate `json:"perApp"`
	}{l.PerCaller, l.PerApp}, &out)
	return out, err
}

// ClearAppRateLimits removes app's rate limits: the deployment's apply.
func (c *Client) ClearAppRateLimits(ctx context.Context, app string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: adminApp(app) + "/rate-limits", retry: always}, http.StatusNoContent)
	return err
}

// UserRateLimits reads user's override of app's per-caller rate limit.
func (c *Client) UserRateLimits(ctx context.Context, app, user string) (UserRateLimits, error) {
	var l UserRateLimits
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminUser(app, user) + "/rate-limits", retry: always}, &l, http.StatusOK)
	return l, err
}

// SetUserRateLimits overrides app's per-caller rate limit for user and
// returns the override as the server stored it.
func (c *Client) SetUserRateLimits(ctx context.Context, app, user string, perCaller Rate) (UserRateLimits, error) {
	var out UserRateLimits
	err := c.putJSON(ctx, adminUser(app, user)+"/rate-limits", struct {
		PerCaller Rate `json:"perCaller"`
	}{perCaller}, &out)
	return out, err
}

// ClearUserRateLimits removes user's override: app's per-caller rate
// limit applies again.
func (c *Client) ClearUserRateLimits(ctx context.Context, app, user string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: adminUser(app, user) + "/rate-limits", retry: always}, http.StatusNoContent)
	return err
}
