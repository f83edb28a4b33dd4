package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// rank is a named number type, as a caller's own types are.
type rank int

// queryIDs runs q to its end and lists the items' ids (id/sortKey for
// list items), checking that each comes whole, as a list page shows it.
func queryIDs(ctx context.Context, c *client.Client, namespace string, q client.IndexQuery) (string, error) {
	var ids []string
	for it, err := range c.Query(ctx, app, namespace, q) {
		if err != nil {
			return strings.Join(ids, " "), err
		}
		if it.ApplicationUUID != app || it.Namespace != namespace || len(it.Data) == 0 || it.CreatedDate.IsZero() || it.Version == 0 {
			return "", fmt.Errorf("item not shown whole: %+v", it)
		}
		id := it.ID
		if it.SortKey != "" {
			id += "/" + it.SortKey
		}
		ids = append(ids, id)
	}
	return strings.Join(ids, " "), nil
}

// states lists a policy's indexes as "name:state:itemsIndexed".
func states(p client.Policy) string {
	var s []string
	for _, ix := range p.Indexes {
		s = append(s, fmt.Sprintf("%s:%s:%d", ix.Name, ix.State, ix.ItemsIndexed))
	}
	return strings.Join(s, " ")
}

// TestIndexes declares a namespace's indexes through the client, builds
// them, queries them every way the client offers, declares one more while
// keeping the others, and drops them all.
func TestIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := apitest.Server(t, 10*time.Second)
	admin := newClient(t, url)
	c := newClient(t, url, client.WithSubject("alice"))
	for _, w := range []struct {
		key  client.Key
		data string
	}{
		{client.Key{ID: "t1"}, `{"status":"open","rank":2}`},
		{client.Key{ID: "t2"}, `{"status":"done","rank":1}`},
		{client.Key{ID: "t3"}, `{"status":"open","rank":-1.5}`},
		{client.Key{ID: "t4"}, `{"status":"","rank":10}`},
		{client.Key{ID: "t5"}, `{"status":7,"rank":"x"}`}, // in neither index: the types differ
		{client.Key{ID: "t6"}, `{"status":"open","rank":3}`},
		{client.Key{ID: "list", SortKey: "a"}, `{"status":"opening","rank":0}`},
	} {
		k := w.key
		k.App, k.Namespace = app, "tasks"
		if _, err := c.Create(ctx, k, json.RawMessage(w.data)); err != nil {
			t.Fatal(err)
		}
	}
	declared := []client.Index{{Name: "byStatus", Path: "/status", Type: "string"}, {Name: "byRank", Path: "/rank", Type: "number"}}
	p, err := admin.SetPolicy(ctx, app, "tasks", client.Policy{Access: "shared", Indexes: declared})
	if err != nil || states(p) != "byStatus:building:0 byRank:building:0" || p.IndexBuild == nil || p.IndexBuild.SettlesAt.IsZero() {
		t.Fatalf("SetPolicy: %s, build %+v, %v", states(p), p.IndexBuild, err)
	}
	if p.Indexes[0].Path != "/status" || p.Indexes[1].Type != "number" {
		t.Errorf("the indexes come back as %+v", p.Indexes)
	}
	_, err = c.QueryPage(ctx, app, "tasks", client.IndexQuery{Index: "byStatus"}, "")
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrIndexNotReady) || errors.Is(err, client.ErrConflict) || !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("a query before the build: %v, want ErrIndexNotReady (409) alone", err)
	}
	var steps []client.IndexBuildStep
	p, err = admin.BuildIndexes(ctx, app, "tasks", func(s client.IndexBuildStep) { steps = append(steps, s) })
	if err != nil || states(p) != "byStatus:ready:6 byRank:ready:6" || p.IndexBuild != nil {
		t.Fatalf("BuildIndexes: %s, build %+v, %v", states(p), p.IndexBuild, err)
	}
	for _, s := range steps {
		if s.Done || s.IndexBuild == nil {
			t.Errorf("progress told of a step that left no work: %+v", s)
		}
	}
	if s, err := admin.BuildIndexesStep(ctx, app, "tasks"); err != nil || !s.Done || s.RetryAfter != 0 || states(s.Policy) != states(p) {
		t.Errorf("a step of a finished build: %+v, %v; want done at once", s, err)
	}
	if got, err := admin.Policy(ctx, app, "tasks"); err != nil || states(got) != states(p) {
		t.Errorf("Policy: %s, %v", states(got), err)
	}
	for got, err := range admin.Policies(ctx, app) {
		if err != nil || states(got) != states(p) {
			t.Errorf("Policies: %s %s, %v", got.Namespace, states(got), err)
		}
	}

	t.Run("query", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			q    client.IndexQuery
			want string
		}{
			{"eq", client.IndexQuery{Index: "byStatus", Eq: "open"}, "t1 t3 t6"},
			{"eq a page at a time", client.IndexQuery{Index: "byStatus", Eq: "open", Limit: 1}, "t1 t3 t6"},
			{"eq the empty string", client.IndexQuery{Index: "byStatus", Eq: ""}, "t4"},
			{"prefix", client.IndexQuery{Index: "byStatus", Prefix: "open"}, "t1 t3 t6 list/a"},
			{"descending", client.IndexQuery{Index: "byStatus", Prefix: "open", Descending: true, Limit: 2}, "list/a t6 t3 t1"},
			{"every string", client.IndexQuery{Index: "byStatus"}, "t4 t2 t1 t3 t6 list/a"},
			{"every number", client.IndexQuery{Index: "byRank"}, "t3 list/a t2 t1 t6 t4"},
			{"from and to", client.IndexQuery{Index: "byRank", From: 0, To: 3}, "list/a t2 t1"},
			{"floats", client.IndexQuery{Index: "byRank", From: -1.5, To: float32(0.5)}, "t3 list/a"},
			{"from alone", client.IndexQuery{Index: "byRank", From: rank(3)}, "t6 t4"},
			{"to alone, as a string", client.IndexQuery{Index: "byRank", To: "1"}, "t3 list/a"},
			{"json.Number", client.IndexQuery{Index: "byRank", Eq: json.Number("1e1")}, "t4"},
			{"unsigned", client.IndexQuery{Index: "byRank", Eq: uint8(2)}, "t1"},
			{"no match", client.IndexQuery{Index: "byStatus", Eq: "nobody"}, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if got, err := queryIDs(ctx, c, "tasks", tc.q); err != nil || got != tc.want {
					t.Errorf("got %q, %v; want %q", got, err, tc.want)
				}
			})
		}
	})
	t.Run("page", func(t *testing.T) {
		q := client.IndexQuery{Index: "byStatus", Prefix: "open", Limit: 3}
		first, err := c.QueryPage(ctx, app, "tasks", q, "")
		if err != nil || len(first.Items) != 3 || first.Cursor == "" || first.Items[0].ID != "t1" {
			t.Fatalf("first page: %+v, %v", first, err)
		}
		last, err := c.QueryPage(ctx, app, "tasks", q, first.Cursor)
		if err != nil || len(last.Items) != 1 || last.Items[0].SortKey != "a" || last.Cursor != "" {
			t.Errorf("last page: %+v, %v", last, err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			q       client.IndexQuery
			message string // the APIError's; "" for a bound the client refuses before sending
			details string // a part of the error's text
		}{
			{"unknown index", client.IndexQuery{Index: "byStatsu"}, "Invalid index", "byStatus, byRank"},
			{"two selections", client.IndexQuery{Index: "byStatus", Eq: "open", Prefix: "o"}, "Invalid prefix", "cannot be given with eq"},
			{"prefix of numbers", client.IndexQuery{Index: "byRank", Prefix: "1"}, "Invalid prefix", "holds numbers"},
			{"a string that is no number", client.IndexQuery{Index: "byRank", Eq: "two"}, "Invalid eq", "must be a number"},
			{"a bound of another type", client.IndexQuery{Index: "byStatus", Eq: true}, "", "query bound eq: is a bool"},
			{"not a number", client.IndexQuery{Index: "byRank", From: math.NaN()}, "", "query bound from: NaN is no JSON number"},
			{"infinity", client.IndexQuery{Index: "byRank", To: math.Inf(1)}, "", "query bound to: +Inf is no JSON number"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := c.QueryPage(ctx, app, "tasks", tc.q, "")
				var apiErr *client.APIError
				switch {
				case err == nil || !strings.Contains(err.Error(), tc.details):
					t.Errorf("got %v; want an error saying %q", err, tc.details)
				case tc.message == "" && errors.As(err, &apiErr):
					t.Errorf("got %v from the server; want the client to refuse the bound", err)
				case tc.message != "" && (!errors.Is(err, client.ErrInvalid) || !errors.As(err, &apiErr) || apiErr.Message != tc.message):
					t.Errorf("got %v; want ErrInvalid %q", err, tc.message)
				}
			})
		}
	})
	t.Run("declare one more", func(t *testing.T) {
		// The policy read back goes out again as it came, the indexes'
		// states with it: SetPolicy sends what a declaration takes.
		p, err := admin.Policy(ctx, app, "tasks")
		if err != nil {
			t.Fatal(err)
		}
		p.Indexes = append(p.Indexes, client.Index{Name: "whole", Path: "", Type: "string"})
		p, err = admin.SetPolicy(ctx, app, "tasks", p)
		if err != nil || states(p) != "byStatus:ready:6 byRank:ready:6 whole:building:0" {
			t.Fatalf("SetPolicy: %s, %v", states(p), err)
		}
		if got, err := queryIDs(ctx, c, "tasks", client.IndexQuery{Index: "byStatus", Eq: "done"}); err != nil || got != "t2" {
			t.Errorf("an index kept while another builds: %q, %v", got, err)
		}
		if p, err = admin.BuildIndexes(ctx, app, "tasks"); err != nil || states(p) != "byStatus:ready:6 byRank:ready:6 whole:ready:0" {
			t.Errorf("BuildIndexes: %s, %v", states(p), err)
		}
	})
	t.Run("drop them all", func(t *testing.T) {
		p, err := admin.SetPolicy(ctx, app, "tasks", client.Policy{Access: "shared"})
		if err != nil || p.Indexes != nil || p.IndexBuild == nil || p.IndexBuild.DroppedIndexes != 3 {
			t.Fatalf("SetPolicy without indexes: %s, build %+v, %v", states(p), p.IndexBuild, err)
		}
		if p, err = admin.BuildIndexes(ctx, app, "tasks"); err != nil || p.IndexBuild != nil {
			t.Fatalf("BuildIndexes: build %+v, %v", p.IndexBuild, err)
		}
		if _, err := c.QueryPage(ctx, app, "tasks", client.IndexQuery{Index: "byStatus"}, ""); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("a query of a dropped index: %v, want ErrInvalid", err)
		}
	})
}

// buildFake answers the build route with the statuses and Retry-After
// values it is given, in turn, and counts the requests.
type buildFake struct {
	mu       sync.Mutex
	answers  []buildAnswer
	requests []string
}

type buildAnswer struct {
	status     int
	retryAfter string
}

func (f *buildFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	a := f.answers[min(len(f.requests), len(f.answers))-1]
	w.Header().Set("Content-Type", "application/json")
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.WriteHeader(a.status)
	switch a.status {
	case http.StatusOK:
		fmt.Fprint(w, `{"applicationUuid":"`+app+`","namespace":"tasks","access":"shared","schema":null,"version":2,
			"indexes":[{"name":"byStatus","path":"/status","type":"string","state":"ready","itemsIndexed":12}]}`)
	case http.StatusAccepted:
		fmt.Fprint(w, `{"applicationUuid":"`+app+`","namespace":"tasks","access":"shared","schema":null,"version":2,
			"indexes":[{"name":"byStatus","path":"/status","type":"string","state":"building","itemsIndexed":5}],
			"indexBuild":{"settlesAt":"2026-01-01T00:00:00.000Z","droppedIndexes":1,"entriesRemoved":3}}`)
	default:
		fmt.Fprint(w, `{"error":"Key not found","timestamp":"2026-01-01T00:00:00Z"}`)
	}
}

// TestBuildIndexesSteps checks BuildIndexes's loop against answers a real
// build gives only by chance of timing: it goes on at once after
// Retry-After 0, waits out a longer one, and stops at an error or when
// its context ends.
func TestBuildIndexesSteps(t *testing.T) {
	t.Parallel()
	accepted := func(retryAfter string) buildAnswer { return buildAnswer{http.StatusAccepted, retryAfter} }
	done := buildAnswer{status: http.StatusOK}
	for _, tc := range []struct {
		name     string
		answers  []buildAnswer
		timeout  time.Duration
		requests int
		steps    int // told as progress
		minTime  time.Duration
		err      error // nil: done, byStatus ready
	}{
		{"done at once", []buildAnswer{done}, time.Minute, 1, 0, 0, nil},
		{"goes on at once", []buildAnswer{accepted("0"), accepted(""), done}, time.Minute, 3, 2, 0, nil},
		{"waits out Retry-After", []buildAnswer{accepted("1"), done}, time.Minute, 2, 1, time.Second, nil},
		{"stops when its context ends", []buildAnswer{accepted("30")}, 2 * time.Second, 1, 1, 0, context.DeadlineExceeded},
		{"stops at an error", []buildAnswer{accepted("0"), {status: http.StatusNotFound}}, time.Minute, 2, 1, 0, client.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &buildFake{answers: tc.answers}
			srv := httptest.NewServer(f)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			var steps []client.IndexBuildStep
			start := time.Now()
			p, err := newClient(t, srv.URL).BuildIndexes(ctx, app, "tasks", func(s client.IndexBuildStep) { steps = append(steps, s) })
			took := time.Since(start)
			switch {
			case tc.err == nil && (err != nil || states(p) != "byStatus:ready:12" || p.IndexBuild != nil):
				t.Errorf("got %s, build %+v, %v; want byStatus ready", states(p), p.IndexBuild, err)
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Errorf("got %v, want %v", err, tc.err)
			}
			if len(f.requests) != tc.requests || f.requests[0] != "POST /rest/api/v1/admin/apps/"+app+"/namespaces/tasks/indexes/build" {
				t.Errorf("requests %q, want %d of the build route", f.requests, tc.requests)
			}
			if took < tc.minTime || took > tc.minTime+5*time.Second {
				t.Errorf("took %v, want %v and a little", took, tc.minTime)
			}
			// Every 202 is told as progress, with what the server said.
			if len(steps) != tc.steps {
				t.Errorf("progress told of %d steps, want %d", len(steps), tc.steps)
			}
			for _, s := range steps {
				b := s.IndexBuild
				if s.Done || b == nil || b.DroppedIndexes != 1 || b.EntriesRemoved != 3 || !b.SettlesAt.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || states(s.Policy) != "byStatus:building:5" {
					t.Errorf("progress told of %+v (build %+v)", s, b)
				}
			}
		})
	}
}
