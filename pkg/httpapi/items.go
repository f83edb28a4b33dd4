package httpapi

import (
	"net/http"
	"net/url"

	"github.com/udsproject/uds/pkg/uds"
)

// serveKV handles /data/{app}/{namespace}/{id}.
func (a *API) serveKV(w http.ResponseWriter, r *http.Request, app, namespace, id string) {
	key, err := uds.NewKey(app, namespace, id)
	if err != nil {
		a.fail(w, r, err, &uds.Key{App: app, Namespace: namespace, ID: id})
		return
	}
	a.serveItem(w, r, key)
}

// serveListItem handles /data/{app}/{namespace}/{id}/{sortKey...}.
func (a *API) serveListItem(w http.ResponseWriter, r *http.Request, app, namespace, id, sortKey string) {
	list, err := uds.NewKey(app, namespace, id)
	if err != nil {
		a.fail(w, r, err, &uds.Key{App: app, Namespace: namespace, ID: id, SortKey: sortKey})
		return
	}
	key, err := list.WithSortKey(sortKey)
	if err != nil {
		list.SortKey = sortKey
		a.fail(w, r, err, &list)
		return
	}
	a.serveItem(w, r, key)
}

// serveItem handles one key-value item or list item; the key says which.
func (a *API) serveItem(w http.ResponseWriter, r *http.Request, key uds.Key) {
	switch r.Method {
	case http.MethodGet:
		a.getItem(w, r, key)
	case http.MethodPost:
		a.writeItem(w, r, key, http.StatusCreated)
	case http.MethodPut:
		a.writeItem(w, r, key, http.StatusOK)
	case http.MethodDelete:
		a.deleteItem(w, r, key)
	default:
		methodNotAllowed(w, r, "GET, POST, PUT, DELETE")
	}
}

func (a *API) getItem(w http.ResponseWriter, r *http.Request, key uds.Key) {
	it, err := a.store.Get(r.Context(), key)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	etag := it.Revision().ETag()
	match, err := noneMatch(r, etag)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	w.Header().Set("ETag", etag)
	if match {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, toJSON(&it))
}

// writeItem creates (POST, 201) or updates (PUT, 200) an item.
func (a *API) writeItem(w http.ResponseWriter, r *http.Request, key uds.Key, status int) {
	write := uds.Write{Key: key}
	var err error
	if write.Subject, err = a.subject(r); err != nil {
		a.fail(w, r, err, &key)
		return
	}
	if status == http.StatusOK {
		if write.IfMatch, err = ifMatch(r); err != nil {
			a.fail(w, r, err, &key)
			return
		}
	}
	if err = readWrite(r, &write); err != nil {
		a.fail(w, r, err, &key)
		return
	}
	var it uds.Item
	if status == http.StatusCreated {
		it, err = a.store.Create(r.Context(), write)
	} else {
		it, err = a.store.Update(r.Context(), write)
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	h := w.Header()
	h.Set("ETag", it.Revision().ETag())
	if status == http.StatusCreated {
		h.Set("Location", itemPath(key))
	}
	writeJSON(w, status, toJSON(&it))
}

func (a *API) deleteItem(w http.ResponseWriter, r *http.Request, key uds.Key) {
	pre, err := ifMatch(r)
	if err == nil {
		err = a.store.Delete(r.Context(), key, pre)
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// itemPath is the canonical path of an item, for Location headers.
func itemPath(k uds.Key) string {
	p := BasePath + "data/" + k.App + "/" + url.PathEscape(k.Namespace) + "/" + url.PathEscape(k.ID)
	if k.SortKey != "" {
		p += "/" + url.PathEscape(k.SortKey)
	}
	return p
}
