package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
)

// namedObjects lists the objects that items and kept versions name,
// sorted.
func (e *env) namedObjects(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, table := range []string{e.tables.Data, e.tables.List, e.tables.History} {
		out, err := e.client.Scan(context.Background(), &dynamodb.ScanInput{
			TableName:                aws.String(table),
			ConsistentRead:           aws.Bool(true),
			FilterExpression:         aws.String("attribute_exists(#do)"),
			ProjectionExpression:     aws.String("#do"),
			ExpressionAttributeNames: map[string]string{"#do": schema.AttrDataObject},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			names = append(names, it[schema.AttrDataObject].(*types.AttributeValueMemberS).Value)
		}
	}
	slices.Sort(names)
	return names
}

// historyRows are the rows of the history table of the items of
// namespace ns, kept versions first, then the heads.
func (e *env) historyRows(t *testing.T, ns string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := e.client.Scan(context.Background(), &dynamodb.ScanInput{
		TableName:                 aws.String(e.tables.History),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          aws.String("begins_with(#k, :p)"),
		ExpressionAttributeNames:  map[string]string{"#k": schema.AttrDataKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: app + "|" + ns + "|"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := out.Items
	slices.SortStableFunc(rows, func(a, b map[string]types.AttributeValue) int {
		_, ah := a[schema.AttrKept]
		_, bh := b[schema.AttrKept]
		switch {
		case ah == bh:
			return 0
		case ah:
			return 1
		}
		return -1
	})
	return rows
}

// bucketKeys lists the keys of the objects in the bucket at endpoint.
func bucketKeys(t *testing.T, endpoint string) []string {
	t.Helper()
	client, err := blob.NewClient(context.Background(), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(blobtest.Name)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// oneRecordEach fails the test unless the objects in the bucket at
// endpoint are exactly those that items and kept versions name, each
// named by one record only. It returns the names.
func (e *env) oneRecordEach(t *testing.T, endpoint string) []string {
	t.Helper()
	names := e.namedObjects(t)
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("an object is named by two records: %v", names)
	}
	if keys := bucketKeys(t, endpoint); !slices.Equal(keys, names) {
		t.Errorf("the bucket holds %v, the records name %v", keys, names)
	}
	return names
}

// largeVersion stores a large value of who's at path in namespace ns,
// then gives ns the history policy and updates the item with JSON, so
// that the large value becomes kept version 1. It returns the value and
// its object.
func (e *env) largeVersion(t *testing.T, who, ns, path, policy string) ([]byte, string) {
	t.Helper()
	value := bytes.Repeat([]byte("large!"), 100_000)
	before := e.namedObjects(t)
	id := e.upload(path, len(value), "application/octet-stream", value, "X-Uds-Subject", who)
	e.commit(path, id, "X-Uds-Subject", who).expect(t, http.StatusCreated)
	objects := e.namedObjects(t)
	added := slices.DeleteFunc(slices.Clone(objects), func(name string) bool { return slices.Contains(before, name) })
	if len(added) != 1 {
		t.Fatalf("the commit named %v", added)
	}
	e.setPolicy(t, ns, policy)
	e.as(who, "PUT", path, `{"data": "small"}`).expect(t, http.StatusOK)
	if got := e.namedObjects(t); !slices.Equal(got, objects) {
		t.Fatalf("after the update the records name %v, before %v", got, objects)
	}
	return value, added[0]
}

// TestHistoryLargeValueObjects: each large value's object is named by one
// record, the item or one kept version, and goes when that record goes. A
// restore of a large version copies its object for the item, so a write
// with history off (which removes the item's object) leaves the version
// readable; dropping, pruning and expiring a large version removes its
// object.
func TestHistoryLargeValueObjects(t *testing.T) {
	t.Parallel()
	bucket, endpoint := blobtest.Serve(t, nil)
	e := newEnvOn(t, bucket)

	t.Run("a restore copies, a write without history leaves the version, a drop removes it", func(t *testing.T) {
		path := base + "/restored/v"
		value, kept := e.largeVersion(t, "alice", "restored", path, `{"access":"shared","history":{"versions":5}}`)
		e.as("alice", "POST", path+"?restore=1", "").expect(t, http.StatusOK)
		if names := e.oneRecordEach(t, endpoint); len(names) != 2 {
			t.Fatalf("after the restore the records name %v, want the version's and the item's copy", names)
		}
		e.setPolicy(t, "restored", `{"access":"shared"}`)
		e.as("alice", "PUT", path, `{"data": "small again"}`).expect(t, http.StatusOK)
		if names := e.oneRecordEach(t, endpoint); !slices.Equal(names, []string{kept}) {
			t.Fatalf("after a write without history the records name %v, want only the version's %s", names, kept)
		}
		if r := e.send("GET", path+"?version=1&inline", nil).expect(t, http.StatusOK); !bytes.Equal(r.raw, value) {
			t.Fatalf("the kept version reads %d bytes, want %d", len(r.raw), len(value))
		}
		e.as("alice", "DELETE", path+"?history", "").expect(t, http.StatusOK)
		if !e.absent(kept) || len(e.namedObjects(t)) != 0 {
			t.Fatalf("after the drop: object gone %v, named %v", e.absent(kept), e.namedObjects(t))
		}
	})

	// The restore's transaction commits but its answer is lost, and every
	// attempt after it is throttled until the request's time runs out:
	// the request answers 503, and the copy its commit names stays.
	t.Run("a restore whose commit went unanswered keeps its copy", func(t *testing.T) {
		path := base + "/unanswered/v"
		e.largeVersion(t, "alice", "unanswered", path, `{"access":"shared","history":{"versions":5}}`)
		faulty, ft := storetest.FaultyClient(t, 1)
		ft.Set(faults.Rule{Kind: faults.LostAfterCommit, Ops: []string{"TransactWriteItems"}, Nth: 1},
			faults.Rule{Kind: faults.Throttle, Ops: []string{"TransactWriteItems"}, Rate: 1})
		f := newEnvThrough(t, faulty, e.tables, e.objects, e.clock, time.Second)
		f.as("alice", "POST", path+"?restore=1", "").expect(t, http.StatusServiceUnavailable)
		if injected, _ := ft.Injected(); injected[faults.LostAfterCommit] != 1 {
			t.Fatalf("faults %v: the restore's commit was not the one whose answer was lost", injected)
		}
		if got := e.history(t, path); got != "3* 2 1" {
			t.Fatalf("history %q, want the restore committed as version 3", got)
		}
		if names := e.oneRecordEach(t, endpoint); len(names) != 2 {
			t.Fatalf("the records name %v, want the version's and the item's copy", names)
		}
		e.setPolicy(t, "unanswered", `{"access":"shared"}`)
		e.as("alice", "DELETE", path, "").expect(t, http.StatusNoContent)
		e.as("alice", "DELETE", path+"?history", "").expect(t, http.StatusOK)
		if names := e.oneRecordEach(t, endpoint); len(names) != 0 {
			t.Fatalf("after the item and its history went, the records name %v", names)
		}
	})

	// Every attempt of the restore's transaction is throttled until the
	// request's time runs out: none was applied, so the request answers
	// 503 and removes the copy it made, which nothing names. (The time
	// may run out during an attempt, which may then have been applied:
	// the budget leaves room for many attempts, each answered at once.)
	t.Run("a restore throttled throughout removes its copy", func(t *testing.T) {
		path := base + "/throttled/v"
		_, kept := e.largeVersion(t, "alice", "throttled", path, `{"access":"shared","history":{"versions":5}}`)
		faulty, ft := storetest.FaultyClient(t, 1)
		ft.Set(faults.Rule{Kind: faults.Throttle, Ops: []string{"TransactWriteItems"}, Rate: 1})
		f := newEnvThrough(t, faulty, e.tables, e.objects, e.clock, 3*time.Second)
		f.as("alice", "POST", path+"?restore=1", "").expect(t, http.StatusServiceUnavailable)
		if injected, _ := ft.Injected(); injected[faults.Throttle] < 2 {
			t.Fatalf("faults %v: the restore's transaction was not throttled again and again", injected)
		}
		if got := e.history(t, path); got != "2* 1" {
			t.Fatalf("history %q, want the restore not committed", got)
		}
		if names := e.oneRecordEach(t, endpoint); !slices.Equal(names, []string{kept}) {
			t.Fatalf("the records name %v, want only the version's %s", names, kept)
		}
		e.setPolicy(t, "throttled", `{"access":"shared"}`)
		e.as("alice", "DELETE", path, "").expect(t, http.StatusNoContent)
		e.as("alice", "DELETE", path+"?history", "").expect(t, http.StatusOK)
	})

	// An atomic batch bounds its items' bytes by what its transaction
	// carries: a large value's item holds its object's name, not its
	// bytes, so six restores of 600 KB versions (3.6 MB of objects) fit.
	t.Run("an atomic batch restores large versions past the batch's bytes", func(t *testing.T) {
		var ops []string
		for i := range 6 {
			path := fmt.Sprintf("%s/batched/v%d", base, i)
			e.setPolicy(t, "batched", `{"access":"shared"}`) // large values are uploaded without history
			e.largeVersion(t, "alice", "batched", path, `{"access":"shared","history":{"versions":5}}`)
			ops = append(ops, fmt.Sprintf(`{"method":"POST","path":"batched/v%d?restore=1"}`, i))
		}
		rs, _ := e.batch(t, 200, `{"atomic":true,"operations":[`+strings.Join(ops, ",")+`]}`, "X-Uds-Subject", "alice")
		if want := "[200 200 200 200 200 200]"; fmt.Sprint(statuses(rs)) != want {
			t.Fatalf("atomic restores of large versions: statuses %v, want %s", statuses(rs), want)
		}
		if names := e.oneRecordEach(t, endpoint); len(names) != 12 {
			t.Fatalf("after the restores the records name %d objects, want each version's and each item's copy", len(names))
		}
		e.setPolicy(t, "batched", `{"access":"shared"}`)
		for i := range 6 {
			path := fmt.Sprintf("%s/batched/v%d", base, i)
			e.as("alice", "DELETE", path, "").expect(t, http.StatusNoContent)
			e.as("alice", "DELETE", path+"?history", "").expect(t, http.StatusOK)
		}
		if names := e.oneRecordEach(t, endpoint); len(names) != 0 {
			t.Fatalf("after the items and their histories went, the records name %v", names)
		}
	})

	t.Run("a prune removes the version's object", func(t *testing.T) {
		path := base + "/pruned/v"
		_, kept := e.largeVersion(t, "alice", "pruned", path, `{"access":"shared","history":{"versions":1}}`)
		e.as("alice", "PUT", path, `{"data": "third"}`).expect(t, http.StatusOK)
		if got := e.history(t, path); got != "3* 2" {
			t.Fatalf("history %q", got)
		}
		if !e.absent(kept) {
			t.Fatalf("the pruned version's object %s is still in the bucket", kept)
		}
	})

	t.Run("expiry removes the version's object", func(t *testing.T) {
		path := base + "/aged/v"
		_, kept := e.largeVersion(t, "alice", "aged", path, `{"access":"shared","history":{"versions":5,"days":1}}`)
		e.clock.Advance(25 * time.Hour)
		sweeper := store.New(e.client, e.tables, store.WithClock(e.clock.Now), store.WithObjects(e.objects))
		if n, err := sweeper.SweepExpired(context.Background()); err != nil || n != 1 {
			t.Fatalf("the sweep removed %d: %v", n, err)
		}
		if !e.absent(kept) {
			t.Fatalf("the expired version's object %s is still in the bucket", kept)
		}
	})

	t.Run("the TTL's removal of a version removes its object", func(t *testing.T) {
		path := base + "/ttl/v"
		_, kept := e.largeVersion(t, "alice", "ttl", path, `{"access":"shared","history":{"versions":5,"days":1}}`)
		row := e.historyRows(t, "ttl")[0]
		if _, err := e.client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(e.tables.History),
			Key: map[string]types.AttributeValue{schema.AttrHistoryKey: row[schema.AttrHistoryKey], schema.AttrVersion: row[schema.AttrVersion]}}); err != nil {
			t.Fatal(err)
		}
		st := store.New(e.client, e.tables, store.WithObjects(e.objects))
		if released, err := st.ReleaseRemoved(context.Background(), row, e.now()); err != nil || !released {
			t.Fatalf("the release: %v %v", released, err)
		}
		if !e.absent(kept) {
			t.Fatalf("the removed version's object %s is still in the bucket", kept)
		}
	})

	t.Run("a prune removes the object of a version kept before heads named objects", func(t *testing.T) {
		path := base + "/legacy/v"
		_, kept := e.largeVersion(t, "alice", "legacy", path, `{"access":"shared","history":{"versions":1}}`)
		// The head as it was written before heads named objects.
		head := e.historyRows(t, "legacy")
		if _, err := e.client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(e.tables.History),
			Key:                      map[string]types.AttributeValue{schema.AttrHistoryKey: head[len(head)-1][schema.AttrHistoryKey], schema.AttrVersion: &types.AttributeValueMemberN{Value: "-1"}},
			UpdateExpression:         aws.String("REMOVE #of, #kept[0].ob"),
			ExpressionAttributeNames: map[string]string{"#of": schema.AttrObjectsFrom, "#kept": schema.AttrKept},
		}); err != nil {
			t.Fatal(err)
		}
		e.as("alice", "PUT", path, `{"data": "third"}`).expect(t, http.StatusOK)
		if got := e.history(t, path); got != "3* 2" || !e.absent(kept) {
			t.Fatalf("history %q, the pruned version's object gone: %v", got, e.absent(kept))
		}
		e.oneRecordEach(t, endpoint)
	})

	t.Run("a value larger than a transaction is kept as a version", func(t *testing.T) {
		// A kept large value carries its object's name, not its bytes,
		// into the transaction that keeps it: 4 MB is past the 3.5 MB a
		// transaction of the plan takes (the update answered 413).
		// A namespace that keeps history takes no new large values, so
		// history is set once the value is stored.
		path := base + "/huge/v"
		value := bytes.Repeat([]byte("huge"), 1<<20)
		id := e.upload(path, len(value), "application/octet-stream", value, "X-Uds-Subject", "alice")
		e.commit(path, id, "X-Uds-Subject", "alice").expect(t, http.StatusCreated)
		e.setPolicy(t, "huge", `{"access":"shared","history":{"versions":5}}`)
		e.as("alice", "PUT", path, `{"data": "small"}`).expect(t, http.StatusOK)
		if r := e.send("GET", path+"?version=1&inline", nil).expect(t, http.StatusOK); !bytes.Equal(r.raw, value) {
			t.Fatalf("the kept version reads %d bytes, want %d", len(r.raw), len(value))
		}
		e.oneRecordEach(t, endpoint)
		// The next subtest counts the bucket's objects.
		e.as("alice", "DELETE", path+"?history", "").expect(t, http.StatusOK)
		e.as("alice", "DELETE", path, "").expect(t, http.StatusNoContent)
		if names := e.oneRecordEach(t, endpoint); len(names) != 0 {
			t.Fatalf("after the drop the records name %v", names)
		}
	})

	t.Run("a restore the quota refuses leaves no copy", func(t *testing.T) {
		path := base + "/refused/v"
		// Carol's limit holds one large value, not two.
		e.do("PUT", adminApps+"/users/carol/quota", `{"limitBytes": 1000000}`).expect(t, http.StatusOK)
		_, kept := e.largeVersion(t, "carol", "refused", path, `{"access":"shared","history":{"versions":5}}`)
		e.as("carol", "POST", path+"?restore=1", "").expect(t, http.StatusForbidden)
		if names := e.oneRecordEach(t, endpoint); !slices.Equal(names, []string{kept}) {
			t.Fatalf("after a refused restore the records name %v", names)
		}
	})
}
