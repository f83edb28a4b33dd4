package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// A namespace's strays are its items in the key space its policy does not
// use (store/strays.go): GET .../namespaces/{namespace}/strays lists them
// as export records, DELETE removes them and releases their usage. This is
// the operator's repair for items no data route can reach.

// strayLimit is the default and largest number of records of a page.
const strayLimit = exportLimit

// listStrays answers one page of a namespace's strays.
func (a *API) listStrays(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, err := appAndNamespace(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	pol, err := a.store.StoredPolicy(r.Context(), app, namespace)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	q := store.StrayQuery{App: app, Namespace: namespace, Private: pol.Mode() == uds.AccessPrivate, Limit: strayLimit}
	// Half the request's time goes to scanning, the rest is margin.
	if dl, ok := r.Context().Deadline(); ok {
		q.Deadline = time.Now().Add(time.Until(dl) / 2)
	}
	binding := "strays\x00" + app + "\x00" + namespace + "\x00" + string(pol.Mode())
	params, err := query(r)
	if err == nil && params.Get("limit") != "" {
		q.Limit, err = pageLimit(params)
	}
	if err == nil && params.Get("cursor") != "" {
		pos, openErr := a.cursors.Open(binding, params.Get("cursor"))
		if openErr != nil || json.Unmarshal([]byte(pos), &q.After) != nil {
			err = uds.Invalid("cursor", "was not issued for this namespace's strays under its policy in effect")
		}
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	page, err := a.store.Strays(r.Context(), q)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	out := exportJSON{Records: make([]recordJSON, len(page.Records))}
	for i := range page.Records {
		out.Records[i] = toRecordJSON(&page.Records[i])
	}
	if page.Next != nil {
		pos, err := json.Marshal(page.Next)
		if err != nil {
			a.fail(w, r, err, nil)
			return
		}
		out.Cursor = a.cursors.Seal(binding, string(pos))
	}
	observationFrom(r.Context()).noteExport(len(out.Records))
	writeJSON(w, http.StatusOK, out)
}

// removeStrays removes a namespace's strays within the delete-all budget
// and answers how many: 200 {"removed": n}, or past the budget 503 with
// how many it deleted and Retry-After, to be repeated.
func (a *API) removeStrays(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, err := appAndNamespace(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	pol, err := a.store.StoredPolicy(r.Context(), app, namespace)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	ctx, cancel := withBudget(r.Context(), a.budget, deleteAllMargin)
	defer cancel()
	n, err := a.store.RemoveStrays(ctx, app, namespace, pol.Mode() == uds.AccessPrivate)
	observationFrom(r.Context()).noteDeleted(n)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Removed int `json:"removed"`
	}{n})
}
