package store_test

import (
	"context"
	"encoding/json"
	"maps"
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
