package httpapi

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// pathSeeds are request targets from the tests of bad input: bad and
// encoded segments, invalid UTF-8, control characters, empty segments,
// trailing slashes, sort keys ending in "/", reserved sort keys, and
// queries.
var pathSeeds = []string{
	"/rest/api/v1/data/" + fuzzApp + "/ns/id",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/2024%2F01/x",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/z//",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/z%2F",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id//",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/list",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/list/",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/list?limit=5&sortOrder=desc",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/list?limt=5",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id?ttl=60",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id?version=2",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/2024%2F01?history&limit=5",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id?restore=1",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id?history=1",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/list?history",
	"/rest/api/v1/data/" + fuzzApp + "/a%7Cb/new",
	"/rest/api/v1/data/" + fuzzApp + "/a%2Fb/new",
	"/rest/api/v1/data/" + fuzzApp + "/ns/a%2Fb\"",
	"/rest/api/v1/data/" + fuzzApp + "/ns/a%2Fb/é",
	"/rest/api/v1/data/" + fuzzApp + "/ns/a%01b",
	"/rest/api/v1/data/" + fuzzApp + "/ns/%ff%fe",
	"/rest/api/v1/data/" + fuzzApp + "//new",
	"/rest/api/v1/data/" + fuzzApp + "/ns/list/a%7Fb",
	"/rest/api/v1/data/" + fuzzApp + "/quota",
	"/rest/api/v1/data/" + fuzzApp + "/batch",
	"/rest/api/v1/data/" + fuzzApp + "/batch/",
	"/rest/api/v1/data/" + fuzzApp,
	"/rest/api/v1/data/not-a-uuid/ns/new",
	"/rest/api/v1/data/{" + fuzzApp + "}/ns/new",
	"/rest/api/v1/data/" + strings.ToUpper(fuzzApp) + "/ns/new",
	"/rest/api/v1/admin/apps/" + fuzzApp + "/users?limit=10&cursor=abc.def",
	"/rest/api/v1/admin/apps/" + fuzzApp + "/users/auth0%7Cabc/quota",
	"/rest/api/v1/admin/apps/" + fuzzApp + "/users/arn:aws:iam::1:user%2Fops/quota/recompute",
	"/rest/api/v1/admin/users/al%ffce/apps?cursr=x",
	"/rest/api/v1/admin/apps/" + fuzzApp + "/namespaces/posts/strays",
	"/rest/api/v1/admin/apps/" + fuzzApp + "/export?limit=1001",
	"/rest/api/v1/admin/apps/" + fuzzApp + "/import",
	"/rest/api/v1/data/" + fuzzApp + "/ns/id/%zz",
	"/rest/api/v1/",
	"/rest/api/v1",
	"/other",
	"*",
}

// FuzzPath dispatches requests of any method and target: a malformed
// path or query is refused with a 400 that says why; a matched route
// takes its parameters from the path's segments as the client wrote them
// (an encoded slash stays in its segment), is served alike by the
// function of its route group, and takes them back from the canonical
// path built from them, with or without one trailing slash; a 405 names
// methods that are served at the path; a 404 means no method is.
func FuzzPath(f *testing.F) {
	for _, p := range pathSeeds {
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"} {
			f.Add(m, p)
		}
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		// Targets in origin form, as clients send them: Go's server also
		// takes absolute URLs (for proxies), whose paths it reads alike.
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(target, "/") { // net/http refuses the request line
			return
		}
		r := &http.Request{Method: method, URL: u, Header: http.Header{}}
		d := fuzzAPI.dispatch(r)
		if d.badQuery != nil {
			checkRefusal(t, []byte(target), d.badQuery)
			checkInvalidField(t, d.badQuery, "query")
		}
		switch {
		case d.badPath != nil:
			checkRefusal(t, []byte(target), d.badPath)
			checkInvalidField(t, d.badPath, "path")
			if d.handler != nil {
				t.Fatalf("%s %s: a malformed path is served", method, target)
			}
		case d.handler == nil:
			if d.route != unmatched {
				t.Fatalf("%s %s: route %q without a handler", method, target, d.route)
			}
			checkAllow(t, r, d)
		default:
			i := routeIndex(d.route)
			if i < 0 {
				t.Fatalf("%s %s: served as %q, which names no route", method, target, d.route)
			}
			checkSegments(t, target, i, d.params)
			checkGroups(t, r, i, d)
			checkCanonical(t, r, i, d)
		}
	})
}

// routeIndex is the index of the route a dispatch name ("METHOD
// pattern") names, or -1.
func routeIndex(name string) int {
	for i := range routes {
		for _, n := range routeNames[i] {
			if n == name {
				return i
			}
		}
	}
	return -1
}

// checkSegments checks route i's parameters against the path's segments
// as the client wrote them: split on "/", each unescaped.
func checkSegments(t *testing.T, target string, i int, got params) {
	t.Helper()
	raw, _, _ := strings.Cut(target, "?")
	rest, ok := strings.CutPrefix(raw, BasePath+"/")
	if !ok {
		t.Fatalf("%s is served outside %s", target, BasePath)
	}
	var segs []string
	for _, s := range strings.Split(strings.TrimSuffix(rest, "/"), "/") {
		u, err := url.PathUnescape(s)
		if err != nil {
			t.Fatalf("%s is served, though its segment %q is malformed", target, s)
		}
		segs = append(segs, u)
	}
	if want, ok := match(routeSegments[i], segs); !ok || want != got {
		t.Fatalf("%s: served with %+v; its segments as sent give %+v (match %v)", target, got, want, ok)
	}
}

// checkGroups checks that each route group's function serves r as the
// whole API does, or not at all, and that the route's own group serves it.
func checkGroups(t *testing.T, r *http.Request, i int, d dispatched) {
	t.Helper()
	for _, g := range []Group{GroupKV, GroupList, GroupAdmin} {
		dg := (&API{groups: g}).dispatch(r)
		served := dg.handler != nil
		if served != (g == routes[i].group) || (served && (dg.route != d.route || dg.params != d.params)) {
			t.Fatalf("%s %s: the %s function serves it as %q %+v, the whole API as %q %+v", r.Method, r.URL, g.Name(), dg.route, dg.params, d.route, d.params)
		}
	}
}

// checkCanonical checks that the path built from a route's parameters
// (each escaped, as Location headers are) is served by the same route
// with the same parameters, with one trailing slash too.
func checkCanonical(t *testing.T, r *http.Request, i int, d dispatched) {
	t.Helper()
	segs := slices.Clone(routeSegments[i])
	for j, s := range segs {
		switch strings.Trim(s, "{.}") {
		case "applicationUuid":
			segs[j] = url.PathEscape(d.params.app)
		case "namespace":
			segs[j] = url.PathEscape(d.params.namespace)
		case "id":
			segs[j] = url.PathEscape(d.params.id)
		case "sortKey":
			segs[j] = url.PathEscape(d.params.sortKey)
		case "user":
			segs[j] = url.PathEscape(d.params.user)
		}
	}
	path := BasePath + "/" + strings.Join(segs, "/")
	forms := []string{path + "/"}
	if !strings.HasSuffix(path, "/") { // an empty last parameter needs its slash
		forms = append(forms, path)
	}
	for _, p := range forms {
		u, err := url.ParseRequestURI(p)
		if err != nil {
			t.Fatalf("canonical path %q: %v", p, err)
		}
		dc := fuzzAPI.dispatch(&http.Request{Method: r.Method, URL: u, Header: http.Header{}})
		if dc.route != d.route || dc.params != d.params {
			t.Fatalf("%s is served as %q %+v; its canonical path %s as %q %+v", r.URL, d.route, d.params, p, dc.route, dc.params)
		}
	}
}

// checkAllow checks an unmatched request: a 405 lists methods that are
// served at its path, its own not among them; a 404 means none is.
func checkAllow(t *testing.T, r *http.Request, d dispatched) {
	t.Helper()
	methods := []string{"GET", "HEAD", "POST", "PUT", "DELETE"}
	if d.allow != "" {
		methods = strings.Split(d.allow, ", ")
		if slices.Contains(methods, r.Method) {
			t.Fatalf("%s %s is refused 405, yet Allow names it: %s", r.Method, r.URL, d.allow)
		}
	}
	for _, m := range methods {
		served := fuzzAPI.dispatch(&http.Request{Method: m, URL: r.URL, Header: http.Header{}}).handler != nil
		if served != (d.allow != "") {
			t.Fatalf("%s %s answers Allow %q, and %s is served there: %v", r.Method, r.URL, d.allow, m, served)
		}
	}
}

// routeItem is the item and version the single-item route of method
// takes from a batch operation's path (relative to the app), query
// included: ok is false where the route refuses the path or its query, or
// serves something else than one item there (a list, a history);
// comparable is false where no request line could carry the path.
func routeItem(method, path string) (key uds.Key, version int64, ok, comparable bool) {
	if strings.Contains(path, "#") {
		return key, noVersion, false, false
	}
	u, err := url.ParseRequestURI(BasePath + "/data/" + fuzzApp + "/" + strings.TrimPrefix(path, "/"))
	if err != nil {
		return key, noVersion, false, false
	}
	r := &http.Request{Method: method, URL: u, Header: http.Header{}}
	d := fuzzAPI.dispatch(r)
	if d.handler == nil || d.badQuery != nil {
		return key, noVersion, false, true
	}
	if p := routes[routeIndex(d.route)].pattern; !strings.HasSuffix(p, "/{id}") && !strings.HasSuffix(p, "/{sortKey...}") {
		return key, noVersion, false, true
	}
	q, err := parseItemQuery(r)
	if err != nil || q.history {
		return key, noVersion, false, true
	}
	key, err = itemKey(d.params)
	return key, q.version, err == nil, true
}

// checkOperationPath checks the item and version a batch took from an
// operation's path against what the item route of its method takes from
// the same path.
func checkOperationPath(t *testing.T, op batchOp, path string) {
	t.Helper()
	key, version, ok, comparable := routeItem(op.Method, path)
	if comparable && (!ok || key != op.Write.Key || version != op.version) {
		t.Fatalf("path %q is %+v at version %d in a batch; its route takes %+v at version %d (ok %v)", path, op.Write.Key, op.version, key, version, ok)
	}
}

// FuzzBatchPath checks a batch operation's method and path (checkOperation)
// against the single-item route: one takes the path where the other does,
// as the same key and, with ?version=V or ?restore=V, the same version.
func FuzzBatchPath(f *testing.F) {
	for _, p := range []string{
		"kv/a", "/kv/a/", "kv/a/s", "kv/a/2024%2F01/x", "kv/a/2024/01/x", "kv/a/z//", "kv/a/z%2F", "kv/a//", "kv/a/list", "kv/a/list/",
		"kv", "kv/", "/kv", "kv//a", "k%7Cv/a", "k%2Fv/a", "kv/a%2Fb\"", "kv/%ff", "kv/a%01", "kv/a%zz", "quota/x", "batch/x", "kv/a?x=1",
		"kv/" + strings.Repeat("i", 2100), "kv/a/" + strings.Repeat("s", 1025),
		"kv/a?version=3", "kv/a/s?version=0", "kv/a?restore=9007199254740991", "kv/a/?restore=9007199254740992", "kv/a?version=03",
		"kv/a?version=+3", "kv/a?version=-1", "kv/a?version=", "kv/a?version", "kv/a?version=1&version=2", "kv/a?restore=1&version=1",
		"kv/a?history", "kv/a?history=&limit=5", "kv/a?", "kv/a?&", "kv/a?version=%zz", "kv/a?version=1;x", "kv/a%3Fversion=1",
		"kv/a?version=1#x", "kv/list?version=1", "kv/a/list?restore=1",
	} {
		for _, m := range []string{"GET", "post", "PUT", "DELETE", "PATCH"} {
			f.Add(m, p)
		}
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		op, err := checkOperation(fuzzApp, "alice", batchOpJSON{Method: method, Path: path}, false, fuzzNow)
		var invalid *uds.InvalidError
		if err != nil {
			checkRefusal(t, []byte(method+" "+path), err)
			if !errors.As(err, &invalid) || invalid.Field == "method" {
				return
			}
		}
		// A POST or PUT without a body is refused for its body, after its
		// path was taken.
		taken := err == nil || invalid.Field == "body"
		key, version, ok, comparable := routeItem(op.Method, path)
		if comparable && (ok != taken || (ok && (key != op.Write.Key || version != op.version))) {
			t.Fatalf("%s %q: a batch takes %+v at version %d (%v), the route %+v at version %d (ok %v)", method, path, op.Write.Key, op.version, err, key, version, ok)
		}
	})
}

// FuzzQuery parses query strings as every route does (checkQuery), and as
// lists, admin listings and exports read them: a malformed or repeated
// parameter, or one a route does not take, is refused with a 400 naming
// it; what is accepted is what url.ParseQuery reads, within bounds. In the
// query, {cursor} stands for a cursor sealed for the admin listing with
// position, so that accepted cursors are reached too, and {export} for a
// cursor of the app's whole export, which no export of one namespace takes.
func FuzzQuery(f *testing.F) {
	for _, q := range []string{
		"", "limit=5", "limit=0", "limit=1000", "limit=1001", "limit=ten", "limit=-5", "limit=+5", "limit=05", "limit=5&limit=6",
		"sortOrder=desc", "sortOrder=DESC", "sortOrder=sideways", "SORTORDER=desc", "startKey=a&endKey=b", "startKey=%01",
		"endKey=" + strings.Repeat("s", 1025), "startKey=%ff", "limit=%zz", "limt=5", "Limit=5", "cursr=x", "zebra=1", "&&", "=",
		"limit", "cursor=abc.def", "cursor={cursor}", "cursor={cursor}&limit=10", "a;b=c", "limit=5%00", "startKey=z%2F",
		"namespace=kv", "namespace=", "namespace=a%7Cb", "namespace=a%2Fb", "namespace=%01", "namespace=kv&namespace=kv",
		"namespace=kv&history=false&limit=25", "cursor={export}", "namespace=kv&cursor={export}", "NAMESPACE=kv",
	} {
		f.Add(q, "last-user")
	}
	const adminBinding = "users\x00" + fuzzApp
	f.Fuzz(func(t *testing.T, rawQuery, position string) {
		sealed := fuzzAPI.cursors.Seal(adminBinding, position)
		rawQuery = strings.Replace(rawQuery, "{cursor}", url.QueryEscape(sealed), 1)
		whole := fuzzAPI.cursors.Seal(exportBinding(fuzzApp, ""), "{}")
		rawQuery = strings.Replace(rawQuery, "{export}", url.QueryEscape(whole), 1)
		r := &http.Request{Method: "GET", URL: &url.URL{Path: "/", RawQuery: rawQuery}, Header: http.Header{}}
		in := []byte(rawQuery)
		want, parseErr := url.ParseQuery(rawQuery)
		for _, takes := range [][]string{nil, listQuery, pageQuery, exportQuery} {
			err := checkQuery(r, takes)
			if err != nil {
				checkRefusal(t, in, err)
				checkQueryRefusal(t, rawQuery, takes, err)
				continue
			}
			for name := range want {
				if parseErr != nil || !slices.Contains(takes, name) {
					t.Fatalf("%q passes a route that takes %q (%v)", rawQuery, takes, parseErr)
				}
			}
		}
		params, err := query(r)
		if err != nil {
			checkRefusal(t, in, err)
			return
		}
		if parseErr != nil || !reflect.DeepEqual(params, want) {
			t.Fatalf("%q read as %v; url.ParseQuery reads %v (%v)", rawQuery, params, want, parseErr)
		}
		for name, v := range params {
			if len(v) != 1 {
				t.Fatalf("%q: parameter %q taken %d times", rawQuery, name, len(v))
			}
		}
		checkListQuery(t, r, params)
		limit, after, err := fuzzAPI.adminPage(r, adminBinding)
		switch {
		case err != nil:
			checkRefusal(t, in, err)
		case limit < 1 || limit > maxLimit:
			t.Fatalf("%q: limit %d taken", rawQuery, limit)
		case params.Get("cursor") == sealed && after != position:
			t.Fatalf("%q: the cursor sealed with %q opens as %q", rawQuery, position, after)
		}
		q, err := fuzzAPI.exportQuery(r, fuzzApp)
		_, nsErr := uds.ParseNamespace(q.Namespace)
		switch {
		case err != nil:
			checkRefusal(t, in, err)
		case q.Limit < 1 || q.Limit > exportLimit:
			t.Fatalf("%q: export limit %d taken", rawQuery, q.Limit)
		case q.Namespace != params.Get("namespace") || (params.Has("namespace") && nsErr != nil):
			t.Fatalf("%q: export of namespace %q taken", rawQuery, q.Namespace)
		case q.Namespace != "" && params.Get("cursor") == whole:
			t.Fatalf("%q: the whole export's cursor continues namespace %q's", rawQuery, q.Namespace)
		}
	})
}

// checkListQuery checks a list read's parameters as parseListQuery takes
// them.
func checkListQuery(t *testing.T, r *http.Request, params url.Values) {
	t.Helper()
	key := uds.Key{App: fuzzApp, Namespace: "ns", ID: "id"}
	q, cursor, err := parseListQuery(r, key)
	if err != nil {
		checkRefusal(t, []byte(r.URL.RawQuery), err)
		checkInvalidField(t, err, "query", "limit", "sortOrder", "startKey", "endKey")
		return
	}
	for _, b := range []string{q.Range.Start, q.Range.End} {
		if b != "" && uds.CheckSortKey("bound", b) != nil {
			t.Fatalf("%q: range bound %q taken", r.URL.RawQuery, b)
		}
	}
	if q.Range.Start != params.Get("startKey") || q.Range.End != params.Get("endKey") || cursor != params.Get("cursor") ||
		q.Range.Descending != strings.EqualFold(params.Get("sortOrder"), "DESC") || q.Limit < 1 || q.Limit > maxLimit || q.List != key {
		t.Fatalf("%q read as %+v, cursor %q", r.URL.RawQuery, q, cursor)
	}
}

// checkQueryRefusal checks what checkQuery refused: the query as a whole
// (malformed, or naming a parameter outside takes), or a parameter of
// takes that needs a value and was given an empty one.
func checkQueryRefusal(t *testing.T, rawQuery string, takes []string, err error) {
	t.Helper()
	var invalid *uds.InvalidError
	if !errors.As(err, &invalid) || invalid.Field == "query" {
		checkInvalidField(t, err, "query")
		return
	}
	q, parseErr := url.ParseQuery(rawQuery)
	if parseErr != nil || !valued[invalid.Field] || !slices.Contains(takes, invalid.Field) || !slices.Contains(q[invalid.Field], "") {
		t.Fatalf("?%s refused as %v: not an empty value of a parameter the route takes with one", rawQuery, err)
	}
}

// FuzzItemQuery parses the query strings of the item routes as each
// method takes them (checkQuery, then parseItemQuery): a refusal is a 400
// naming the parameter; an accepted version (?version=, ?restore=) is the
// number the parameter writes, as ETags write numbers, from 0 to
// uds.MaxVersion; ?history takes no value, comes without ?version, and
// alone takes limit and cursor, the limit within a list's.
func FuzzItemQuery(f *testing.F) {
	for _, q := range []string{
		"", "version=1", "version=0", "version=9007199254740991", "version=9007199254740992", "version=99999999999999999999",
		"version=01", "version=+1", "version=-0", "version=-1", "version=1e3", "version=1.0", "version=%201", "version=%31",
		"version=", "version", "version=1&version=1", "Version=1", "versoin=1", "restore=5", "restore=x", "restore=", "restore=5&restore=6",
		"history", "history=", "history=1", "history=true", "history&history", "history&limit=5", "history&limit=1000", "history&limit=0",
		"history&limit=1001", "history&cursor=abc.def", "history&cursor=", "limit=5", "cursor=x", "history&version=1", "version=1&limit=2",
		"history&restore=1", "&&", "=", "history;limit=5", "version=%zz",
	} {
		for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
			f.Add(m, q)
		}
	}
	f.Fuzz(func(t *testing.T, method, rawQuery string) {
		r := &http.Request{Method: method, URL: &url.URL{Path: "/", RawQuery: rawQuery}, Header: http.Header{}}
		in := []byte(rawQuery)
		if err := checkQuery(r, itemRouteQuery[method]); err != nil {
			checkRefusal(t, in, err)
			checkQueryRefusal(t, rawQuery, itemRouteQuery[method], err)
			return
		}
		q, err := parseItemQuery(r)
		if err != nil {
			checkRefusal(t, in, err)
			checkInvalidField(t, err, "query", "version", "restore", "history", "limit", "cursor")
			return
		}
		params, _ := url.ParseQuery(rawQuery)
		version := noVersion
		for _, name := range []string{"version", "restore"} {
			if params.Has(name) {
				if v, err := strconv.ParseInt(params.Get(name), 10, 64); err == nil {
					version = v
				}
				if strconv.FormatInt(version, 10) != params.Get(name) || version < 0 || version > uds.MaxVersion {
					t.Fatalf("%s ?%s: %s=%q taken as version %d", method, rawQuery, name, params.Get(name), q.version)
				}
			}
		}
		paged := params.Has("limit") || params.Has("cursor")
		switch {
		case q.version != version:
			t.Fatalf("%s ?%s: version %d taken, the query names %d", method, rawQuery, q.version, version)
		case q.history != params.Has("history") || q.history && params.Get("history") != "":
			t.Fatalf("%s ?%s: history taken as %v", method, rawQuery, q.history)
		case q.history && params.Has("version"), !q.history && paged:
			t.Fatalf("%s ?%s: accepted", method, rawQuery)
		case q.history && (q.limit < 1 || q.limit > maxLimit || q.cursor != params.Get("cursor")):
			t.Fatalf("%s ?%s: limit %d and cursor %q taken", method, rawQuery, q.limit, q.cursor)
		}
	})
}

// FuzzIfMatch parses If-Match values, and If-None-Match values against an
// item's ETag: both refuse the same malformed values (400, naming the
// header); an accepted If-Match holds the UDS revisions its tags name,
// each tag as UDS writes it, and the ETags of those revisions give it
// back; a revision If-Match matches, If-None-Match matches too.
func FuzzIfMatch(f *testing.F) {
	for _, v := range []string{
		`"1-lq2x0a"`, `"1-lq2x0a", "2-lq2x0a"`, `*`, `W/"1-lq2x0a"`, `"1-lq2x0a", *`, `"99-xyz"`, `1-abc`, ` `, ``, `,`, `"`, `""`,
		`"a"b"`, `W/`, `W/"x"`, `w/"x"`, `"05-0"`, `"+5-0"`, `"1-A"`, `"1--5"`, `"1-"`, `"-1-a"`, `"1-a" "2-b"`, `"a,b"`,
		`"1-a",,"2-b"`, strings.Repeat(`"1-a",`, 16), strings.Repeat(`"1-a",`, 17), `"9007199254740992-0"`, `"9223372036854775808-0"`,
	} {
		f.Add(v, int64(1), int64(1700000000000))
	}
	f.Fuzz(func(t *testing.T, v string, version, millis int64) {
		rev := uds.Revision{Version: version & uds.MaxVersion, Created: time.UnixMilli(millis).UTC()}
		p, err := parseIfMatch(v)
		none, noneErr := noneMatch([]string{v}, rev.ETag())
		if (err == nil) != (noneErr == nil) {
			t.Fatalf("%q: If-Match %v, If-None-Match %v", v, err, noneErr)
		}
		if err != nil {
			checkRefusal(t, []byte(v), err)
			checkInvalidField(t, err, "If-Match")
			checkInvalidField(t, noneErr, "If-None-Match")
			return
		}
		tags, err := entityTags(v)
		if err != nil || len(tags) < 1 || len(tags) > maxEntityTags || p.Any != slices.Contains(tags, "*") {
			t.Fatalf("%q read as %+v from tags %q (%v)", v, p, tags, err)
		}
		var etags []string
		for _, r := range p.Revisions {
			if r.Version < 0 { // the sentinel of a value naming no UDS revision
				if p.Any || len(p.Revisions) != 1 {
					t.Fatalf("%q read as %+v", v, p)
				}
				continue
			}
			if e := r.ETag(); slices.Contains(tags, e) {
				etags = append(etags, e)
				continue
			}
			t.Fatalf("%q names revision %+v, whose ETag %s is none of its tags %q", v, r, r.ETag(), tags)
		}
		if p.Any {
			etags = append(etags, "*")
		}
		if len(etags) > 0 {
			if again, err := parseIfMatch(strings.Join(etags, ", ")); err != nil || !reflect.DeepEqual(again, p) {
				t.Fatalf("%q read as %+v; its ETags %q as %+v (%v)", v, p, etags, again, err)
			}
		}
		if p.Matches(rev) != slices.ContainsFunc(tags, func(tag string) bool { return tag == "*" || tag == rev.ETag() }) {
			t.Fatalf("%q read as %+v: matches %s %v", v, p, rev.ETag(), p.Matches(rev))
		}
		if p.Matches(rev) && !none {
			t.Fatalf("%q matches %s as If-Match, not as If-None-Match", v, rev.ETag())
		}
	})
}

// FuzzContentEncoding reads write bodies in any Content-Encoding, gzip
// compressed or not: codings other than gzip and identity, and gzip twice,
// are refused with a 415; a body is read as what it expands to, bounded as a plain
// body is (413), and one that does not expand is refused (400).
func FuzzContentEncoding(f *testing.F) {
	good := `{"data":{"a":1}}`
	zipped := string(gzipOf(f, []byte(good)))
	bomb := string(gzipOf(f, []byte(`{"data":"`+strings.Repeat("a", maxBodyBytes)+`"}`)))
	for _, c := range []struct {
		coding   string
		body     string
		compress bool
	}{
		{"", good, false}, {"identity", good, false}, {"gzip", good, true}, {"x-gzip", good, true}, {" GZIP ", good, true},
		{"gzip", good, false}, {"gzip", zipped + "trailing", false}, {"gzip", zipped + string(gzipOf(f, []byte(" "))), false},
		{"gzip", zipped[:20], false}, {"gzip", bomb, false}, {"br", good, false}, {"gzip, identity", good, true}, {"identity, gzip", good, true}, {"gzip, gzip", good, true}, {"gzip, br", good, true},
		{"deflate", good, false}, {"identity", `{"data":`, false}, {"gzip", `{"data":"` + "\xff" + `"}`, true}, {"gzip", "", false},
	} {
		f.Add(c.coding, []byte(c.body), c.compress)
	}
	f.Fuzz(func(t *testing.T, coding string, body []byte, compress bool) {
		sent := body
		if compress {
			sent = gzipOf(t, body)
		}
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(sent))
		r.Header.Set("Content-Encoding", coding)
		err := requestCoding(r)
		// The reference: a list of codings, of which identity is none and
		// gzip may be one.
		zipped, refused := false, false
		for c := range strings.SplitSeq(coding, ",") {
			switch strings.ToLower(strings.TrimSpace(c)) {
			case "", "identity":
			case "gzip", "x-gzip":
				refused, zipped = refused || zipped, true
			default:
				refused = true
			}
		}
		if refused {
			var e *encodingError
			if !errors.As(err, &e) {
				t.Fatalf("Content-Encoding %q taken (%v)", coding, err)
			}
			checkRefusal(t, []byte(coding), err)
			return
		}
		if err != nil {
			t.Fatalf("Content-Encoding %q refused: %v", coding, err)
		}
		var w uds.Write
		err = readWrite(r, &w, fuzzNow)
		// The reference: what the body expands to, read up to one byte
		// past the limit.
		plain, readErr := sent, error(nil)
		if zipped {
			plain, readErr = gunzip(sent, maxBodyBytes+1)
		}
		var tooLarge *uds.TooLargeError
		switch {
		case readErr != nil:
			if err == nil {
				t.Fatalf("a body that does not expand (%v) is read as %+v", readErr, w)
			}
			checkRefusal(t, body, err)
		case len(plain) > maxBodyBytes:
			if !errors.As(err, &tooLarge) {
				t.Fatalf("a body of %d bytes is answered %v", len(plain), err)
			}
		default:
			var want uds.Write
			wantErr := parseWrite(plain, &want, fuzzNow)
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) ||
				!bytes.Equal(w.Data, want.Data) || w.ClassName != want.ClassName {
				t.Fatalf("a %q body is read as %+v (%v); its plain form as %+v (%v)", coding, w, err, want, wantErr)
			}
		}
	})
}

// gunzip expands z, at most limit bytes of it.
func gunzip(z []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(zr, limit))
}
