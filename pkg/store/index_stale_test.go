package store_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// entriesByKey counts the entries of index id per item.
func entriesByKey(t *testing.T, plain *dynamodb.Client, tables store.Tables, ns, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range storetest.IndexEntries(t, plain, tables, app, ns, id) {
		out[storetest.KeyPath(e.Key)]++
	}
	return out
}

// A query leaves out the entries that lead to no item with their value
// (the item deleted, changed or expired) and removes them; the entries of
// items as they are stay.
func TestIndexQueryRemovesStaleEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	tables, plain := storetest.NewTables(t), storetest.Client(t)
	s := store.New(plain, tables, store.WithPolicySettle(testSettle), store.WithClock(clock.Now))
	const ns = "stale"
	p := declare(t, s, ns, testIndexes[:1])
	status := p.Indexes[0]
	create := func(id, data string, expires time.Time) {
		t.Helper()
		if _, err := s.Create(ctx, uds.Write{Key: key(t, ns, id), Data: json.RawMessage(data), Subject: "alice", Indexes: p.Indexes, ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
	}
	create("live", `{"status":"open"}`, time.Time{})
	create("changed", `{"status":"done"}`, time.Time{})
	create("expired", `{"status":"open"}`, clock.Now().Add(time.Hour))
	for _, id := range []string{"gone", "changed"} {
		if err := s.PutIndexEntry(ctx, key(t, ns, id), status, json.RawMessage(`{"status":"open"}`)); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Hour)
	// One page holds both entries of the changed item.
	q := store.IndexQuery{App: app, Namespace: ns, Index: status, Limit: 10}
	if got := queryIDs(t, s, q); got != "changed live" {
		t.Errorf("the query lists %q, want the changed item (done), then the live one (open)", got)
	}
	got := entriesByKey(t, plain, tables, ns, status.ID)
	if want := map[string]int{"live": 1, "changed": 1}; !maps.Equal(got, want) {
		t.Errorf("entries per item after the query: %v, want %v", got, want)
	}
	q.Eq = str("open")
	if got := queryIDs(t, s, q); got != "live" {
		t.Errorf("the query for open lists %q", got)
	}
}

// cleanupHook runs before, once, ahead of the first transaction that
// deletes an index entry: the moment between a query's read of a stale
// entry's item and its removal of the entry.
type cleanupHook struct {
	store.Client
	index  string
	before atomic.Pointer[func()]
}

func (c *cleanupHook) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, a := range in.TransactItems {
		if a.Delete != nil && *a.Delete.TableName == c.index {
			if f := c.before.Swap(nil); f != nil {
				(*f)()
			}
		}
	}
	return c.Client.TransactWriteItems(ctx, in, o...)
}

// An import writes an item as it was exported, at the revision (version,
// creation, size, owner, creator) it had. When a query finds the entry of
// an expired item stale and, before it removes the entry, an import puts
// the item back without its expiry, the entry is the new item's own: the
// query's removal must not take it.
func TestIndexStaleRemovalSparesItemImportedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	tables := storetest.NewTables(t)
	hook := &cleanupHook{Client: storetest.Client(t), index: tables.Index}
	s := store.New(hook, tables, store.WithPolicySettle(testSettle), store.WithClock(clock.Now))
	const ns = "restored"
	p := declare(t, s, ns, testIndexes[:1])
	created := clock.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	rec := uds.Record{Owner: "alice", Item: uds.Item{Key: key(t, ns, "item"), Data: json.RawMessage(`{"status":"open"}`),
		CreatedDate: created, CreatedBy: "alice", UpdatedDate: created, UpdatedBy: "alice", Version: 3,
		ExpiresAt: clock.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)}}
	if res, err := s.Import(ctx, app, []uds.Record{rec}); err != nil || res.Imported != 1 {
		t.Fatalf("import: %+v %v", res, err)
	}
	clock.Advance(2 * time.Hour)
	again := rec
	again.ExpiresAt = time.Time{}
	importAgain := func() {
		if res, err := s.Import(ctx, app, []uds.Record{again}); err != nil || res.Imported != 1 {
			t.Errorf("import again: %+v %v", res, err)
		}
	}
	hook.before.Store(&importAgain)
	q := store.IndexQuery{App: app, Namespace: ns, Index: p.Indexes[0], Eq: str("open"), Limit: 10}
	if got := queryIDs(t, s, q); got != "" {
		t.Errorf("the query that met the expired item lists %q", got)
	}
	if hook.before.Load() != nil {
		t.Fatal("the query removed no entry: the test did not put the import in its way")
	}
	if got := queryIDs(t, s, q); got != "item" {
		t.Errorf("after the import, the query lists %q, want the item imported again", got)
	}
}

// A query that meets an expired item removes its entries while the item
// stays; a write over the expired item with the same indexed value, a
// create or an import, must put the entry again rather than take the
// expired value's for granted.
func TestIndexWriteOverExpiredItemWhoseEntriesWent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	tables, plain := storetest.NewTables(t), storetest.Client(t)
	s := store.New(plain, tables, store.WithPolicySettle(testSettle), store.WithClock(clock.Now))
	const ns = "reborn"
	p := declare(t, s, ns, testIndexes[:1])
	q := store.IndexQuery{App: app, Namespace: ns, Index: p.Indexes[0], Eq: str("open"), Limit: 10}
	created := clock.Now().UTC().Truncate(time.Millisecond)
	for _, write := range []struct {
		id    string
		again func(id string) error
	}{
		{"created", func(id string) error {
			_, err := s.Create(ctx, uds.Write{Key: key(t, ns, id), Data: json.RawMessage(`{"status":"open","n":2}`), Subject: "alice", Indexes: p.Indexes})
			return err
		}},
		{"imported", func(id string) error {
			rec := uds.Record{Owner: "alice", Item: uds.Item{Key: key(t, ns, id), Data: json.RawMessage(`{"status":"open","n":2}`),
				CreatedDate: created, CreatedBy: "alice", UpdatedDate: created, UpdatedBy: "alice", Version: 1}}
			res, err := s.Import(ctx, app, []uds.Record{rec})
			if err == nil && res.Imported != 1 {
				t.Errorf("import over the expired item: %+v", res)
			}
			return err
		}},
	} {
		t.Run(write.id, func(t *testing.T) {
			if _, err := s.Create(ctx, uds.Write{Key: key(t, ns, write.id), Data: json.RawMessage(`{"status":"open"}`), Subject: "alice",
				Indexes: p.Indexes, ExpiresAt: clock.Now().Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Hour)
			if got := queryIDs(t, s, q); slices.Contains(strings.Fields(got), write.id) {
				t.Fatalf("the query that met the expired item lists %q", got)
			}
			if n := entriesByKey(t, plain, tables, ns, p.Indexes[0].ID)[write.id]; n != 0 {
				t.Fatalf("the query left %d entries of the expired item", n)
			}
			if err := write.again(write.id); err != nil {
				t.Fatal(err)
			}
			if n := entriesByKey(t, plain, tables, ns, p.Indexes[0].ID)[write.id]; n != 1 {
				t.Errorf("the item written over the expired one has %d entries, want 1", n)
			}
			if got := queryIDs(t, s, q); !slices.Contains(strings.Fields(got), write.id) {
				t.Errorf("the query lists %q, without %s", got, write.id)
			}
		})
	}
}
