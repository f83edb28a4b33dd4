package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// The catalogue of what holds data (store/catalog.go) serves the admin
// listings an operator browses by: the apps that hold data, registered or
// not (GET /admin/apps?include=held), the namespaces that hold data, with
// or without a policy (GET .../namespaces?include=held), and a
// namespace's keys, page by page (GET .../namespaces/{namespace}/items).

// KeyStore lists a namespace's keys for an operator.
type KeyStore interface {
	NamespaceKeys(ctx context.Context, q store.KeysQuery) (store.KeysPage, error)
}

// catalogueQuery is what the namespaces listing takes.
var catalogueQuery = []string{"limit", "cursor", "include"}

// keysQuery is what the listing of a namespace's keys takes.
var keysQuery = []string{"user", "limit", "cursor", "order"}

// includeHeld reads include=, which takes one value: held, the entries
// that hold data without a registration (a policy).
func includeHeld(q url.Values) (bool, error) {
	switch v := q.Get("include"); v {
	case "":
		return false, nil
	case "held":
		return true, nil
	default:
		return false, uds.Invalid("include", `takes "held" (also list what holds data without a registration or a policy); got %q`, uds.Truncate(v, 64))
	}
}

// Bounds of a page of a namespace's keys: how many index entries it
// evaluates (not how many keys it holds, which may be fewer: the owner
// indexes hold the app's other namespaces too).
const (
	defaultKeysLimit = 50
	maxKeysLimit     = 200
)

// keyJSON is one key of a namespace, as its listing shows it.
type keyJSON struct {
	ID          string `json:"id"`
	SortKey     string `json:"sortKey,omitempty"`
	Owner       string `json:"owner"`
	Size        int64  `json:"size"`
	ClassName   string `json:"className,omitempty"`
	UpdatedDate string `json:"updatedDate"`
	ContentType string `json:"contentType,omitempty"`
	ExpiresAt   string `json:"expiresAt,omitempty"`
}

// keysBinding binds a listing's cursor to its namespace and owner: a
// position within one owner's items does not continue a walk of all.
func keysBinding(app, namespace, user string) string {
	return strings.Join([]string{"keys", app, namespace, user}, "\x00")
}

// listKeys lists a namespace's keys page by page. Each page evaluates at
// most limit entries of the owner indexes, so it may hold fewer keys, or
// none, and still carry a cursor; order sorts the page's keys (by key, or
// newest first), not the listing.
func (a *API) listKeys(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, err := appAndNamespace(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	q, err := query(r)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	kq := store.KeysQuery{App: app, Namespace: namespace, Limit: defaultKeysLimit}
	if v := q.Get("limit"); v != "" {
		if kq.Limit, err = strconv.Atoi(v); err != nil || kq.Limit < 1 || kq.Limit > maxKeysLimit {
			a.fail(w, r, uds.Invalid("limit", "must be a whole number from 1 to %d (the index entries a page evaluates), got %q", maxKeysLimit, uds.Truncate(v, 64)), nil)
			return
		}
	}
	if q.Has("user") {
		if kq.User, err = uds.ParseUser(q.Get("user")); err != nil {
			a.fail(w, r, err, nil)
			return
		}
	}
	newest := false
	switch o := q.Get("order"); o {
	case "", "key":
	case "newest":
		newest = true
	default:
		a.fail(w, r, uds.Invalid("order", `takes "key" (the default) or "newest"; got %q`, uds.Truncate(o, 64)), nil)
		return
	}
	binding := keysBinding(app, namespace, kq.User)
	if c := q.Get("cursor"); c != "" {
		pos, err := a.cursors.Open(binding, c)
		if err != nil || json.Unmarshal([]byte(pos), &kq.After) != nil {
			a.fail(w, r, uds.Invalid("cursor", "was not issued for this listing (its namespace and user)"), nil)
			return
		}
	}
	page, err := a.stores.Keys.NamespaceKeys(r.Context(), kq)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	sortKeys(page.Keys, newest)
	out := struct {
		Items  []keyJSON `json:"items"`
		Cursor string    `json:"cursor,omitempty"`
	}{Items: make([]keyJSON, len(page.Keys))}
	for i, k := range page.Keys {
		out.Items[i] = keyJSON{ID: k.Key.ID, SortKey: k.Key.SortKey, Owner: k.Owner, Size: k.Size, ClassName: k.ClassName,
			UpdatedDate: store.FormatTime(k.UpdatedDate), ContentType: k.ContentType}
		if !k.ExpiresAt.IsZero() {
			out.Items[i].ExpiresAt = store.FormatTime(k.ExpiresAt)
		}
	}
	if page.Next != nil {
		if out.Cursor, err = a.sealPosition(binding, page.Next); err != nil {
			a.fail(w, r, err, nil)
			return
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// sortKeys orders a page's keys by (id, sort key, owner), or newest
// first.
func sortKeys(keys []store.KeyEntry, newest bool) {
	slices.SortFunc(keys, func(a, b store.KeyEntry) int {
		if newest {
			if c := b.UpdatedDate.Compare(a.UpdatedDate); c != 0 {
				return c
			}
		}
		return cmp.Or(cmp.Compare(a.Key.ID, b.Key.ID), cmp.Compare(a.Key.SortKey, b.Key.SortKey), cmp.Compare(a.Owner, b.Owner))
	})
}
