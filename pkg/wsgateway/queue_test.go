package wsgateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// fakeSQS records SendMessageBatch calls; fail fails the entries whose
// group it names, down fails whole calls.
type fakeSQS struct {
	calls [][]types.SendMessageBatchRequestEntry
	fail  string
	down  bool
}

func (f *fakeSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if f.down {
		return nil, errors.New("SQS is down")
	}
	f.calls = append(f.calls, in.Entries)
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		if aws.ToString(e.MessageGroupId) == f.fail {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("no")})
		}
	}
	return out, nil
}

func TestSQSQueue(t *testing.T) {
	f := &fakeSQS{fail: "B"}
	q := NewSQSQueue(f, "https://sqs/q.fifo")
	var evs []Event
	for i := range 23 {
		conn := "A"
		if i == 12 {
			conn = "B"
		}
		evs = append(evs, Event{Connection: conn, Rows: []Row{{App: "app", Namespace: "ns", ID: fmt.Sprint(i), Seq: "s", Version: 1}}})
	}
	evs = append(evs, Event{Connection: "A", Message: []byte("hi"), Dedup: "msg-1"})
	failed, err := q.Send(context.Background(), evs)
	if err == nil || len(failed) != 1 || failed[0].Connection != "B" {
		t.Fatalf("failed %v, %v; want B's event", failed, err)
	}
	if len(f.calls) != 3 || len(f.calls[0]) != 10 || len(f.calls[2]) != 4 {
		t.Fatalf("calls of %d, want batches of 10, 10, 4", len(f.calls))
	}
	last := f.calls[2][3]
	if aws.ToString(last.MessageDeduplicationId) != "msg-1" || aws.ToString(last.MessageGroupId) != "A" {
		t.Fatalf("the message's entry: %+v", last)
	}
	ev, err := decodeEvent(aws.ToString(last.MessageBody))
	if err != nil || string(ev.Message) != "hi" || ev.Connection != "A" {
		t.Fatalf("decoded %+v, %v", ev, err)
	}
	// Rows get a deduplication id of their content.
	first := f.calls[0][0]
	if d := aws.ToString(first.MessageDeduplicationId); len(d) != 64 || strings.Contains(d, " ") {
		t.Fatalf("rows' deduplication id %q", d)
	}
	f.down = true
	if failed, err := q.Send(context.Background(), evs[:3]); err == nil || len(failed) != 3 {
		t.Fatalf("with SQS down: %v, %v", failed, err)
	}
}

// TestEventRoundTrip checks that a client's message of any bytes, the
// empty one too, comes out of the queue as it went in.
func TestEventRoundTrip(t *testing.T) {
	for _, msg := range [][]byte{{}, []byte("\uffff\x00\xff"), []byte(`{"action":"subscribe"}`)} {
		b, err := Event{Connection: "A", Message: msg}.encode()
		if err != nil {
			t.Fatal(err)
		}
		ev, err := decodeEvent(string(b))
		if err != nil || ev.Message == nil || string(ev.Message) != string(msg) {
			t.Fatalf("%q came out as %q, %v", msg, ev.Message, err)
		}
	}
}
