package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// ListStore pages through a list and deletes it whole.
type ListStore interface {
	ListItems(context.Context, store.ListQuery) (store.ListPage, error)
	DeleteList(context.Context, uds.Write) (int, error)
}

// List paging limits (seed 002).
const (
	defaultLimit = 100
	maxLimit     = 1000
	// deleteAllMargin is kept free before the request's own deadline (the
	// Lambda timeout) to answer in time.
	deleteAllMargin = 2 * time.Second
)

func (a *API) listItems(w http.ResponseWriter, r *http.Request, p params) {
	key, err := itemKey(p)
	if err == nil {
		err = noConditions(r, "GET of a list, whose pages carry no ETag")
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	sc, err := a.inNamespace(r, key)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	q, c, err := parseListQuery(r, sc.key)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	q.KeepCompressed = acceptsGzip(r)
	// In a private namespace the key, and so the binding, is the
	// caller's: another caller's cursor does not open.
	binding := listBinding(sc.key, q.Range)
	if c != "" {
		position, err := a.cursors.Open(binding, c)
		if err != nil {
			a.fail(w, r, uds.Invalid("cursor", "was not issued for this list, order and range"), &key)
			return
		}
		q.After, q.Expect = openPosition(position)
	}
	page, err := a.stores.Lists.ListItems(r.Context(), q)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	cursor := ""
	if page.More {
		cursor = a.cursors.Seal(binding, position(page))
	}
	writeItemsPage(w, "list", page.Items, cursor)
}

// A cursor's position is the last sort key of its page, and, when the
// byte budget cut that page, how many items it held, so that the next page
// reads about as many rather than a full DynamoDB page. Sort keys hold no
// control characters, so a NUL separates the two.
func position(page store.ListPage) string {
	last := page.Items[len(page.Items)-1].SortKey
	if !page.Cut {
		return last
	}
	return last + "\x00" + strconv.Itoa(len(page.Items))
}

// openPosition splits a cursor's position into the sort key to continue
// after and the expected page size (0: unknown).
func openPosition(p string) (after string, expect int) {
	after, n, _ := strings.Cut(p, "\x00")
	expect, _ = strconv.Atoi(n)
	return after, expect
}

// parseListQuery validates startKey, endKey, limit and sortOrder, and
// returns the cursor parameter, still sealed.
func parseListQuery(r *http.Request, key uds.Key) (store.ListQuery, string, error) {
	q := store.ListQuery{List: key, Limit: defaultLimit, MaxBytes: maxPageBytes, ItemBytes: itemPayloadBytes}
	params, err := query(r)
	if err != nil {
		return q, "", err
	}
	q.Range.Start, q.Range.End = params.Get("startKey"), params.Get("endKey")
	for _, bound := range [...]struct{ field, value string }{{"startKey", q.Range.Start}, {"endKey", q.Range.End}} {
		if bound.value != "" {
			if err := uds.CheckSortKey(bound.field, bound.value); err != nil {
				return q, "", err
			}
		}
	}
	if q.Limit, err = pageLimit(params); err != nil {
		return q, "", err
	}
	if q.Range.Descending, err = descending(params); err != nil {
		return q, "", err
	}
	return q, params.Get("cursor"), nil
}

// descending parses the sortOrder parameter of lists and queries.
func descending(params url.Values) (bool, error) {
	switch order := params.Get("sortOrder"); strings.ToUpper(order) {
	case "", "ASC":
		return false, nil
	case "DESC":
		return true, nil
	default:
		return false, uds.Invalid("sortOrder", "must be ASC or DESC, got %q", order)
	}
}

// pageLimit parses the limit parameter of lists and listings.
func pageLimit(params url.Values) (int, error) {
	v := params.Get("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, uds.Invalid("limit", "must be a whole number from 1 to %d, got %q", maxLimit, v)
	}
	return n, nil
}

// listBinding names a list query for its cursors: a cursor only continues
// the list, order and range it came from.
func listBinding(key uds.Key, rng uds.Range) string {
	order := "A"
	if rng.Descending {
		order = "D"
	}
	return strings.Join([]string{"list", key.DataKey(), order, rng.Start, rng.End}, "\x00")
}

// deleteList removes every item of a list within the time budget; past it
// the answer says how far it got (503, Retry-After) instead of claiming
// success.
func (a *API) deleteList(w http.ResponseWriter, r *http.Request, p params) {
	key, err := itemKey(p)
	if err == nil {
		// A condition the delete could not keep is refused rather than
		// ignored.
		err = noConditions(r, "DELETE of a list, which removes every item of the list whatever its revision")
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	sc, err := a.inNamespace(r, key)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	ctx, cancel := withBudget(r.Context(), a.budget, deleteAllMargin)
	defer cancel()
	n, err := a.stores.Lists.DeleteList(ctx, uds.Write{Key: sc.key, Subject: sc.subject, IfMatch: uds.Precondition{Creator: sc.onlyCreator()}, History: sc.policy.History, Indexes: sc.policy.Indexes})
	observationFrom(r.Context()).noteDeleted(n)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
