package httpapi

import (
	"context"
	"net/http"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// StrayStore finds and removes the items no data route reaches.
type StrayStore interface {
	Strays(context.Context, store.StrayQuery) (store.StrayPage, error)
	RemoveStrays(ctx context.Context, app, namespace string, private bool) (int, error)
}

// A namespace's strays are its items in the key space its policy does not
// use (store/strays.go): GET .../namespaces/{namespace}/strays lists them
// as export records, DELETE removes them and releases their usage. This is
// the operator's repair for items no data route can reach.

// listStrays answers one page of a namespace's strays, paged as an export
// is. The cursor is sealed to the namespace and the access mode whose
// strays it lists.
func (a *API) listStrays(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, pol, err := a.namespaceInEffect(r, p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	q := store.StrayQuery{App: app, Namespace: namespace, Private: pol.Mode() == uds.AccessPrivate,
		MaxBytes: maxPageBytes, RecordBytes: recordPayloadBytes}
	binding := "strays\x00" + app + "\x00" + namespace + "\x00" + string(pol.Mode())
	q.Limit, q.Deadline, err = a.recordsQuery(r, binding, "this namespace's strays under its policy in effect", &q.After)
	var page store.StrayPage
	if err == nil {
		page, err = a.stores.Strays.Strays(r.Context(), q)
	}
	var cursor string
	if err == nil && page.Next != nil {
		cursor, err = a.sealPosition(binding, page.Next)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	answerRecords(w, r, page.Records, cursor)
}

// removeStrays removes a namespace's strays within the delete-all budget
// and answers how many: 200 {"removed": n}, or past the budget 503 with
// how many it deleted and Retry-After, to be repeated.
func (a *API) removeStrays(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, pol, err := a.namespaceInEffect(r, p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	ctx, cancel := withBudget(r.Context(), a.budget, deleteAllMargin)
	defer cancel()
	n, err := a.stores.Strays.RemoveStrays(ctx, app, namespace, pol.Mode() == uds.AccessPrivate)
	observationFrom(r.Context()).noteDeleted(n)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, removal{n})
}

// removal answers a removal that completed: how many it removed.
type removal struct {
	Removed int `json:"removed"`
}
