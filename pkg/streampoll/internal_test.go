package streampoll

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// TestReady covers the shard lineage DynamoDB Local does not make: its
// streams keep one shard, while DynamoDB's close theirs every few hours
// and open children. A child's record is never handed over before its
// parent's last.
func TestReady(t *testing.T) {
	type found struct {
		id, parent string
		ended      bool
	}
	for _, tc := range []struct {
		name   string
		shards []found
		want   []string
		// awaiting: a shard ended and its children are not listed, so
		// the stream is to be listed again.
		awaiting bool
	}{
		{"one open shard", []found{{"a", "", false}}, []string{"a"}, false},
		{"a child waits for its parent", []found{{"a", "", false}, {"b", "a", false}}, []string{"a"}, false},
		{"a child of a parent read to its end", []found{{"a", "", true}, {"b", "a", false}}, []string{"b"}, false},
		{"a child of a trimmed parent", []found{{"b", "gone", false}}, []string{"b"}, false},
		{"a grandchild waits for its parent, not read yet", []found{{"a", "", true}, {"b", "a", false}, {"c", "b", false}}, []string{"b"}, false},
		{"siblings and another lineage together", []found{{"a", "", true}, {"b", "a", false}, {"c", "a", false}, {"d", "x", false}}, []string{"b", "c", "d"}, false},
		{"a shard ended, its children not listed yet", []found{{"a", "", true}, {"d", "x", false}}, []string{"d"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &stream{shards: map[string]*shard{}, childless: map[string]bool{}}
			// Each shard is found, then read to its end when it ended,
			// before the next is listed: as a pass marks it.
			for _, f := range tc.shards {
				st.add(f.id, f.parent, Faults{})
				if f.ended {
					st.shards[f.id].ended = true
					st.childless[f.id] = true
				}
			}
			var got []string
			for _, sh := range st.ready() {
				got = append(got, sh.id)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ready %v, want %v", got, tc.want)
			}
			if awaiting := (&Poller{streams: []*stream{st}}).awaitingChildren(); awaiting != tc.awaiting {
				t.Errorf("awaiting children %v, want %v", awaiting, tc.awaiting)
			}
		})
	}
}

// TestRecord covers what DynamoDB Local never writes: the identity of
// DynamoDB's TTL deletions, and a value of a type the SDK does not know.
func TestRecord(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 7, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		rec     types.Record
		want    *events.DynamoDBUserIdentity
		wantErr bool
	}{
		{"a TTL deletion", types.Record{
			EventName:    types.OperationTypeRemove,
			UserIdentity: &types.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")},
			Dynamodb: &types.StreamRecord{ApproximateCreationDateTime: &at, SequenceNumber: aws.String("1"),
				OldImage: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "x"}}},
		}, &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}, false},
		{"a write of UDS", types.Record{
			EventName: types.OperationTypeInsert,
			Dynamodb:  &types.StreamRecord{ApproximateCreationDateTime: &at, SequenceNumber: aws.String("2")},
		}, nil, false},
		{"a value of an unknown type", types.Record{
			EventName: types.OperationTypeInsert,
			Dynamodb: &types.StreamRecord{SequenceNumber: aws.String("3"),
				NewImage: map[string]types.AttributeValue{"k": &types.UnknownUnionMember{Tag: "X"}}},
		}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := record(tc.rec, "arn:stream")
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if (got.UserIdentity == nil) != (tc.want == nil) || (tc.want != nil && *got.UserIdentity != *tc.want) {
				t.Errorf("identity %+v, want %+v", got.UserIdentity, tc.want)
			}
			if !got.Change.ApproximateCreationDateTime.Equal(at) || got.EventSourceArn != "arn:stream" || got.EventName != string(tc.rec.EventName) {
				t.Errorf("record %+v", got)
			}
		})
	}
}
