package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// HistoryStore reads an item's kept versions and drops them.
type HistoryStore interface {
	Versions(ctx context.Context, key uds.Key, h uds.History) ([]uds.Version, error)
	Version(ctx context.Context, key uds.Key, h uds.History, version int64) (uds.Item, error)
	DropHistory(context.Context, uds.Write) (int, error)
	Restore(context.Context, uds.Write) (uds.Item, bool, error)
}

// Version history on the item routes (docs/decisions/history.md, "Version
// history"): GET {item}?version=V reads a kept version, GET {item}?history
// lists them, POST {item}?restore=V writes one back as the item's current
// version, and DELETE {item}?history drops them. The item handlers
// (items.go) branch here on the query.

// noVersion is an item request that names no version.
const noVersion int64 = -1

// versionReason says what a version number is, for the 400s that refuse
// one: a whole number as ETags write it, within what an item may reach.
const versionReason = "must be a version number: a whole number from 0 to 9007199254740991, without sign or leading zeros"

// parseVersion reads a version number, written as the item's "version"
// and its ETag write it: decimal digits without sign or leading zeros,
// at most uds.MaxVersion. Version 0 is a number an imported item may
// carry.
func parseVersion(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > uds.MaxVersion || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return n, true
}

// itemQuery is what the query string of an item route asks for. dispatch
// has already refused a parameter the request's method does not take:
// GET takes version, or history with limit and cursor; POST takes
// restore; DELETE takes history.
type itemQuery struct {
	// version is the version GET ?version= reads or POST ?restore= writes
	// back; noVersion when none is named.
	version int64
	// history asks for the item's kept versions: GET lists them, DELETE
	// drops them.
	history bool
	// limit and cursor page a history listing.
	limit  int
	cursor string
	// upload and commit start and end an upload of a large value (POST),
	// and inline reads one through the function rather than from the
	// bucket (GET).
	upload, commit, inline bool
}

// parseItemQuery reads and validates an item route's query string.
func parseItemQuery(r *http.Request) (itemQuery, error) {
	q := itemQuery{version: noVersion}
	if r.URL.RawQuery == "" {
		return q, nil
	}
	params, err := query(r)
	if err != nil {
		return q, err
	}
	for _, name := range [...]string{"version", "restore"} {
		if !params.Has(name) {
			continue
		}
		v, ok := parseVersion(params.Get(name))
		if !ok {
			return q, uds.Invalid(name, "%s, got %q", versionReason, uds.Truncate(params.Get(name), 64))
		}
		q.version = v
	}
	for _, flag := range []struct {
		name string
		set  *bool
	}{{"history", &q.history}, {"upload", &q.upload}, {"commit", &q.commit}, {"inline", &q.inline}} {
		if !params.Has(flag.name) {
			continue
		}
		if v := params.Get(flag.name); v != "" {
			return q, uds.Invalid(flag.name, "takes no value: send ?%s alone, got %q", flag.name, uds.Truncate(v, 64))
		}
		*flag.set = true
	}
	if q.upload && q.commit || (q.upload || q.commit) && params.Has("restore") {
		return q, uds.Invalid("query", "names more than one of ?upload, ?commit and ?restore; a POST does one of them")
	}
	paging := "limit"
	if !params.Has(paging) && params.Has("cursor") {
		paging = "cursor"
	}
	switch {
	case q.history && params.Has("version"):
		return q, uds.Invalid("version", "cannot be given with history: ?history lists the versions kept, ?version=V reads one of them")
	case !q.history && params.Has(paging):
		return q, uds.Invalid(paging, "pages a history listing, and applies only with ?history")
	case q.history:
		q.limit, err = pageLimit(params)
		q.cursor = params.Get("cursor")
	}
	return q, err
}

// notKept is the error of a version that is not kept: never written,
// pruned, expired, dropped, or the item's delete marker. It is a 404.
type notKept struct{ version int64 }

func (e *notKept) Error() string {
	return "version " + strconv.FormatInt(e.version, 10) + " is not kept"
}

func (e *notKept) Is(target error) bool { return target == uds.ErrNotFound }
func (e *notKept) Code() uds.Code       { return uds.CodeNotFound }

// version reads version v of sc's item as a read of the item shows it.
func (a *API) version(ctx context.Context, sc *scope, v int64) (uds.Item, error) {
	it, err := a.stores.History.Version(ctx, sc.key, sc.policy.History, v)
	if errors.Is(err, uds.ErrNotFound) {
		err = &notKept{v}
	}
	return it, err
}

// versionJSON is one entry of an item's history.
type versionJSON struct {
	Version int64 `json:"version"`
	// Items written before UDS may lack audit fields; they are omitted
	// rather than invented, as on the item.
	UpdatedDate      string `json:"updatedDate,omitempty"`
	UpdatedBySubject string `json:"updatedBySubject,omitempty"`
	// Size is the stored size the version takes in its owner's usage,
	// 0 for a delete marker.
	Size    int64 `json:"size"`
	Deleted bool  `json:"deleted,omitempty"`
	// Current marks the item as it stands, or its delete marker when it
	// was deleted.
	Current bool `json:"current,omitempty"`
}

// historyPage is one page of an item's history, newest first; cursor is
// set when more remain.
type historyPage struct {
	Versions []versionJSON `json:"versions"`
	Cursor   string        `json:"cursor,omitempty"`
}

// listVersions answers GET {item}?history: a page of the item's history,
// current state first. The whole history is one read (it holds at most
// uds.MaxHistoryVersions versions and their delete markers), and a cursor
// continues after the last entry its page showed.
func (a *API) listVersions(w http.ResponseWriter, r *http.Request, key uds.Key, sc *scope, q itemQuery) {
	// In a private namespace the key, and so the binding, is the
	// caller's: another caller's cursor does not open.
	binding := historyBinding(sc.key)
	after := ""
	if q.cursor != "" {
		var err error
		if after, err = a.cursors.Open(binding, q.cursor); err != nil {
			a.fail(w, r, uds.Invalid("cursor", "was not issued for this item's history"), &key)
			return
		}
	}
	versions, err := a.stores.History.Versions(r.Context(), sc.key, sc.policy.History)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	if after != "" {
		versions = versionsAfter(versions, after)
	}
	page := historyPage{Versions: make([]versionJSON, 0, min(len(versions), q.limit))}
	if len(versions) > q.limit {
		versions = versions[:q.limit]
		page.Cursor = a.cursors.Seal(binding, historyPosition(versions[len(versions)-1]))
	}
	for _, v := range versions {
		j := versionJSON{Version: v.Version, UpdatedBySubject: v.UpdatedBy, Size: v.Size, Deleted: v.Deleted, Current: v.Current}
		if !v.UpdatedDate.IsZero() {
			j.UpdatedDate = store.FormatTime(v.UpdatedDate)
		}
		page.Versions = append(page.Versions, j)
	}
	writeJSON(w, http.StatusOK, page)
}

// historyBinding names an item's history for its cursors: a cursor only
// continues the history of the item it came from.
func historyBinding(key uds.Key) string {
	return strings.Join([]string{"history", key.DataKey(), key.SortKey}, "\x00")
}

// A history cursor's position is the last entry its page showed: its
// version number, and "c" when it was the current state. The current
// state's number may repeat a kept version's (an item created again while
// the namespace kept no history numbers from 1), so the mark tells them
// apart.
func historyPosition(v uds.Version) string {
	p := strconv.FormatInt(v.Version, 10)
	if v.Current {
		p += "c"
	}
	return p
}

// versionsAfter is what follows position in versions (newest first). When
// that entry is no longer there (the current state was replaced since,
// and is kept now, or the version was pruned), it continues with the kept
// versions older than it: kept versions never change their numbers, which
// fall from the newest to the oldest.
func versionsAfter(versions []uds.Version, position string) []uds.Version {
	n, current := strings.CutSuffix(position, "c")
	last, _ := strconv.ParseInt(n, 10, 64)
	for i, v := range versions {
		if v.Version == last && v.Current == current {
			return versions[i+1:]
		}
	}
	for i, v := range versions {
		if !v.Current && v.Version < last {
			return versions[i:]
		}
	}
	return nil
}

// restoreItem serves POST {item}?restore=V, which takes If-Match and no
// body.
func (a *API) restoreItem(w http.ResponseWriter, r *http.Request, key uds.Key, sc *scope, version int64) {
	pre, err := ifMatch(r)
	if err == nil {
		err = noBody(r)
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	a.answerRestore(w, r, key, sc, pre, version)
}

// noBody refuses a restore's body: a restore writes the version's own
// data and className, and a body would say something it does not do.
func noBody(r *http.Request) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1))
	switch {
	case err != nil:
		return uds.Invalid("body", "could not be read")
	case len(b) > 0:
		return uds.Invalid("body", "has no place in a restore, which writes the version's own data and className; send none")
	}
	return nil
}

// answerRestore restores version v of sc's item and answers as the write
// it became; key is the item as the request named it, for error bodies.
//
// A restore writes the version back as the item's current version, with
// the version's data and className and no expiry. It is a write like any
// other: refused while the namespace's access mode changes, checked
// against today's schema (a *uds.SchemaError), charged to the owner's
// quota, and it keeps the version it replaces. An item that exists is
// updated under pre and the namespace's owner-write rule (200); one that
// was deleted, when pre is not set, is created again (201). In an
// owner-write namespace only the creator of the version restored (of the
// item it was kept of) restores it, as only they could have changed that
// item. A version that is not kept is a *notKept, and nothing is written.
func (a *API) answerRestore(w http.ResponseWriter, r *http.Request, key uds.Key, sc *scope, pre uds.Precondition, v int64) {
	op, err := a.restoreOp(r.Context(), sc, pre, v)
	var it uds.Item
	created := false
	if err == nil {
		it, created, err = a.stores.History.Restore(r.Context(), op.Write)
	}
	switch {
	case err != nil:
		a.fail(w, r, err, &key)
	case created:
		answerWritten(w, &it, http.StatusCreated)
	default:
		answerWritten(w, &it, http.StatusOK)
	}
}

// restoreOp checks a restore of version v of sc's item as a write and
// reads the version: the write it makes, marked as a restore, whose store
// call (an update, or a create of a deleted item) is still open.
func (a *API) restoreOp(ctx context.Context, sc *scope, pre uds.Precondition, v int64) (uds.BatchOp, error) {
	if err := sc.writable(a.now()); err != nil {
		return uds.BatchOp{}, err
	}
	old, err := a.version(ctx, sc, v)
	switch {
	case err != nil:
		return uds.BatchOp{}, err
	case sc.policy.Mode() == uds.AccessOwnerWrite && old.CreatedBy != sc.subject:
		// The version answers to its own creator, whoever holds the key
		// now.
		return uds.BatchOp{}, uds.ErrForbidden
	}
	write := uds.Write{Key: sc.key, Data: old.Data, Binary: old.Binary, ClassName: old.ClassName,
		Subject: sc.subject, IfMatch: sc.guard(pre), History: sc.policy.History, Indexes: sc.policy.Indexes}
	if b := old.Binary; b != nil && b.Large() {
		// The version keeps its object; the item gets a copy of its own
		// (store.Objects.Copy, made before the write commits).
		write.Binary = &uds.Binary{ContentType: b.ContentType, Object: store.NewValueName(sc.key.App), From: b.Object, Size: b.Size}
	}
	if err := a.checkValue(sc, &write); err != nil {
		return uds.BatchOp{}, err
	}
	return uds.BatchOp{Method: http.MethodPost, Write: write, Restore: true}, nil
}

// prepareRestore makes an atomic batch's restore the write restoreOp
// describes; WriteAtomic decides between update and create.
func (a *API) prepareRestore(ctx context.Context, op *batchOp) error {
	w, err := a.restoreOp(ctx, &op.scope, op.Write.IfMatch, op.version)
	if err == nil {
		op.BatchOp = w
	}
	return err
}

// dropHistory serves DELETE {item}?history: it removes the item's kept
// versions, releasing what they held, and leaves the item as it is, so it
// takes no If-Match. In an owner-write namespace only the item's creator
// (or, once it is deleted, the creator of every kept version) drops them.
func (a *API) dropHistory(w http.ResponseWriter, r *http.Request, key uds.Key, sc *scope) {
	if err := noConditions(r, "DELETE ?history, which leaves the item as it is"); err != nil {
		a.fail(w, r, err, &key)
		return
	}
	n, err := a.stores.History.DropHistory(r.Context(), uds.Write{Key: sc.key, Subject: sc.subject, IfMatch: sc.guard(uds.Precondition{})})
	observationFrom(r.Context()).noteDeleted(n)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	writeJSON(w, http.StatusOK, removal{n})
}
