package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// TestRemovalOfAnotherIncarnationWithTheSameRevision: import keeps
// versions and creation instants, so a key can hold, one after the other,
// two items at the same revision. A removal prepared from the first must
// not remove the second while releasing the first's size: the usage stays
// exact whichever item the removal meets.
func TestRemovalOfAnotherIncarnationWithTheSameRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := storetest.Client(t)
	tables := storetest.NewTables(t)
	s := store.New(client, tables)
	k, err := key(t, "feed", "list").WithSortKey("item")
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	record := func(data string) []uds.Record {
		return []uds.Record{{Owner: "alice", Item: uds.Item{
			Key: k, Data: json.RawMessage(data), CreatedDate: created, CreatedBy: "alice",
			UpdatedDate: created, UpdatedBy: "alice", Version: 1,
		}}}
	}
	if res, err := s.Import(ctx, k.App, record(`"small"`)); err != nil || res.Imported != 1 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(tables.List), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"dataKey": &types.AttributeValueMemberS{Value: k.DataKey()}, "sortKey": &types.AttributeValueMemberS{Value: k.SortKey},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stale := out.Item
	if err := s.Delete(ctx, uds.Write{Key: k}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Import(ctx, k.App, record(`"`+strings.Repeat("a much larger value ", 20)+`"`)); err != nil || res.Imported != 1 {
		t.Fatalf("second import: %+v, %v", res, err)
	}
	if _, err := s.RemoveAsRead(ctx, k.App, k, stale); err != nil {
		t.Fatal(err)
	}
	recorded := storetest.RecordedUsage(t, client, tables, k.App, "alice")
	stored := storetest.StoredUsage(t, client, tables, k.App, "alice")
	if recorded != stored {
		t.Errorf("usage records %+v, the tables hold %+v", recorded, stored)
	}
}

// TestImportReadsPerNamespaceAndOwner: an import's reads follow its
// namespaces, owners and transactions, not its records, even with nothing
// cached (a store whose caches hold nothing, as the API's tests run it).
// Before its records it reads each namespace's policy once; each
// transaction then looks up the erase records of each run of one owner's
// records once, and, with no policy cached, catalogues each namespace it
// writes in (a read of the policy). 200 records of two owners in two
// namespaces, in three transactions, make 8 reads of policies and 4 of
// owners' records, where reading once a record made 206 and 200.
func TestImportReadsPerNamespaceAndOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := storetest.NewCounter(storetest.Client(t))
	s := store.New(counter, storetest.NewTables(t), store.WithLimitsTTL(0))
	created := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	namespaces, owners := []string{"feeds", "notes"}, []string{"alice", "bob"}
	var records []uds.Record
	for _, owner := range owners {
		for i := range 100 {
			k, err := key(t, namespaces[i%2], "list").WithSortKey(fmt.Sprintf("%s/%03d", owner, i))
			if err != nil {
				t.Fatal(err)
			}
			records = append(records, uds.Record{Owner: owner, Item: uds.Item{
				Key: k, Data: json.RawMessage(`{"n":1}`), CreatedDate: created, CreatedBy: owner,
				UpdatedDate: created, UpdatedBy: owner, Version: 1,
			}})
		}
	}
	res, err := s.Import(ctx, app, records)
	if err != nil || res.Imported != len(records) {
		t.Fatalf("import: %+v, %v", res, err)
	}
	calls := counter.Take().Calls
	// A transaction takes 100 actions: a put a record and a usage change
	// an owner. So alice's first 99 records, then her last and bob's
	// first 97, then his last 3: the owners' runs are 1, 2 and 1 in the
	// three transactions.
	txs := calls["TransactWriteItems"]
	if txs != 3 {
		t.Fatalf("calls %v: want 3 transactions of 100 actions at most", calls)
	}
	if want := len(namespaces) * (1 + txs); calls["GetItem"] != want {
		t.Errorf("calls %v: want %d policy reads (GetItem): each namespace's once, and again in each transaction, where the catalogue reads it", calls, want)
	}
	if want := 1 + 2 + 1; calls["BatchGetItem"] != want {
		t.Errorf("calls %v: want %d reads of the owners' records (BatchGetItem): once a run of one owner's records in a transaction", calls, want)
	}
}

// TestImportRefusedForAnOwnerBeingErased: the erase guard looks up each
// run of one owner's records once, and still refuses a record of an owner
// whose data an erase removes when it stands between two runs of another
// owner's; the import then writes none of the records of its transaction.
// A kept version of that owner's is refused too, and a record of another
// owner's whose audit fields name them.
func TestImportRefusedForAnOwnerBeingErased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := storetest.Client(t)
	tables := storetest.NewTables(t)
	s := store.New(client, tables)
	if _, err := s.EraseUser(ctx, store.EraseQuery{User: "bob"}); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	var records []uds.Record
	for i, owner := range []string{"alice", "bob", "alice"} {
		k := key(t, "notes", fmt.Sprintf("item-%d", i))
		records = append(records, uds.Record{Owner: owner, Item: uds.Item{
			Key: k, Data: json.RawMessage(`{"n":1}`), CreatedDate: created, CreatedBy: owner,
			UpdatedDate: created, UpdatedBy: owner, Version: 1,
		}})
	}
	if res, err := s.Import(ctx, app, records); !errors.Is(err, uds.ErrErasing) {
		t.Fatalf("import with bob's record between alice's: %+v, %v; want uds.ErrErasing", res, err)
	}
	for _, r := range records {
		if _, err := s.Get(ctx, r.Key); !errors.Is(err, uds.ErrNotFound) {
			t.Errorf("%s: %v; want it not written", r.Key.ID, err)
		}
	}
	// A kept version of bob's is refused as his items are: it would give
	// him data again that the erase removes. The refusal comes before
	// alice's item is written.
	kept := records[1]
	kept.KeptAt = created.Add(time.Hour)
	if res, err := s.Import(ctx, app, []uds.Record{records[0], kept}); !errors.Is(err, uds.ErrErasing) {
		t.Fatalf("import of alice's item and bob's kept version: %+v, %v; want uds.ErrErasing", res, err)
	}
	// An item of alice's that bob last updated, or a kept version of
	// hers that he wrote, would bring back the name the erase replaced:
	// refused as his own records are.
	updated := records[0]
	updated.UpdatedBy = "bob"
	keptByBob := updated
	keptByBob.KeptAt = created.Add(time.Hour)
	for _, rec := range []uds.Record{updated, keptByBob} {
		if res, err := s.Import(ctx, app, []uds.Record{rec}); !errors.Is(err, uds.ErrErasing) {
			t.Fatalf("import of alice's record naming bob (kept %v): %+v, %v; want uds.ErrErasing", rec.Kept(), res, err)
		}
	}
	for _, owner := range []string{"alice", "bob"} {
		if u := storetest.StoredUsage(t, client, tables, app, owner); u != (uds.Usage{}) {
			t.Errorf("%s's records hold %+v after the import, want nothing", owner, u)
		}
	}
}

// A group of records fills its transaction with their puts and their
// owners' usage changes. A record whose key holds an expired item
// replaces it, which also releases the expired item's owner: a group
// that then needs more than one transaction is sent in halves, not
// refused.
func TestImportOverExpiredItemsOfOtherOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	f := newFaultyStore(t, 45, store.WithClock(clock.Now))
	created := clock.Now().UTC().Truncate(time.Millisecond)
	var records []uds.Record
	for i := range 99 {
		records = append(records, uds.Record{Owner: "alice", Item: uds.Item{
			Key: key(t, "shared", fmt.Sprintf("item-%02d", i)), Data: json.RawMessage(`{"n":1}`),
			CreatedDate: created, CreatedBy: "alice", UpdatedDate: created, UpdatedBy: "alice", Version: 1,
		}})
	}
	for _, i := range []int{10, 60} {
		w := writeAs(fmt.Sprintf("expired%d", i), records[i].Key, `{"gone":true}`)
		w.ExpiresAt = clock.Now().Add(time.Minute)
		if _, err := f.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Hour)
	res, err := f.Import(ctx, app, records)
	if err != nil || res.Imported != len(records) {
		t.Fatalf("import: %+v, %v; want every record imported over the expired items", res, err)
	}
	for _, owner := range []string{"alice", "expired10", "expired60"} {
		f.exact(t, owner)
	}
	if u := f.recorded(t, "expired10"); u != (uds.Usage{}) {
		t.Errorf("the usage of an expired item's owner after its item was replaced: %+v, want none", u)
	}
}
