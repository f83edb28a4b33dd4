package store_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// The local server's sweep removes expired items nothing touched and
// releases them once; a second sweep finds nothing.
func TestSweepExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	f := newFaultyStore(t, 8, store.WithClock(clock.Now))
	at := clock.Now().Add(time.Hour)
	for i := range 5 {
		w := writeAs("tess", key(t, "sweep", fmt.Sprint(i)), `{"v":1}`)
		if i < 3 {
			w.ExpiresAt = at
		}
		if _, err := f.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		lw := writeAs("tess", listKey(t, "sweep", fmt.Sprint(i)), `2`)
		lw.ExpiresAt = at
		if _, err := f.Create(ctx, lw); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Hour)
	n, err := f.SweepExpired(ctx)
	if err != nil || n != 8 {
		t.Fatalf("sweep removed %d, %v; want the 8 expired items", n, err)
	}
	f.exact(t, "tess")
	if u := f.recorded(t, "tess"); u.Items != 2 {
		t.Errorf("usage %+v, want the 2 live items", u)
	}
	if n, err := f.SweepExpired(ctx); err != nil || n != 0 {
		t.Errorf("second sweep removed %d, %v", n, err)
	}
	if _, err := f.Get(ctx, key(t, "sweep", "4")); err != nil {
		t.Errorf("a live item: %v", err)
	}
}

// Recompute sums the expired items it could not reclaim: the record counts
// them until their removal releases them. Lowering the record by them
// would release them twice, once now and once when they are removed. More
// expired items than one reclaim takes leave some stored.
func TestRecomputeCountsExpiredItemsStillStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	f := newFaultyStore(t, 9, store.WithRecomputeQuiet(0), store.WithClock(clock.Now))
	at := clock.Now().Add(time.Hour)
	const expiring = store.MaxReclaim + 1
	var wg sync.WaitGroup
	for worker := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := worker; i <= expiring; i += 8 {
				w := writeAs("rex", key(t, "many", fmt.Sprint(i)), `{"v":1}`)
				if i < expiring {
					w.ExpiresAt = at
				}
				if _, err := f.Create(ctx, w); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	clock.Advance(2 * time.Hour)
	rc, err := f.Recompute(ctx, app, "rex")
	if err != nil || rc.Drift != (uds.Usage{}) {
		t.Fatalf("recompute: %+v, %v; want no drift", rc, err)
	}
	f.exact(t, "rex")
	if n, err := f.SweepExpired(ctx); err != nil || n != expiring-store.MaxReclaim {
		t.Fatalf("sweep removed %d, %v; want the %d expired items recompute left", n, err, expiring-store.MaxReclaim)
	}
	f.exact(t, "rex")
	if u := f.recorded(t, "rex"); u.Items != 1 {
		t.Errorf("usage %+v, want the live item alone", u)
	}
}

// ttlDelete deletes an item as DynamoDB's TTL does, behind UDS's back, and
// returns its old image, as the stream's record carries it.
func (f faultyStore) ttlDelete(t *testing.T, k uds.Key) map[string]types.AttributeValue {
	t.Helper()
	key := map[string]types.AttributeValue{schema.AttrDataKey: &types.AttributeValueMemberS{Value: k.DataKey()}}
	out, err := f.plain.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(f.tables.Data), Key: key, ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil || out.Attributes == nil {
		t.Fatalf("deleting %s as the TTL would: %v", k.DataKey(), err)
	}
	return out.Attributes
}

// A TTL deletion whose stream record arrives after a recompute corrected
// the total without the item is not released again; one deleted after the
// recompute is released as usual.
func TestTTLDeletionsBeforeARecomputeAreNotReleasedTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	f := newFaultyStore(t, 10, store.WithRecomputeQuiet(0), store.WithClock(clock.Now))
	at := clock.Now().Add(time.Hour)
	create := func(id string, expires time.Time) uds.Key {
		w := writeAs("tia", key(t, "ttl", id), `{"v":"`+id+`"}`)
		w.ExpiresAt = expires
		if _, err := f.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		return w.Key
	}
	gone := create("gone-before", at)
	create("live", time.Time{})
	clock.Advance(2 * time.Hour)
	// The stream gives deletion times rounded down to the second.
	removed := clock.Now().Truncate(time.Second)
	old := f.ttlDelete(t, gone)

	rc, err := f.Recompute(ctx, app, "tia")
	if err != nil || !rc.Applied || rc.Drift.Items != 1 {
		t.Fatalf("recompute before the stream record: %+v, %v; want the deleted item's drift applied", rc, err)
	}
	if released, err := f.ReleaseRemoved(ctx, old, removed); err != nil || released {
		t.Fatalf("the record of a deletion the recompute left out: released %v, %v", released, err)
	}
	f.exact(t, "tia")

	later := create("gone-after", clock.Now().Add(time.Hour))
	clock.Advance(2 * time.Hour) // past the expiry and recompute's clock margin
	old = f.ttlDelete(t, later)
	if released, err := f.ReleaseRemoved(ctx, old, clock.Now()); err != nil || !released {
		t.Fatalf("a deletion after the recompute: released %v, %v", released, err)
	}
	f.exact(t, "tia")
	if u := f.recorded(t, "tia"); u.Items != 1 {
		t.Errorf("usage %+v, want the live item alone", u)
	}
}

// A stream record of an item this store never counted (an event replayed
// against another store, or made up) releases nothing: usage is never
// driven below zero, whether the owner has no record at all or one that
// holds less than the item.
func TestReleaseOfAnItemNeverCountedLeavesUsageAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 11)
	stranger := func(owner string, size int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			schema.AttrDataKey:          &types.AttributeValueMemberS{Value: app + "|sessions|" + owner},
			schema.AttrCreatedDate:      &types.AttributeValueMemberS{Value: "2024-01-15T10:00:00.000Z"},
			schema.AttrCreatedBySubject: &types.AttributeValueMemberS{Value: owner},
			schema.AttrVersion:          &types.AttributeValueMemberN{Value: "1"},
			schema.AttrItemSize:         &types.AttributeValueMemberN{Value: fmt.Sprint(size)},
			schema.AttrOwnerKey:         &types.AttributeValueMemberS{Value: app + "|" + owner},
		}
	}
	for _, tc := range []struct {
		name, owner string
		size        int
		before      func()
		want        uds.Usage
	}{
		{"an owner without a usage record", "nobody", 130, func() {}, uds.Usage{}},
		{"an owner whose usage holds less than the item", "small", 100_000, func() {
			if _, err := f.Create(ctx, writeAs("small", key(t, "kv", "one"), `1`)); err != nil {
				t.Fatal(err)
			}
		}, uds.Usage{Items: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.before()
			before := f.recorded(t, tc.owner)
			if released, err := f.ReleaseRemoved(ctx, stranger(tc.owner, tc.size), time.Now()); err != nil || released {
				t.Fatalf("released %v, %v; want nothing released", released, err)
			}
			after := f.recorded(t, tc.owner)
			if after != before || after.Bytes < 0 || after.Items < 0 || after.Items != tc.want.Items {
				t.Errorf("usage %+v before, %+v after; want it untouched and never negative", before, after)
			}
		})
	}
}

// An owner at an item limit who writes expiring items in a namespace
// with an index has them reclaimed by the write their limit refuses. The
// owner index, through which the refused write finds them, carries no
// value: the reclaim reads the items whole, so their index entries go in
// the removal's transaction, and no entry stays without its item for
// queries to meet.
func TestReclaimRemovesIndexEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	tables, plain := storetest.NewTables(t), storetest.Client(t)
	s := store.New(plain, tables, store.WithPolicySettle(testSettle), store.WithClock(clock.Now),
		store.WithDefaultLimits(uds.Limits{Items: 3}))
	const ns = "reclaimed"
	p := declare(t, s, ns, testIndexes[:1])
	const rounds, perRound = 4, 3
	for round := range rounds {
		for i := range perRound {
			w := uds.Write{Key: key(t, ns, fmt.Sprintf("%d-%d", round, i)), Data: []byte(`{"status":"open"}`), Subject: "ivy",
				Indexes: p.Indexes, ExpiresAt: clock.Now().Add(time.Hour)}
			if _, err := s.Create(ctx, w); err != nil {
				t.Fatalf("round %d, item %d: %v", round, i, err)
			}
		}
		if round < rounds-1 {
			clock.Advance(2 * time.Hour)
		}
	}
	got := entriesByKey(t, plain, tables, ns, p.Indexes[0].ID)
	want := map[string]int{}
	for i := range perRound {
		want[fmt.Sprintf("%d-%d", rounds-1, i)] = 1
	}
	if !maps.Equal(got, want) {
		t.Errorf("index entries per item after the reclaims: %v, want those of the %d live items %v", got, perRound, want)
	}
	page, err := s.QueryIndex(ctx, store.IndexQuery{App: app, Namespace: ns, Index: p.Indexes[0], Eq: str("open"), Limit: perRound})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != perRound {
		t.Errorf("the first page of the query holds %d items, want the %d live ones", len(page.Items), perRound)
	}
}
