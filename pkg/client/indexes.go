package client

import (
	"context"
	"fmt"
	"iter"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"time"
)

// A namespace's policy declares indexes: fields of its items' data that
// queries select and order them by. A new index is built from the items
// already stored before it answers queries (BuildIndexes); from then on
// every write keeps it.

// Index is one index a namespace declares: the value at Path, a JSON
// Pointer into an item's data ("/status"; "" for the whole value), when
// it has Type, "string" or "number". An item whose value there is missing
// or of the other type is not in the index. Name (letters, digits, '_'
// and '-') is what queries give.
type Index struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
	// State is "building" until the index holds the items stored before
	// it was declared, then "ready"; ItemsIndexed counts the items its
	// build indexed. The server sets both: SetPolicy does not send them.
	State        string `json:"state,omitempty"`
	ItemsIndexed int64  `json:"itemsIndexed,omitempty"`
}

// IndexBuild is the work a change of a namespace's indexes left: building
// the indexes not yet ready and removing the entries of the indexes
// dropped. It may start at SettlesAt, once every function of the
// deployment writes under the change.
type IndexBuild struct {
	SettlesAt time.Time `json:"settlesAt"`
	// DroppedIndexes counts the dropped indexes whose entries remain;
	// EntriesRemoved the entries removed so far.
	DroppedIndexes int   `json:"droppedIndexes"`
	EntriesRemoved int64 `json:"entriesRemoved"`
}

// declared is what a policy body declares of indexes: their names, paths
// and types, without the state the server reports.
func declared(ixs []Index) []Index {
	if ixs == nil {
		return nil
	}
	out := make([]Index, len(ixs))
	for i, ix := range ixs {
		out[i] = Index{Name: ix.Name, Path: ix.Path, Type: ix.Type}
	}
	return out
}

// IndexBuildStep is the answer to one step of a namespace's index build:
// the policy as the step left it, whether the build is Done (every index
// ready, every dropped index's entries removed) and, while it is not, how
// long to wait before the next step: 0 to go on at once, or until the
// change settles.
type IndexBuildStep struct {
	Policy
	Done       bool          `json:"-"`
	RetryAfter time.Duration `json:"-"`
}

// BuildIndexesStep runs one bounded step of a namespace's index build (at
// most some seconds of the server's work). A step with nothing left to do
// is Done at once; a step before the change settles does nothing.
func (c *Client) BuildIndexesStep(ctx context.Context, app, namespace string) (IndexBuildStep, error) {
	var s IndexBuildStep
	r := request{method: http.MethodPost, path: adminNamespace(app, namespace) + "/indexes/build", retry: always}
	res, err := c.call(ctx, r, &s.Policy, http.StatusOK, http.StatusAccepted)
	if err == nil {
		s.Done = res.status == http.StatusOK
		s.RetryAfter = retryAfter(res.header)
	}
	return s, err
}

// BuildIndexes runs a namespace's index build step after step, waiting as
// each step's answer says, until every index is ready and every dropped
// index's entries are removed, and returns the policy then; or it returns
// ctx's error. progress, if not nil, is told of each step that left work.
func (c *Client) BuildIndexes(ctx context.Context, app, namespace string, progress ...func(IndexBuildStep)) (Policy, error) {
	for {
		s, err := c.BuildIndexesStep(ctx, app, namespace)
		if err != nil || s.Done {
			return s.Policy, err
		}
		for _, f := range progress {
			f(s)
		}
		select {
		case <-ctx.Done():
			return s.Policy, ctx.Err()
		case <-time.After(s.RetryAfter):
		}
	}
}

// IndexQuery selects a namespace's items by one of its indexes, in the
// index's order (by value, then by key), ascending unless Descending, with
// Limit items a page (1..1000; 0: the server's 100).
//
// At most one selection: Eq; Prefix, for a string index; or From
// (inclusive) and To (exclusive), either optional. Eq, From and To are a
// string or a number (of any Go integer or float kind, or json.Number);
// nil is no bound. A string is sent as it is, so a number index also
// takes its bound as a number in JSON syntax ("-1.5"). Prefix "" is no
// selection, as every string has that prefix.
type IndexQuery struct {
	Index        string
	Eq, From, To any
	Prefix       string
	Descending   bool
	Limit        int
}

// QueryPage is one page of a query's items, each as a list page shows it;
// Cursor continues the query ("" after the last page).
type QueryPage struct {
	Items  []Item `json:"items"`
	Cursor string `json:"cursor"`
}

// QueryPage reads the page of q's items after cursor ("" for the first).
// It is ErrIndexNotReady while the index is still building, and
// ErrInvalid (naming the parameter) for an index the namespace does not
// declare or a bound the index cannot hold.
func (c *Client) QueryPage(ctx context.Context, app, namespace string, q IndexQuery, cursor string) (QueryPage, error) {
	query := limitQuery(cursor, q.Limit)
	query.Set("index", q.Index)
	for _, b := range []struct {
		name  string
		value any
	}{{"eq", q.Eq}, {"from", q.From}, {"to", q.To}} {
		if b.value == nil {
			continue
		}
		v, err := indexValue(b.value)
		if err != nil {
			return QueryPage{}, fmt.Errorf("query bound %s: %w", b.name, err)
		}
		query.Set(b.name, v)
	}
	if q.Prefix != "" {
		query.Set("prefix", q.Prefix)
	}
	if q.Descending {
		query.Set("sortOrder", "DESC")
	}
	var p QueryPage
	path := "/data/" + url.PathEscape(app) + "/" + url.PathEscape(namespace)
	_, err := c.call(ctx, request{method: http.MethodGet, path: path, query: query, retry: always}, &p, http.StatusOK)
	return p, err
}

// Query iterates over every item of q, page after page.
func (c *Client) Query(ctx context.Context, app, namespace string, q IndexQuery) iter.Seq2[Item, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]Item, string, error) {
		p, err := c.QueryPage(ctx, app, namespace, q, cursor)
		return p.Items, p.Cursor, err
	})
}

// indexValue writes a query bound as the API reads it: a string as it
// is, a number in JSON syntax. Kinds rather than types are matched, so
// that named types (type Rank int, json.Number) go as what they are.
func indexValue(v any) (string, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return rv.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", fmt.Errorf("%v is no JSON number", f)
		}
		// 'g' writes JSON's syntax: an exponent as "1e+21", never a
		// leading "+" or ".".
		return strconv.FormatFloat(f, 'g', -1, rv.Type().Bits()), nil
	}
	return "", fmt.Errorf("is a %T: want a string or a number", v)
}
