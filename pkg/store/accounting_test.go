package store_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
	"github.com/udsproject/uds/pkg/uds"
)

// faultyStore is a store whose DynamoDB traffic passes through a fault
// injector, beside a plain client for checking what was really stored.
type faultyStore struct {
	*store.Store
	faults *faults.Transport
	tables store.Tables
	plain  *dynamodb.Client
}

func newFaultyStore(t *testing.T, seed uint64, opts ...store.Option) faultyStore {
	t.Helper()
	client, ft := storetest.FaultyClient(t, seed)
	tables := storetest.NewTables(t)
	return faultyStore{Store: store.New(client, tables, opts...), faults: ft, tables: tables, plain: storetest.Client(t)}
}

// keeps sets namespace ns's policy to keep history h, as an import of
// kept versions reads it (the writes of these tests carry their history
// themselves), through a store without faults.
func (f faultyStore) keeps(t *testing.T, ns string, h uds.History) {
	t.Helper()
	if _, err := store.New(f.plain, f.tables).SetPolicy(context.Background(), app, ns, uds.Policy{Access: uds.AccessShared, History: h}); err != nil {
		t.Fatal(err)
	}
}

// recorded is the owner's usage record.
func (f faultyStore) recorded(t *testing.T, owner string) uds.Usage {
	return storetest.RecordedUsage(t, f.plain, f.tables, app, owner)
}

// real sums the owner's items as the tables hold them.
func (f faultyStore) real(t *testing.T, owner string) uds.Usage {
	return storetest.StoredUsage(t, f.plain, f.tables, app, owner)
}

// exact fails the test unless the owner's usage record equals what the
// tables hold.
func (f faultyStore) exact(t *testing.T, owner string) {
	t.Helper()
	if rec, real := f.recorded(t, owner), f.real(t, owner); rec != real {
		t.Errorf("usage of %s: recorded %+v, stored items add up to %+v (drift %+v)", owner, rec, real,
			uds.Usage{Bytes: rec.Bytes - real.Bytes, Items: rec.Items - real.Items})
	}
}

func writeAs(owner string, k uds.Key, data string) uds.Write {
	return uds.Write{Key: k, Data: []byte(data), Subject: owner}
}

func listKey(t *testing.T, id, sortKey string) uds.Key {
	t.Helper()
	k, err := key(t, "lists", id).WithSortKey(sortKey)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Concurrent delete-alls of one list, racing single deletes and shrinking
// updates of its items, release every removed item exactly once.
func TestConcurrentDeleteAllsReleaseOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 1)
	list := key(t, "lists", "shared")
	const n = 200
	for i := range n {
		if _, err := f.Create(ctx, writeAs("alice", listKey(t, "shared", fmt.Sprintf("k%03d", i)), `{"v":"`+strings.Repeat("x", 300)+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	deleted := make([]int, 3)
	for i := range deleted {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if deleted[i], err = f.DeleteList(ctx, uds.Write{Key: list}); err != nil {
				t.Error(err)
			}
		}()
	}
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := listKey(t, "shared", fmt.Sprintf("k%03d", i*5))
			var err error
			if i%2 == 0 {
				err = f.Delete(ctx, uds.Write{Key: k})
			} else if _, err = f.Update(ctx, writeAs("bob", k, `{"v":1}`)); errors.Is(err, uds.ErrNotFound) {
				err = nil
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	t.Logf("delete-alls removed %v items", deleted)
	f.exact(t, "alice")
	if rec := f.recorded(t, "alice"); rec.Items < 0 || rec.Bytes < 0 {
		t.Errorf("usage went negative: %+v", rec)
	}
}

// faultedWrite is a write of an item that the store holds, created by
// alice: a test aims a fault at op, the operation that commits it.
type faultedWrite struct {
	name string
	op   string
	run  func(f faultyStore, k uds.Key, it uds.Item) error
}

// faultedWrites are the writes whose faults the tests below inject.
func faultedWrites(ctx context.Context) []faultedWrite {
	return []faultedWrite{
		{"create", "TransactWriteItems", func(f faultyStore, k uds.Key, _ uds.Item) error {
			k.ID += "-new"
			created, err := f.Create(ctx, writeAs("alice", k, `{"new":true}`))
			if err == nil && created.Version != 1 {
				err = fmt.Errorf("created version %d", created.Version)
			}
			return err
		}},
		{"growing update with If-Match", "TransactWriteItems", func(f faultyStore, k uds.Key, it uds.Item) error {
			w := writeAs("alice", k, `{"v":"`+strings.Repeat("y", 1500)+`"}`)
			w.IfMatch = uds.Precondition{Revisions: []uds.Revision{it.Revision()}}
			got, err := f.Update(ctx, w)
			if err == nil && got.Version != 2 {
				err = fmt.Errorf("updated version %d, want 2", got.Version)
			}
			return err
		}},
		{"shrinking update", "TransactWriteItems", func(f faultyStore, k uds.Key, _ uds.Item) error {
			_, err := f.Update(ctx, writeAs("alice", k, `{}`))
			return err
		}},
		{"same-size update with If-Match", "UpdateItem", func(f faultyStore, k uds.Key, it uds.Item) error {
			w := writeAs("bob", k, `{"v":"`+strings.Repeat("z", 300)+`"}`)
			w.IfMatch = uds.Precondition{Revisions: []uds.Revision{it.Revision()}}
			got, err := f.Update(ctx, w)
			if err == nil && (got.Version != 2 || got.UpdatedBy != "bob") {
				err = fmt.Errorf("updated item %+v", got)
			}
			return err
		}},
		{"delete with If-Match", "TransactWriteItems", func(f faultyStore, k uds.Key, it uds.Item) error {
			return f.Delete(ctx, uds.Write{Key: k, IfMatch: uds.Precondition{Revisions: []uds.Revision{it.Revision()}}})
		}},
		{"delete-all", "TransactWriteItems", func(f faultyStore, k uds.Key, _ uds.Item) error {
			list := k
			list.SortKey = ""
			n, err := f.DeleteList(ctx, uds.Write{Key: list})
			if err == nil && n != 1 {
				err = fmt.Errorf("deleted %d, want 1", n)
			}
			return err
		}},
	}
}

// newFaultedItem is the item a faultedWrite changes.
func newFaultedItem(t *testing.T, f faultyStore) (uds.Key, uds.Item) {
	t.Helper()
	k := listKey(t, "l", "item")
	it, err := f.Create(context.Background(), writeAs("alice", k, `{"v":"`+strings.Repeat("x", 300)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	return k, it
}

// A write that DynamoDB applied but whose answer was lost is retried by the
// SDK or the store; the retry recognises it: the answer is the success the
// first attempt earned, and usage moves once.
func TestLostAnswersAreRecognised(t *testing.T) {
	t.Parallel()
	for _, kind := range []faults.Kind{faults.LostAfterCommit, faults.ResetAfterCommit} {
		for _, tc := range faultedWrites(context.Background()) {
			t.Run(kind.String()+"/"+tc.name, func(t *testing.T) {
				f := newFaultyStore(t, 2)
				k, it := newFaultedItem(t, f)
				f.faults.Set(faults.Rule{Kind: kind, Ops: []string{tc.op}, Nth: 1})
				if err := tc.run(f, k, it); err != nil {
					t.Errorf("answer: %v, want success", err)
				}
				if injected, _ := f.faults.Injected(); injected[kind] != 1 {
					t.Fatalf("the fault was not injected: %v", injected)
				}
				f.exact(t, "alice")
			})
		}
	}
}

// A streamed create is one PutItem that the SDK does not retry: when its
// answer is lost, the next attempt finds the item by its write token, and
// the create answers the item as stored, whose revision (version and
// creation instant) an If-Match then names. An answer made up from the
// later attempt would carry that attempt's instant: a revision that no
// stored item has.
func TestLostStreamedCreateAnswersTheStoredRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, kind := range []faults.Kind{faults.LostAfterCommit, faults.ResetAfterCommit} {
		t.Run(kind.String(), func(t *testing.T) {
			f := newFaultyStore(t, 4)
			if err := f.SetQuotaMode(ctx, app, uds.QuotaStreamed); err != nil {
				t.Fatal(err)
			}
			k := key(t, "prefs", "lost-"+kind.String())
			f.faults.Set(faults.Rule{Kind: kind, Ops: []string{"PutItem"}, Nth: 1})
			created, err := f.Create(ctx, writeAs("alice", k, `{"a":1}`))
			if err != nil {
				t.Fatal(err)
			}
			if injected, _ := f.faults.Injected(); injected[kind] != 1 {
				t.Fatalf("the fault was not injected: %v", injected)
			}
			stored, err := f.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if created.Revision() != stored.Revision() {
				t.Errorf("create answered revision %v, the item stored is at %v", created.Revision(), stored.Revision())
			}
		})
	}
}

// A transaction that DynamoDB cancelled only because another transaction
// held one of its items committed nothing, and transact sends it again:
// the write succeeds, after one more attempt per conflict, and usage moves
// once. The attempts sent again are counted as retries of the call, as
// the SDK counts its own. DynamoDB Local never cancels for a conflict; the
// fault injector answers as DynamoDB does.
func TestConflictsAreSentAgain(t *testing.T) {
	t.Parallel()
	ctx, stats := store.WithCallStats(context.Background())
	for _, tc := range faultedWrites(ctx) {
		if tc.op != "TransactWriteItems" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			f := newFaultyStore(t, 3)
			k, it := newFaultedItem(t, f)
			// The first rule takes the first transaction; the second
			// counts only the calls the first let through, so it takes
			// the second transaction.
			f.faults.Set(faults.Rule{Kind: faults.Conflict, Nth: 1}, faults.Rule{Kind: faults.Conflict, Nth: 1})
			retriesBefore := stats.Snapshot().Retries
			if err := tc.run(f, k, it); err != nil {
				t.Errorf("answer: %v, want success", err)
			}
			if injected, _ := f.faults.Injected(); injected[faults.Conflict] != 2 {
				t.Fatalf("%v injected, want two conflicts", injected)
			}
			if sent := f.faults.Calls("TransactWriteItems"); sent != 3 {
				t.Errorf("%d transactions sent, want the one transaction sent 3 times: once, and again after each conflict", sent)
			}
			if retries := stats.Snapshot().Retries - retriesBefore; retries != 2 {
				t.Errorf("%d retries counted, want the two sent again", retries)
			}
			f.exact(t, "alice")
		})
	}
}

// A single write that DynamoDB throttled applied nothing: it is sent
// again as if it had never gone, and a refusal after it is as sure as one
// without it. A create of a taken key (in streamed mode, one PutItem)
// whose first attempt was throttled answers the conflict, not an unknown
// outcome.
func TestThrottledSingleWriteIsSurelyRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 5)
	if err := f.SetQuotaMode(ctx, app, uds.QuotaStreamed); err != nil {
		t.Fatal(err)
	}
	k := key(t, "ns", "taken")
	if _, err := f.Create(ctx, writeAs("alice", k, `1`)); err != nil {
		t.Fatal(err)
	}
	f.faults.Set(faults.Rule{Kind: faults.Throttle, Ops: []string{"PutItem"}, Nth: 1})
	if _, err := f.Create(ctx, writeAs("alice", k, `2`)); !errors.Is(err, uds.ErrConflict) {
		t.Errorf("a create of a taken key whose first attempt was throttled: %v, want uds.ErrConflict", err)
	}
	if injected, _ := f.faults.Injected(); injected[faults.Throttle] != 1 {
		t.Errorf("faults %v, want the create's first attempt throttled", injected)
	}
}

// Every key the key rules accept can be written and is counted: the owner
// index has no sort key, so a dataKey of up to 2,048 bytes fits it.
func TestLongKeysAreCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 3, store.WithRecomputeQuiet(0))
	id := strings.Repeat("k", uds.MaxDataKeyBytes-len(app)-len("|ns|"))
	k, err := uds.NewKey(app, "ns", id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create(ctx, writeAs("alice", k, `1`)); err != nil {
		t.Fatalf("create with a %d-byte key: %v", len(k.DataKey()), err)
	}
	lk, err := k.WithSortKey(strings.Repeat("s", uds.MaxSortKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create(ctx, writeAs("alice", lk, `2`)); err != nil {
		t.Fatalf("create list item with the longest keys: %v", err)
	}
	f.exact(t, "alice")
	rc, err := f.Recompute(ctx, app, "alice")
	if err != nil || rc.Drift != (uds.Usage{}) || rc.Quota.Used.Items != 2 {
		t.Fatalf("recompute: %+v, %v; want 2 items and no drift", rc, err)
	}
}

// A user at the item limit who POSTs a key that exists learns that the key
// exists (409): the conflict holds whatever the quota. So it does when the
// value could not fit even an empty account, which is refused before
// anything is sent.
func TestConflictBeforeQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 4, store.WithDefaultLimits(uds.Limits{Items: 1, Bytes: 200}))
	k := key(t, "ns", "one")
	if _, err := f.Create(ctx, writeAs("alice", k, `1`)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create(ctx, writeAs("alice", k, `2`)); !errors.Is(err, uds.ErrConflict) {
		t.Fatalf("POST of an existing key at the limit: %v, want ErrConflict", err)
	}
	if _, err := f.Create(ctx, writeAs("alice", key(t, "ns", "two"), `2`)); !errors.Is(err, uds.ErrQuotaExceeded) {
		t.Fatalf("POST of a new key at the limit: %v, want ErrQuotaExceeded", err)
	}
	large := `"` + strings.Repeat("x", 300) + `"`
	if _, err := f.Create(ctx, writeAs("alice", k, large)); !errors.Is(err, uds.ErrConflict) {
		t.Fatalf("POST of an existing key with a value past the whole limit: %v, want ErrConflict", err)
	}
	if _, err := f.Create(ctx, writeAs("alice", key(t, "ns", "two"), large)); !errors.Is(err, uds.ErrQuotaExceeded) {
		t.Fatalf("POST of a new key with a value past the whole limit: %v, want ErrQuotaExceeded", err)
	}
	f.exact(t, "alice")
}

// Transient faults that outlast every retry end in uds.ErrUnavailable (503),
// never in an unclassified error (500) or a false refusal.
func TestTransientFaultsAreUnavailable(t *testing.T) {
	t.Parallel()
	for _, kind := range []faults.Kind{faults.Throttle, faults.ServerError, faults.Unavailable, faults.Reset} {
		t.Run(kind.String(), func(t *testing.T) {
			f := newFaultyStore(t, 5)
			k := key(t, "ns", "item")
			f.faults.Set(faults.Rule{Kind: kind, Rate: 1})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if _, err := f.Create(ctx, writeAs("alice", k, `1`)); !errors.Is(err, uds.ErrUnavailable) {
				t.Fatalf("Create under constant %s: %v, want ErrUnavailable", kind, err)
			}
			if _, err := f.Get(ctx, k); !errors.Is(err, uds.ErrUnavailable) {
				t.Fatalf("Get under constant %s: %v, want ErrUnavailable", kind, err)
			}
			f.faults.Set()
			f.exact(t, "alice")
		})
	}
}

// Recompute never stores a total below the real one: it lowers a record
// only once the owner's usage has been quiet for the quiet period, and
// only if the record still says what it read. Each write of the owner's
// starts the quiet period again.
func TestRecomputeWaitsForQuiet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The clock stands still but where the test moves it: a quiet period
	// ends only when the test says so, however loaded the machine.
	const quiet = time.Hour
	clock := &storetest.Clock{}
	clock.Freeze()
	f := newFaultyStore(t, 6, store.WithRecomputeQuiet(quiet), store.WithClock(clock.Now))
	for i := range 3 {
		if _, err := f.Create(ctx, writeAs("alice", key(t, "ns", strconv.Itoa(i)), `1`)); err != nil {
			t.Fatal(err)
		}
	}
	// Over-count by hand, as a crash of an earlier release could have.
	_, err := f.plain.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(f.tables.Usage),
		Key: map[string]types.AttributeValue{
			schema.AttrUser: &types.AttributeValueMemberS{Value: "alice"},
			schema.AttrApp:  &types.AttributeValueMemberS{Value: app},
		},
		UpdateExpression:          aws.String("ADD usedItems :n, usedBytes :b"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "5"}, ":b": &types.AttributeValueMemberN{Value: "500"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A quiet period that ends with a write (a create, then its delete)
	// starts again: the drift is reported, not applied, and the owner is
	// told to come back a whole period later.
	drift := uds.Usage{Bytes: 500, Items: 5}
	for i := range 4 {
		clock.Advance(quiet)
		k := key(t, "busy", strconv.Itoa(i/2))
		if i%2 == 0 {
			_, err = f.Create(ctx, writeAs("alice", k, `"x"`))
		} else {
			err = f.Delete(ctx, uds.Write{Key: k, Subject: "alice"})
		}
		if err != nil {
			t.Fatal(err)
		}
		rc, err := f.Recompute(ctx, app, "alice")
		if err != nil {
			t.Fatal(err)
		}
		// The write's time is kept to the millisecond.
		if rc.Applied || rc.Drift != drift || rc.RetryAfter <= quiet-time.Millisecond || rc.RetryAfter > quiet {
			t.Errorf("recompute right after a write: %+v; want the drift %+v reported, not applied, and RetryAfter %v", rc, drift, quiet)
		}
	}
	if rec, real := f.recorded(t, "alice"), f.real(t, "alice"); rec.Items != real.Items+5 {
		t.Fatalf("before the quiet period: recorded %+v, real %+v; want the hand-made drift intact", rec, real)
	}
	clock.Advance(quiet)
	rc, err := f.Recompute(ctx, app, "alice")
	if err != nil || !rc.Applied || rc.Drift != drift {
		t.Fatalf("recompute once quiet: %+v, %v; want the drift of %+v applied", rc, err, drift)
	}
	f.exact(t, "alice")
}
