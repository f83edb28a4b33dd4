package expiry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/internal/emf/emftest"
	"github.com/udsproject/uds/pkg/expiry"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

const app = "d53065bd-f932-4841-83fb-849717d8df0f"

func readEvent(t *testing.T, name string) events.DynamoDBTimeWindowEvent {
	t.Helper()
	b, err := os.ReadFile("../../events/expiry/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBTimeWindowEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// tableOf maps a record's stream ARN to the test's table of the same kind.
func tableOf(rec events.DynamoDBEventRecord, tables store.Tables) string {
	if strings.Contains(rec.EventSourceArn, "table/data_store_list/") {
		return tables.List
	}
	return tables.Data
}

// counted stores a record's old image as a counted item, as UDS wrote it,
// and then deletes it as DynamoDB's TTL would: what the record reports.
func counted(t *testing.T, c *dynamodb.Client, tables store.Tables, rec events.DynamoDBEventRecord) {
	t.Helper()
	ctx := context.Background()
	item := map[string]types.AttributeValue{} // the fixtures hold strings and numbers
	for k, v := range rec.Change.OldImage {
		if v.DataType() == events.DataTypeNumber {
			item[k] = &types.AttributeValueMemberN{Value: v.Number()}
		} else {
			item[k] = &types.AttributeValueMemberS{Value: v.String()}
		}
	}
	size := item["itemSize"].(*types.AttributeValueMemberN).Value
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tableOf(rec, tables)), Item: item}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(tables.Usage),
		Key: map[string]types.AttributeValue{
			"user": &types.AttributeValueMemberS{Value: item["createdBySubject"].(*types.AttributeValueMemberS).Value},
			"app":  &types.AttributeValueMemberS{Value: app},
		},
		UpdateExpression:          aws.String("ADD usedBytes :b, usedItems :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":b": &types.AttributeValueMemberN{Value: size}, ":one": &types.AttributeValueMemberN{Value: "1"}},
	}); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"dataKey": item["dataKey"]}
	if sk, ok := item["sortKey"]; ok {
		key["sortKey"] = sk
	}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tableOf(rec, tables)), Key: key}); err != nil {
		t.Fatal(err)
	}
}

// The stream events under events/expiry replayed through the handler:
// each TTL deletion is released once, however often it is delivered, and
// removals by UDS itself are left alone. A batch that released nothing is
// logged at DEBUG, one that did at INFO.
func TestStreamEventsReplay(t *testing.T) {
	c := storetest.Client(t)
	tables := storetest.NewTables(t)
	st := store.New(c, tables)
	var metrics, logs bytes.Buffer
	h := expiry.Handler(st, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), emf.NewWriter(&metrics))
	ttl := readEvent(t, "01-ttl-removals.json")
	for _, rec := range ttl.Records {
		counted(t, c, tables, rec)
	}
	usage := func() uds.Usage { return storetest.RecordedUsage(t, c, tables, app, "erin") }
	if u := usage(); u.Items != 2 {
		t.Fatalf("before the replay: %+v", u)
	}
	for _, tc := range []struct {
		file     string
		want     uds.Usage
		releases float64
	}{
		{"01-ttl-removals.json", uds.Usage{}, 2},
		{"02-ttl-removal-redelivered.json", uds.Usage{}, 0},
		{"01-ttl-removals.json", uds.Usage{}, 0}, // the whole batch again
		{"03-removal-by-uds.json", uds.Usage{}, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			metrics.Reset()
			logs.Reset()
			ev := readEvent(t, tc.file)
			resp, err := h(context.Background(), ev)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("handler: %+v, %v", resp, err)
			}
			if u := usage(); u != tc.want {
				t.Errorf("usage %+v, want %+v", u, tc.want)
			}
			line := bytes.TrimSpace(metrics.Bytes())
			if err := emftest.Check(line); err != nil {
				t.Fatalf("EMF record: %v\n%s", err, line)
			}
			var rec struct {
				Function          string
				Releases          float64
				DynamoDBThrottles *float64
			}
			_ = json.Unmarshal(line, &rec)
			if rec.Function != "expiry" || rec.Releases != tc.releases || rec.DynamoDBThrottles == nil {
				t.Errorf("EMF record %s, want %v releases", line, tc.releases)
			}
			level := "DEBUG"
			if tc.releases > 0 {
				level = "INFO"
			}
			if want := "level=" + level + ` msg="expiry batch"`; !strings.Contains(logs.String(), want) {
				t.Errorf("the batch's log line is not %s:\n%s", want, &logs)
			}
		})
	}
	if !expiry.IsTTLRemoval(ttl.Records[0]) || expiry.IsTTLRemoval(readEvent(t, "03-removal-by-uds.json").Records[0]) {
		t.Error("IsTTLRemoval does not tell DynamoDB's deletions from others")
	}
}

// The TTL's removals of a kept version and its delete marker, from the
// history table's stream: the version's bytes (and history bytes) are
// released once, however often the batch comes; the marker held nothing.
func TestKeptVersionRemovalsReplay(t *testing.T) {
	c := storetest.Client(t)
	tables := storetest.NewTables(t)
	h := expiry.Handler(store.New(c, tables), slog.New(slog.DiscardHandler), emf.NewWriter(io.Discard))
	// The version's 150 bytes, as the write that kept it charged them.
	if _, err := c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(tables.Usage),
		Key: map[string]types.AttributeValue{
			"user": &types.AttributeValueMemberS{Value: "erin"}, "app": &types.AttributeValueMemberS{Value: app},
		},
		UpdateExpression: aws.String("ADD usedBytes :b, historyBytes :b, usedItems :zero"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":b": &types.AttributeValueMemberN{Value: "150"}, ":zero": &types.AttributeValueMemberN{Value: "0"},
		},
	}); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		resp, err := h(context.Background(), readEvent(t, "04-ttl-removal-of-kept-versions.json"))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("round %d: %+v, %v", round, resp, err)
		}
		if u := storetest.RecordedUsage(t, c, tables, app, "erin"); u != (uds.Usage{}) {
			t.Fatalf("round %d: usage %+v, want the version released once", round, u)
		}
	}
}

// A tumbling window's batch of changes of items written in streamed mode
// (05-streamed-changes.json: three creates, a growing update, a delete by
// UDS and one by the TTL) counted into their owner's usage, once however
// often the batch or a part of it comes again; the TTL's removal of such
// an item is counted from the stream, not released a second time.
func TestStreamedChangesReplay(t *testing.T) {
	c := storetest.Client(t)
	tables := storetest.NewTables(t)
	h := expiry.Handler(store.New(c, tables), slog.New(slog.DiscardHandler), emf.NewWriter(io.Discard))
	ev := readEvent(t, "05-streamed-changes.json")
	tail := ev
	tail.Records = ev.Records[3:]
	want := uds.Usage{Bytes: 500, Items: 1} // n1 at its new size
	for _, tc := range []struct {
		name string
		ev   events.DynamoDBTimeWindowEvent
	}{
		{"the batch", ev},
		{"the batch again", ev},
		{"its tail again", tail},
		{"a window's final invocation, without records", events.DynamoDBTimeWindowEvent{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h(context.Background(), tc.ev)
			if err != nil || len(resp.BatchItemFailures) != 0 || resp.State == nil {
				t.Fatalf("handler: %+v, %v; want no failure and a state", resp, err)
			}
			if u := storetest.RecordedUsage(t, c, tables, app, "frank"); u != want {
				t.Errorf("usage %+v, want %+v", u, want)
			}
		})
	}
	t.Run("without its shard", func(t *testing.T) {
		noShard := ev
		noShard.ShardID = ""
		resp, err := h(context.Background(), noShard)
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ev.Records[0].Change.SequenceNumber {
			t.Fatalf("handler: %+v, %v; want the batch failed from its first record", resp, err)
		}
	})
}
