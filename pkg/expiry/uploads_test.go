package expiry_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/expiry"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// bucketEvent is the S3 notification of objects created under keys, as S3
// sends it to the function.
func bucketEvent(t *testing.T, bucket string, keys ...string) json.RawMessage {
	t.Helper()
	var ev events.S3Event
	for _, k := range keys {
		ev.Records = append(ev.Records, events.S3EventRecord{EventSource: "aws:s3", EventName: "ObjectCreated:Post",
			S3: events.S3Entity{Bucket: events.S3Bucket{Name: bucket}, Object: events.S3Object{Key: k}}})
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestBucketEventsCommitUploads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	objects := blob.Objects{Bucket: blobtest.New(t)}
	client, tables := storetest.Client(t), storetest.NewTables(t)
	st := store.New(client, tables, store.WithObjects(objects))
	streams := func(context.Context, events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		return events.DynamoDBTimeWindowEventResponse{}, errors.New("a bucket event went to the streams' handler")
	}
	created := func(ev events.S3Event) []string { return blob.CreatedUploads(ev, blobtest.Name) }
	handle := expiry.Dispatch(streams, expiry.UploadHandler(st, created, slog.New(slog.NewTextHandler(io.Discard, nil)), emf.NewWriter(io.Discard)))

	// posted reserves an upload of a 5-byte PNG for the item id and posts
	// its bytes through the presigned form, as a client does.
	posted := func(t *testing.T, id string) (uds.Key, uds.Upload, blob.Upload) {
		key, err := uds.NewKey(app, "photos", id)
		if err != nil {
			t.Fatal(err)
		}
		up, err := st.ReserveUpload(ctx, uds.Write{Key: key, Subject: "alice", Binary: &uds.Binary{ContentType: "image/png", Size: 5}})
		if err != nil {
			t.Fatal(err)
		}
		post, err := objects.PresignUpload(ctx, uds.ObjectName(app, up.ID), "image/png", 5, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		form := blob.Upload{URL: post.URL, Fields: post.Fields}
		blobtest.Post(t, form, []byte("pixel")).Body.Close()
		return key, up, form
	}
	key, up, form := posted(t, "p1")
	name := uds.ObjectName(app, up.ID)

	cases := []struct {
		name  string
		event json.RawMessage
	}{
		{"the upload's event commits it", bucketEvent(t, blobtest.Name, blob.UploadKey(name))},
		{"its event again changes nothing", bucketEvent(t, blobtest.Name, blob.UploadKey(name))},
		{"another bucket's event is ignored", bucketEvent(t, "someone-else", blob.UploadKey(name))},
		{"an upload that is not (or no longer) pending is done with", bucketEvent(t, blobtest.Name, blob.UploadKey(uds.ObjectName(app, "0123456789abcdef0123456789abcdef")))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := handle(ctx, tc.event); err != nil {
				t.Fatal(err)
			}
			it, err := st.Get(ctx, key)
			if err != nil || it.Binary == nil || it.Binary.Object != uds.ValueName(app, up.ID) || it.Binary.Size != 5 || it.Version != 1 {
				t.Fatalf("item %+v, %v", it, err)
			}
		})
	}
	t.Run("the event of a POST after the commit removes what it sent", func(t *testing.T) {
		blobtest.Post(t, form, []byte("other")).Body.Close()
		if _, err := handle(ctx, bucketEvent(t, blobtest.Name, blob.UploadKey(name))); err != nil {
			t.Fatal(err)
		}
		if _, _, err := objects.Stat(ctx, name); !errors.Is(err, uds.ErrUploadPending) {
			t.Fatalf("the object posted after the commit is still there: %v", err)
		}
		if _, _, err := objects.Stat(ctx, uds.ValueName(app, up.ID)); err != nil {
			t.Fatalf("the committed value's object: %v", err)
		}
	})
	t.Run("the TTL's removal of the item removes its object", func(t *testing.T) {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Data),
			Key: map[string]types.AttributeValue{"dataKey": &types.AttributeValueMemberS{Value: key.DataKey()}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ReleaseRemoved(ctx, out.Item, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := objects.Stat(ctx, uds.ValueName(app, up.ID)); !errors.Is(err, uds.ErrUploadPending) {
			t.Fatalf("the object is still there: %v", err)
		}
	})
	t.Run("an upload the binary rule set since refuses is done with", func(t *testing.T) {
		other, up, _ := posted(t, "p2")
		name := uds.ObjectName(app, up.ID)
		if _, err := st.SetPolicy(ctx, app, "photos", uds.Policy{Binary: &uds.BinaryRule{ContentTypes: []string{"image/jpeg"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := handle(ctx, bucketEvent(t, blobtest.Name, blob.UploadKey(name))); err != nil {
			t.Fatalf("the event of an upload the policy refuses failed, for Lambda to deliver it again: %v", err)
		}
		if _, err := st.Get(ctx, other); !errors.Is(err, uds.ErrNotFound) {
			t.Fatalf("the refused upload's item: %v", err)
		}
		if _, _, err := objects.Stat(ctx, name); !errors.Is(err, uds.ErrUploadPending) {
			t.Fatalf("the refused upload's object is still there: %v", err)
		}
	})
	t.Run("an upload whose item expired before it arrived is done with", func(t *testing.T) {
		clock := &storetest.Clock{}
		late := store.New(client, tables, store.WithObjects(objects), store.WithClock(clock.Now))
		handle := expiry.UploadHandler(late, created, slog.New(slog.NewTextHandler(io.Discard, nil)), emf.NewWriter(io.Discard))
		key, err := uds.NewKey(app, "photos", "p3")
		if err != nil {
			t.Fatal(err)
		}
		before, err := late.Quota(ctx, app, "alice")
		if err != nil {
			t.Fatal(err)
		}
		up, err := late.ReserveUpload(ctx, uds.Write{Key: key, Subject: "alice", ExpiresAt: clock.Now().Add(time.Minute),
			Binary: &uds.Binary{ContentType: "image/jpeg", Size: 5}})
		if err != nil {
			t.Fatal(err)
		}
		name := uds.ObjectName(app, up.ID)
		post, err := objects.PresignUpload(ctx, name, "image/jpeg", 5, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		blobtest.Post(t, blob.Upload{URL: post.URL, Fields: post.Fields}, []byte("pixel")).Body.Close()
		clock.Advance(2 * time.Minute)
		var ev events.S3Event
		if err := json.Unmarshal(bucketEvent(t, blobtest.Name, blob.UploadKey(name)), &ev); err != nil {
			t.Fatal(err)
		}
		if err := handle(ctx, ev); err != nil {
			t.Fatalf("the event of an upload whose item expired failed, for Lambda to deliver it again: %v", err)
		}
		if _, err := late.Get(ctx, key); !errors.Is(err, uds.ErrNotFound) {
			t.Fatalf("the expired upload's item: %v", err)
		}
		if after, err := late.Quota(ctx, app, "alice"); err != nil || after.Used != before.Used {
			t.Errorf("alice's usage %+v after the event, %+v before the reservation (%v): the discarded upload's is released", after.Used, before.Used, err)
		}
		if _, _, err := objects.Stat(ctx, name); !errors.Is(err, uds.ErrUploadPending) {
			t.Fatalf("the expired upload's object is still there: %v", err)
		}
	})
	t.Run("a stream batch goes to the streams' handler", func(t *testing.T) {
		if _, err := handle(ctx, json.RawMessage(`{"Records":[{"eventSource":"aws:dynamodb","eventName":"REMOVE"}]}`)); err == nil {
			t.Fatal("a stream batch did not reach the streams' handler")
		}
	})
}
