package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/udsproject/uds/internal/jsontext"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// ChangesStore reads a namespace's changes feed, and shows the rows that
// land in it to realtime subscribers; *store.Store has it.
type ChangesStore interface {
	Changes(ctx context.Context, q store.ChangesQuery) (store.ChangesPage, error)
	CurrentChanges(ctx context.Context, rows []store.FeedRow) ([]store.Change, error)
}

// changesQuery names the query parameters of a read of the changes feed.
var changesQuery = []string{"changes", "limit"}

// Pages of the changes feed take 100 entries unless the client asks for
// up to 1,000.
const (
	defaultChangesLimit = 100
	maxChangesLimit     = 1000
)

// readNamespace serves GET /data/{app}/{namespace}: the namespace's
// changes feed with ?changes=, a query of one of its indexes otherwise.
func (a *API) readNamespace(w http.ResponseWriter, r *http.Request, p params) {
	if err := noConditions(r, "a namespace's query or changes, whose pages carry no ETag"); err != nil {
		a.fail(w, r, err, &uds.Key{App: p.app, Namespace: p.namespace})
		return
	}
	if _, ok := r.URL.Query()["changes"]; ok {
		a.changes(w, r, p)
		return
	}
	a.queryIndex(w, r, p)
}

// changes serves GET /data/{app}/{namespace}?changes=<cursor>: one page of
// the namespace's changes feed in the caller's key space (docs/changes.md).
// The cursor is sealed to the namespace and the caller, so that it
// continues that caller's feed only; the key space it was taken in is in
// it, and a namespace that has changed key spaces since answers 410.
func (a *API) changes(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, err := appAndNamespace(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	key := uds.Key{App: app, Namespace: namespace}
	params, err := query(r)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	sc, err := a.inNamespace(r, key)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	binding := changesBinding(app, namespace, sc.subject)
	q, err := a.changesRequest(params, binding)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	q.App, q.Namespace, q.KeySpace = app, namespace, sc.key.Owner
	page, err := a.stores.Changes.Changes(r.Context(), q)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	position, err := json.Marshal(page.Next)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	writeChangesPage(w, page, a.cursors.Seal(binding, string(position)))
}

// changesRequest reads a feed read's query parameters: changes (the
// cursor, empty to start from the beginning) and limit, no other. binding
// names the feed and caller the cursor must have been issued for.
func (a *API) changesRequest(params url.Values, binding string) (store.ChangesQuery, error) {
	q := store.ChangesQuery{MaxBytes: maxPageBytes, ItemBytes: itemPayloadBytes}
	for name := range params {
		if !slices.Contains(changesQuery, name) {
			return q, uds.Invalid(name, "cannot be given with changes: a read of the changes feed takes changes and limit only")
		}
	}
	var err error
	if q.Limit, err = changesLimit(params.Get("limit")); err != nil {
		return q, err
	}
	if c := params.Get("changes"); c != "" {
		q.After, err = a.openChangesCursor(binding, c)
	}
	return q, err
}

// changesBinding names a feed for its cursors: the namespace's, read by
// one caller.
func changesBinding(app, namespace, caller string) string {
	return strings.Join([]string{"changes", app, namespace, caller}, "\x00")
}

// openChangesCursor opens a feed's cursor.
func (a *API) openChangesCursor(binding, cursor string) (*store.ChangesPosition, error) {
	position, err := a.cursors.Open(binding, cursor)
	if err != nil {
		return nil, uds.Invalid("changes", "the cursor was not issued for this namespace's feed and caller")
	}
	var pos store.ChangesPosition
	if err := json.Unmarshal([]byte(position), &pos); err != nil {
		return nil, uds.Invalid("changes", "the cursor was not issued for this namespace's feed and caller")
	}
	return &pos, nil
}

// changesLimit reads a feed read's limit: 1 to maxChangesLimit, 100 when
// absent.
func changesLimit(v string) (int, error) {
	if v == "" {
		return defaultChangesLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxChangesLimit {
		return 0, uds.Invalid("limit", "must be a whole number from 1 to %d, got %q", maxChangesLimit, uds.Truncate(v, 32))
	}
	return n, nil
}

// writeChangesPage answers a page of the feed: {"changes": [...],
// "cursor": ..., "upToDate": ...}, each entry an item as a GET answers it
// or a removal's tombstone.
func writeChangesPage(w http.ResponseWriter, page store.ChangesPage, cursor string) {
	n := len(cursor) + 64
	for i := range page.Changes {
		n += itemJSONBytes(&page.Changes[i].Item) + 1
	}
	bp := pageBuffers.Get().(*[]byte)
	defer pageBuffers.Put(bp)
	buf := slices.Grow((*bp)[:0], n)
	buf = append(buf, `{"changes":[`...)
	for i := range page.Changes {
		if i > 0 {
			buf = append(buf, ',')
		}
		c := &page.Changes[i]
		if c.Removed {
			buf = appendTombstone(buf, &c.Item)
			continue
		}
		buf = appendItem(buf, &c.Item)
	}
	buf = append(buf, `],"cursor":`...)
	buf = jsontext.AppendString(buf, cursor)
	buf = append(buf, `,"upToDate":`...)
	buf = strconv.AppendBool(buf, page.UpToDate)
	buf = append(buf, "}\n"...)
	answerBody(w, http.StatusOK, buf)
	*bp = buf[:0]
}

// appendTombstone appends the JSON of a removed item: its key, the
// version removed, when, and "deleted": true.
func appendTombstone(b []byte, it *uds.Item) []byte {
	b = append(b, `{"applicationUuid":`...)
	b = jsontext.AppendString(b, it.App)
	b = append(b, `,"namespace":`...)
	b = jsontext.AppendString(b, it.Namespace)
	b = append(b, `,"id":`...)
	b = jsontext.AppendString(b, it.ID)
	if it.SortKey != "" {
		b = append(b, `,"sortKey":`...)
		b = jsontext.AppendString(b, it.SortKey)
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, it.Version, 10)
	if !it.UpdatedDate.IsZero() {
		b = append(b, `,"updatedDate":"`...)
		b = append(store.AppendTime(b, it.UpdatedDate), '"')
	}
	return append(b, `,"deleted":true}`...)
}
