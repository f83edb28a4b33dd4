package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/migrate"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
	"github.com/udsproject/uds/pkg/uds"
)

const app = "d53065bd-f932-4841-83fb-849717d8df0f"

// seedItem is an item as the seed's service wrote it.
type seedItem struct {
	table, dataKey, sortKey, value, className, creator string
	audit                                              bool
}

// fillSeed writes seed-shaped items: some with the seed's audit fields,
// some without any, some with a class name; values of about 6 KB, so each
// table takes several scan pages.
func fillSeed(t *testing.T, c *dynamodb.Client, tables store.Tables) []seedItem {
	t.Helper()
	var items []seedItem
	pad := strings.Repeat("s", 6000)
	for i := range 360 {
		it := seedItem{value: fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, pad)}
		switch i % 3 {
		case 0:
			it.creator, it.audit = "alice", true
		case 1:
			it.creator, it.audit, it.className = "bob|auth0", true, "com.example.Prefs"
		default: // no audit fields at all
		}
		if i%2 == 0 {
			it.table, it.dataKey = tables.Data, fmt.Sprintf("%s|prefs|user-%03d", app, i)
		} else {
			it.table, it.dataKey, it.sortKey = tables.List, app+"|activities|feed", fmt.Sprintf("2024-01-%03d", i)
		}
		items = append(items, it)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			av := map[string]types.AttributeValue{
				schema.AttrDataKey:   &types.AttributeValueMemberS{Value: it.dataKey},
				schema.AttrDataValue: &types.AttributeValueMemberS{Value: it.value},
			}
			if it.sortKey != "" {
				av[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: it.sortKey}
			}
			if it.className != "" {
				av[schema.AttrClassName] = &types.AttributeValueMemberS{Value: it.className}
			}
			if it.audit {
				for _, a := range []string{schema.AttrCreatedDate, schema.AttrUpdatedDate} {
					av[a] = &types.AttributeValueMemberS{Value: "2023-06-01T08:00:00Z"}
				}
				av[schema.AttrCreatedBySubject] = &types.AttributeValueMemberS{Value: it.creator}
				av[schema.AttrUpdatedBySubject] = &types.AttributeValueMemberS{Value: it.creator}
			}
			if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(it.table), Item: av}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return items
}

// answers is what the API answers for some items: status, ETag and body.
func answers(t *testing.T, srv *httptest.Server, items []seedItem) []string {
	t.Helper()
	var out []string
	for _, it := range items[:12] {
		path := "/rest/api/v1/data/" + strings.ReplaceAll(it.dataKey, "|", "/")
		if it.sortKey != "" {
			path += "/" + it.sortKey
		}
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_, _ = fmt.Fprint(&b, res.StatusCode, " ", res.Header.Get("ETag"), " ")
		buf := make([]byte, 64<<10)
		n, _ := res.Body.Read(buf)
		res.Body.Close()
		b.Write(buf[:n])
		out = append(out, b.String())
	}
	return out
}

func TestMigrateSeedDeployment(t *testing.T) {
	ctx := context.Background()
	plain := storetest.Client(t)
	tables := storetest.NewSeedTables(t)
	items := fillSeed(t, plain, tables)
	client, ft := storetest.FaultyClient(t, 11)
	st := store.New(client, tables, store.WithRecomputeQuiet(0))
	srv := httptest.NewServer(httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{Subject: httpapi.HeaderSubject, CursorSecret: []byte("m"), Logger: apitest.Logger(t)}))
	t.Cleanup(srv.Close)
	before := answers(t, srv, items)

	// Before the index exists, recompute is a 503 that says why.
	res, err := http.Post(srv.URL+"/rest/api/v1/admin/apps/"+app+"/users/alice/quota/recompute", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 1024)
	n, _ := res.Body.Read(body)
	res.Body.Close()
	if res.StatusCode != 503 || !strings.Contains(string(body[:n]), "index not ready") || res.Header.Get("Retry-After") == "" {
		t.Fatalf("recompute before the migration: %d %s", res.StatusCode, body[:n])
	}

	opts := migrate.Options{
		Tables: tables, Segments: 3, DefaultOwner: "anonymous", PollEvery: 50 * time.Millisecond,
		Checkpoint: filepath.Join(t.TempDir(), "checkpoint.json"),
	}
	t.Run("dry run changes nothing", func(t *testing.T) {
		dry := opts
		dry.DryRun = true
		rep, err := migrate.Run(ctx, client, st, dry)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Legacy.Items != int64(len(items)) || len(rep.IndexesCreated) != 2 || rep.Adopted != 0 {
			t.Errorf("dry run report %+v, want %d legacy items, 2 indexes to add", rep, len(items))
		}
		if state, _ := store.OwnerIndexState(ctx, client, tables.Data); state != store.IndexMissing {
			t.Errorf("the dry run added the index")
		}
	})

	// The first run is interrupted after a few pages...
	first, cancel := context.WithCancel(ctx)
	lines := 0
	interrupted := opts
	interrupted.Progress = writerFunc(func(p []byte) {
		if strings.Contains(string(p), "page") {
			if lines++; lines == 3 {
				cancel()
			}
		}
	})
	rep1, err := migrate.Run(first, client, st, interrupted)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want the cancellation", err)
	}
	if rep1.Adopted == 0 || rep1.Adopted >= len(items) {
		t.Fatalf("the interrupted run adopted %d of %d items; want it stopped midway", rep1.Adopted, len(items))
	}
	// ...and resumed, with answers of committed transactions lost.
	ft.Set(faults.Rule{Kind: faults.LostAfterCommit, Ops: []string{"TransactWriteItems"}, Rate: 0.3})
	rep2, err := migrate.Run(ctx, client, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if injected, _ := ft.Injected(); injected[faults.LostAfterCommit] == 0 {
		t.Errorf("no answer was lost: %v", injected)
	}
	ft.Set()
	if rep2.Adopted != len(items) {
		t.Errorf("adopted %d in all, want %d (%+v)", rep2.Adopted, len(items), rep2)
	}
	for _, table := range []string{tables.Data, tables.List} {
		if state, _ := store.OwnerIndexState(ctx, client, table); state != store.IndexActive {
			t.Errorf("%s: owner index %s", table, state)
		}
		out, err := plain.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			FilterExpression: aws.String("attribute_not_exists(ownerKey) OR attribute_not_exists(itemSize) OR attribute_not_exists(schemaVersion)"), Select: types.SelectCount})
		if err != nil || out.Count != 0 {
			t.Errorf("%s: %d items left uncounted (%v)", table, out.Count, err)
		}
	}
	for _, owner := range []string{"alice", "bob|auth0", "anonymous"} {
		rec, real := storetest.RecordedUsage(t, plain, tables, app, owner), storetest.StoredUsage(t, plain, tables, app, owner)
		if rec != real || real.Items != int64(len(items)/3) {
			t.Errorf("%s: usage %+v, the tables hold %+v; want %d items", owner, rec, real, len(items)/3)
		}
	}
	for _, ow := range rep2.Owners {
		if ow.Drift != (uds.Usage{}) {
			t.Errorf("recompute after the migration: %+v", ow)
		}
	}
	// The namespaces that hold the items, and their app, are in the
	// catalogue of what holds data.
	if rep2.Namespaces != 2 {
		t.Errorf("%d namespaces marked, want 2 (%+v)", rep2.Namespaces, rep2)
	}
	held, _, err := st.Policies(ctx, app, "", 10, true)
	if err != nil || len(held) != 2 || held[0].Namespace != "activities" || held[0].HeldSince.IsZero() || held[1].Namespace != "prefs" || held[1].HeldSince.IsZero() {
		t.Errorf("the namespaces holding data: %+v, %v; want activities and prefs, marked", held, err)
	}
	if apps, _, err := st.HeldApps(ctx, "", 10); err != nil || len(apps) != 1 || apps[0].App != app {
		t.Errorf("the apps holding data: %+v, %v; want %s", apps, err, app)
	}
	if after := answers(t, srv, items); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("legacy items read differently after the migration:\nbefore %v\nafter  %v", before, after)
	}

	// A second full run finds nothing left to do.
	rep3, err := migrate.Run(ctx, client, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep3.Legacy.Items != 0 || rep3.Adopted != 0 || len(rep3.IndexesCreated) != 0 {
		t.Errorf("second run: %+v, want nothing to do", rep3)
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// TestMigrateRemovesItemsOfErasedOwners: a migration that meets a person
// whose erase runs removes their legacy items, as the erase does (with
// the index entries a build made for them, counted on its receipt),
// rather than adopting them, which would give them data the erase was to
// remove; it adopts everyone else's. Here the erase starts as the first
// adoption is sent, after the migration read that bob had none: the
// adoption holds only while the erase records are as read, so none of
// bob's items is adopted.
func TestMigrateRemovesItemsOfErasedOwners(t *testing.T) {
	ctx := context.Background()
	plain := storetest.Client(t)
	tables := storetest.NewSeedTables(t)
	items := fillSeed(t, plain, tables)
	eraser := store.New(plain, tables)
	hook := &beforeAdoption{Client: plain, tables: tables, before: func() {
		if _, err := eraser.EraseUser(ctx, store.EraseQuery{User: "bob|auth0"}); err != nil {
			t.Error(err)
		}
	}}
	st := store.New(hook, tables, store.WithRecomputeQuiet(0), store.WithPolicySettle(100*time.Millisecond))
	byI := uds.Index{Name: "byI", Path: "/i", Type: uds.IndexNumber}
	if _, err := st.SetPolicy(ctx, app, "prefs", uds.Policy{Indexes: []uds.Index{byI}}); err != nil {
		t.Fatal(err)
	}
	policy := storetest.BuildIndexes(t, st, app, "prefs")
	entriesOf := func(owner string) int {
		n := 0
		for _, e := range storetest.IndexEntries(t, plain, tables, app, "prefs", policy.Indexes[0].ID) {
			for _, it := range items {
				if it.sortKey == "" && strings.HasSuffix(it.dataKey, "|"+e.Key.ID) && it.creator == owner {
					n++
				}
			}
		}
		return n
	}
	if n := entriesOf("bob|auth0"); n != len(items)/6 {
		t.Fatalf("the build made %d entries for bob's items, want %d", n, len(items)/6)
	}
	rep, err := migrate.Run(ctx, plain, st, migrate.Options{
		Tables: tables, Segments: 2, DefaultOwner: "anonymous", PollEvery: 50 * time.Millisecond,
		Checkpoint: filepath.Join(t.TempDir(), "checkpoint.json"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !hook.called.Load() {
		t.Fatal("no adoption was sent")
	}
	if rep.Adopted != 2*len(items)/3 || rep.Erased != len(items)/3 || rep.Changed != 0 {
		t.Errorf("adopted %d, removed %d, changed %d; want %d adopted and bob's %d removed", rep.Adopted, rep.Erased, rep.Changed, 2*len(items)/3, len(items)/3)
	}
	for _, table := range []string{tables.Data, tables.List} {
		out, err := plain.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			FilterExpression:          aws.String("createdBySubject = :bob OR attribute_not_exists(ownerKey)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":bob": &types.AttributeValueMemberS{Value: "bob|auth0"}},
			Select:                    types.SelectCount})
		if err != nil || out.Count != 0 {
			t.Errorf("%s: %d of bob's items or unadopted items left (%v)", table, out.Count, err)
		}
	}
	if n := entriesOf("bob|auth0"); n != 0 {
		t.Errorf("%d index entries of bob's removed items are left", n)
	}
	if n := entriesOf("alice"); n != len(items)/6 {
		t.Errorf("%d index entries of alice's items, want %d", n, len(items)/6)
	}
	e, err := st.Erasure(ctx, "bob|auth0")
	if got := e.Erased[app][uds.ErasedItems] + e.Erased[app][uds.ErasedListItems]; err != nil || got != int64(len(items)/3) {
		t.Errorf("the erase's receipt counts %d of bob's items (%+v, %v), want %d", got, e.Erased, err, len(items)/3)
	}
	for owner, want := range map[string]int64{"alice": int64(len(items) / 3), "anonymous": int64(len(items) / 3), "bob|auth0": 0} {
		rec, real := storetest.RecordedUsage(t, plain, tables, app, owner), storetest.StoredUsage(t, plain, tables, app, owner)
		if rec != real || real.Items != want {
			t.Errorf("%s: usage %+v, the tables hold %+v; want %d items", owner, rec, real, want)
		}
	}
	// The design's invariants, across the migration, the erase and the
	// index: usage equals what the tables hold, and the index names
	// exactly the stored items.
	violations := slices.Concat(storetest.UsageViolations(t, plain, tables, app),
		storetest.IndexViolations(t, plain, tables, app, "prefs", policy.Indexes))
	for _, v := range violations {
		t.Error(v)
	}
}

// beforeAdoption calls before once, as the first transaction that adopts
// legacy items (one that updates an item of tables) is sent; every such
// transaction waits until it has returned, so that none of either
// table's is sent before it.
type beforeAdoption struct {
	store.Client
	tables store.Tables
	before func()
	once   sync.Once
	called atomic.Bool
}

func (c *beforeAdoption) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, a := range in.TransactItems {
		if a.Update != nil && (*a.Update.TableName == c.tables.Data || *a.Update.TableName == c.tables.List) {
			c.once.Do(func() { c.before(); c.called.Store(true) })
		}
	}
	return c.Client.TransactWriteItems(ctx, in, o...)
}

// TestEraseBeforeMigrationRemovesLegacyItems: an erase finds a person's
// items written before UDS, which no owner index holds yet, by its audit
// scan (their creator is the person), and removes them, counted on its
// receipt; the migration then counts everyone else's. Items the seed's
// service wrote after the erases are adopted for a person whose erase is
// over (the adoption checks that its record is still that done erase) and
// removed for one whose erase still holds their writes.
func TestEraseBeforeMigrationRemovesLegacyItems(t *testing.T) {
	ctx := context.Background()
	plain := storetest.Client(t)
	tables := storetest.NewSeedTables(t)
	items := fillSeed(t, plain, tables)
	clock := &storetest.Clock{}
	st := store.New(plain, tables, store.WithClock(clock.Now), store.WithPolicySettle(time.Second), store.WithRecomputeQuiet(0))
	e := storetest.Erase(t, st, clock, time.Second, store.EraseQuery{User: "bob|auth0"})
	bobs := len(items) / 3
	if got := e.Erased[app][uds.ErasedItems] + e.Erased[app][uds.ErasedListItems]; got != int64(bobs) {
		t.Errorf("the receipt counts %d items and list items of bob's in the app (%+v), want %d", got, e.Erased, bobs)
	}
	storetest.Erase(t, st, clock, time.Second, store.EraseQuery{User: "carol", HoldDays: 7})
	clock.Advance(time.Hour)
	for i := range 3 {
		for _, who := range []string{"bob|auth0", "carol"} {
			_, err := plain.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tables.Data), Item: map[string]types.AttributeValue{
				schema.AttrDataKey:          &types.AttributeValueMemberS{Value: fmt.Sprintf("%s|later|%s-%d", app, who, i)},
				schema.AttrDataValue:        &types.AttributeValueMemberS{Value: `{"later":true}`},
				schema.AttrCreatedBySubject: &types.AttributeValueMemberS{Value: who},
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, err := migrate.Run(ctx, plain, st, migrate.Options{
		Tables: tables, Segments: 2, DefaultOwner: "anonymous", PollEvery: 50 * time.Millisecond,
		Checkpoint: filepath.Join(t.TempDir(), "checkpoint.json"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Adopted != len(items)-bobs+3 || rep.Erased != 3 || rep.Changed != 0 {
		t.Errorf("the migration after the erases: %d adopted, %d removed, %d changed; want the others' %d and bob's 3 later items adopted, carol's 3 removed",
			rep.Adopted, rep.Erased, rep.Changed, len(items)-bobs)
	}
	for owner, want := range map[string]int64{"bob|auth0": 3, "carol": 0} {
		if u := storetest.StoredUsage(t, plain, tables, app, owner); u.Items != want {
			t.Errorf("%s holds %+v after the migration, want %d items", owner, u, want)
		}
	}
	if e, err := st.Erasure(ctx, "carol"); err != nil || e.Erased[app][uds.ErasedItems] != 3 {
		t.Errorf("carol's receipt: %+v, %v; want her 3 later items counted", e.Erased, err)
	}
}
