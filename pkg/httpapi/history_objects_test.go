package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
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
)

// namedObjects lists the objects that items and kept versions name, in
// the order the tables' scans give them.
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
	return names
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
	for i, name := range names {
		if slices.Index(names, name) != i {
			t.Errorf("object %s is named by two records", name)
		}
	}
	keys, sorted := bucketKeys(t, endpoint), slices.Sorted(slices.Values(names))
	if !slices.Equal(keys, sorted) {
		t.Errorf("the bucket holds %v, the records name %v", keys, sorted)
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
	id := e.upload(path, len(value), "application/octet-stream", value, "X-Uds-Subject", who)
	e.commit(path, id, "X-Uds-Subject", who).expect(t, http.StatusCreated)
	objects := e.namedObjects(t)
	e.setPolicy(t, ns, policy)
	e.as(who, "PUT", path, `{"data": "small"}`).expect(t, http.StatusOK)
	if got := e.namedObjects(t); !slices.Equal(got, objects) || len(got) != 1 {
		t.Fatalf("after the update the records name %v, before %v", got, objects)
	}
	return value, objects[0]
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
