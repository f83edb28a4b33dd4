package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// IndexStore queries a namespace's indexes and builds them.
type IndexStore interface {
	QueryIndex(context.Context, store.IndexQuery) (store.IndexPage, error)
	BuildIndexes(ctx context.Context, app, namespace string, budget time.Duration) (uds.Policy, error)
}

// indexBody is one declared index in a policy body.
type indexBody struct {
	Name string        `json:"name"`
	Path *string       `json:"path"`
	Type uds.IndexType `json:"type"`
}

// parseIndexes checks a policy body's indexes (uds.ValidateIndexes): a
// path is required, "" naming the whole value.
func parseIndexes(body []indexBody) ([]uds.Index, error) {
	if len(body) == 0 {
		return nil, nil // [] declares none, as null does
	}
	out := make([]uds.Index, len(body))
	for i, b := range body {
		if b.Path == nil {
			return nil, uds.Invalid("indexes["+strconv.Itoa(i)+"].path", `is required: a JSON Pointer into the items' data, such as "/status"`)
		}
		out[i] = uds.Index{Name: b.Name, Path: *b.Path, Type: b.Type}
	}
	return out, uds.ValidateIndexes(out)
}

// indexJSON is a declared index as the admin routes show it.
type indexJSON struct {
	Name string        `json:"name"`
	Path string        `json:"path"`
	Type uds.IndexType `json:"type"`
	// State is "building" until the index holds the items stored before
	// it was declared, then "ready".
	State        string `json:"state"`
	ItemsIndexed int64  `json:"itemsIndexed"`
}

// indexBuildJSON is the work a change of the indexes left.
type indexBuildJSON struct {
	// SettlesAt is when the build may start: from then on every function
	// writes under the change.
	SettlesAt string `json:"settlesAt"`
	// DroppedIndexes counts the removed indexes whose entries are still
	// being removed; EntriesRemoved the entries removed so far.
	DroppedIndexes int   `json:"droppedIndexes"`
	EntriesRemoved int64 `json:"entriesRemoved"`
}

func indexesBody(p uds.Policy) ([]indexJSON, *indexBuildJSON) {
	var ixs []indexJSON
	for _, ix := range p.Indexes {
		state := "building"
		if ix.Ready {
			state = "ready"
		}
		ixs = append(ixs, indexJSON{Name: ix.Name, Path: ix.Path, Type: ix.Type, State: state, ItemsIndexed: ix.Done})
	}
	b := p.IndexBuild
	if b == nil {
		return ixs, nil
	}
	return ixs, &indexBuildJSON{SettlesAt: store.FormatTime(b.SettlesAt), DroppedIndexes: len(b.Dropped), EntriesRemoved: b.Removed}
}

// Bounds of one build step: it works for at most buildStep, and leaves
// buildMargin of the request's budget to store its progress and answer.
const (
	buildStep   = 10 * time.Second
	buildMargin = 3 * time.Second
)

// buildIndexes serves POST .../namespaces/{namespace}/indexes/build: one
// bounded step of the namespace's index build. It answers the policy, 202
// with Retry-After while work remains (the seconds until the build
// settles, or 0 to go on at once), 200 once every index is ready and every
// dropped one removed.
func (a *API) buildIndexes(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, err := appAndNamespace(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	ctx, cancel := withBudget(r.Context(), a.budget, buildMargin)
	defer cancel()
	step := buildStep
	if deadline, ok := ctx.Deadline(); ok {
		step = min(step, time.Until(deadline))
	}
	pol, err := a.stores.Indexes.BuildIndexes(ctx, app, namespace, step)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	now := a.now()
	status := http.StatusOK
	if b := pol.IndexBuild; b != nil {
		status = http.StatusAccepted
		w.Header().Set("Retry-After", strconv.Itoa(max(0, int(b.SettlesAt.Sub(now).Seconds()+0.999))))
	}
	writeJSON(w, status, policyBody(app, namespace, pol, now))
}

// indexQuery names the query parameters of GET /data/{app}/{namespace}.
var indexQuery = []string{"index", "eq", "prefix", "from", "to", "sortOrder", "limit", "cursor"}

// queryIndex serves GET /data/{app}/{namespace}?index=...: one page of the
// namespace's items that the named index selects, in its order, as a list
// page shows items, under "items".
func (a *API) queryIndex(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, err := appAndNamespace(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	key := uds.Key{App: app, Namespace: namespace}
	sc, err := a.inNamespace(r, key)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	params, err := query(r)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	q, err := parseIndexQuery(params, namespace, sc.policy)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	q.App, q.Namespace, q.Owner = app, namespace, sc.key.Owner
	q.MaxBytes, q.ItemBytes = maxPageBytes, itemPayloadBytes
	binding := indexBinding(q, params)
	if c := params.Get("cursor"); c != "" {
		if q.Cursor, err = a.cursors.Open(binding, c); err != nil {
			a.fail(w, r, uds.Invalid("cursor", "was not issued for this index, selection and order"), &key)
			return
		}
	}
	page, err := a.stores.Indexes.QueryIndex(r.Context(), q)
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	cursor := ""
	if page.Cursor != "" {
		cursor = a.cursors.Seal(binding, page.Cursor)
	}
	writeItemsPage(w, "items", page.Items, cursor)
}

// indexBinding names a query for its cursors: a cursor continues only the
// query (index, selection, order, caller's key space) it came from.
func indexBinding(q store.IndexQuery, params url.Values) string {
	parts := []string{"index", q.App, q.Namespace, q.Index.ID, q.Owner, strconv.FormatBool(q.Descending)}
	for _, name := range []string{"eq", "prefix", "from", "to"} {
		parts = append(parts, strconv.FormatBool(params.Has(name)), params.Get(name))
	}
	return strings.Join(parts, "\x00")
}

// parseIndexQuery reads a query's parameters against the namespace's
// indexes: the index (which must be ready), at most one selection (eq,
// prefix, or from and to), the order and the page size.
func parseIndexQuery(params url.Values, namespace string, pol uds.Policy) (store.IndexQuery, error) {
	var q store.IndexQuery
	name := params.Get("index")
	names := make([]string, len(pol.Indexes))
	for i, ix := range pol.Indexes {
		names[i] = ix.Name
	}
	have := "it declares none (PUT .../admin/apps/{applicationUuid}/namespaces/" + namespace + " declares indexes)"
	if len(names) > 0 {
		have = "it declares " + strings.Join(names, ", ")
	}
	i := slices.Index(names, name)
	switch {
	case name == "":
		return q, uds.Invalid("index", "is required: a GET of a namespace queries one of its indexes; %s", have)
	case i < 0:
		return q, uds.Invalid("index", "namespace %s has no index %q; %s", namespace, uds.Truncate(name, 64), have)
	}
	q.Index = pol.Indexes[i]
	var selected []string
	for _, s := range []string{"eq", "prefix", "from", "to"} {
		if params.Has(s) {
			selected = append(selected, s)
		}
	}
	if len(selected) > 1 && !slices.Equal(selected, []string{"from", "to"}) {
		return q, uds.Invalid(selected[1], "cannot be given with %s: select by eq, by prefix, or by from and to", selected[0])
	}
	for _, b := range []struct {
		field string
		to    **uds.IndexValue
	}{{"eq", &q.Eq}, {"prefix", &q.Prefix}, {"from", &q.From}, {"to", &q.To}} {
		if !params.Has(b.field) {
			continue
		}
		if b.field == "prefix" && q.Index.Type != uds.IndexString {
			return q, uds.Invalid("prefix", "selects strings, and index %s holds numbers: use eq, or from and to", q.Index.Name)
		}
		v, err := q.Index.ParseIndexValue(b.field, params.Get(b.field))
		if err != nil {
			return q, err
		}
		*b.to = &v
	}
	var err error
	if q.Limit, err = pageLimit(params); err != nil {
		return q, err
	}
	if q.Descending, err = descending(params); err != nil {
		return q, err
	}
	if !q.Index.Ready {
		return q, &uds.IndexNotReadyError{Name: q.Index.Name, Done: q.Index.Done, SettlesAt: settlesAt(pol)}
	}
	return q, nil
}

func settlesAt(p uds.Policy) time.Time {
	if p.IndexBuild == nil {
		return time.Time{}
	}
	return p.IndexBuild.SettlesAt
}
