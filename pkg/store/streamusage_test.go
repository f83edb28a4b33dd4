package store_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
	"github.com/udsproject/uds/pkg/uds"
)

// streamedFixture is a store whose test app is in streamed mode, with a
// hand-driven stream: each write's images are read from the table and
// handed to CountStreamed as the stream function would, in batches the
// test chooses (again, late, split).
type streamedFixture struct {
	t      *testing.T
	st     *store.Store
	c      *dynamodb.Client
	tables store.Tables
	clock  *storetest.Clock
	seq    int
}

func newStreamedFixture(t *testing.T, opts ...store.Option) *streamedFixture {
	t.Helper()
	f := &streamedFixture{t: t, c: storetest.Client(t), tables: storetest.NewTables(t), clock: &storetest.Clock{}}
	f.st = store.New(f.c, f.tables, append([]store.Option{store.WithClock(f.clock.Now), store.WithTrackedTTL(0), store.WithRecomputeQuiet(0)}, opts...)...)
	if err := f.st.SetQuotaMode(context.Background(), app, uds.QuotaStreamed); err != nil {
		t.Fatal(err)
	}
	return f
}

// image is the stored item at key (nil if there is none).
func (f *streamedFixture) image(key uds.Key) map[string]types.AttributeValue {
	f.t.Helper()
	k := map[string]types.AttributeValue{"dataKey": &types.AttributeValueMemberS{Value: key.DataKey()}}
	table := f.tables.Data
	if key.SortKey != "" {
		k["sortKey"] = &types.AttributeValueMemberS{Value: key.SortKey}
		table = f.tables.List
	}
	out, err := f.c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.Item
}

// change runs write and returns the stream record it makes: the item's
// images before and after, the next sequence number, the store's clock.
func (f *streamedFixture) change(key uds.Key, write func() error) store.StreamChange {
	f.t.Helper()
	old := f.image(key)
	if err := write(); err != nil {
		f.t.Fatal(err)
	}
	f.seq++
	return store.StreamChange{Sequence: strconv.Itoa(1000 + f.seq), At: f.clock.Now().Truncate(time.Second), Old: old, New: f.image(key)}
}

func (f *streamedFixture) count(shard string, changes ...store.StreamChange) {
	f.t.Helper()
	n, err := f.st.CountStreamed(context.Background(), shard, changes)
	if err != nil || n != len(changes) {
		f.t.Fatalf("counted %d of %d: %v", n, len(changes), err)
	}
}

func (f *streamedFixture) usage(owner string) uds.Usage {
	f.t.Helper()
	return storetest.RecordedUsage(f.t, f.c, f.tables, app, owner)
}

// stored is what owner's stored items and kept versions hold, summed from
// the tables: the usage the stream's counting must come to once every
// change is counted.
func (f *streamedFixture) stored(owner string) uds.Usage {
	f.t.Helper()
	return storetest.StoredUsage(f.t, f.c, f.tables, app, owner)
}

func (f *streamedFixture) create(id string, size int) (uds.Key, store.StreamChange) {
	f.t.Helper()
	key, err := uds.NewKey(app, "notes", id)
	if err != nil {
		f.t.Fatal(err)
	}
	ch := f.change(key, func() error {
		_, err := f.st.Create(context.Background(), uds.Write{Key: key, Subject: "alice", Data: jsonOfSize(size)})
		return err
	})
	return key, ch
}

// jsonOfSize is a JSON string value of n bytes.
func jsonOfSize(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	b[0], b[n-1] = '"', '"'
	return b
}

func TestStreamedCounting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a create is a plain put that the stream charges once, however often it comes", func(t *testing.T) {
		f := newStreamedFixture(t)
		_, a := f.create("a", 100)
		_, b := f.create("b", 300)
		if u := f.usage("alice"); u != (uds.Usage{}) {
			t.Fatalf("before the stream: %+v, want nothing charged by the writes", u)
		}
		want := f.stored("alice")
		if want.Items != 2 {
			t.Fatalf("the tables hold %+v of alice's, want her two items", want)
		}
		f.count("shard-1", a, b)
		f.count("shard-1", a, b) // the batch again
		f.count("shard-1", b)    // its tail again
		f.count("shard-1", a)    // late and out of order
		if u := f.usage("alice"); u != want {
			t.Fatalf("usage %+v, want %+v", u, want)
		}
	})

	t.Run("an update and a delete move usage by what they change", func(t *testing.T) {
		f := newStreamedFixture(t)
		key, created := f.create("a", 100)
		grown := f.change(key, func() error {
			_, err := f.st.Update(ctx, uds.Write{Key: key, Subject: "alice", Data: jsonOfSize(900)})
			return err
		})
		f.count("shard-1", created, grown)
		if u, want := f.usage("alice"), f.stored("alice"); u != want {
			t.Fatalf("after the update: %+v, want %+v", u, want)
		}
		deleted := f.change(key, func() error { return f.st.Delete(ctx, uds.Write{Key: key, Subject: "alice"}) })
		f.count("shard-1", grown, deleted) // the update again, with the delete
		if u := f.usage("alice"); u != (uds.Usage{}) {
			t.Fatalf("after the delete: %+v, want nothing", u)
		}
	})

	t.Run("shards keep marks of their own", func(t *testing.T) {
		f := newStreamedFixture(t)
		_, a := f.create("a", 100)
		_, b := f.create("b", 100)
		// b's sequence number is higher, but it comes from another shard:
		// counting it first must not hide a.
		f.count("shard-2", b)
		f.count("shard-1", a)
		f.count("shard-2", b)
		if u, want := f.usage("alice"), f.stored("alice"); u != want {
			t.Fatalf("usage %+v, want %+v", u, want)
		}
	})

	t.Run("switching modes counts each item once, whichever mode wrote it", func(t *testing.T) {
		f := newStreamedFixture(t)
		if err := f.st.SetQuotaMode(ctx, app, uds.QuotaStrict); err != nil {
			t.Fatal(err)
		}
		strictKey, _ := f.create("strict", 200) // charged by its transaction
		if err := f.st.SetQuotaMode(ctx, app, uds.QuotaStreamed); err != nil {
			t.Fatal(err)
		}
		// Rewritten in streamed mode: the transaction releases what it
		// charged, the stream charges the new value.
		rewritten := f.change(strictKey, func() error {
			_, err := f.st.Update(ctx, uds.Write{Key: strictKey, Subject: "alice", Data: jsonOfSize(400)})
			return err
		})
		streamedKey, created := f.create("streamed", 300)
		f.count("shard-1", rewritten, created)
		if err := f.st.SetQuotaMode(ctx, app, uds.QuotaStrict); err != nil {
			t.Fatal(err)
		}
		// Deleted in strict mode: nothing to release in the write, the
		// stream releases it.
		deleted := f.change(streamedKey, func() error { return f.st.Delete(ctx, uds.Write{Key: streamedKey, Subject: "alice"}) })
		f.count("shard-1", deleted)
		if u, want := f.usage("alice"), f.stored("alice"); u != want {
			t.Fatalf("usage %+v, want %+v (the rewritten item alone)", u, want)
		}
		if r, err := f.st.Recompute(ctx, app, "alice"); err != nil || r.Drift != (uds.Usage{}) {
			t.Fatalf("recompute: %+v, %v; want no drift", r, err)
		}
	})

	t.Run("after a switch to strict, an update of a streamed item is judged by what it adds", func(t *testing.T) {
		f := newStreamedFixture(t)
		if err := f.st.SetAppLimits(ctx, app, uds.Limits{Items: 2, Bytes: 2000}); err != nil {
			t.Fatal(err)
		}
		key, a := f.create("a", 100)
		_, b := f.create("b", 100)
		f.count("shard-1", a, b)
		if err := f.st.SetQuotaMode(ctx, app, uds.QuotaStrict); err != nil {
			t.Fatal(err)
		}
		// At the items limit, the update adds no item: its transaction
		// charges the whole new value, the stream releases the old one.
		grown := f.change(key, func() error {
			_, err := f.st.Update(ctx, uds.Write{Key: key, Subject: "alice", Data: jsonOfSize(500)})
			return err
		})
		f.count("shard-1", grown)
		if u, want := f.usage("alice"), f.stored("alice"); u != want {
			t.Fatalf("usage %+v, want %+v", u, want)
		}
		// Growing past the bytes limit is refused all the same.
		_, err := f.st.Update(ctx, uds.Write{Key: key, Subject: "alice", Data: jsonOfSize(1900)})
		var qe *uds.QuotaError
		if !errors.As(err, &qe) {
			t.Fatalf("an update past the limit: %v, want a quota error", err)
		}
	})

	t.Run("a write is refused once tracked usage leaves no room, and may pass the limit by what the stream has not counted", func(t *testing.T) {
		f := newStreamedFixture(t)
		if err := f.st.SetAppLimits(ctx, app, uds.Limits{Items: 2}); err != nil {
			t.Fatal(err)
		}
		_, a := f.create("a", 100)
		_, b := f.create("b", 100)
		_, c := f.create("c", 100) // the stream has counted nothing: this passes the limit
		f.count("shard-1", a, b, c)
		key, _ := uds.NewKey(app, "notes", "d")
		_, err := f.st.Create(ctx, uds.Write{Key: key, Subject: "alice", Data: jsonOfSize(100)})
		var qe *uds.QuotaError
		if !errors.As(err, &qe) || qe.Quota.Used.Items != 3 {
			t.Fatalf("create past the tracked usage: %v, want a quota error showing 3 items", err)
		}
	})

	t.Run("a recompute between a change and its counting counts it once", func(t *testing.T) {
		f := newStreamedFixture(t)
		key, created := f.create("a", 100)
		gone := f.change(key, func() error { return f.st.Delete(ctx, uds.Write{Key: key, Subject: "alice"}) })
		_, kept := f.create("b", 200)
		// Past the margin of the stream's rounding of instants (a
		// minute): the sum surely holds the writes before.
		f.clock.Advance(2 * time.Minute)
		// The sum sees b, not a; the stream then delivers all three.
		if _, err := f.st.Recompute(ctx, app, "alice"); err != nil {
			t.Fatal(err)
		}
		f.count("shard-1", created, gone, kept)
		if u, want := f.usage("alice"), f.stored("alice"); u != want {
			t.Fatalf("usage %+v, want %+v", u, want)
		}
		_, late := f.create("c", 300)
		f.count("shard-1", late)
		if u, want := f.usage("alice"), f.stored("alice"); u != want {
			t.Fatalf("after a write past the recompute: %+v, want %+v", u, want)
		}
	})

	t.Run("history switched on over streamed items keeps versions charged once", func(t *testing.T) {
		f := newStreamedFixture(t)
		key, created := f.create("a", 100)
		h := uds.History{Versions: 3}
		// The namespace now keeps history: the write is strict, keeps the
		// streamed value as a version (charged by its transaction, as
		// history bytes) and the stream releases the value it replaced.
		updated := f.change(key, func() error {
			_, err := f.st.Update(ctx, uds.Write{Key: key, Subject: "alice", Data: jsonOfSize(300), History: h})
			return err
		})
		if _, flagged := updated.New["streamCounted"]; flagged {
			t.Fatalf("the item after a write keeping history is still counted by the stream: %v", updated.New)
		}
		f.count("shard-1", created, updated)
		want := f.stored("alice")
		if u := f.usage("alice"); u != want {
			t.Fatalf("usage %+v, want %+v (the item and its kept version)", u, want)
		}
		// A kept version's image never counts, whatever it carries: its
		// version row's stream records are the history table's.
		kept := map[string]types.AttributeValue{}
		for k, v := range created.New {
			kept[k] = v
		}
		kept["historyKey"] = &types.AttributeValueMemberS{Value: key.DataKey()}
		f.count("shard-h", store.StreamChange{Sequence: "1", At: f.clock.Now(), Old: kept})
		if u := f.usage("alice"); u != want {
			t.Fatalf("after a kept version's removal from the stream: %+v, want %+v", u, want)
		}
		if r, err := f.st.Recompute(ctx, app, "alice"); err != nil || r.Drift != (uds.Usage{}) {
			t.Fatalf("recompute: %+v, %v; want no drift", r, err)
		}
	})

	t.Run("records of strict items and without a shard", func(t *testing.T) {
		f := newStreamedFixture(t)
		if err := f.st.SetQuotaMode(ctx, app, uds.QuotaStrict); err != nil {
			t.Fatal(err)
		}
		_, strict := f.create("a", 100)
		f.count("", strict) // nothing of it is counted from the stream
		if u, want := f.usage("alice"), f.stored("alice"); u != want {
			t.Fatalf("usage %+v, want %+v", u, want)
		}
		if err := f.st.SetQuotaMode(ctx, app, uds.QuotaStreamed); err != nil {
			t.Fatal(err)
		}
		_, streamed := f.create("b", 100)
		if n, err := f.st.CountStreamed(ctx, "", []store.StreamChange{strict, streamed}); n != 0 || err == nil {
			t.Fatalf("a streamed item's record without a shard: counted %d, %v; want an error and nothing counted", n, err)
		}
	})
}

// TestStreamedCreateOverQuotaOnATakenKey checks the answer to a streamed
// create that its owner's tracked usage refuses, on a key another item
// holds: the conflict, which stays true whatever the quota; the quota's
// refusal on a free key; and, when the key cannot be read, the read's
// failure (a 503 to a client, whose retry tells), not the quota's refusal,
// which may not be the answer.
func TestStreamedCreateOverQuotaOnATakenKey(t *testing.T) {
	ctx := context.Background()
	client, ft := storetest.FaultyClient(t, 7)
	tables := storetest.NewTables(t)
	clock := &storetest.Clock{}
	st := store.New(client, tables, store.WithClock(clock.Now), store.WithRecomputeQuiet(0))
	if err := st.SetQuotaMode(ctx, app, uds.QuotaStreamed); err != nil {
		t.Fatal(err)
	}
	if err := st.SetAppLimits(ctx, app, uds.Limits{Items: 1}); err != nil {
		t.Fatal(err)
	}
	key := func(id string) uds.Key {
		k, err := uds.NewKey(app, "notes", id)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	create := func(id string) error {
		_, err := st.Create(ctx, uds.Write{Key: key(id), Subject: "alice", Data: []byte(`1`)})
		return err
	}
	if err := create("a"); err != nil {
		t.Fatal(err)
	}
	// The stream counts the create: the usage record says 1 item, which
	// the next read of the tracked usage finds.
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Data), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"dataKey": &types.AttributeValueMemberS{Value: key("a").DataKey()}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CountStreamed(ctx, "shard", []store.StreamChange{{Sequence: "1", At: clock.Now(), New: out.Item}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(store.DefaultTrackedTTL + time.Second)
	var quota *uds.QuotaError
	if err := create("b"); !errors.As(err, &quota) {
		t.Fatalf("a create on a free key past the limit: %v, want the quota's refusal", err)
	}
	// The tracked usage is cached now: the create's one read is its key's.
	ft.Set(faults.Rule{Kind: faults.ServerError, Ops: []string{"GetItem"}, Rate: 1})
	var unavailable *uds.UnavailableError
	if err := create("a"); !errors.As(err, &unavailable) {
		t.Errorf("a create on a taken key past the limit, the key unreadable: %v, want the read's failure", err)
	}
	ft.Set()
	if err := create("a"); !errors.Is(err, uds.ErrConflict) {
		t.Errorf("a create on a taken key past the limit: %v, want the conflict", err)
	}
}

// countThenLose lets DynamoDB apply the first PutItem it carries, has the
// stream count the item that put wrote (a fast stream, before the writer
// retries), and then loses the answer, as a connection reset after the
// commit does. Every other call passes.
type countThenLose struct {
	base  http.RoundTripper
	armed atomic.Bool
	count func()
}

func (c *countThenLose) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := c.base.RoundTrip(req)
	if err != nil || req.Header.Get("X-Amz-Target") != "DynamoDB_20120810.PutItem" || !c.armed.CompareAndSwap(true, false) {
		return res, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	c.count()
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

// TestStreamedCreateRetriedPastItsOwnCount checks a streamed create whose
// first attempt committed without an answer and whose retry the quota then
// refuses before sending, because the stream counted that very item: the
// key holds the create's own item, so the create is done (the item, not a
// 409, nor the quota's 403).
func TestStreamedCreateRetriedPastItsOwnCount(t *testing.T) {
	ctx := context.Background()
	tables := storetest.NewTables(t)
	plain := storetest.Client(t)
	clock := &storetest.Clock{}
	lose := &countThenLose{base: http.DefaultTransport.(*http.Transport).Clone()}
	client := dynamodb.New(plain.Options(), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: lose} })
	st := store.New(client, tables, store.WithClock(clock.Now), store.WithTrackedTTL(0), store.WithRecomputeQuiet(0))
	if err := st.SetQuotaMode(ctx, app, uds.QuotaStreamed); err != nil {
		t.Fatal(err)
	}
	if err := st.SetAppLimits(ctx, app, uds.Limits{Items: 1}); err != nil {
		t.Fatal(err)
	}
	key, err := uds.NewKey(app, "notes", "once")
	if err != nil {
		t.Fatal(err)
	}
	lose.count = func() {
		out, err := plain.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Data), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"dataKey": &types.AttributeValueMemberS{Value: key.DataKey()}}})
		if err != nil || out.Item == nil {
			t.Errorf("the put's item: %v, %v", out, err)
			return
		}
		if _, err := st.CountStreamed(ctx, "shard", []store.StreamChange{{Sequence: "1", At: clock.Now(), New: out.Item}}); err != nil {
			t.Error(err)
		}
	}
	lose.armed.Store(true)
	it, err := st.Create(ctx, uds.Write{Key: key, Subject: "alice", Data: []byte(`{"n":1}`)})
	if err != nil || it.Version != 1 || string(it.Data) != `{"n":1}` {
		t.Fatalf("the create answered %+v, %v; want its item, version 1", it, err)
	}
	if lose.armed.Load() {
		t.Fatal("no put was lost")
	}
	if u := storetest.RecordedUsage(t, plain, tables, app, "alice"); u.Items != 1 {
		t.Errorf("alice's usage %+v, want the one item", u)
	}
}

// An atomic batch that removes an item the stream counted and creates
// another in its place, at the owner's limit, is judged by what it adds
// once the stream has released what it removes, as a write replacing
// such an item is: it was refused as one item over the limit. The stream
// then brings usage to what is stored.
func TestStreamedRemovalBesideAGrowingWrite(t *testing.T) {
	ctx := context.Background()
	f := newStreamedFixture(t)
	if err := f.st.SetUserLimits(ctx, app, "alice", uds.Limits{Items: 2}); err != nil {
		t.Fatal(err)
	}
	a, ca := f.create("a", 20)
	_, cb := f.create("b", 20)
	f.count("shard", ca, cb)
	if u := f.usage("alice"); u.Items != 2 {
		t.Fatalf("alice's usage %+v, want the two items counted", u)
	}
	c, err := uds.NewKey(app, "notes", "c")
	if err != nil {
		t.Fatal(err)
	}
	oldA := f.image(a)
	if _, err := f.st.WriteAtomic(ctx, []uds.BatchOp{
		{Method: http.MethodDelete, Write: uds.Write{Key: a, Subject: "alice"}},
		{Method: http.MethodPost, Write: uds.Write{Key: c, Subject: "alice", Data: jsonOfSize(20)}},
	}); err != nil {
		t.Fatalf("the batch removing a and creating c: %v, want it written", err)
	}
	f.seq++
	f.count("shard", store.StreamChange{Sequence: strconv.Itoa(1000 + f.seq), At: f.clock.Now().Truncate(time.Second), Old: oldA})
	if u, want := f.usage("alice"), f.stored("alice"); u != want || u.Items != 2 {
		t.Errorf("alice's usage %+v once the stream released a, stored %+v", u, want)
	}
	// At the limit, a batch that removes nothing and creates is refused.
	d, err := uds.NewKey(app, "notes", "d")
	if err != nil {
		t.Fatal(err)
	}
	var quota *uds.QuotaError
	if _, err := f.st.WriteAtomic(ctx, []uds.BatchOp{{Method: http.MethodPost, Write: uds.Write{Key: d, Subject: "alice", Data: jsonOfSize(20)}}}); !errors.As(err, &quota) {
		t.Errorf("a batch creating a third item: %v, want the quota's refusal", err)
	}
}
