package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/udsproject/uds/pkg/uds"
)

// UsageStore reads usage and sets limits, for the admin routes.
type UsageStore interface {
	Quota(ctx context.Context, app, user string) (uds.Quota, error)
	AppLimits(ctx context.Context, app string) (uds.Limits, error)
	SetAppLimits(ctx context.Context, app string, l uds.Limits) error
	SetUserLimits(ctx context.Context, app, user string, l uds.Limits) error
	AppUsers(ctx context.Context, app, after string, limit int) ([]uds.UserUsage, bool, error)
	UserApps(ctx context.Context, user, after string, limit int) ([]uds.AppUsage, bool, error)
	Recompute(ctx context.Context, app, user string) (uds.Recomputed, error)
}

// quotaJSON is one owner's usage and limits in an app; a null limit is
// unlimited.
type quotaJSON struct {
	ApplicationUUID string `json:"applicationUuid"`
	User            string `json:"user"`
	UsedBytes       int64  `json:"usedBytes"`
	UsedItems       int64  `json:"usedItems"`
	// HistoryBytes is the part of UsedBytes that kept versions hold.
	HistoryBytes int64       `json:"historyBytes"`
	LimitBytes   *int64      `json:"limitBytes"`
	LimitItems   *int64      `json:"limitItems"`
	Drift        *usageDelta `json:"drift,omitempty"`
	// Applied, on recompute: whether the stored usage now matches the
	// data (a lowering waits until the owner's usage is quiet).
	Applied *bool `json:"applied,omitempty"`
}

type usageDelta struct {
	Bytes        int64 `json:"bytes"`
	Items        int64 `json:"items"`
	HistoryBytes int64 `json:"historyBytes"`
}

func quotaBody(q uds.Quota) quotaJSON {
	return quotaJSON{
		ApplicationUUID: q.App, User: q.User, UsedBytes: q.Used.Bytes, UsedItems: q.Used.Items, HistoryBytes: q.Used.History,
		LimitBytes: limitPtr(q.Limits.Bytes), LimitItems: limitPtr(q.Limits.Items),
	}
}

// limitsJSON is the body of PUT .../quota and the app limits view: 0 (or
// absent) is "not set, the next level decides", -1 is unlimited.
type limitsJSON struct {
	ApplicationUUID string `json:"applicationUuid,omitempty"`
	LimitBytes      int64  `json:"limitBytes"`
	LimitItems      int64  `json:"limitItems"`
}

// ownQuota answers the caller's own usage and limits in an app.
func (a *API) ownQuota(w http.ResponseWriter, r *http.Request, p params) {
	if r.URL.RawQuery != "" {
		// A namespace may be named quota; a read of it has a query.
		p.namespace = "quota"
		a.readNamespace(w, r, p)
		return
	}
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	user, err := a.subject(r)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	a.answerQuota(w, r, app, user)
}

func (a *API) userQuota(w http.ResponseWriter, r *http.Request, p params) {
	app, user, err := appAndUser(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	a.answerQuota(w, r, app, user)
}

func (a *API) answerQuota(w http.ResponseWriter, r *http.Request, app, user string) {
	q, err := a.stores.Usage.Quota(r.Context(), app, user)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, quotaBody(q))
}

func (a *API) getAppLimits(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	l, err := a.stores.Usage.AppLimits(r.Context(), app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, limitsJSON{ApplicationUUID: app, LimitBytes: l.Bytes, LimitItems: l.Items})
}

func (a *API) putAppLimits(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	l, err := readLimits(r)
	if err == nil {
		err = a.stores.Usage.SetAppLimits(r.Context(), app, l)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, limitsJSON{ApplicationUUID: app, LimitBytes: l.Bytes, LimitItems: l.Items})
}

func (a *API) putUserLimits(w http.ResponseWriter, r *http.Request, p params) {
	app, user, err := appAndUser(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	l, err := readLimits(r)
	if err == nil {
		err = a.stores.Usage.SetUserLimits(r.Context(), app, user, l)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	a.answerQuota(w, r, app, user)
}

func (a *API) deleteUserLimits(w http.ResponseWriter, r *http.Request, p params) {
	app, user, err := appAndUser(p)
	if err == nil {
		err = a.stores.Usage.SetUserLimits(r.Context(), app, user, uds.Limits{})
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) recompute(w http.ResponseWriter, r *http.Request, p params) {
	app, user, err := appAndUser(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	rc, err := a.stores.Usage.Recompute(r.Context(), app, user)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	body := quotaBody(rc.Quota)
	body.Drift = &usageDelta{Bytes: rc.Drift.Bytes, Items: rc.Drift.Items, HistoryBytes: rc.Drift.History}
	body.Applied = &rc.Applied
	if !rc.Applied {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(rc.RetryAfter.Seconds()))))
	}
	writeJSON(w, http.StatusOK, body)
}

// userRow and appRow are the rows of the usage listings; historyBytes is
// the part of bytes that kept versions hold.
type userRow struct {
	User         string `json:"user"`
	Bytes        int64  `json:"bytes"`
	Items        int64  `json:"items"`
	HistoryBytes int64  `json:"historyBytes"`
}

type appRow struct {
	ApplicationUUID string `json:"applicationUuid"`
	Bytes           int64  `json:"bytes"`
	Items           int64  `json:"items"`
	HistoryBytes    int64  `json:"historyBytes"`
}

// appUsers lists the users storing data in an app (seed 000's
// data.admin.users).
func (a *API) appUsers(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	page(a, w, r, "users", "users\x00"+app,
		func(after string, limit int) ([]uds.UserUsage, bool, error) {
			return a.stores.Usage.AppUsers(r.Context(), app, after, limit)
		},
		func(u uds.UserUsage) (any, string) { return userRow{u.User, u.Bytes, u.Items, u.History}, u.User })
}

// userApps lists the apps a user stores data in (seed 000's
// data.admin.apps).
func (a *API) userApps(w http.ResponseWriter, r *http.Request, p params) {
	user, err := uds.ParseUser(p.user)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	page(a, w, r, "apps", "apps\x00"+user,
		func(after string, limit int) ([]uds.AppUsage, bool, error) {
			return a.stores.Usage.UserApps(r.Context(), user, after, limit)
		},
		func(u uds.AppUsage) (any, string) { return appRow{u.App, u.Bytes, u.Items, u.History}, u.App })
}

// page answers one page of an admin listing: {field: [rows], "cursor"},
// the cursor sealed to binding and carrying the last row's key.
func page[T any](a *API, w http.ResponseWriter, r *http.Request, field, binding string,
	fetch func(after string, limit int) ([]T, bool, error), row func(T) (any, string)) {
	limit, after, err := a.adminPage(r, binding)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	items, more, err := fetch(after, limit)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	rows := make([]any, len(items))
	last := ""
	for i, it := range items {
		rows[i], last = row(it)
	}
	out := map[string]any{field: rows}
	if more {
		out["cursor"] = a.cursors.Seal(binding, last)
	}
	writeJSON(w, http.StatusOK, out)
}

// adminPage parses limit and cursor as list reads do.
func (a *API) adminPage(r *http.Request, binding string) (limit int, after string, err error) {
	params, err := query(r)
	if err != nil {
		return 0, "", err
	}
	if limit, err = pageLimit(params); err != nil {
		return 0, "", err
	}
	if c := params.Get("cursor"); c != "" {
		if after, err = a.cursors.Open(binding, c); err != nil {
			return 0, "", uds.Invalid("cursor", "was not issued for this listing")
		}
	}
	return limit, after, nil
}

func appAndUser(p params) (string, string, error) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		return "", "", err
	}
	user, err := uds.ParseUser(p.user)
	return app, user, err
}

// maxLimitsBody bounds a limits body; it holds two numbers.
const maxLimitsBody = 4 << 10

// readLimits reads and parses a limits body (parseLimits).
func readLimits(r *http.Request) (uds.Limits, error) {
	body, err := readBody(r, maxLimitsBody, fmt.Sprintf("a limits body takes at most %d bytes: {\"limitBytes\": n, \"limitItems\": n}", maxLimitsBody))
	if err != nil {
		return uds.Limits{}, err
	}
	return parseLimits(body)
}

// parseLimits parses {"limitBytes": n, "limitItems": n}, each -1 or more.
func parseLimits(body []byte) (uds.Limits, error) {
	// The limits are read as they were sent: as json.Number, encoding/json
	// would also take a string holding a number ("5").
	var b struct {
		LimitBytes json.RawMessage `json:"limitBytes"`
		LimitItems json.RawMessage `json:"limitItems"`
	}
	if err := decodeBody(body, &b, `{"limitBytes": n, "limitItems": n}`); err != nil {
		return uds.Limits{}, err
	}
	var l uds.Limits
	for _, f := range []struct {
		name string
		in   json.RawMessage
		out  *int64
	}{{"limitBytes", b.LimitBytes, &l.Bytes}, {"limitItems", b.LimitItems, &l.Items}} {
		if f.in == nil || string(f.in) == "null" {
			continue
		}
		n, err := strconv.ParseInt(string(f.in), 10, 64)
		if err != nil || n < uds.Unlimited {
			return l, uds.Invalid(f.name, "must be a whole number: 0 (not set), -1 (unlimited) or a positive limit, got %s", uds.Truncate(string(f.in), 64))
		}
		*f.out = n
	}
	return l, nil
}
