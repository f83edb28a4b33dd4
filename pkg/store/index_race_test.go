package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
	"github.com/udsproject/uds/pkg/uds"
)

// dataWrites are the DynamoDB operations that change data.
var dataWrites = []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}

// checkIndexes holds every index of p against the items stored: each
// query over a whole index, paged and in both orders, lists exactly the
// live items with a value of its type, in value-then-key order, and every
// such item has an entry in the index table.
func checkIndexes(t *testing.T, s *store.Store, plain *dynamodb.Client, tables store.Tables, ns string, p uds.Policy) {
	t.Helper()
	for _, ix := range p.Indexes {
		want := storetest.IndexedKeys(t, plain, tables, app, ns, ix, "", time.Now())
		for _, desc := range []bool{false, true} {
			// About six pages, and one.
			for _, limit := range []int{len(want)/6 + 1, 1000} {
				expected := slices.Clone(want)
				if desc {
					slices.Reverse(expected)
				}
				got := queryIDs(t, s, store.IndexQuery{App: app, Namespace: ns, Index: ix, Descending: desc, Limit: limit})
				if got != storetest.KeyPaths(expected) {
					t.Errorf("index %s, descending %v, limit %d:\n got %s\nwant %s", ix.Name, desc, limit, got, storetest.KeyPaths(expected))
				}
			}
		}
		entries := map[string]bool{}
		for _, e := range storetest.IndexEntries(t, plain, tables, app, ns, ix.ID) {
			entries[storetest.KeyPath(e.Key)] = true
		}
		for _, k := range want {
			if !entries[storetest.KeyPath(k)] {
				t.Errorf("index %s: item %s has no entry", ix.Name, storetest.KeyPath(k))
			}
		}
	}
}

// crowdValue is a value whose indexed fields take one of two values, or,
// now and then, are missing or of another type.
func crowdValue(rng *rand.Rand) string {
	switch rng.IntN(8) {
	case 0:
		return `{"meta":{"rank":"high"}}`
	case 1:
		return `{"status":7}`
	}
	return fmt.Sprintf(`{"status":%q,"meta":{"rank":%d},"pad":%q}`,
		[]string{"open", "done"}[rng.IntN(2)], 1+rng.IntN(2), fmt.Sprint(rng.IntN(1000)))
}

// Eight writers create, update and delete items that share one or two
// indexed values, alone and in atomic batches, with delete-alls of their
// list, queries cleaning up what they find stale, and faults injected
// (lost answers after commit, throttling, 500s, resets): once quiet, the
// indexes hold exactly the items stored. The entries of one value spread
// over every write shard.
func TestIndexLowCardinalityUnderFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 5, store.WithPolicySettle(testSettle))
	const ns = "crowd"
	p := declare(t, f.Store, ns, testIndexes)
	status := indexNamed(p, "byStatus")
	keys := make([]uds.Key, 0, 24)
	for i := range 12 {
		keys = append(keys, key(t, ns, fmt.Sprintf("k%02d", i)))
		lk, _ := key(t, ns, "l").WithSortKey(fmt.Sprintf("s%02d", i))
		keys = append(keys, lk)
	}
	f.faults.Set(
		faults.Rule{Kind: faults.LostAfterCommit, Ops: dataWrites, Rate: 0.04},
		faults.Rule{Kind: faults.ResetAfterCommit, Ops: dataWrites, Rate: 0.03},
		faults.Rule{Kind: faults.Throttle, Rate: 0.05},
		faults.Rule{Kind: faults.ServerError, Rate: 0.03},
		faults.Rule{Kind: faults.Reset, Rate: 0.03},
	)
	// Answers that the races and faults explain: the key taken or
	// missing, a store out of retries.
	tolerated := func(err error) bool {
		return err == nil || errors.Is(err, uds.ErrConflict) || errors.Is(err, uds.ErrNotFound) ||
			errors.Is(err, uds.ErrUnavailable)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(5, uint64(g)))
			pick := func() uds.Key { return keys[rng.IntN(len(keys))] }
			write := func(k uds.Key) uds.Write {
				return uds.Write{Key: k, Data: json.RawMessage(crowdValue(rng)), Subject: "alice", Indexes: p.Indexes}
			}
			for range 50 {
				var err error
				switch r := rng.IntN(20); {
				case r < 7:
					_, err = f.Create(ctx, write(pick()))
				case r < 12:
					_, err = f.Update(ctx, write(pick()))
				case r < 15:
					err = f.Delete(ctx, uds.Write{Key: pick(), Subject: "alice", Indexes: p.Indexes})
				case r < 17:
					// Two items, as an atomic batch writes each once.
					i := rng.IntN(len(keys))
					a, b := keys[i], keys[(i+1+rng.IntN(len(keys)-1))%len(keys)]
					ops := []uds.BatchOp{{Method: "POST", Write: write(a)}, {Method: "PUT", Write: write(b)}}
					if rng.IntN(2) == 0 {
						ops[1] = uds.BatchOp{Method: "DELETE", Write: uds.Write{Key: b, Subject: "alice", Indexes: p.Indexes}}
					}
					_, err = f.WriteAtomic(ctx, ops)
				case r < 18:
					_, err = f.DeleteList(ctx, uds.Write{Key: key(t, ns, "l"), Subject: "alice", Indexes: p.Indexes})
				default:
					// A query meets entries that writes are making stale,
					// and removes them; what it shows has the value asked
					// (open, or any string).
					q := store.IndexQuery{App: app, Namespace: ns, Index: status, Limit: 8}
					if rng.IntN(2) == 0 {
						q.Eq = str("open")
					}
					var page store.IndexPage
					page, err = f.QueryIndex(ctx, q)
					for _, it := range page.Items {
						if v, ok := status.ValueOf(it.Data); !ok || q.Eq != nil && v.Str != "open" {
							t.Errorf("a query for %v shows %s: %s", q.Eq, storetest.KeyPath(it.Key), it.Data)
						}
					}
				}
				if !tolerated(err) {
					t.Errorf("writer %d: %v", g, err)
				}
			}
		}()
	}
	wg.Wait()
	injected, _ := f.faults.Injected()
	f.faults.Set()
	t.Logf("faults injected: %v", injected)
	checkIndexes(t, f.Store, f.plain, f.tables, ns, p)
	f.exact(t, "alice")

	// One value that 64 items share spreads over every write shard.
	var held []string
	for i := range 64 {
		id := fmt.Sprintf("held%02d", i)
		if _, err := f.Create(ctx, uds.Write{Key: key(t, ns, id), Data: json.RawMessage(`{"status":"held"}`), Subject: "alice", Indexes: p.Indexes}); err != nil {
			t.Fatal(err)
		}
		held = append(held, id)
	}
	shards := map[string]int{}
	for _, e := range storetest.IndexEntries(t, f.plain, f.tables, app, ns, status.ID) {
		if strings.HasPrefix(e.Key.ID, "held") {
			shards[e.Partition]++
		}
	}
	if len(shards) != schema.IndexShards {
		t.Errorf("64 entries of one value are in %d partitions, want all %d write shards: %v", len(shards), schema.IndexShards, shards)
	}
	if got := queryIDs(t, f.Store, store.IndexQuery{App: app, Namespace: ns, Index: status, Eq: str("held"), Limit: 10}); got != strings.Join(held, " ") {
		t.Errorf("a query for held lists %q", got)
	}
}

// Times of the build test: the writers' policy cache time, the longest a
// write may take (its deadline), and the settle time of a change of the
// indexes, which is both plus a margin, as store.PolicySettle has it for
// real functions. The cache time is long enough that a build that did not
// wait for the settle would still meet writers that know nothing of its
// indexes. The margin covers a write sent just before its deadline that a
// loaded engine commits late (as in pkg/httpapi's policy race test): one
// of 200 ms could leave such a write behind the build's scan on a busy
// machine.
const (
	raceCacheTTL   = 800 * time.Millisecond
	raceWriteLimit = time.Second
	raceSettle     = raceCacheTTL + raceWriteLimit + 2*time.Second
)

// startWriters starts writers of items with keys of keys in ns, one on
// each store (a function with its own policy cache), taking the indexes of
// every write from the policy the store has cached, as the data functions
// do, until the returned stop is called; stop returns how many writes they
// sent. Each write has raceWriteLimit, the request budget the settle time
// counts on.
func startWriters(t *testing.T, stores []*store.Store, ns string, keys []uds.Key, seed uint64) (stop func() int) {
	done := make(chan struct{})
	counts := make([]int, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for {
				select {
				case <-done:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), raceWriteLimit)
				err := writeUnderCachedPolicy(ctx, s, ns, keys[rng.IntN(len(keys))], rng)
				cancel()
				// A write out of time may or may not have happened; either
				// is fine, as the checks read the tables.
				if err != nil && !errors.Is(err, uds.ErrConflict) && !errors.Is(err, uds.ErrNotFound) &&
					!errors.Is(err, uds.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("writer %d: %v", i, err)
				}
				counts[i]++
			}
		}()
	}
	return func() int {
		close(done)
		wg.Wait()
		n := 0
		for _, c := range counts {
			n += c
		}
		return n
	}
}

// writeUnderCachedPolicy creates, updates or deletes the item at k with
// the indexes of the policy s has cached.
func writeUnderCachedPolicy(ctx context.Context, s *store.Store, ns string, k uds.Key, rng *rand.Rand) error {
	p, err := s.Policy(ctx, app, ns)
	if err != nil {
		return err
	}
	w := uds.Write{Key: k, Data: json.RawMessage(crowdValue(rng)), Subject: "alice", Indexes: p.Indexes}
	switch rng.IntN(4) {
	case 0:
		_, err = s.Create(ctx, w)
	case 1, 2:
		_, err = s.Update(ctx, w)
	default:
		err = s.Delete(ctx, w)
	}
	return err
}

// buildAll steps the build of ns's indexes until it is done, and returns
// the policy then and how many steps did work. Each step has a budget of a
// millisecond, which a page of the build outlasts: one page a step.
func buildAll(t *testing.T, s *store.Store, ns string) (uds.Policy, int) {
	t.Helper()
	steps := 0
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		p, err := s.BuildIndexes(context.Background(), app, ns, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if p.IndexBuild == nil {
			return p, steps
		}
		if !time.Now().Before(p.IndexBuild.SettlesAt) {
			steps++
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the build did not end")
	return uds.Policy{}, 0
}

// A build meets writers that keep creating, updating (moving items in and
// out of the indexes) and deleting, some of them, during the settle
// window, under a policy cached from before the change: once the build is
// done and the writers stop, the indexes hold exactly the items stored.
// Dropping an index, with the same writers, then removes every entry it
// had.
func TestIndexBuildRacesWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tables := storetest.NewTables(t)
	plain := storetest.Client(t)
	admin := store.New(plain, tables, store.WithPolicySettle(raceSettle), store.WithLimitsTTL(raceCacheTTL))
	writers := make([]*store.Store, 4)
	for i := range writers {
		writers[i] = store.New(plain, tables, store.WithLimitsTTL(raceCacheTTL))
	}
	const ns = "growing"
	// More items than one page of the build's scan, in both tables; the
	// writers work on a share of them and on keys not stored yet.
	var stored, raced []uds.Key
	for i := range 230 {
		stored = append(stored, key(t, ns, fmt.Sprintf("k%03d", i)))
	}
	for i := range 40 {
		lk, _ := key(t, ns, "l").WithSortKey(fmt.Sprintf("s%02d", i))
		stored = append(stored, lk)
	}
	raced = append(raced, stored[:50]...)
	raced = append(raced, stored[230:250]...)
	for i := range 20 {
		raced = append(raced, key(t, ns, fmt.Sprintf("new%02d", i)))
	}
	// They are imported, a few transactions for all.
	rng := rand.New(rand.NewPCG(9, 0))
	now := time.Now().UTC().Truncate(time.Millisecond)
	records := make([]uds.Record, len(stored))
	for i, k := range stored {
		records[i] = uds.Record{Owner: "alice", Item: uds.Item{Key: k, Data: json.RawMessage(crowdValue(rng)),
			CreatedDate: now, CreatedBy: "alice", UpdatedDate: now, UpdatedBy: "alice", Version: 1}}
	}
	if res, err := admin.Import(ctx, app, records); err != nil || res.Imported != len(records) {
		t.Fatalf("import: %+v %v", res, err)
	}

	stop := startWriters(t, writers, ns, raced, 1)
	if _, err := admin.SetPolicy(ctx, app, ns, uds.Policy{Indexes: testIndexes}); err != nil {
		t.Fatal(err)
	}
	p, steps := buildAll(t, admin, ns)
	time.Sleep(raceCacheTTL) // writes under the built indexes
	n := stop()
	t.Logf("build: %d steps; %d writes", steps, n)
	if steps < 2 {
		t.Errorf("the build took %d steps: it did not meet the writers in more than one", steps)
	}
	for _, ix := range p.Indexes {
		if !ix.Ready {
			t.Fatalf("after the build: %+v", p.Indexes)
		}
	}
	checkIndexes(t, admin, plain, tables, ns, p)

	// The writers still hold both indexes in their caches when one is
	// dropped, and keep writing its entries until they read the change.
	rank := indexNamed(p, "byRank")
	stop = startWriters(t, writers, ns, raced, 2)
	if _, err := admin.SetPolicy(ctx, app, ns, uds.Policy{Indexes: testIndexes[:1]}); err != nil {
		t.Fatal(err)
	}
	p, steps = buildAll(t, admin, ns)
	n = stop()
	t.Logf("drop: %d steps; %d writes", steps, n)
	if len(p.Indexes) != 1 || p.Indexes[0].Name != "byStatus" {
		t.Fatalf("after the drop: %+v", p.Indexes)
	}
	if left := storetest.IndexEntries(t, plain, tables, app, ns, rank.ID); len(left) > 0 {
		t.Errorf("%d entries of the dropped index are left, such as %+v", len(left), left[0])
	}
	checkIndexes(t, admin, plain, tables, ns, p)
}
