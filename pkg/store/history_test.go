package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// versionNumbers lists a history's version numbers, marking the current
// entry with "*" and delete markers with "x".
func versionNumbers(vs []uds.Version) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, v.Version)
		if v.Deleted {
			b.WriteByte('x')
		}
		if v.Current {
			b.WriteByte('*')
		}
	}
	return b.String()
}

func historyOf(t *testing.T, f faultyStore, k uds.Key, h uds.History) string {
	t.Helper()
	vs, err := f.Versions(context.Background(), k, h)
	if errors.Is(err, uds.ErrNotFound) {
		return "none"
	}
	if err != nil {
		t.Fatal(err)
	}
	return versionNumbers(vs)
}

// Updates and deletes keep the versions they replace, up to the policy's
// count; a create after a delete continues the key's numbering; every
// version is read back as it was written, and usage counts what is kept,
// exactly.
func TestHistoryKeepsReplacedVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := uds.History{Versions: 2}
	for _, tc := range []struct{ name, sortKey string }{{"key-value item", ""}, {"list item", "2026/a"}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFaultyStore(t, 11)
			k := key(t, "docs", "readme")
			k.SortKey = tc.sortKey
			w := writeAs("alice", k, `{"v":1}`)
			w.History = h
			if _, err := f.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			for i := 2; i <= 4; i++ {
				w.Data = []byte(fmt.Sprintf(`{"v":%d,"pad":%q}`, i, strings.Repeat("p", 100*i)))
				w.Subject = fmt.Sprintf("editor%d", i)
				if it, err := f.Update(ctx, w); err != nil || it.Version != int64(i) {
					t.Fatalf("update %d: version %d, %v", i, it.Version, err)
				}
			}
			if got := historyOf(t, f, k, h); got != "4* 3 2" {
				t.Fatalf("history %q, want 4* 3 2 (two replaced versions kept)", got)
			}
			v3, err := f.Version(ctx, k, h, 3)
			if err != nil || string(v3.Data) != fmt.Sprintf(`{"v":3,"pad":%q}`, strings.Repeat("p", 300)) || v3.UpdatedBy != "editor3" || v3.Version != 3 {
				t.Fatalf("version 3: %+v, %v", v3, err)
			}
			if _, err := f.Version(ctx, k, h, 1); !errors.Is(err, uds.ErrNotFound) {
				t.Fatalf("pruned version 1: %v, want ErrNotFound", err)
			}
			f.exact(t, "alice")
			if rec := f.recorded(t, "alice"); rec.Items != 1 || rec.History == 0 {
				t.Fatalf("usage %+v: want 1 item and the kept versions' bytes", rec)
			}

			del := uds.Write{Key: k, Subject: "bob", History: h}
			if err := f.Delete(ctx, del); err != nil {
				t.Fatal(err)
			}
			if got := historyOf(t, f, k, h); got != "5x* 4 3" {
				t.Fatalf("history after delete %q, want 5x* 4 3", got)
			}
			if rec := f.recorded(t, "alice"); rec.Items != 0 || rec.Bytes != rec.History {
				t.Fatalf("usage after delete %+v: want no item, every byte in history", rec)
			}
			w.Data, w.Subject = []byte(`{"v":"again"}`), "carol"
			again, err := f.Create(ctx, w)
			if err != nil || again.Version != 6 {
				t.Fatalf("create after delete: version %d, %v; want 6", again.Version, err)
			}
			if got := historyOf(t, f, k, h); got != "6* 5x 4 3" {
				t.Fatalf("history after create %q, want 6* 5x 4 3", got)
			}
			f.exact(t, "alice")
			f.exact(t, "carol")

			n, err := f.DropHistory(ctx, uds.Write{Key: k})
			if err != nil || n != 2 {
				t.Fatalf("drop history: %d, %v; want 2 versions removed", n, err)
			}
			if got := historyOf(t, f, k, h); got != "6*" {
				t.Fatalf("history after drop %q, want 6*", got)
			}
			if rec := f.recorded(t, "alice"); rec != (uds.Usage{}) {
				t.Fatalf("alice's usage after her versions were dropped: %+v, want none", rec)
			}
			f.exact(t, "alice")
			f.exact(t, "carol")
		})
	}
}

// A namespace without history writes as it always did: nothing is kept
// and no history table is read.
func TestNoHistoryKeepsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, counter := newStore(t)
	k := key(t, "plain", "item")
	if _, err := s.Create(ctx, write(k, `1`)); err != nil {
		t.Fatal(err)
	}
	counter.Take()
	if _, err := s.Update(ctx, write(k, `22`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, uds.Write{Key: k}); err != nil {
		t.Fatal(err)
	}
	if got := counter.Take(); got.Calls["BatchGetItem"] != 0 || got.Calls["GetItem"] != 2 {
		t.Fatalf("calls %v: want the update's and the delete's GetItem, no history read", got.Calls)
	}
	if _, err := s.Versions(ctx, k, uds.History{}); !errors.Is(err, uds.ErrNotFound) {
		t.Fatalf("history of a deleted item that kept none: %v, want ErrNotFound", err)
	}
}

// Versions older than the policy's age stop being shown at once; the
// sweep (DynamoDB's TTL when deployed) removes them and releases exactly
// what they held. Lowering the count hides the older versions at once,
// and the next write prunes them.
func TestHistoryAgeAndLoweredCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	f := newFaultyStore(t, 12, store.WithClock(clock.Now))
	k := key(t, "docs", "aging")
	h := uds.History{Versions: 5, Days: 1}
	w := writeAs("alice", k, `{"v":0}`)
	w.History = h
	if _, err := f.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		w.Data = []byte(fmt.Sprintf(`{"v":%d}`, i+1))
		if _, err := f.Update(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if got := historyOf(t, f, k, h); got != "5* 4 3 2 1" {
		t.Fatalf("history %q", got)
	}
	lowered := uds.History{Versions: 2, Days: 1}
	if got := historyOf(t, f, k, lowered); got != "5* 4 3" {
		t.Fatalf("history under a lowered count %q, want 5* 4 3", got)
	}
	w.History, w.Data = lowered, []byte(`{"v":"pruning"}`)
	if _, err := f.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if got := historyOf(t, f, k, h); got != "6* 5 4" {
		t.Fatalf("history after a write under the lowered count %q, want 6* 5 4 (the rest pruned)", got)
	}
	f.exact(t, "alice")
	clock.Advance(25 * time.Hour)
	if got := historyOf(t, f, k, h); got != "6*" {
		t.Fatalf("history past the age limit %q, want 6*", got)
	}
	if _, err := f.Version(ctx, k, h, 5); !errors.Is(err, uds.ErrNotFound) {
		t.Fatalf("expired version: %v, want ErrNotFound", err)
	}
	if n, err := f.SweepExpired(ctx); err != nil || n != 2 {
		t.Fatalf("sweep: %d, %v; want the 2 expired versions", n, err)
	}
	f.exact(t, "alice")
	if rec := f.recorded(t, "alice"); rec.History != 0 {
		t.Fatalf("history bytes after the sweep: %+v", rec)
	}
	rc, err := f.Recompute(ctx, app, "alice")
	if err != nil || rc.Drift != (uds.Usage{}) {
		t.Fatalf("recompute: %+v, %v; want no drift", rc, err)
	}
}

// A write that must keep the version it replaces needs room for it: at
// the byte limit it is refused, and nothing changes.
func TestHistoryNeedsRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := key(t, "docs", "big")
	body := `{"v":"` + strings.Repeat("x", 2000) + `"}`
	probe := newFaultyStore(t, 13)
	if _, err := probe.Create(ctx, writeAs("alice", k, body)); err != nil {
		t.Fatal(err)
	}
	size := probe.recorded(t, "alice").Bytes
	f := newFaultyStore(t, 14, store.WithDefaultLimits(uds.Limits{Bytes: size + size/2}))
	w := writeAs("alice", k, body)
	if _, err := f.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.History = uds.History{Versions: 3}
	if _, err := f.Update(ctx, w); !errors.Is(err, uds.ErrQuotaExceeded) {
		t.Fatalf("update that keeps a version past the limit: %v, want ErrQuotaExceeded", err)
	}
	w.History = uds.History{}
	if _, err := f.Update(ctx, w); err != nil {
		t.Fatalf("the same update without history: %v", err)
	}
	f.exact(t, "alice")
}

// Writers racing on a few items of a namespace with history, under lost
// answers, throttling, 500s and resets, leave every owner's usage equal to
// what the tables hold, and each history listing in version order.
func TestHistoryUnderFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 15)
	h := uds.History{Versions: 3}
	f.faults.Set(
		faults.Rule{Kind: faults.LostAfterCommit, Rate: 0.05},
		faults.Rule{Kind: faults.ResetAfterCommit, Rate: 0.05},
		faults.Rule{Kind: faults.Throttle, Rate: 0.05},
		faults.Rule{Kind: faults.ServerError, Rate: 0.03},
		faults.Rule{Kind: faults.Reset, Rate: 0.03},
	)
	owners := []string{"alice", "bob", "carol"}
	var wg sync.WaitGroup
	for worker := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(worker), 7))
			for range 40 {
				k := key(t, "docs", fmt.Sprintf("item%d", rng.IntN(3)))
				if rng.IntN(2) == 0 {
					k.SortKey = "s"
				}
				w := writeAs(owners[rng.IntN(len(owners))], k, fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", rng.IntN(800))))
				w.History = h
				var err error
				switch rng.IntN(4) {
				case 0:
					_, err = f.Create(ctx, w)
				case 1, 2:
					_, err = f.Update(ctx, w)
				default:
					err = f.Delete(ctx, w)
				}
				if err != nil && !errors.Is(err, uds.ErrConflict) && !errors.Is(err, uds.ErrNotFound) && !errors.Is(err, uds.ErrUnavailable) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	f.faults.Set()
	for _, o := range owners {
		f.exact(t, o)
	}
	for i := range 3 {
		for _, sk := range []string{"", "s"} {
			k := key(t, "docs", fmt.Sprintf("item%d", i))
			k.SortKey = sk
			vs, err := f.Versions(ctx, k, h)
			if errors.Is(err, uds.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			for j := 1; j < len(vs); j++ {
				if vs[j].Version >= vs[j-1].Version {
					t.Fatalf("%v: history out of order: %s", k, versionNumbers(vs))
				}
			}
			kept := 0
			for _, v := range vs {
				if !v.Current && !v.Deleted {
					kept++
				}
			}
			if kept > h.Versions {
				t.Fatalf("%v: %d versions shown, the policy keeps %d: %s", k, kept, h.Versions, versionNumbers(vs))
			}
		}
	}
}

// A delete-all in a namespace with history keeps every item's last
// version under a delete marker, and counts only what it removed.
func TestDeleteListKeepsVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 16)
	h := uds.History{Versions: 2}
	list := key(t, "lists", "journal")
	for _, sk := range []string{"a", "b", "c"} {
		w := writeAs("alice", listKey(t, "journal", sk), `{"entry":"`+sk+`"}`)
		w.History = h
		if _, err := f.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	n, err := f.DeleteList(ctx, uds.Write{Key: list, Subject: "bob", History: h})
	if err != nil || n != 3 {
		t.Fatalf("delete-all: %d, %v; want 3", n, err)
	}
	for _, sk := range []string{"a", "b", "c"} {
		k := listKey(t, "journal", sk)
		if got := historyOf(t, f, k, h); got != "2x* 1" {
			t.Fatalf("history of %s after delete-all: %q, want 2x* 1", sk, got)
		}
		v, err := f.Version(ctx, k, h, 1)
		if err != nil || string(v.Data) != `{"entry":"`+sk+`"}` {
			t.Fatalf("kept version of %s: %s, %v", sk, v.Data, err)
		}
	}
	f.exact(t, "alice")
	if rec := f.recorded(t, "alice"); rec.Items != 0 || rec.History != rec.Bytes || rec.Bytes == 0 {
		t.Fatalf("usage after delete-all: %+v, want every byte in history", rec)
	}
}

// An atomic batch in a namespace with history keeps the versions its
// updates and deletes replace, in its one transaction, even when the
// answer to that transaction is lost.
func TestAtomicBatchKeepsVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 17)
	h := uds.History{Versions: 2}
	ka, kb, kc := key(t, "docs", "a"), key(t, "docs", "b"), key(t, "docs", "c")
	for _, k := range []uds.Key{ka, kb} {
		w := writeAs("alice", k, `{"first":true}`)
		w.History = h
		if _, err := f.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	op := func(method string, k uds.Key, data string) uds.BatchOp {
		w := writeAs("bob", k, data)
		w.History = h
		return uds.BatchOp{Method: method, Write: w}
	}
	f.faults.Set(faults.Rule{Kind: faults.LostAfterCommit, Ops: []string{"TransactWriteItems"}, Nth: 1})
	items, err := f.WriteAtomic(ctx, []uds.BatchOp{
		op("PUT", ka, `{"second":true}`), op("DELETE", kb, ""), op("POST", kc, `{"new":true}`),
	})
	if err != nil || items[0].Version != 2 || items[2].Version != 1 {
		t.Fatalf("atomic batch: %+v, %v", items, err)
	}
	for k, want := range map[uds.Key]string{ka: "2* 1", kb: "2x* 1", kc: "1*"} {
		if got := historyOf(t, f, k, h); got != want {
			t.Errorf("history of %s: %q, want %q", k.ID, got, want)
		}
	}
	f.exact(t, "alice")
	f.exact(t, "bob")
}

// exportAll reads an app's whole export, two records a page so that
// pages end inside histories too.
func exportAll(t *testing.T, s *store.Store, history bool) []uds.Record {
	t.Helper()
	q := store.ExportQuery{App: app, Limit: 2, MaxBytes: 1 << 20, RecordBytes: func(*uds.Record) int { return 1 }, History: history}
	var out []uds.Record
	for {
		page, err := s.Export(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Records...)
		if page.Next == nil {
			return out
		}
		q.After = *page.Next
	}
}

// Kept versions and delete markers go out with an export (unless left
// out), come back with an import as they were, with their owners and
// usage, and export again as the same records; an import run again skips
// them.
func TestHistoryExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newFaultyStore(t, 18)
	h := uds.History{Versions: 3, Days: 30}
	for i, owner := range []string{"alice", "bob"} {
		k := key(t, "docs", owner)
		k.SortKey = []string{"", "s"}[i]
		w := writeAs(owner, k, `{"v":0}`)
		w.History = h
		if _, err := src.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		for v := 1; v <= 3; v++ {
			w.Data = []byte(fmt.Sprintf(`{"v":%d,"pad":%q}`, v, strings.Repeat("z", 50*v)))
			if _, err := src.Update(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		if owner == "bob" {
			if err := src.Delete(ctx, uds.Write{Key: k, Subject: "carol", History: h}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := len(exportAll(t, src.Store, false)); n != 1 {
		t.Fatalf("export without history: %d records, want alice's item alone", n)
	}
	records := exportAll(t, src.Store, true)
	kept := 0
	for _, r := range records {
		if r.Kept() {
			kept++
		}
	}
	// alice: her item and 3 versions; bob: 3 versions and a marker.
	if len(records) != 8 || kept != 7 {
		t.Fatalf("export with history: %d records (%d kept), want 8 (7 kept)", len(records), kept)
	}
	dst := newFaultyStore(t, 19)
	dst.keeps(t, "docs", h)
	res, err := dst.Import(ctx, app, records)
	if err != nil || res.Imported != 8 || len(res.Conflicts) != 0 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	again := exportAll(t, dst.Store, true)
	if fmt.Sprintf("%+v", again) != fmt.Sprintf("%+v", records) {
		t.Fatalf("exported after import:\n%+v\nwant\n%+v", again, records)
	}
	for _, owner := range []string{"alice", "bob"} {
		dst.exact(t, owner)
		if got, want := dst.recorded(t, owner), src.recorded(t, owner); got != want {
			t.Errorf("usage of %s after import %+v, want %+v as in the source", owner, got, want)
		}
	}
	for i, owner := range []string{"alice", "bob"} {
		k := key(t, "docs", owner)
		k.SortKey = []string{"", "s"}[i]
		if got, want := historyOf(t, dst, k, h), historyOf(t, src, k, h); got != want {
			t.Errorf("history of %s after import %q, want %q", owner, got, want)
		}
	}
	res, err = dst.Import(ctx, app, records)
	if err != nil || res.Skipped != 8 || res.Imported != 0 {
		t.Fatalf("import run again: %+v, %v; want every record skipped", res, err)
	}
}

// Kept versions and markers that DynamoDB's TTL removes are released from
// the stream's old image once, however often the record comes: a marker
// holds nothing to release.
func TestTTLRemovalOfKeptVersionsReleasesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	f := newFaultyStore(t, 20, store.WithClock(clock.Now))
	h := uds.History{Versions: 5, Days: 1}
	w := writeAs("tia", key(t, "ttl", "doc"), `{"v":1}`)
	w.History = h
	if _, err := f.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.Data = []byte(`{"v":2}`)
	if _, err := f.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := f.Delete(ctx, uds.Write{Key: w.Key, Subject: "bob", History: h}); err != nil {
		t.Fatal(err)
	}
	out, err := f.plain.Scan(ctx, &dynamodb.ScanInput{
		TableName:                 aws.String(f.tables.History),
		FilterExpression:          aws.String("#v >= :zero"),
		ExpressionAttributeNames:  map[string]string{"#v": schema.AttrVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":zero": &types.AttributeValueMemberN{Value: "0"}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil || len(out.Items) != 3 {
		t.Fatalf("history entries: %d, %v; want versions 1 and 2 and the marker", len(out.Items), err)
	}
	released := 0
	for _, entry := range out.Items {
		gone, err := f.plain.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:    aws.String(f.tables.History),
			Key:          map[string]types.AttributeValue{schema.AttrHistoryKey: entry[schema.AttrHistoryKey], schema.AttrVersion: entry[schema.AttrVersion]},
			ReturnValues: types.ReturnValueAllOld,
		})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the stream may deliver a record twice
			ok, err := f.ReleaseRemoved(ctx, gone.Attributes, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				released++
			}
		}
	}
	if released != 2 {
		t.Fatalf("%d releases, want one for each of the two versions", released)
	}
	f.exact(t, "tia")
	if rec := f.recorded(t, "tia"); rec != (uds.Usage{}) {
		t.Fatalf("usage after the TTL removed everything: %+v", rec)
	}
	// The TTL removes entries once their age limit has passed, when no
	// read shows them any more.
	clock.Advance(25 * time.Hour)
	if got := historyOf(t, f, w.Key, h); got != "none" {
		t.Fatalf("history after the TTL removed it: %q", got)
	}
}

// Kept versions stay in the key space of their items: a namespace whose
// items are gone but whose history is kept holds data, and cannot move
// into or out of private until the history is dropped.
func TestKeptVersionsHoldTheKeySpace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	h := uds.History{Versions: 2}
	if _, err := s.SetPolicy(ctx, app, "kept", uds.Policy{History: h}); err != nil {
		t.Fatal(err)
	}
	w := write(key(t, "kept", "doc"), `1`)
	w.History = h
	if _, err := s.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPolicy(ctx, app, "kept", uds.Policy{Access: uds.AccessPrivate, History: h}); !errors.Is(err, uds.ErrInUse) {
		t.Fatalf("switch with a kept version: %v, want ErrInUse", err)
	}
	if _, err := s.DropHistory(ctx, w); err != nil {
		t.Fatal(err)
	}
	p, err := s.SetPolicy(ctx, app, "kept", uds.Policy{Access: uds.AccessPrivate, History: h})
	if err != nil || p.Pending == nil {
		t.Fatalf("switch once the history is dropped: %+v, %v; want the change announced", p, err)
	}
}

// historyHook runs before, once, ahead of the first transaction that
// deletes from table: the moment between a removal's read of an item's
// history head and its commit.
type historyHook struct {
	store.Client
	table  string
	before func()
}

func (c *historyHook) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, a := range in.TransactItems {
		if a.Delete != nil && *a.Delete.TableName == c.table && c.before != nil {
			before := c.before
			c.before = nil
			before()
		}
	}
	return c.Client.TransactWriteItems(ctx, in, o...)
}

// A delete-all in a namespace with history whose item's history changes
// between its read and its commit (a drop of the history, which leaves
// the item as it was) reads the head again and removes the item, kept as
// a version under a delete marker, as Delete does.
func TestDeleteListMeetsHistoryDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain, tables := storetest.Client(t), storetest.NewTables(t)
	other := store.New(plain, tables)
	hook := &historyHook{Client: plain, table: tables.List}
	s := store.New(hook, tables)
	h := uds.History{Versions: 3}
	k := listKey(t, "kept", "s1")
	w := writeAs("alice", k, `{"n":1}`)
	w.History = h
	if _, err := s.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.Data = []byte(`{"n":2}`)
	if _, err := s.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	hook.before = func() {
		if n, err := other.DropHistory(ctx, uds.Write{Key: k}); err != nil || n != 1 {
			t.Errorf("the drop of the item's history removed %d: %v", n, err)
		}
	}
	list := k
	list.SortKey = ""
	if n, err := s.DeleteList(ctx, uds.Write{Key: list, Subject: "alice", History: h}); err != nil || n != 1 {
		t.Fatalf("the delete-all removed %d: %v; want the one item", n, err)
	}
	if hook.before != nil {
		t.Fatal("the delete-all's removal never ran the drop before it")
	}
	vs, err := s.Versions(ctx, k, h)
	if err != nil || len(vs) != 2 || !vs[0].Deleted || vs[1].Version != 2 {
		t.Errorf("history after the delete-all: %+v, %v; want a delete marker over version 2", vs, err)
	}
	if v := storetest.UsageViolations(t, plain, tables, app); len(v) != 0 {
		t.Errorf("usage: %v", v)
	}
}

// An erase removes, with an item of the user's, its history head when the
// head keeps no version (the head names the key, which the user chose). A
// head that moves between the erase's read of it and its commit (another
// step of the erase, say) makes the erase read it again, and the step
// still removes both.
func TestEraseMeetsHeadMove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain, tables := storetest.Client(t), storetest.NewTables(t)
	clock := &storetest.Clock{}
	hook := &historyHook{Client: plain, table: tables.History}
	s := store.New(hook, tables, store.WithClock(clock.Now), store.WithPolicySettle(time.Second))
	h := uds.History{Versions: 3}
	k := key(t, "kept", "item")
	w := writeAs("alice", k, `{"n":1}`)
	w.History = h
	if _, err := s.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.Data = []byte(`{"n":2}`)
	if _, err := s.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DropHistory(ctx, uds.Write{Key: k}); err != nil || n != 1 {
		t.Fatalf("the drop removed %d: %v", n, err)
	}
	head := historyRows(t, plain, tables)
	if len(head) != 1 {
		t.Fatalf("the history table holds %d rows, want the item's head alone", len(head))
	}
	hook.before = func() {
		if _, err := plain.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(tables.History),
			Key: map[string]types.AttributeValue{
				schema.AttrHistoryKey: head[0][schema.AttrHistoryKey], schema.AttrVersion: head[0][schema.AttrVersion],
			},
			UpdateExpression:          aws.String("ADD #hr :one"),
			ExpressionAttributeNames:  map[string]string{"#hr": schema.AttrHeadRevision},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		}); err != nil {
			t.Errorf("moving the head: %v", err)
		}
	}
	storetest.Erase(t, s, clock, time.Second, store.EraseQuery{User: "alice"})
	if hook.before != nil {
		t.Fatal("the erase never removed the head")
	}
	if _, err := s.Get(ctx, k); !errors.Is(err, uds.ErrNotFound) {
		t.Errorf("the item after the erase: %v, want it gone", err)
	}
	if rows := historyRows(t, plain, tables); len(rows) != 0 {
		t.Errorf("the history table holds %d rows after the erase, want none", len(rows))
	}
}

// historyRows are the rows of the history table.
func historyRows(t *testing.T, c *dynamodb.Client, tables store.Tables) []map[string]types.AttributeValue {
	t.Helper()
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(tables.History), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// A key's history keeps the versions of every creator that held the key
// in turn, each charged to its own creator. An import of it charges them,
// and a drop of it releases them, in rounds that with one usage change per
// creator still fit one transaction.
func TestDropHistoryOfManyCreators(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 41)
	h := uds.History{Versions: uds.MaxHistoryVersions}
	k := key(t, "shared", "passed-on")
	const creators = 45
	for i := range creators {
		w := writeAs(fmt.Sprintf("user%02d", i), k, fmt.Sprintf(`{"by":%d}`, i))
		w.History = h
		if _, err := f.Create(ctx, w); err != nil {
			t.Fatalf("create by %s: %v", w.Subject, err)
		}
		if err := f.Delete(ctx, w); err != nil {
			t.Fatalf("delete by %s: %v", w.Subject, err)
		}
	}
	records := exportAll(t, f.Store, true)
	if len(records) != 2*creators {
		t.Fatalf("export: %d records, want %d (a version and a marker per creator)", len(records), 2*creators)
	}
	dst := newFaultyStore(t, 42)
	dst.keeps(t, "shared", h)
	res, err := dst.Import(ctx, app, records)
	if err != nil || res.Imported != len(records) || len(res.Conflicts) != 0 {
		t.Fatalf("import: %+v, %v; want every record imported", res, err)
	}
	if got, want := historyOf(t, dst, k, h), historyOf(t, f, k, h); got != want {
		t.Errorf("history after the import %q, want %q", got, want)
	}
	for i := range creators {
		owner := fmt.Sprintf("user%02d", i)
		dst.exact(t, owner)
		if got, want := dst.recorded(t, owner), f.recorded(t, owner); got != want {
			t.Errorf("%s's usage after the import %+v, want %+v as in the source", owner, got, want)
		}
	}
	if res, err := dst.Import(ctx, app, records); err != nil || res.Skipped != len(records) || res.Imported != 0 {
		t.Fatalf("import run again: %+v, %v; want every record skipped", res, err)
	}
	n, err := f.DropHistory(ctx, uds.Write{Key: k})
	if err != nil || n != creators {
		t.Fatalf("the drop removed %d versions: %v; want %d, one per creator", n, err, creators)
	}
	if got := historyOf(t, f, k, h); got != "none" {
		t.Errorf("history after the drop: %q, want none", got)
	}
	for i := range creators {
		if rec := f.recorded(t, fmt.Sprintf("user%02d", i)); rec != (uds.Usage{}) {
			t.Errorf("user%02d's usage after the drop: %+v, want none", i, rec)
		}
	}
}

// A key's history may keep many versions near the largest value an item
// holds. An import of them writes, and a drop of them removes, the
// versions in rounds whose rows fit DynamoDB's 4 MB per transaction.
func TestHistoryRoundsFitATransactionsBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 43)
	const versions = 14
	h := uds.History{Versions: versions}
	k := key(t, "kept", "large")
	w := writeAs("alice", k, randomJSON(400_000))
	w.History = h
	if _, err := f.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	for i := range versions {
		w.Data = []byte(randomJSON(400_000))
		if _, err := f.Update(ctx, w); err != nil {
			t.Fatalf("update %d: %v", i+1, err)
		}
	}
	if rec := f.recorded(t, "alice"); rec.History < 4_000_000 {
		t.Fatalf("alice's usage %+v: the versions kept hold under 4 MB", rec)
	}
	records := exportAll(t, f.Store, true)
	dst := newFaultyStore(t, 44)
	dst.keeps(t, "kept", h)
	res, err := dst.Import(ctx, app, records)
	if err != nil || res.Imported != len(records) {
		t.Fatalf("import of %d records: %+v, %v; want every record imported", len(records), res, err)
	}
	dst.exact(t, "alice")
	if got, want := historyOf(t, dst, k, h), historyOf(t, f, k, h); got != want {
		t.Errorf("history after the import %q, want %q", got, want)
	}
	if n, err := dst.DropHistory(ctx, uds.Write{Key: k}); err != nil || n != versions {
		t.Fatalf("the drop removed %d versions: %v; want %d", n, err, versions)
	}
	dst.exact(t, "alice")
}

// A key's history head lists every version and delete marker it keeps in
// one item. A hundred creators whose subjects are near their 1,024 bytes,
// each creating the key and deleting it (by another such subject), would
// list 200 entries of about 2 KB: past DynamoDB's 400 KB, which refused
// every write of the key from about the 95th creator on. The head keeps
// the newest entries that fit, as it keeps the newest N versions: every
// write is taken, the head fits, what it no longer lists is removed and
// released, and its owners' usage stays exact. An import of that history
// into another deployment, whose copy of the item has moved on since,
// leaves out the versions the head has no more room for, and says so.
func TestHistoryHeadFitsItsItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := uds.History{Versions: uds.MaxHistoryVersions}
	k := key(t, "shared", "many-hands")
	subject := func(role string, i int) string {
		return strings.Repeat(role, uds.MaxSubjectBytes-4) + fmt.Sprintf("%04d", i)
	}
	// pass has creators from..to-1 create the key and delete it.
	pass := func(f faultyStore, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			w := writeAs(subject("c", i), k, fmt.Sprintf(`{"by":%d}`, i))
			w.History = h
			if _, err := f.Create(ctx, w); err != nil {
				t.Fatalf("create by creator %d: %v", i, err)
			}
			w.Subject = subject("d", i)
			if err := f.Delete(ctx, w); err != nil {
				t.Fatalf("delete of creator %d's item: %v", i, err)
			}
		}
	}
	// check checks that the history lists the newest of its entries,
	// numbered down from newest without a gap, fewer than all, and that
	// the head fits, the table holds what it lists and usage is exact.
	check := func(f faultyStore, newest, creators int) int {
		t.Helper()
		vs, err := f.Versions(ctx, k, h)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) >= newest || len(vs) < creators || !vs[0].Current || !vs[0].Deleted {
			t.Fatalf("the history lists %d entries, first %+v; want the newest that fit, under %d", len(vs), vs[0], newest)
		}
		for i, v := range vs {
			if v.Version != int64(newest-i) {
				t.Fatalf("entry %d is version %d, want %d: %s", i, v.Version, newest-i, versionNumbers(vs))
			}
		}
		rows := 0
		storetest.Scan(t, f.plain, f.tables.History, func(av map[string]types.AttributeValue) {
			if n, ok := av[schema.AttrVersion].(*types.AttributeValueMemberN); ok && n.Value == fmt.Sprint(schema.HeadVersion) {
				if size := itemSize(av); size > store.MaxItemBytes {
					t.Errorf("the head takes %d bytes; DynamoDB holds at most %d", size, store.MaxItemBytes)
				}
				return
			}
			rows++
		})
		if rows != len(vs) {
			t.Errorf("%d kept rows in the table, %d listed: what the head no longer lists is removed", rows, len(vs))
		}
		for i := range creators {
			f.exact(t, subject("c", i))
		}
		return len(vs)
	}
	const creators = 100
	f := newFaultyStore(t, 45)
	pass(f, 0, creators)
	listed := check(f, 2*creators, creators)
	t.Logf("the head lists %d of %d entries", listed, 2*creators)

	records := exportAll(t, f.Store, true)
	dst := newFaultyStore(t, 46)
	dst.keeps(t, "shared", h)
	if res, err := dst.Import(ctx, app, records); err != nil || res.Imported != len(records) || len(res.Left) != 0 {
		t.Fatalf("import of %d records: %+v, %v; want every one imported", len(records), res, err)
	}
	pass(dst, creators, creators+10)
	res, err := dst.Import(ctx, app, records)
	if err != nil || len(res.Left) == 0 || res.Imported+res.Skipped+len(res.Left) != len(records) || len(res.Conflicts) != 0 {
		t.Fatalf("the import again, after ten more creators: %+v, %v; want the versions the head has no room for left out", res, err)
	}
	check(dst, 2*(creators+10), creators+10)
}

// A drop leaves a version that expires within a minute to DynamoDB's TTL
// and takes it off the head, so its row stays until the TTL removes it.
// An import of that very version meanwhile found the row there, read the
// refusal of its put as a race, and answered 503 after its retries. Such
// a version is counted as expired and not written, as one already expired
// is: a history no longer keeps what is that close to its end.
func TestImportOfAVersionAboutToExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	clock.Freeze()
	f := newFaultyStore(t, 47, store.WithClock(clock.Now))
	k := key(t, "kept", "ending")
	w := writeAs("alice", k, `{"v":1}`)
	w.History = uds.History{Versions: 5, Days: 1}
	if _, err := f.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	// Version 1 is kept now, version 2 twelve hours later: each for a day.
	w.Data = []byte(`{"v":2}`)
	if _, err := f.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	clock.Advance(12 * time.Hour)
	w.Data = []byte(`{"v":3}`)
	if _, err := f.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	records := exportAll(t, f.Store, true)
	clock.Advance(12*time.Hour - 30*time.Second)
	if n, err := f.DropHistory(ctx, w); err != nil || n != 1 {
		t.Fatalf("the drop removed %d versions, %v; want version 2, version 1 being left to the TTL", n, err)
	}
	f.keeps(t, "kept", w.History)
	res, err := f.Import(ctx, app, records)
	if err != nil || res.Expired != 1 || res.Skipped != 1 || res.Imported != 1 {
		t.Fatalf("import: %+v, %v; want the item skipped, version 2 imported and version 1, about to expire, counted as expired", res, err)
	}
	if got := historyOf(t, f, k, w.History); got != "3* 2" {
		t.Errorf("history after the import: %q, want the item and version 2", got)
	}
	f.exact(t, "alice")
}
