package httpapi

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

// fuzzIndexPolicy declares a ready string index, a ready number index and
// one still building.
var fuzzIndexPolicy = uds.Policy{Indexes: []uds.Index{
	{Name: "byStatus", Path: "/status", Type: uds.IndexString, ID: "byStatus.1", Ready: true},
	{Name: "byRank", Path: "/rank", Type: uds.IndexNumber, ID: "byRank.1", Ready: true},
	{Name: "byTag", Path: "/tag", Type: uds.IndexString, ID: "byTag.2"},
}}

// FuzzIndexQuery parses the query strings of a namespace's query
// (checkQuery, then parseIndexQuery): a refusal is a 400 naming the
// parameter (or, for the index still building, a 409); an accepted query
// names a ready index, at most one selection (eq, prefix, or from and
// to), each bound as its index reads values (a string as given, a number
// as JSON writes one), a prefix only of strings, and a limit within a
// list's.
func FuzzIndexQuery(f *testing.F) {
	for _, q := range []string{
		"", "index=byStatus", "index=byStatus&eq=open", "index=byStatus&eq=", "index=byStatus&prefix=op", "index=byRank&prefix=1",
		"index=byRank&eq=1", "index=byRank&eq=-0", "index=byRank&eq=1e400", "index=byRank&eq=0x10", "index=byRank&eq=01", "index=byRank&eq=1.5e-3",
		"index=byRank&from=1&to=2", "index=byRank&from=2&to=1", "index=byStatus&from=a", "index=byStatus&to=z&sortOrder=DESC",
		"index=byStatus&eq=a&prefix=b", "index=byStatus&eq=a&from=b", "index=byStatus&prefix=a&to=b", "index=byTag&eq=x",
		"index=nope", "index=byStatus&limit=0", "index=byStatus&limit=1001", "index=byStatus&limit=5&cursor=abc",
		"index=byStatus&eq=%ff", "index=byStatus&eq=" + strings.Repeat("x", 513), "index=byStatus&sortOrder=up", "index=byRank&eq=NaN",
		"index=byRank&eq=%20", "index=byRank&eq=1%20", "index=byStatus&equals=a", "index=byStatus&eq=a&eq=b",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r := &http.Request{Method: "GET", URL: &url.URL{Path: "/", RawQuery: rawQuery}, Header: http.Header{}}
		in := []byte(rawQuery)
		if err := checkQuery(r, indexQuery); err != nil {
			checkRefusal(t, in, err)
			checkQueryRefusal(t, rawQuery, indexQuery, err)
			return
		}
		params, _ := url.ParseQuery(rawQuery)
		q, err := parseIndexQuery(params, "ns", fuzzIndexPolicy)
		var notReady *uds.IndexNotReadyError
		switch {
		case errors.As(err, &notReady):
			if params.Get("index") != "byTag" {
				t.Fatalf("%q: %v", rawQuery, err)
			}
			return
		case err != nil:
			checkRefusal(t, in, err)
			checkInvalidField(t, err, "index", "eq", "prefix", "from", "to", "limit", "sortOrder")
			return
		}
		if q.Index.Name != params.Get("index") || !q.Index.Ready {
			t.Fatalf("%q: index %+v taken", rawQuery, q.Index)
		}
		if q.Limit < 1 || q.Limit > maxLimit || q.Descending != strings.EqualFold(params.Get("sortOrder"), "DESC") {
			t.Fatalf("%q: limit %d, descending %v taken", rawQuery, q.Limit, q.Descending)
		}
		families := 0
		for _, b := range []struct {
			name string
			v    *uds.IndexValue
		}{{"eq", q.Eq}, {"prefix", q.Prefix}, {"from", q.From}, {"to", q.To}} {
			if (b.v != nil) != params.Has(b.name) {
				t.Fatalf("%q: %s taken as %v", rawQuery, b.name, b.v)
			}
			if b.v == nil {
				continue
			}
			if b.name != "to" {
				families++
			}
			given := params.Get(b.name)
			if q.Index.Type == uds.IndexString {
				if b.v.Str != given || len(given) > uds.MaxIndexedStringBytes {
					t.Fatalf("%q: %s taken as %q", rawQuery, b.name, b.v.Str)
				}
				continue
			}
			f, perr := strconv.ParseFloat(given, 64)
			if b.name == "prefix" || perr != nil || math.IsInf(f, 0) || f != b.v.Num {
				t.Fatalf("%q: %s taken as %v", rawQuery, b.name, b.v.Num)
			}
		}
		if families > 1 || q.To != nil && (q.Eq != nil || q.Prefix != nil) {
			t.Fatalf("%q: more than one selection taken", rawQuery)
		}
	})
}
