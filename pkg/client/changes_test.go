package client_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// replica is what a client of a changes feed holds: the entries by key,
// and the cursor to read on from.
type replica struct {
	items  map[string]client.Change
	cursor string
}

func changeKey(c client.Change) string {
	if c.SortKey != "" {
		return c.ID + "/" + c.SortKey
	}
	return c.ID
}

// sync reads the feed from the replica's cursor until it is up to date,
// applying each page in order, as docs/changes.md tells a client to.
func (r *replica) sync(ctx context.Context, c *client.Client, namespace string) error {
	for p, err := range c.Changes(ctx, app, namespace, r.cursor, 2) {
		if err != nil {
			return err
		}
		for _, ch := range p.Changes {
			if ch.Deleted {
				delete(r.items, changeKey(ch))
				continue
			}
			r.items[changeKey(ch)] = ch
		}
		r.cursor = p.Cursor
	}
	return nil
}

// await syncs the replica until it holds the keys of want with their
// data, which the feed shows some seconds after the writes (the local
// poller's interval and the feed's settle time).
func (r *replica) await(t *testing.T, c *client.Client, namespace string, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := r.sync(t.Context(), c, namespace); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for k, ch := range r.items {
			got[k] = string(ch.Data)
		}
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica holds %v, want %v", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestChanges(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := apitest.FeedServer(t, 10*time.Second)
	c := newClient(t, srv, client.WithSubject("alice"))
	key := func(id, sk string) client.Key { return client.Key{App: app, Namespace: "notes", ID: id, SortKey: sk} }
	for _, k := range []client.Key{key("a", ""), key("b", ""), key("l", "s1")} {
		if _, err := c.Create(ctx, k, map[string]string{"k": k.ID + k.SortKey}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create(ctx, client.Key{App: app, Namespace: "other", ID: "z"}, 0); err != nil {
		t.Fatal(err)
	}

	// From the beginning: the namespace's items as they are, each with
	// its metadata.
	r := &replica{items: map[string]client.Change{}}
	r.await(t, c, "notes", map[string]string{"a": `{"k":"a"}`, "b": `{"k":"b"}`, "l/s1": `{"k":"ls1"}`})
	if a := r.items["a"]; a.Version != 1 || a.CreatedBySubject != "alice" || a.Namespace != "notes" || a.UpdatedDate.IsZero() {
		t.Errorf("a as the feed shows it: %+v", a)
	}

	// An update, a delete and a create reach the replica; the delete as a
	// tombstone of the version removed.
	if _, err := c.Update(ctx, key("a", ""), map[string]string{"k": "a2"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, key("b", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, key("c", ""), map[string]string{"k": "c"}); err != nil {
		t.Fatal(err)
	}
	before := r.cursor
	r.await(t, c, "notes", map[string]string{"a": `{"k":"a2"}`, "c": `{"k":"c"}`, "l/s1": `{"k":"ls1"}`})
	var tombstone *client.Change
	for p, err := range c.Changes(ctx, app, "notes", before, 0) {
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range p.Changes {
			if ch.Deleted {
				tombstone = &ch
			}
		}
	}
	if tombstone == nil || tombstone.ID != "b" || tombstone.Version != 1 || tombstone.UpdatedDate.IsZero() || tombstone.Data != nil {
		t.Errorf("the delete of b shows as %+v", tombstone)
	}

	// A page holds at most limit entries and says that more follow.
	p, err := c.ChangesPage(ctx, app, "notes", "", 1)
	if err != nil || len(p.Changes) != 1 || p.UpToDate || p.Cursor == "" {
		t.Errorf("a page of one: %+v, %v", p, err)
	}

	// Another namespace's cursor is refused.
	other, err := c.ChangesPage(ctx, app, "other", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ChangesPage(ctx, app, "notes", other.Cursor, 0); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("another namespace's cursor: %v, want ErrInvalid", err)
	}

	// Once a namespace is private, a cursor taken before names a key
	// space its feed no longer has: 410, a distinct error, after which
	// the replica starts again from the beginning. (Only a namespace
	// without data changes into private.)
	drafts := &replica{items: map[string]client.Change{}}
	if err := drafts.sync(ctx, c, "drafts"); err != nil {
		t.Fatal(err)
	}
	admin := newClient(t, srv)
	if _, err := admin.SetPolicy(ctx, app, "drafts", client.Policy{Access: "private"}); err != nil {
		t.Fatal(err)
	}
	err = drafts.sync(ctx, c, "drafts")
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrCursorExpired) || !errors.As(err, &apiErr) || apiErr.Status != 410 {
		t.Fatalf("a cursor of the shared key space after the change to private: %v, want ErrCursorExpired", err)
	}
	if _, err := c.Create(ctx, client.Key{App: app, Namespace: "drafts", ID: "d"}, "mine"); err != nil {
		t.Fatal(err)
	}
	drafts = &replica{items: map[string]client.Change{}}
	drafts.await(t, c, "drafts", map[string]string{"d": `"mine"`})
}
