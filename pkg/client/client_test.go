package client_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

const (
	app      = "d53065bd-f932-4841-83fb-849717d8df0f"
	otherApp = "0b4e7c4e-6f0a-4b43-9d53-2f6c1e0f6a11"
)

func newClient(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, append([]client.Option{client.WithRetries(4, time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// step is one step of a test that takes the server through admin calls
// in order: the call, and the answer it must give as text, or the error
// it must return with a part of the error's text.
type step struct {
	name string
	call func() (string, error)
	want string // the answer, when err is nil
	err  error
	text string // a part of the error
}

// runSteps runs steps in order, each a subtest.
func runSteps(t *testing.T, steps []step) {
	t.Helper()
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got, err := s.call()
			if s.err != nil {
				if !errors.Is(err, s.err) || !strings.Contains(fmt.Sprint(err), s.text) {
					t.Errorf("%v, want %v saying %q", err, s.err, s.text)
				}
				return
			}
			if err != nil || got != s.want {
				t.Errorf("%s, %v; want %s", got, err, s.want)
			}
		})
	}
}

func TestItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, apitest.Server(t, 10*time.Second), client.WithSubject("alice"))
	for _, key := range []client.Key{
		{App: app, Namespace: "prefs", ID: "user 1"},
		{App: app, Namespace: "feed", ID: "user1", SortKey: "2024/01/15 ümlaut?#%"},
	} {
		t.Run(key.Namespace, func(t *testing.T) {
			it, err := c.Create(ctx, key, map[string]any{"theme": "dark"}, client.ClassName("Prefs"), client.TTL(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if it.Version != 1 || it.ETag == "" || it.ClassName != "Prefs" || it.SortKey != key.SortKey || it.CreatedBySubject != "alice" ||
				it.ExpiresAt.Before(time.Now().Add(59*time.Minute)) || string(it.Data) != `{"theme":"dark"}` {
				t.Fatalf("created %+v", it)
			}
			html := client.Key{App: key.App, Namespace: key.Namespace, ID: key.ID + "-html", SortKey: key.SortKey}
			if it, err := c.Create(ctx, html, json.RawMessage(`{"html":"<b>&amp;</b>"}`)); err != nil || string(it.Data) != `{"html":"<b>&amp;</b>"}` {
				t.Errorf("data with HTML characters came back as %s, %v", it.Data, err)
			}
			if _, err := c.Create(ctx, key, 1); !errors.Is(err, client.ErrConflict) {
				t.Errorf("a second create: %v, want ErrConflict", err)
			}
			got, err := c.Get(ctx, key)
			if err != nil || got.ETag != it.ETag {
				t.Fatalf("get: %+v, %v", got, err)
			}
			var data struct{ Theme string }
			if err := got.Decode(&data); err != nil || data.Theme != "dark" {
				t.Errorf("decode: %+v, %v", data, err)
			}
			if _, err := c.Get(ctx, key, client.IfNoneMatch(it.ETag)); !errors.Is(err, client.ErrNotModified) {
				t.Errorf("get with the current ETag: %v, want ErrNotModified", err)
			}
			updated, err := c.Update(ctx, key, json.RawMessage(`{"theme":"light"}`), client.IfMatch(it.ETag))
			if err != nil || updated.Version != 2 || updated.ETag == it.ETag {
				t.Fatalf("update: %+v, %v", updated, err)
			}
			if _, err := c.Update(ctx, key, 3, client.IfMatch(it.ETag)); !errors.Is(err, client.ErrPreconditionFailed) {
				t.Errorf("update at a stale ETag: %v, want ErrPreconditionFailed", err)
			}
			if err := c.Delete(ctx, key, client.IfMatch(it.ETag)); !errors.Is(err, client.ErrPreconditionFailed) {
				t.Errorf("delete at a stale ETag: %v, want ErrPreconditionFailed", err)
			}
			if err := c.Delete(ctx, key, client.IfMatch(updated.ETag)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Get(ctx, key); !errors.Is(err, client.ErrNotFound) {
				t.Errorf("get after delete: %v, want ErrNotFound", err)
			}
			if _, err := c.Update(ctx, key, 1); !errors.Is(err, client.ErrNotFound) {
				t.Errorf("update of nothing: %v, want ErrNotFound", err)
			}
			if err := c.Delete(ctx, key); err != nil {
				t.Errorf("delete of nothing: %v", err)
			}
		})
	}
}

func TestErrorsCarryTheServersDetails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := apitest.Server(t, 10*time.Second)
	c := newClient(t, url, client.WithSubject("bob"))
	admin := newClient(t, url)
	if _, err := admin.SetAppLimits(ctx, app, client.Limits{LimitItems: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, client.Key{App: app, Namespace: "q", ID: "1"}, 1); err != nil {
		t.Fatal(err)
	}
	_, err := c.Create(ctx, client.Key{App: app, Namespace: "q", ID: "2"}, 1)
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrQuotaExceeded) || !errors.As(err, &apiErr) {
		t.Fatalf("over the limit: %v, want ErrQuotaExceeded", err)
	}
	if apiErr.Status != 403 || apiErr.Code != "quota_exceeded" || apiErr.User != "bob" || apiErr.UsedItems != 1 || apiErr.LimitItems == nil || *apiErr.LimitItems != 1 || apiErr.LimitBytes != nil {
		t.Errorf("the refusal carries %+v", apiErr)
	}
	q, err := c.Quota(ctx, app)
	if err != nil || q.User != "bob" || q.UsedItems != 1 || q.LimitItems == nil || *q.LimitItems != 1 {
		t.Errorf("own quota: %+v, %v", q, err)
	}
	_, err = c.Get(ctx, client.Key{App: "not-a-uuid", Namespace: "q", ID: "1"})
	if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &apiErr) || apiErr.Message != "Invalid applicationUuid" || apiErr.Details == "" {
		t.Errorf("a bad app: %v (%+v), want ErrInvalid with details", err, apiErr)
	}
}

func TestListsAndBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, apitest.Server(t, 10*time.Second))
	list := client.Key{App: app, Namespace: "feed", ID: "u1"}
	var want []string
	for b := range 3 {
		var ops []client.BatchOp
		for i := range 80 {
			k := list
			k.SortKey = fmt.Sprintf("k%03d", b*80+i)
			want = append(want, k.SortKey)
			ops = append(ops, client.BatchOp{Method: "POST", Key: k, Data: map[string]int{"i": b*80 + i}})
		}
		results, err := c.Batch(ctx, app, false, ops)
		if err != nil || len(results) != 80 || results[0].Status != 201 {
			t.Fatalf("batch: %d results, %v", len(results), err)
		}
		if it, err := results[5].Item(); err != nil || it.ETag == "" || it.SortKey != ops[5].Key.SortKey {
			t.Errorf("a batch result's item: %+v, %v", it, err)
		}
	}
	page, err := c.ListPage(ctx, list, client.ListQuery{Limit: 100}, "")
	if err != nil || len(page.Items) != 100 || page.Cursor == "" {
		t.Fatalf("first page: %d items, cursor %q, %v", len(page.Items), page.Cursor, err)
	}
	var got []string
	for it, err := range c.List(ctx, list, client.ListQuery{Limit: 70}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it.SortKey)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the iterator gave %d keys, want the %d written in order", len(got), len(want))
	}
	got = got[:0]
	for it, err := range c.List(ctx, list, client.ListQuery{Start: "k010", End: "k020", Descending: true}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it.SortKey)
	}
	if len(got) != 10 || got[0] != "k019" || got[9] != "k010" {
		t.Errorf("k010..k020 descending: %v", got)
	}
	// An atomic batch that one operation refuses writes nothing and names it.
	_, err = c.Batch(ctx, app, true, []client.BatchOp{
		{Method: "POST", Key: client.Key{App: app, Namespace: "feed", ID: "u1", SortKey: "new"}, Data: 1},
		{Method: "POST", Key: client.Key{App: app, Namespace: "feed", ID: "u1", SortKey: "k000"}, Data: 1},
	})
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrConflict) || !errors.As(err, &apiErr) || apiErr.FailedIndex == nil || *apiErr.FailedIndex != 1 {
		t.Errorf("atomic batch with a taken key: %v, want ErrConflict at index 1", err)
	}
	if _, err := c.Get(ctx, client.Key{App: app, Namespace: "feed", ID: "u1", SortKey: "new"}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("the refused atomic batch wrote: %v", err)
	}
}

// TestKeysThatNameSomethingElse checks the calls whose path would name
// something other than what they are about: each is refused before it is
// sent (ErrInvalid), and nothing is read, written or deleted.
func TestKeysThatNameSomethingElse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, apitest.Server(t, 10*time.Second))
	list := client.Key{App: app, Namespace: "keep", ID: "l"}
	for _, sk := range []string{"a", "b"} {
		k := list
		k.SortKey = sk
		if _, err := c.Create(ctx, k, 1); err != nil {
			t.Fatal(err)
		}
	}
	asItem := list
	asItem.SortKey = "list" // names the whole list
	withSortKey := list
	withSortKey.SortKey = "a"
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Delete of the sort key list", func() error { return c.Delete(ctx, asItem, client.IfMatch(`"1-x"`)) }},
		{"Get of the sort key list", func() error { _, err := c.Get(ctx, asItem); return err }},
		{"DeleteList of a key with a sort key", func() error { _, err := c.DeleteList(ctx, withSortKey); return err }},
		{"ListPage of a key with a sort key", func() error { _, err := c.ListPage(ctx, withSortKey, client.ListQuery{}, ""); return err }},
		{"Create with an empty id", func() error { _, err := c.Create(ctx, client.Key{App: app, Namespace: "keep"}, 1); return err }},
		{"DeleteList with an empty id", func() error { _, err := c.DeleteList(ctx, client.Key{App: app, Namespace: "keep"}); return err }},
		{"a batch operation in another app", func() error {
			_, err := c.Batch(ctx, app, false, []client.BatchOp{{Method: "POST", Key: client.Key{App: otherApp, Namespace: "keep", ID: "x"}, Data: 1}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, client.ErrInvalid) || errors.As(err, new(*client.APIError)) {
				t.Errorf("%v, want ErrInvalid from the client", err)
			}
		})
	}
	page, err := c.ListPage(ctx, list, client.ListQuery{}, "")
	if err != nil || len(page.Items) != 2 {
		t.Errorf("the list holds %d items, %v; want both", len(page.Items), err)
	}
	for _, a := range []string{app, otherApp} {
		if _, err := c.Get(ctx, client.Key{App: a, Namespace: "keep", ID: "x"}); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("the refused batch wrote in %s: %v", a, err)
		}
	}
}

func TestDeleteListRepeatsUntilDone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	target, err := url.Parse(apitest.Server(t, apitest.Budget))
	if err != nil {
		t.Fatal(err)
	}
	// The proxy cuts the first delete-all short as a server out of time
	// does, whatever the machine's speed: it deletes a few items itself and
	// answers 503 with how many and Retry-After. The rounds after it reach
	// the server, which deletes the rest.
	const cut = 7
	var deletes atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete || deletes.Add(1) > 1 {
			proxy.ServeHTTP(w, r)
			return
		}
		for i := range cut {
			req, _ := http.NewRequest(http.MethodDelete, target.String()+strings.TrimSuffix(r.URL.Path, "/list")+fmt.Sprintf("/%05d", i), nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil || res.StatusCode != http.StatusNoContent {
				t.Errorf("deleting item %d: %v %v", i, res, err)
				return
			}
			res.Body.Close()
		}
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"error":"List not fully deleted","details":"deleted %d items before the time budget ran out","timestamp":"2026-01-01T00:00:00Z","deleted":%d}`, cut, cut)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	list := client.Key{App: app, Namespace: "big", ID: "list"}
	const n = 1200
	for b := range n / 100 {
		ops := make([]client.BatchOp, 100)
		for i := range ops {
			ops[i] = client.BatchOp{Method: "POST", Key: client.Key{App: app, Namespace: "big", ID: "list", SortKey: fmt.Sprintf("%05d", b*100+i)}, Data: strings.Repeat("x", 100)}
		}
		if _, err := c.Batch(ctx, app, false, ops); err != nil {
			t.Fatal(err)
		}
	}
	deleted, err := c.DeleteList(ctx, list)
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.ListPage(ctx, list, client.ListQuery{}, "")
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("after DeleteList: %d items left, %v", len(page.Items), err)
	}
	if deletes.Load() != 2 || deleted != cut {
		t.Errorf("DeleteList sent %d requests and counted %d items deleted in the round cut short; want 2 requests and %d", deletes.Load(), deleted, cut)
	}
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := apitest.Server(t, 10*time.Second)
	admin := newClient(t, url)
	for _, u := range []string{"carol", "dave"} {
		c := newClient(t, url, client.WithSubject(u))
		for _, a := range []string{app, otherApp} {
			if _, err := c.Create(ctx, client.Key{App: a, Namespace: "n", ID: u}, "v"); err != nil {
				t.Fatal(err)
			}
		}
	}
	var users []string
	for u, err := range admin.AppUsers(ctx, app) {
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, u.User)
		if u.Items != 1 || u.Bytes == 0 {
			t.Errorf("user row %+v", u)
		}
	}
	if !slices.Equal(users, []string{"carol", "dave"}) {
		t.Errorf("users %v", users)
	}
	var apps []string
	for a, err := range admin.UserApps(ctx, "carol") {
		if err != nil {
			t.Fatal(err)
		}
		apps = append(apps, a.ApplicationUUID)
	}
	if want := []string{otherApp, app}; !slices.Equal(apps, want) {
		t.Errorf("carol's apps %v, want %v", apps, want)
	}
	if l, err := admin.SetAppLimits(ctx, app, client.Limits{LimitBytes: 5000, LimitItems: 10}); err != nil || l != (client.Limits{LimitBytes: 5000, LimitItems: 10}) {
		t.Fatalf("set app limits: %+v, %v", l, err)
	}
	if l, err := admin.AppLimits(ctx, app); err != nil || l != (client.Limits{LimitBytes: 5000, LimitItems: 10}) {
		t.Errorf("app limits %+v, %v", l, err)
	}
	q, err := admin.SetUserLimits(ctx, app, "carol", client.Limits{LimitItems: -1})
	if err != nil || q.LimitItems != nil || q.LimitBytes == nil || *q.LimitBytes != 5000 || q.UsedItems != 1 {
		t.Errorf("carol's quota after an override: %+v, %v", q, err)
	}
	if err := admin.ClearUserLimits(ctx, app, "carol"); err != nil {
		t.Fatal(err)
	}
	if q, err := admin.UserQuota(ctx, app, "carol"); err != nil || q.LimitItems == nil || *q.LimitItems != 10 {
		t.Errorf("carol's quota after clearing: %+v, %v", q, err)
	}
	r, err := admin.Recompute(ctx, app, "carol")
	if err != nil || !r.Applied || r.Drift.Bytes != 0 || r.Drift.Items != 0 || r.UsedItems != 1 {
		t.Errorf("recompute: %+v, %v", r, err)
	}
	p, err := admin.SetPolicy(ctx, app, "typed", client.Policy{Access: "owner-write", Schema: json.RawMessage(`{"type":"object"}`)})
	if err != nil || p.Version != 1 || p.Access != "owner-write" {
		t.Fatalf("set policy: %+v, %v", p, err)
	}
	if p, err := admin.Policy(ctx, app, "typed"); err != nil || string(p.Schema) != `{"type":"object"}` {
		t.Errorf("policy %+v, %v", p, err)
	}
	n := 0
	for p, err := range admin.Policies(ctx, app) {
		if err != nil || p.Namespace != "typed" {
			t.Errorf("policy row %+v, %v", p, err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d policies listed, want 1", n)
	}
	_, err = newClient(t, url, client.WithSubject("carol")).Create(ctx, client.Key{App: app, Namespace: "typed", ID: "x"}, "not an object")
	if !errors.Is(err, client.ErrSchema) {
		t.Errorf("data against the schema: %v, want ErrSchema", err)
	}
	if err := admin.DeletePolicy(ctx, app, "typed"); err != nil {
		t.Fatal(err)
	}
	if p, err := admin.Policy(ctx, app, "typed"); err != nil || p.Version != 2 || p.Access != "shared" || string(p.Schema) != "null" {
		t.Errorf("policy after delete: %+v, %v", p, err)
	}
}

// TestPolicyHistory sets history policies through the client and reads
// them back as set: nil when the namespace keeps no versions, at once
// beside a change into private, and a refusal naming the member.
// TestPolicyBinary sets a binary rule and reads it back, and a policy
// read and set again keeps it.
func TestPolicyBinary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := newClient(t, apitest.Server(t, 10*time.Second))
	rule := &client.BinaryRule{ContentTypes: []string{"image/png", "image/*"}, MaxBytes: 1 << 20}
	if p, err := admin.SetPolicy(ctx, app, "photos", client.Policy{Access: "shared", Binary: rule}); err != nil || !reflect.DeepEqual(p.Binary, rule) {
		t.Fatalf("SetPolicy: binary %+v, %v", p.Binary, err)
	}
	read, err := admin.Policy(ctx, app, "photos")
	if err != nil || !reflect.DeepEqual(read.Binary, rule) {
		t.Fatalf("Policy: binary %+v, %v", read.Binary, err)
	}
	if p, err := admin.SetPolicy(ctx, app, "photos", read); err != nil || !reflect.DeepEqual(p.Binary, rule) {
		t.Errorf("the policy read, set again: binary %+v, %v", p.Binary, err)
	}
}

func TestPolicyHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := newClient(t, apitest.Server(t, 10*time.Second))
	// same reports whether two histories are equal, nil for none.
	same := func(a, b *client.HistoryPolicy) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	for i, c := range []struct {
		name      string
		access    string
		set, want *client.HistoryPolicy
	}{
		{"versions and days", "shared", &client.HistoryPolicy{Versions: 10, Days: 30}, &client.HistoryPolicy{Versions: 10, Days: 30}},
		{"no age limit", "owner-write", &client.HistoryPolicy{Versions: 3}, &client.HistoryPolicy{Versions: 3}},
		{"none", "shared", nil, nil},
		{"versions 0 is none", "shared", &client.HistoryPolicy{}, nil},
		{"beside a change into private", "private", &client.HistoryPolicy{Versions: 5, Days: 1}, &client.HistoryPolicy{Versions: 5, Days: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := fmt.Sprintf("history%d", i)
			var announced []client.Policy
			p, err := admin.SetPolicy(ctx, app, ns, client.Policy{Access: c.access, History: c.set}, func(p client.Policy) { announced = append(announced, p) })
			if err != nil || p.Access != c.access || !same(p.History, c.want) {
				t.Fatalf("SetPolicy: %+v (history %+v), %v", p, p.History, err)
			}
			if c.access == "private" && len(announced) == 0 {
				t.Error("the change into private was not announced first")
			}
			for _, a := range announced {
				if !same(a.History, c.want) {
					t.Errorf("the announced change's policy has history %+v, want %+v at once", a.History, c.want)
				}
			}
			if got, err := admin.Policy(ctx, app, ns); err != nil || !same(got.History, c.want) {
				t.Errorf("Policy: history %+v, %v", got.History, err)
			}
			for got, err := range admin.Policies(ctx, app) {
				if err != nil || (got.Namespace == ns && !same(got.History, c.want)) {
					t.Errorf("listed %+v (history %+v), %v", got, got.History, err)
				}
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		_, err := admin.SetPolicy(ctx, app, "refused", client.Policy{Access: "shared", History: &client.HistoryPolicy{Versions: 101}})
		var apiErr *client.APIError
		if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &apiErr) || apiErr.Message != "Invalid history.versions" {
			t.Errorf("101 versions: %v, want ErrInvalid naming history.versions", err)
		}
	})
}

func TestExportImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := apitest.Server(t, 10*time.Second)
	admin := newClient(t, url)
	for i, u := range []string{"erin", "frank", "grace"} {
		c := newClient(t, url, client.WithSubject(u))
		for j := range 30 {
			if _, err := c.Create(ctx, client.Key{App: app, Namespace: "l", ID: "list", SortKey: fmt.Sprintf("%s-%02d", u, j)}, map[string]int{"i": i*100 + j}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Create(ctx, client.Key{App: app, Namespace: "kv", ID: u}, strings.Repeat("<big> & ", 1500)); err != nil {
			t.Fatal(err)
		}
	}
	var records []client.Record
	for rec, err := range admin.Export(ctx, app) {
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, rec)
	}
	if len(records) != 93 {
		t.Fatalf("exported %d records, want 93", len(records))
	}
	pageOne, cursor, err := admin.ExportPage(ctx, app, "", 40)
	if err != nil || len(pageOne) != 40 || cursor == "" {
		t.Fatalf("a page of 40: %d records, cursor %q, %v", len(pageOne), cursor, err)
	}
	res, err := admin.Import(ctx, otherApp, records)
	if err != nil || res.Imported != 93 || res.Skipped != 0 || len(res.Conflicts) != 0 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	if res, err := admin.Import(ctx, otherApp, records); err != nil || res.Skipped != 93 {
		t.Errorf("a second import: %+v, %v, want everything skipped", res, err)
	}
	var again []string
	for rec, err := range admin.Export(ctx, otherApp) {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rec)
		again = append(again, string(b))
	}
	var want []string
	for _, rec := range records {
		b, _ := json.Marshal(rec)
		want = append(want, string(b))
	}
	slices.Sort(again)
	slices.Sort(want)
	if !slices.Equal(again, want) {
		t.Errorf("the imported app exports other records")
	}
	bad := records[0]
	bad.CreatedDate = "yesterday"
	_, err = admin.Import(ctx, otherApp, []client.Record{records[1], bad})
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &apiErr) || apiErr.Message != "Invalid records[1].createdDate" {
		t.Errorf("a bad record: %v", err)
	}
}

// TestImportBatchSize checks that Import sends records whose RecordBytes
// add up to MaxImportBytes, and refuses more without sending anything.
func TestImportBatchSize(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte(`{"imported":0,"skipped":0,"expired":0,"conflicts":[]}`))
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	// Records of 900,000 bytes of JSON each, but for the last, which
	// takes what is left of MaxImportBytes.
	record := func(size int) client.Record {
		rec := client.Record{Namespace: "n", ID: "i", Owner: "o", Data: json.RawMessage(`""`)}
		n, err := client.RecordBytes(rec)
		if err != nil {
			t.Fatal(err)
		}
		rec.Data = json.RawMessage(`"` + strings.Repeat("x", size-n) + `"`)
		return rec
	}
	full := []client.Record{record(900_000), record(900_000), record(900_000), record(900_000), record(client.MaxImportBytes - 4*900_000)}
	total := 0
	for _, rec := range full {
		n, _ := client.RecordBytes(rec)
		total += n
	}
	if total != client.MaxImportBytes {
		t.Fatalf("the records take %d bytes, want %d", total, client.MaxImportBytes)
	}
	if _, err := c.Import(context.Background(), app, full); err != nil || requests.Load() != 1 {
		t.Errorf("records of MaxImportBytes: %v after %d requests, want one", err, requests.Load())
	}
	full[4] = record(client.MaxImportBytes - 4*900_000 + 1)
	if _, err := c.Import(context.Background(), app, full); err == nil || !strings.Contains(err.Error(), "MaxImportBytes") || requests.Load() != 1 {
		t.Errorf("a byte more: %v after %d requests, want an error and nothing sent", err, requests.Load()-1)
	}
}

// flaky answers the first failures requests with status, Retry-After
// (retryAfter, or 0), the error's code (code: none, the status then says
// its kind) and message (message, or "Service unavailable") before passing requests to next, counting them all.
type flaky struct {
	failures                  int32
	status                    int
	retryAfter, code, message string
	calls                     atomic.Int32
	next                      http.Handler
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.calls.Add(1) <= f.failures {
		w.Header().Set("Retry-After", cmp.Or(f.retryAfter, "0"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		fmt.Fprintf(w, `{"code":%q,"error":%q,"timestamp":"2026-01-01T00:00:00.000Z"}`, f.code, cmp.Or(f.message, "Service unavailable"))
		return
	}
	f.next.ServeHTTP(w, r)
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("ETag", `"1-abc"`)
	w.WriteHeader(map[string]int{"POST": 201, "GET": 200, "PUT": 200, "DELETE": 204}[r.Method])
	if r.Method != "DELETE" {
		_, _ = w.Write([]byte(`{"applicationUuid":"` + app + `","namespace":"n","id":"i","data":1,"version":1}`))
	}
})

func TestRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := client.Key{App: app, Namespace: "n", ID: "i"}
	for _, tc := range []struct {
		name     string
		status   int
		failures int32
		call     func(*client.Client) error
		calls    int32 // requests the server saw
		ok       bool
	}{
		{"GET after two 503s", 503, 2, func(c *client.Client) error { _, err := c.Get(ctx, key); return err }, 3, true},
		{"PUT with If-Match after a 502", 502, 1, func(c *client.Client) error { _, err := c.Update(ctx, key, 1, client.IfMatch(`"1-abc"`)); return err }, 2, true},
		{"PUT without If-Match after a 429", 429, 1, func(c *client.Client) error { _, err := c.Update(ctx, key, 1); return err }, 2, true},
		{"PUT without If-Match not after a 502", 502, 1, func(c *client.Client) error { _, err := c.Update(ctx, key, 1); return err }, 1, false},
		{"DELETE after a 504", 504, 1, func(c *client.Client) error { return c.Delete(ctx, key) }, 2, true},
		{"POST after a 429", 429, 1, func(c *client.Client) error { _, err := c.Create(ctx, key, 1); return err }, 2, true},
		{"POST not after a 503", 503, 1, func(c *client.Client) error { _, err := c.Create(ctx, key, 1); return err }, 1, false},
		{"GET gives up", 503, 100, func(c *client.Client) error { _, err := c.Get(ctx, key); return err }, 5, false},
		{"GET not after a 500", 500, 1, func(c *client.Client) error { _, err := c.Get(ctx, key); return err }, 1, false},
		{"GET of a version after a 503", 503, 1, func(c *client.Client) error { _, err := c.GetVersion(ctx, key, 1); return err }, 2, true},
		{"GetBytes after two 503s", 503, 2, func(c *client.Client) error { _, err := c.GetBytes(ctx, key, io.Discard); return err }, 3, true},
		{"PutBytes with If-Match after a 502", 502, 1, func(c *client.Client) error {
			_, err := c.PutBytes(ctx, key, strings.NewReader("abc"), 3, "text/plain", client.IfMatch(`"1-abc"`))
			return err
		}, 2, true},
		{"PutBytes without If-Match not after a 502", 502, 1, func(c *client.Client) error {
			_, err := c.PutBytes(ctx, key, strings.NewReader("abc"), 3, "text/plain")
			return err
		}, 1, false},
		{"restore with If-Match after a 502", 502, 1, func(c *client.Client) error { _, err := c.Restore(ctx, key, 1, client.IfMatch(`"1-abc"`)); return err }, 2, true},
		{"restore without If-Match after a 429", 429, 1, func(c *client.Client) error { _, err := c.Restore(ctx, key, 1); return err }, 2, true},
		{"restore without If-Match not after a 502", 502, 1, func(c *client.Client) error { _, err := c.Restore(ctx, key, 1); return err }, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &flaky{failures: tc.failures, status: tc.status, next: ok}
			srv := httptest.NewServer(f)
			defer srv.Close()
			err := tc.call(newClient(t, srv.URL))
			if (err == nil) != tc.ok || f.calls.Load() != tc.calls {
				t.Errorf("err %v after %d requests, want ok=%v after %d", err, f.calls.Load(), tc.ok, tc.calls)
			}
		})
	}
	t.Run("connection lost mid-request", func(t *testing.T) {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
				return
			}
			ok.ServeHTTP(w, r)
		}))
		defer srv.Close()
		if _, err := newClient(t, srv.URL).Get(ctx, key); err != nil || calls.Load() != 2 {
			t.Errorf("GET: %v after %d requests, want success after 2", err, calls.Load())
		}
		for name, write := range map[string]func(*client.Client) error{
			"POST":                 func(c *client.Client) error { _, err := c.Create(ctx, key, 1); return err },
			"PUT without If-Match": func(c *client.Client) error { _, err := c.Update(ctx, key, 1); return err },
		} {
			calls.Store(0)
			if err := write(newClient(t, srv.URL)); err == nil || calls.Load() != 1 {
				t.Errorf("%s: %v after %d requests, want a failure after 1 (it may have been applied)", name, err, calls.Load())
			}
		}
	})
	t.Run("no connection", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		// Writes that must not be repeated once sent are repeated when
		// no connection could be made: every attempt is a dial.
		for name, write := range map[string]func(*client.Client) error{
			"POST":                 func(c *client.Client) error { _, err := c.Create(ctx, key, 1); return err },
			"PUT without If-Match": func(c *client.Client) error { _, err := c.Update(ctx, key, 1); return err },
		} {
			var dials atomic.Int32
			var d net.Dialer
			hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				return d.DialContext(ctx, network, addr)
			}}}
			err := write(newClient(t, "http://"+addr, client.WithHTTPClient(hc), client.WithRetries(3, time.Millisecond)))
			if err == nil || dials.Load() != 4 {
				t.Errorf("%s to a closed port: %v after %d attempts, want a failure after 4", name, err, dials.Load())
			}
		}
	})
	t.Run("Retry-After", func(t *testing.T) {
		for _, tc := range []struct {
			name       string
			status     int
			retryAfter func() string
			min, max   time.Duration
		}{
			// The upper bounds leave a loaded machine room; a wait far
			// past what the header says still fails.
			{"seconds", 503, func() string { return "1" }, time.Second, 10 * time.Second},
			{"a rate limit's seconds", 429, func() string { return "1" }, time.Second, 10 * time.Second},
			// An HTTP date has whole seconds: two seconds ahead is one
			// to two seconds away.
			{"HTTP date", 503, func() string { return time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat) }, 900 * time.Millisecond, 10 * time.Second},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				var calls atomic.Int32
				var first, second atomic.Int64 // since start
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if calls.Add(1) == 1 {
						first.Store(int64(time.Since(start)))
						w.Header().Set("Retry-After", tc.retryAfter())
						w.WriteHeader(tc.status)
						return
					}
					second.Store(int64(time.Since(start)))
					ok.ServeHTTP(w, r)
				}))
				defer srv.Close()
				// The client's own backoff is a millisecond: only the
				// server's Retry-After makes it wait longer.
				if _, err := newClient(t, srv.URL).Get(ctx, key); err != nil || calls.Load() != 2 {
					t.Fatalf("GET: %v after %d requests, want success after 2", err, calls.Load())
				}
				if gap := time.Duration(second.Load() - first.Load()); gap < tc.min || gap > tc.max {
					t.Errorf("Retry-After %s: retried after %v, want %v to %v", tc.name, gap, tc.min, tc.max)
				}
			})
		}
	})
	t.Run("bounded by the context", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(503)
		}))
		defer srv.Close()
		// 2 s: long enough for the first 503 to come back on a loaded
		// machine.
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := newClient(t, srv.URL).Get(ctx, key)
		// 10 s: far below the Retry-After of 30 s, and beyond any machine's
		// delay in noticing the deadline.
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, client.ErrUnavailable) || time.Since(start) > 10*time.Second {
			t.Errorf("%v after %v, want the deadline and the last 503 within it", err, time.Since(start))
		}
	})
	t.Run("an answer that is not UDS's JSON", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			_, _ = w.Write([]byte("<html>Bad Gateway</html>"))
		}))
		defer srv.Close()
		_, err := newClient(t, srv.URL, client.WithRetries(0, 0)).Get(ctx, key)
		var apiErr *client.APIError
		if !errors.Is(err, client.ErrUnavailable) || !errors.As(err, &apiErr) || string(apiErr.Body) != "<html>Bad Gateway</html>" {
			t.Errorf("%v, want ErrUnavailable with the body kept", err)
		}
	})
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The handler keeps the last request as the server received it.
	var got struct {
		header    http.Header
		uri, host string
		body      []byte
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.header, got.uri, got.host = r.Header.Clone(), r.RequestURI, r.Host
		got.body, _ = io.ReadAll(r.Body)
		if strings.HasSuffix(r.URL.Path, "/import") {
			_, _ = w.Write([]byte(`{"imported":1,"skipped":0,"expired":0,"conflicts":[]}`))
			return
		}
		ok.ServeHTTP(w, r)
	}))
	defer srv.Close()
	key := client.Key{App: app, Namespace: "n", ID: "i"}
	if _, err := newClient(t, srv.URL, client.WithToken("header.payload.sig")).Get(ctx, key); err != nil {
		t.Fatal(err)
	}
	if got.header.Get("Authorization") != "Bearer header.payload.sig" {
		t.Errorf("Authorization %q", got.header.Get("Authorization"))
	}

	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session-token")
	signing := newClient(t, srv.URL, client.WithSigV4(aws.Config{Region: "eu-west-1", Credentials: creds}, ""))
	// verify signs the request the server received again, with the same
	// credentials and instant and the hash of the body that arrived: the
	// signature matches only if the client signed the path and body it
	// sent.
	verify := func(t *testing.T, method string) {
		t.Helper()
		auth := got.header.Get("Authorization")
		today := time.Now().UTC().Format("20060102")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"+today+"/eu-west-1/execute-api/aws4_request, SignedHeaders=") ||
			got.header.Get("X-Amz-Security-Token") != "session-token" {
			t.Fatalf("SigV4 headers: Authorization %q, X-Amz-Security-Token %q", auth, got.header.Get("X-Amz-Security-Token"))
		}
		signedAt, err := time.Parse("20060102T150405Z", got.header.Get("X-Amz-Date"))
		if err != nil {
			t.Fatalf("X-Amz-Date: %v", err)
		}
		again, err := http.NewRequest(method, "http://"+got.host+got.uri, bytes.NewReader(got.body))
		if err != nil {
			t.Fatal(err)
		}
		_, signed, _ := strings.Cut(auth, "SignedHeaders=")
		signed, _, _ = strings.Cut(signed, ",")
		for _, h := range strings.Split(signed, ";") {
			switch h {
			case "host", "x-amz-date", "x-amz-security-token": // set by the signer
			default:
				again.Header[http.CanonicalHeaderKey(h)] = got.header.Values(h)
			}
		}
		c, err := creds.Retrieve(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(got.body)
		if err := v4.NewSigner().SignHTTP(ctx, c, again, hex.EncodeToString(sum[:]), "execute-api", "eu-west-1", signedAt); err != nil {
			t.Fatal(err)
		}
		if want := again.Header.Get("Authorization"); auth != want {
			t.Errorf("the signature does not match the request received:\n got %s\nwant %s", auth, want)
		}
	}
	t.Run("a create with a path that needs escaping", func(t *testing.T) {
		escaped := client.Key{App: app, Namespace: "n s", ID: "user/1 ü", SortKey: "2024/01/15 ?#%+"}
		if _, err := signing.Create(ctx, escaped, map[string]string{"html": "<b> & </b>"}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got.uri, "user%2F1%20%C3%BC/2024%2F01%2F15%20%3F%23%25+") || !strings.Contains(string(got.body), "<b> & </b>") {
			t.Fatalf("received %s with body %s", got.uri, got.body)
		}
		verify(t, http.MethodPost)
	})
	t.Run("an import, whose body goes compressed", func(t *testing.T) {
		if _, err := signing.Import(ctx, app, []client.Record{{Namespace: "n", ID: "i", Owner: "o", Data: json.RawMessage(`"v"`)}}); err != nil {
			t.Fatal(err)
		}
		if got.header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("Content-Encoding %q, want gzip", got.header.Get("Content-Encoding"))
		}
		verify(t, http.MethodPost)
	})
}
