package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/realtime"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// RealtimeFeed is the changes feed as realtime subscriptions read it
// (pkg/realtime): a subscribe is refused as GET ?changes= on its namespace
// would be (the namespace's policy, the keys, the rate limits, each with
// the same answer), its pages are that route's, and its cursors are that
// route's too, sealed to the namespace and the caller, so that a client
// may resume either from the other's cursor.
func (a *API) RealtimeFeed() realtime.Feed { return realtimeFeed{a} }

type realtimeFeed struct{ a *API }

// RealtimeCaller names the caller of a realtime upgrade as the API names a
// request's caller, and, where it takes the caller from SubjectHeader
// (a local server on loopback), also from a subject query parameter:
// browsers cannot set headers on a WebSocket. Where the header is refused,
// so is the parameter, with the same answer.
func (a *API) RealtimeCaller(r *http.Request) (string, error) {
	if err := a.checkSubjectHeader(r); err != nil {
		return "", err
	}
	if q := r.URL.Query(); q.Has("subject") {
		if a.refuseHeader != "" {
			return "", &untrustedHeaderError{a.refuseHeader}
		}
		r = r.Clone(r.Context())
		// Spaces and tabs around it go, as around a header's value, so
		// that the parameter names the caller the header would.
		r.Header.Set(SubjectHeader, strings.Trim(q.Get("subject"), " \t"))
	}
	return a.subject(r)
}

func (f realtimeFeed) Open(ctx context.Context, caller string, req realtime.Request) (realtime.Scope, error) {
	sc := realtime.Scope{Caller: caller}
	app, err := uds.ParseApp(req.ApplicationUUID)
	if err != nil {
		return sc, err
	}
	sc.App = app
	if sc.Namespace, err = uds.ParseNamespace(req.Namespace); err != nil {
		return sc, err
	}
	if req.Key != "" {
		k, err := uds.NewKey(app, sc.Namespace, req.Key)
		if err == nil && req.SortKey != "" {
			_, err = k.WithSortKey(req.SortKey)
		}
		if err != nil {
			return sc, err
		}
		sc.Key, sc.SortKey = req.Key, req.SortKey
	}
	in, err := f.a.scopeOf(ctx, caller, uds.Key{App: app, Namespace: sc.Namespace})
	if err != nil {
		return sc, err
	}
	sc.KeySpace = in.key.Owner
	if f.a.limiter != nil {
		// A subscribe costs what a request costs.
		if _, _, err := f.a.charge(ctx, app, caller, 1); err != nil {
			return sc, err
		}
	}
	return sc, nil
}

func (f realtimeFeed) Page(ctx context.Context, sc realtime.Scope, cursor string) (realtime.Page, error) {
	binding := changesBinding(sc.App, sc.Namespace, sc.Caller)
	q := store.ChangesQuery{App: sc.App, Namespace: sc.Namespace, KeySpace: sc.KeySpace,
		Limit: defaultChangesLimit, MaxBytes: maxPageBytes, ItemBytes: itemPayloadBytes}
	if cursor != "" {
		var err error
		if q.After, err = f.a.openChangesCursor(binding, cursor); err != nil {
			return realtime.Page{}, err
		}
	}
	page, err := f.a.stores.Changes.Changes(ctx, q)
	if err != nil {
		return realtime.Page{}, err
	}
	position, err := json.Marshal(page.Next)
	if err != nil {
		return realtime.Page{}, err
	}
	out := realtime.Page{Entries: entries(page.Changes), Cursor: f.a.cursors.Seal(binding, string(position)), UpToDate: page.UpToDate}
	if page.UpToDate {
		out.At, _ = page.Next.Instant()
	}
	return out, nil
}

func (f realtimeFeed) Current(ctx context.Context, rows []store.FeedRow) ([]realtime.Entry, error) {
	changes, err := f.a.stores.Changes.CurrentChanges(ctx, rows)
	if err != nil {
		return nil, err
	}
	return entries(changes), nil
}

func (f realtimeFeed) CursorAt(sc realtime.Scope, t time.Time) (string, error) {
	position, err := json.Marshal(store.ChangesAt(sc.KeySpace, t))
	if err != nil {
		return "", err
	}
	return f.a.cursors.Seal(changesBinding(sc.App, sc.Namespace, sc.Caller), string(position)), nil
}

func (f realtimeFeed) Refusal(sc realtime.Scope, err error) realtime.Refusal {
	var key *uds.Key
	if sc.App != "" {
		key = &uds.Key{App: sc.App, Namespace: sc.Namespace, ID: sc.Key, SortKey: sc.SortKey}
	}
	status, body, _ := describe(err, key, sc.Caller)
	if status >= 500 {
		// The cause goes to the server's log, not to the client.
		f.a.log.Error("a realtime subscription failed", "cause", err.Error())
	}
	return realtime.Refusal{Status: status, Error: body.Error, Details: body.Details}
}

// entries are changes as the feed's pages show them.
func entries(changes []store.Change) []realtime.Entry {
	out := make([]realtime.Entry, len(changes))
	for i := range changes {
		c := &changes[i]
		e := realtime.Entry{Key: c.Item.Key, Version: c.Item.Version, Removed: c.Removed}
		if c.Removed {
			e.JSON = appendTombstone(nil, &c.Item)
		} else {
			e.JSON, e.ExpiresAt = appendItem(nil, &c.Item), c.Item.ExpiresAt
		}
		out[i] = e
	}
	return out
}
