package httpapi

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/udsproject/uds/pkg/uds"
)

// BasePath prefixes every route.
const BasePath = "/rest/api/v1"

// params are the values a route's pattern captured.
type params struct {
	app, namespace, id, sortKey, user string
	// listItem is set by routes that address a list item, so that an empty
	// sort key is refused rather than taken for a key-value item.
	listItem bool
}

type handler func(a *API, w http.ResponseWriter, r *http.Request, p params)

// route is one path pattern of a group and its handlers by method. In a
// pattern, {name} captures one segment and {name...} the rest of the path.
type route struct {
	group   Group
	pattern string
	methods map[string]handler
	// query names the query parameters each method takes (HEAD takes
	// GET's). Any other is refused with a 400 that names it, as an
	// unknown body member is, so that a misspelt one is never ignored.
	query map[string][]string
}

// Query parameters of the paged reads, and of the item routes: a kept
// version read or restored, and the item's history listed (paged) or
// dropped (history.go).
var (
	listQuery      = []string{"startKey", "endKey", "limit", "sortOrder", "cursor"}
	pageQuery      = []string{"limit", "cursor"}
	exportQuery    = []string{"limit", "cursor", "history", "namespace"}
	itemRouteQuery = map[string][]string{
		http.MethodGet:    {"version", "history", "limit", "cursor", "inline"},
		http.MethodPost:   {"restore", "upload", "commit"},
		http.MethodDelete: {"history"},
	}
)

// namespaceQuery is what a read of a namespace takes: an index query's
// parameters, or changes (changes.go).
var namespaceQuery = append(slices.Clone(indexQuery), "changes")

// batchPattern is the batch route's, which charges rate tokens per
// operation (batch.go).
const batchPattern = "/data/{applicationUuid}/batch"

// routes is the dispatch table, tried in order: the first route whose
// pattern and method match serves the request. The OpenAPI document is
// checked against this table.
var routes = []route{
	// The caller's quota; with a query, the changes feed of the namespace
	// named quota (or a query of its, which declares no indexes).
	{GroupKV, "/data/{applicationUuid}/quota", map[string]handler{
		http.MethodGet: (*API).ownQuota},
		map[string][]string{http.MethodGet: namespaceQuery}},
	// A batch of item operations of both kinds; the kv function serves it.
	{GroupKV, batchPattern, map[string]handler{
		http.MethodPost: (*API).batch}, nil},
	// A query of a namespace by one of its indexes, or its changes feed
	// (changes.go); both read key-value and list items alike, and the kv
	// function serves them. The two routes above take their paths first:
	// a namespace named quota or batch declares no indexes.
	{GroupKV, "/data/{applicationUuid}/{namespace}", map[string]handler{
		http.MethodGet: (*API).readNamespace},
		map[string][]string{http.MethodGet: namespaceQuery}},
	{GroupKV, "/data/{applicationUuid}/{namespace}/{id}", map[string]handler{
		http.MethodGet: (*API).getItem, http.MethodPost: (*API).createItem,
		http.MethodPut: (*API).updateItem, http.MethodPatch: (*API).patchItem, http.MethodDelete: (*API).deleteItem}, itemRouteQuery},
	{GroupList, "/data/{applicationUuid}/{namespace}/{id}/list", map[string]handler{
		http.MethodGet: (*API).listItems, http.MethodDelete: (*API).deleteList},
		map[string][]string{http.MethodGet: listQuery}},
	// The sort key is the rest of the path, so it may contain slashes
	// whether or not the gateway decoded %2F before the function saw it.
	// POST and PUT of .../list land here and are refused: "list" is a
	// reserved sort key; Allow on .../list names the list's methods only.
	{GroupList, "/data/{applicationUuid}/{namespace}/{id}/{sortKey...}", map[string]handler{
		http.MethodGet: (*API).getItem, http.MethodPost: (*API).createItem,
		http.MethodPut: (*API).updateItem, http.MethodPatch: (*API).patchItem, http.MethodDelete: (*API).deleteItem}, itemRouteQuery},
	{GroupAdmin, "/admin/apps/{applicationUuid}/users", map[string]handler{
		http.MethodGet: (*API).appUsers},
		map[string][]string{http.MethodGet: pageQuery}},
	{GroupAdmin, "/admin/users/{user}/apps", map[string]handler{
		http.MethodGet: (*API).userApps},
		map[string][]string{http.MethodGet: pageQuery}},
	// Everything one person owns, in every app (admin_export_user.go).
	{GroupAdmin, "/admin/users/{user}/export", map[string]handler{
		http.MethodGet: (*API).exportUser},
		map[string][]string{http.MethodGet: pageQuery}},
	// Erasing everything one person owns (admin_erase_user.go).
	{GroupAdmin, "/admin/users/{user}/erase", map[string]handler{
		http.MethodGet: (*API).getErasure, http.MethodPost: (*API).eraseUser}, nil},
	{GroupAdmin, "/admin/apps/{applicationUuid}/quota", map[string]handler{
		http.MethodGet: (*API).getAppLimits, http.MethodPut: (*API).putAppLimits}, nil},
	{GroupAdmin, "/admin/apps/{applicationUuid}/quota-mode", map[string]handler{
		http.MethodGet: (*API).getQuotaMode, http.MethodPut: (*API).putQuotaMode}, nil},
	{GroupAdmin, "/admin/apps/{applicationUuid}/users/{user}/quota", map[string]handler{
		http.MethodGet: (*API).userQuota, http.MethodPut: (*API).putUserLimits,
		http.MethodDelete: (*API).deleteUserLimits}, nil},
	{GroupAdmin, "/admin/apps/{applicationUuid}/rate-limits", map[string]handler{
		http.MethodGet: (*API).getAppRateLimits, http.MethodPut: (*API).putAppRateLimits,
		http.MethodDelete: (*API).deleteAppRateLimits}, nil},
	{GroupAdmin, "/admin/apps/{applicationUuid}/users/{user}/rate-limits", map[string]handler{
		http.MethodGet: (*API).getUserRateLimits, http.MethodPut: (*API).putUserRateLimits,
		http.MethodDelete: (*API).deleteUserRateLimits}, nil},
	{GroupAdmin, "/admin/apps/{applicationUuid}/users/{user}/quota/recompute", map[string]handler{
		http.MethodPost: (*API).recompute}, nil},
	{GroupAdmin, "/admin/apps/{applicationUuid}/export", map[string]handler{
		http.MethodGet: (*API).export},
		map[string][]string{http.MethodGet: exportQuery}},
	{GroupAdmin, "/admin/apps/{applicationUuid}/import", map[string]handler{
		http.MethodPost: (*API).importRecords}, nil},
	{GroupAdmin, "/admin/apps/{applicationUuid}/namespaces", map[string]handler{
		http.MethodGet: (*API).listPolicies},
		map[string][]string{http.MethodGet: catalogueQuery}},
	{GroupAdmin, "/admin/apps/{applicationUuid}/namespaces/{namespace}", map[string]handler{
		http.MethodGet: (*API).getPolicy, http.MethodPut: (*API).putPolicy,
		http.MethodDelete: (*API).deletePolicy}, nil},
	{GroupAdmin, "/admin/apps/{applicationUuid}/namespaces/{namespace}/indexes/build", map[string]handler{
		http.MethodPost: (*API).buildIndexes}, nil},
	// Items in the key space a namespace's policy does not use.
	{GroupAdmin, "/admin/apps/{applicationUuid}/namespaces/{namespace}/strays", map[string]handler{
		http.MethodGet: (*API).listStrays, http.MethodDelete: (*API).removeStrays},
		map[string][]string{http.MethodGet: pageQuery}},
	// A namespace's keys, page by page (admin_catalog.go).
	{GroupAdmin, "/admin/apps/{applicationUuid}/namespaces/{namespace}/items", map[string]handler{
		http.MethodGet: (*API).listKeys},
		map[string][]string{http.MethodGet: keysQuery}},
	// The app registry: the apps' names. No other admin route has two or
	// three segments, so these take no other route's paths. They come
	// last because a 404 suggests the first of the routes equally near
	// its path: .../apps/{applicationUuid}/xyz is as near to
	// .../apps/{applicationUuid} (a segment too many) as to .../users (a
	// segment wrong), and a path of four segments more likely meant a
	// route of four.
	{GroupAdmin, "/admin/apps", map[string]handler{
		http.MethodGet: (*API).listApps},
		map[string][]string{http.MethodGet: appsQuery}},
	{GroupAdmin, "/admin/apps/{applicationUuid}", map[string]handler{
		http.MethodGet: (*API).getApp, http.MethodPut: (*API).registerApp,
		http.MethodDelete: (*API).unregisterApp}, nil},
}

// routeSegments holds each route's pattern split into segments.
var routeSegments = func() [][]string {
	out := make([][]string, len(routes))
	for i, rt := range routes {
		out[i] = strings.Split(strings.TrimPrefix(rt.pattern, "/"), "/")
	}
	return out
}()

// routeNames holds, per route, "METHOD pattern" for each method it serves
// (HEAD beside GET): its name in logs and metrics, built once.
var routeNames = func() []map[string]string {
	out := make([]map[string]string, len(routes))
	for i, rt := range routes {
		out[i] = map[string]string{http.MethodHead: http.MethodHead + " " + rt.pattern}
		for m := range rt.methods {
			out[i][m] = m + " " + rt.pattern
		}
	}
	return out
}()

// routePaths holds, per route, its path as the OpenAPI document writes it
// ({sortKey...} becomes {sortKey}), built once.
var routePaths = func() []string {
	out := make([]string, len(routes))
	for i, rt := range routes {
		out[i] = BasePath + strings.ReplaceAll(rt.pattern, "...}", "}")
	}
	return out
}()

// Route is a served method and path pattern, as the OpenAPI document
// writes it ({sortKey...} becomes {sortKey}).
type Route struct {
	Method, Path string
}

// Routes lists what the given groups serve.
func Routes(groups Group) []Route {
	var out []Route
	for i, rt := range routes {
		if rt.group&groups == 0 {
			continue
		}
		for m := range rt.methods {
			out = append(out, Route{m, routePaths[i]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path+out[i].Method < out[j].Path+out[j].Method })
	return out
}

// ServeHTTP routes a request, and logs and measures it (observe.go).
// Paths are split on their escaped form so that an encoded slash (%2F)
// stays inside its segment; each segment is then unescaped. One trailing
// slash is accepted on every route.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.serveObserved(w, r, a.dispatch(r))
}

// dispatched is what serves a request: the route's name for logs and
// metrics (method and pattern, or unmatched), the parameters it captured
// and its handler; without one, the methods the path allows (405), a
// malformed path (400), or nothing (404).
type dispatched struct {
	route    string
	params   params
	handler  handler
	bodiless bool // HEAD served by the GET handler
	allow    string
	badPath  error
	badURL   bool
	// badQuery refuses a query parameter the route does not take.
	badQuery error
	// charged is set for the data routes a request pays a rate token for
	// before its handler runs; a batch pays per operation, in its
	// handler.
	charged bool
}

// dispatch finds what serves r.
func (a *API) dispatch(r *http.Request) dispatched {
	rest, ok := strings.CutPrefix(sentPath(r.URL), BasePath+"/")
	if !ok {
		return dispatched{route: unmatched}
	}
	var segBuf [8]string // room for every route's segments
	segs := segBuf[:0]
	for s := range strings.SplitSeq(strings.TrimSuffix(rest, "/"), "/") {
		u, err := url.PathUnescape(s)
		if err != nil {
			return dispatched{route: unmatched, badPath: uds.Invalid("path", "malformed percent-encoding in %q", s)}
		}
		segs = append(segs, u)
	}
	var exact, greedy map[string]handler
	for i := range routes {
		rt := &routes[i]
		if rt.group&a.groups == 0 {
			continue
		}
		p, ok := match(routeSegments[i], segs)
		if !ok {
			continue
		}
		charged := rt.group != GroupAdmin && rt.pattern != batchPattern
		if h := rt.methods[r.Method]; h != nil {
			return dispatched{route: routeNames[i][r.Method], params: p, handler: h, badQuery: checkQuery(r, rt.query[r.Method]), charged: charged}
		}
		if r.Method == http.MethodHead && rt.methods[http.MethodGet] != nil {
			// HEAD is GET without the body (RFC 9110), headers and status
			// included.
			return dispatched{route: routeNames[i][http.MethodHead], params: p, handler: rt.methods[http.MethodGet], bodiless: true,
				badQuery: checkQuery(r, rt.query[http.MethodGet]), charged: charged}
		}
		// The routes whose pattern is the path's name the methods
		// allowed (/data/{app}/batch is the batch route and a
		// namespace's reads); a greedy one that also matches (the sort
		// key after .../list) names them only where no other does, and
		// otherwise only explains why POST and PUT fail there.
		switch {
		case !strings.HasSuffix(rt.pattern, "...}"):
			if exact == nil {
				exact = map[string]handler{}
			}
			maps.Copy(exact, rt.methods)
		case greedy == nil:
			greedy = rt.methods
		}
	}
	allow := ""
	switch {
	case exact != nil:
		allow = allowed(exact)
	case greedy != nil:
		allow = allowed(greedy)
	}
	return dispatched{route: unmatched, allow: allow}
}

// sentPath is u's path as the client sent it, escapes and all. A parsed
// URL keeps that in RawPath when it differs from the default escaping of
// the decoded path; EscapedPath would escape the decoded path afresh when
// the sent form holds a byte it does not expect there (a quote, a letter
// outside ASCII), and so make an encoded slash a separator.
func sentPath(u *url.URL) string {
	if u.RawPath != "" {
		return u.RawPath
	}
	return u.EscapedPath()
}

// serve runs what dispatch found. A handler runs within the request's
// time budget, which serveObserved puts on the request's context with the
// rest of what it observes, so that the request is copied once.
func (a *API) serve(w http.ResponseWriter, r *http.Request, d dispatched) {
	switch {
	case d.badURL:
		observationFrom(r.Context()).noteError(http.StatusBadRequest, badURLError, nil)
		WriteBadURL(w, r.URL.Path)
	case d.badPath != nil:
		a.fail(w, r, d.badPath, nil)
	case d.badQuery != nil:
		a.fail(w, r, d.badQuery, nil)
	case d.handler != nil:
		if err := a.checkSubjectHeader(r); err != nil {
			a.fail(w, r, err, nil)
			return
		}
		if err := checkRequestHeaders(r); err != nil {
			a.fail(w, r, err, nil)
			return
		}
		if d.charged && !a.admit(w, r, d.params, 1) {
			return
		}
		d.handler(a, w, r, d.params)
	case d.allow != "":
		methodNotAllowed(w, r, d.allow)
	default:
		a.notFound(w, r)
	}
}

// checkQuery refuses a query string that is malformed or names a
// parameter outside takes, naming it and what the route takes, and an
// empty value of a parameter that takes one: left out it has a default,
// and empty it would be taken for that default or for a bound of "".
// Flags (?history, ?inline, ?upload, ?commit) take none, an empty
// ?changes starts the feed, and an index query's eq, prefix, from and to
// take "" as a value.
func checkQuery(r *http.Request, takes []string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	for name, values := range q {
		if slices.Contains(takes, name) {
			if valued[name] && slices.Contains(values, "") {
				return uds.Invalid(name, "is empty; give it a value, or leave the parameter out")
			}
			continue
		}
		if len(takes) == 0 {
			return uds.Invalid("query", "has parameter %q, but this route takes no query parameters", uds.Truncate(name, 64))
		}
		hint := ""
		if near := nearestName(name, takes); near != "" {
			hint = "; did you mean " + strconv.Quote(near) + "?"
		}
		return uds.Invalid("query", "has unknown parameter %q%s (this route takes %s)", uds.Truncate(name, 64), hint, strings.Join(takes, ", "))
	}
	return nil
}

// valued are the query parameters that need a value.
var valued = map[string]bool{
	"limit": true, "cursor": true, "startKey": true, "endKey": true, "sortOrder": true, "order": true,
	"version": true, "restore": true, "namespace": true, "user": true, "include": true, "index": true,
}

// nearestName is the name of names that differs from s in case only, or
// by at most two edits (a typo), or "".
func nearestName(s string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if strings.EqualFold(n, s) {
			return n
		}
		if d := editDistance(strings.ToLower(s), strings.ToLower(n), bestDist); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or bound when it is
// bound or more (the names compared are short, and a long input stops
// early).
func editDistance(a, b string, bound int) int {
	if abs(len(a)-len(b)) >= bound {
		return bound
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= bound {
			return bound
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], bound)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// QueryParams lists the query parameters each served route takes, for
// the OpenAPI document's check.
func QueryParams(groups Group) map[Route][]string {
	out := map[Route][]string{}
	for i, rt := range routes {
		if rt.group&groups == 0 {
			continue
		}
		for m := range rt.methods {
			out[Route{m, routePaths[i]}] = rt.query[m]
		}
	}
	return out
}

// allowed lists a route's methods for the Allow header, HEAD beside GET.
func allowed(methods map[string]handler) string {
	allow := make([]string, 0, len(methods)+1)
	for m := range methods {
		allow = append(allow, m)
	}
	if methods[http.MethodGet] != nil {
		allow = append(allow, http.MethodHead)
	}
	sort.Strings(allow)
	return strings.Join(allow, ", ")
}

// bodiless answers a HEAD request: everything a GET would send but the
// body.
type bodiless struct{ http.ResponseWriter }

func (b bodiless) Write(p []byte) (int, error) { return len(p), nil }

// match captures a pattern's parameters from the path segments. A user
// may hold slashes (an IAM caller's ARN, arn:aws:iam::1:user/ops), which
// an HTTP API delivers decoded whether or not they were sent as %2F: a
// {user} takes every segment between the pattern's segments before it
// and those after it.
func match(pat, segs []string) (params, bool) {
	if i := slices.Index(pat, "{user}"); i >= 0 && len(segs) > len(pat) {
		extra := len(segs) - len(pat)
		joined := append(slices.Clone(segs[:i]), strings.Join(segs[i:i+extra+1], "/"))
		segs = append(joined, segs[i+extra+1:]...)
	}
	var p params
	for i, want := range pat {
		if i >= len(segs) {
			return p, false
		}
		if !strings.HasPrefix(want, "{") {
			if segs[i] != want {
				return p, false
			}
			continue
		}
		v := segs[i]
		if strings.HasSuffix(want, "...}") {
			v = strings.Join(segs[i:], "/")
			segs = segs[:i+1]
		}
		switch strings.Trim(want, "{.}") {
		case "applicationUuid":
			p.app = v
		case "namespace":
			p.namespace = v
		case "id":
			p.id = v
		case "sortKey":
			p.sortKey, p.listItem = v, true
		case "user":
			p.user = v
		}
	}
	return p, len(segs) == len(pat)
}

// notFound answers 404 with the served route nearest to the request
// (nearest.go), repeating at most echoMaxBytes of the client's method and
// of its path.
func (a *API) notFound(w http.ResponseWriter, r *http.Request) {
	observationFrom(r.Context()).noteError(http.StatusNotFound, "Route not found", nil)
	details := uds.Truncate(r.Method, echoMaxBytes) + " " + uds.Truncate(r.URL.Path, echoMaxBytes) + " is not a UDS route" + a.servedBy()
	if near := nearestRoute(a.groups, r.Method, r.URL.EscapedPath()); near != "" {
		details += "; did you mean " + near + "?"
	}
	writeJSON(w, http.StatusNotFound, errorBody{Code: uds.CodeNotFound, Error: "Route not found", Details: details, Timestamp: now()})
}

func (a *API) servedBy() string {
	if a.groups == GroupAll {
		return ""
	}
	return " served by this function"
}

// methodNotAllowed answers 405 with the methods the route has.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	observationFrom(r.Context()).noteError(http.StatusMethodNotAllowed, "Method not allowed", nil)
	writeJSON(w, http.StatusMethodNotAllowed, errorBody{Code: uds.CodeMethodNotAllowed, Error: "Method not allowed", Details: r.Method + " is not allowed here; allowed: " + allow, Timestamp: now()})
}
