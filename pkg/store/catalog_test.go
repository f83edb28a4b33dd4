package store_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// TestCatalogueMarksFirstWriteOnly checks that the first item created in
// a namespace marks the namespace and its app, and that later writes
// there make no call for the catalogue.
func TestCatalogueMarksFirstWriteOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, counter := newStore(t)
	counter.Take()
	if _, err := s.Create(ctx, write(key(t, "notes", "a"), `{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	first := counter.Take()
	if first.Calls["UpdateItem"] != 2 {
		t.Errorf("the first write made %d UpdateItem calls, want 2 (the namespace's mark and the app's): %v", first.Calls["UpdateItem"], first.Calls)
	}
	for _, id := range []string{"b", "c"} {
		if _, err := s.Create(ctx, write(key(t, "notes", id), `{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		if u := counter.Take(); u.Calls["UpdateItem"] != 0 || u.Calls["GetItem"] != 0 {
			t.Errorf("a later write into the marked namespace made calls for the catalogue: %v", u.Calls)
		}
	}
	pol, err := s.StoredPolicy(ctx, app, "notes")
	if err != nil || pol.HeldSince.IsZero() || pol.Set || pol.Version != 0 {
		t.Errorf("the marked namespace reads as %+v, %v; want a mark and no policy", pol, err)
	}
	if page, _, err := s.Policies(ctx, app, "", 10, false); err != nil || len(page) != 0 {
		t.Errorf("policies without held: %+v, %v; want none", page, err)
	}
	page, _, err := s.Policies(ctx, app, "", 10, true)
	if err != nil || len(page) != 1 || page[0].Namespace != "notes" || page[0].Set {
		t.Errorf("policies with held: %+v, %v; want notes, without a policy", page, err)
	}
}

// TestCataloguePolicyDeleteKeepsMark checks that a policy set and removed
// leaves the namespace's mark, and that a namespace with a mark takes a
// policy as one without.
func TestCataloguePolicyDeleteKeepsMark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if _, err := s.Create(ctx, write(key(t, "notes", "a"), `{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPolicy(ctx, app, "notes", uds.Policy{Access: uds.AccessOwnerWrite, History: uds.History{Versions: 2}}); err != nil {
		t.Fatal(err)
	}
	if pol, err := s.StoredPolicy(ctx, app, "notes"); err != nil || !pol.Set || pol.HeldSince.IsZero() || pol.Access != uds.AccessOwnerWrite {
		t.Errorf("set: %+v, %v", pol, err)
	}
	if _, err := s.SetPolicy(ctx, app, "notes", uds.Policy{}); err != nil {
		t.Fatal(err)
	}
	if pol, err := s.StoredPolicy(ctx, app, "notes"); err != nil || pol.HeldSince.IsZero() || pol.History.On() {
		t.Errorf("removed: %+v, %v; want the defaults and the mark", pol, err)
	}
}

// TestCatalogueApps follows an app that holds data through registration
// and its removal: it is listed as held, then as registered, then as held
// again; an app that never held data leaves the registry whole.
func TestCatalogueApps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	held := func() []string {
		t.Helper()
		page, _, err := s.HeldApps(ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range page {
			if r.Name != "" {
				t.Errorf("held app %+v shows a name", r)
			}
			out = append(out, r.App)
		}
		return out
	}
	registered := func() []string {
		t.Helper()
		page, _, err := s.Apps(ctx, uds.AppRegistration{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range page {
			out = append(out, r.App)
		}
		return out
	}
	if _, err := s.RegisterApp(ctx, otherApp, "Empty", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, write(key(t, "notes", "a"), `{}`)); err != nil {
		t.Fatal(err)
	}
	if got := held(); !slices.Equal(got, []string{app}) {
		t.Errorf("held after the first write: %v, want %s", got, app)
	}
	if _, err := s.RegisterApp(ctx, app, "Notes", ""); err != nil {
		t.Fatal(err)
	}
	if got := held(); len(got) != 0 {
		t.Errorf("held after registering: %v, want none", got)
	}
	if got := registered(); len(got) != 2 {
		t.Errorf("registered: %v, want both apps", got)
	}
	reg, err := s.App(ctx, app)
	if err != nil || reg.HeldSince.IsZero() {
		t.Errorf("App: %+v, %v; want the mark", reg, err)
	}
	for _, a := range []string{app, otherApp} {
		if err := s.UnregisterApp(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if got := held(); !slices.Equal(got, []string{app}) {
		t.Errorf("held after unregistering: %v, want %s only", got, app)
	}
	if got := registered(); len(got) != 0 {
		t.Errorf("registered after unregistering: %v, want none", got)
	}
	if _, err := s.RegisterApp(ctx, app, "Notes again", ""); err != nil {
		t.Errorf("registering a held app again: %v", err)
	}
}

// TestNamespaceKeysPaging lists a namespace's keys in small pages across
// owners and tables, beside another namespace's items, and checks that
// every key comes once, that a page never evaluates more index entries
// than its limit, and that user= keeps one owner's.
func TestNamespaceKeysPaging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, counter := newStore(t)
	want := map[string]string{}
	for i, owner := range []string{"alice", "bob", "carol"} {
		for j := range 3 {
			w := write(key(t, "notes", fmt.Sprintf("%s-%d", owner, j)), `{}`)
			w.Subject = owner
			if _, err := s.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			want[w.Key.ID] = owner
			o := write(key(t, "other", fmt.Sprintf("%s-%d", owner, j)), `{}`)
			o.Subject = owner
			if _, err := s.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		l := write(key(t, "notes", "list"), `{}`)
		l.SortKey, l.Subject = fmt.Sprintf("s%d", i), owner
		if _, err := s.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
		want["list/"+l.SortKey] = owner
	}
	walk := func(user string, limit int) map[string]string {
		got := map[string]string{}
		q := store.KeysQuery{App: app, Namespace: "notes", User: user, Limit: limit}
		for pages := 0; ; pages++ {
			if pages > 100 {
				t.Fatal("the listing does not end")
			}
			counter.Take()
			page, err := s.NamespaceKeys(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if u := counter.Take(); u.Calls["Query"] > limit+16 {
				t.Errorf("a page of limit %d made %d queries", limit, u.Calls["Query"])
			}
			for _, k := range page.Keys {
				id := k.Key.ID
				if k.List {
					id += "/" + k.Key.SortKey
				}
				if _, dup := got[id]; dup {
					t.Errorf("%s listed twice", id)
				}
				got[id] = k.Owner
				if k.UpdatedDate.IsZero() || k.Size == 0 {
					t.Errorf("%s shows %+v", id, k)
				}
			}
			if page.Next == nil {
				return got
			}
			q.After = *page.Next
		}
	}
	for _, limit := range []int{1, 2, 5, 200} {
		if got := walk("", limit); !maps.Equal(got, want) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
	}
	bobs := map[string]string{}
	for id, o := range want {
		if o == "bob" {
			bobs[id] = o
		}
	}
	if got := walk("bob", 2); !maps.Equal(got, bobs) {
		t.Errorf("bob's: %v, want %v", got, bobs)
	}
}
