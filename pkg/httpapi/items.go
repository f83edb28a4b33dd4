package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/udsproject/uds/pkg/uds"
)

// ItemStore reads and writes single items (items.go; history.go restores
// through it).
type ItemStore interface {
	Get(context.Context, uds.Key) (uds.Item, error)
	Create(context.Context, uds.Write) (uds.Item, error)
	Update(context.Context, uds.Write) (uds.Item, error)
	Patch(context.Context, uds.Write, uds.Patcher) (uds.Item, error)
	Delete(context.Context, uds.Write) error
}

// itemKey validates the key a route captured. On failure it still returns
// the raw parts, for the error body.
func itemKey(p params) (uds.Key, error) {
	raw := uds.Key{App: p.app, Namespace: p.namespace, ID: p.id, SortKey: p.sortKey}
	list, err := uds.NewKey(p.app, p.namespace, p.id)
	if err != nil {
		return raw, err
	}
	if !p.listItem {
		return list, nil
	}
	key, err := list.WithSortKey(p.sortKey)
	if err != nil {
		raw.App = list.App // the normalised app, for the error body
		return raw, err
	}
	return key, nil
}

// itemRequest validates the key a route captured and the query it carries,
// and applies the policy of the key's namespace. It answers a failure
// itself and reports false. key is the item as the request named it, for
// error bodies.
func (a *API) itemRequest(w http.ResponseWriter, r *http.Request, p params) (key uds.Key, sc scope, q itemQuery, ok bool) {
	key, err := itemKey(p)
	if err == nil {
		q, err = parseItemQuery(r)
	}
	if err == nil {
		sc, err = a.inNamespace(r, key)
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return key, sc, q, false
	}
	return key, sc, q, true
}

// getItem reads an item, one of its kept versions (?version=V), or its
// history (?history, history.go).
func (a *API) getItem(w http.ResponseWriter, r *http.Request, p params) {
	key, sc, q, ok := a.itemRequest(w, r, p)
	if !ok {
		return
	}
	if q.history {
		if err := noConditions(r, "GET ?history, whose pages carry no ETag"); err != nil {
			a.fail(w, r, err, &key)
			return
		}
		a.listVersions(w, r, key, &sc, q)
		return
	}
	// ETags are an item's validators: If-Unmodified-Since, ignored, would
	// hand over what its client meant it to stop.
	err := refuseHeaders(r, "is not taken; a read is conditional on If-Match or If-None-Match, with ETags", "If-Unmodified-Since")
	var pre uds.Precondition
	var conditional bool
	if err == nil {
		pre, conditional, err = ifMatchSent(r)
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	var it uds.Item
	if q.version != noVersion {
		it, err = a.version(r.Context(), &sc, q.version)
	} else {
		it, err = a.stores.Items.Get(r.Context(), sc.key)
		// The item takes PATCH in either patch document (RFC 5789).
		w.Header().Set("Accept-Patch", acceptPatch)
	}
	if err == nil && conditional && !pre.Matches(it.Revision()) {
		// If-Match answers 412 as a write's does; a read of what is not
		// there answers 404 whatever it names (RFC 9110, 13.2.1).
		err = uds.ErrPrecondition
	}
	a.answerGet(w, r, sc.key, it, err, r.Header.Values("If-None-Match"), true)
}

// answerGet answers a read of key: the item with its ETag, 304 when
// the If-None-Match values name it, or the error. A binary value is
// answered as its bytes where raw is set (a GET of the item), and as JSON
// with its bytes in base64 where it is not (an operation of a batch).
func (a *API) answerGet(w http.ResponseWriter, r *http.Request, key uds.Key, it uds.Item, err error, ifNoneMatch []string, raw bool) {
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	etag := it.Revision().ETag()
	match, err := noneMatch(ifNoneMatch, etag)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	w.Header().Set(headerETag, etag)
	large := raw && it.Binary != nil && it.Binary.Large()
	if match {
		// A large value's GET answers a redirect: its 304 renews it.
		if large && a.bucket != nil && !r.URL.Query().Has("inline") {
			if err := a.setRedirect(r, w.Header(), &it); err != nil {
				a.fail(w, r, err, &key)
				return
			}
		}
		w.WriteHeader(http.StatusNotModified)
		return
	}
	switch {
	case large:
		a.answerLarge(w, r, &it)
		return
	case it.Binary != nil && raw:
		answerBinary(w, r, &it)
		return
	}
	writeItem(w, http.StatusOK, &it)
}

// createItem creates an item, or restores one of its kept versions
// (?restore=V, history.go).
func (a *API) createItem(w http.ResponseWriter, r *http.Request, p params) {
	key, sc, q, ok := a.itemRequest(w, r, p)
	switch {
	case !ok:
	case q.version != noVersion:
		a.restoreItem(w, r, key, &sc, q.version)
	case q.upload:
		a.reserveUpload(w, r, key, &sc)
	case q.commit:
		a.commitUpload(w, r, key, &sc)
	default:
		a.writeItem(w, r, key, &sc, http.StatusCreated)
	}
}

func (a *API) updateItem(w http.ResponseWriter, r *http.Request, p params) {
	if key, sc, _, ok := a.itemRequest(w, r, p); ok {
		a.writeItem(w, r, key, &sc, http.StatusOK)
	}
}

// writeItem creates (POST, 201) or updates (PUT, 200) the item of sc.
func (a *API) writeItem(w http.ResponseWriter, r *http.Request, key uds.Key, sc *scope, status int) {
	write := uds.Write{Key: sc.key, Subject: sc.subject, History: sc.policy.History, Indexes: sc.policy.Indexes}
	var err error
	if status == http.StatusOK {
		if write.IfMatch, err = ifMatch(r); err != nil {
			a.fail(w, r, err, &key)
			return
		}
		write.IfMatch = sc.guard(write.IfMatch)
	} else if err = noConditions(r, "a POST, which creates the item only where none is (a PUT with If-Match updates one)"); err != nil {
		a.fail(w, r, err, &key)
		return
	}
	if isBinaryWrite(r) {
		err = readBinaryWrite(r, &write, a.now())
	} else {
		err = readWrite(r, &write, a.now())
	}
	if err == nil {
		err = sc.writable(a.now())
	}
	if err == nil {
		err = a.checkValue(sc, &write)
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	a.applyWrite(w, r, write, status)
}

// applyWrite creates (201) or updates (200) the item of a checked write
// and answers.
func (a *API) applyWrite(w http.ResponseWriter, r *http.Request, write uds.Write, status int) {
	var it uds.Item
	var err error
	if status == http.StatusCreated {
		it, err = a.stores.Items.Create(r.Context(), write)
	} else if it, err = a.stores.Items.Update(r.Context(), write); errors.Is(err, uds.ErrNotFound) {
		err = &notCreated{err}
	}
	if err != nil {
		a.fail(w, r, err, &write.Key)
		return
	}
	answerWritten(w, &it, status)
}

// notCreated is the error of a PUT of an item that does not exist: PUT
// only replaces, and many stores upsert, so its answer says how to create
// (POST; PUT takes no If-None-Match).
type notCreated struct{ err error }

func (e *notCreated) Error() string { return e.err.Error() }
func (e *notCreated) Unwrap() error { return e.err }

// answerWritten answers a write that happened: the item with its ETag,
// and where a created item lives.
func answerWritten(w http.ResponseWriter, it *uds.Item, status int) {
	h := w.Header()
	h[headerETag] = []string{it.Revision().ETag()}
	if status == http.StatusCreated {
		h[headerLocation] = []string{itemPath(it.Key)}
	}
	if it.Binary != nil {
		// The writer has the bytes: the answer shows what was stored.
		meta, bin := *it, *it.Binary
		bin.Bytes, meta.Binary = nil, &bin
		it = &meta
	}
	writeItem(w, status, it)
}

// deleteItem deletes an item, or drops its kept versions (?history,
// history.go).
func (a *API) deleteItem(w http.ResponseWriter, r *http.Request, p params) {
	key, sc, q, ok := a.itemRequest(w, r, p)
	if !ok {
		return
	}
	if q.history {
		a.dropHistory(w, r, key, &sc)
		return
	}
	pre, err := ifMatch(r)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	a.applyDelete(w, r, uds.Write{Key: sc.key, Subject: sc.subject, IfMatch: sc.guard(pre), History: sc.policy.History, Indexes: sc.policy.Indexes})
}

// applyDelete deletes the item a checked delete names and answers.
func (a *API) applyDelete(w http.ResponseWriter, r *http.Request, del uds.Write) {
	if err := a.stores.Items.Delete(r.Context(), del); err != nil {
		a.fail(w, r, err, &del.Key)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// itemPath is the canonical path of an item, for Location headers.
func itemPath(k uds.Key) string {
	p := BasePath + "/data/" + k.App + "/" + pathSegment(k.Namespace) + "/" + pathSegment(k.ID)
	if k.SortKey != "" {
		p += "/" + pathSegment(k.SortKey)
	}
	return p
}

// pathSegment is s escaped as one segment of a path, "." and ".." as
// %2E and %2E%2E: a client resolving a Location removes literal
// dot-segments (RFC 3986, 5.2.4), which would name another resource.
func pathSegment(s string) string {
	switch s {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(s)
}
