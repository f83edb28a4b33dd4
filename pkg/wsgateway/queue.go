package wsgateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Event is one thing a connection's session must take in turn: a message
// its client sent, or rows of the changes feed that landed in a feed it
// watches. Every event of one connection goes through the queue under the
// connection's id as its message group, so that one worker at a time
// takes them, in the order they were sent.
type Event struct {
	// Connection is the connection's id.
	Connection string
	// Message is the client's message, as it sent it.
	Message []byte
	// Rows are the feed's rows that landed, when Message is nil, and
	// Landed an instant before which every row that landed in the
	// connection's feeds has been queued ahead of this event (see
	// Publisher).
	Rows   []Row
	Landed time.Time
	// Dedup identifies the event for the queue's deduplication: the same
	// event sent twice within five minutes is taken once.
	Dedup string
}

// Row is a row of the changes feed as it landed, as the queue carries it.
type Row struct {
	App       string `json:"app"`
	Namespace string `json:"ns"`
	ID        string `json:"id"`
	SortKey   string `json:"sk,omitempty"`
	// KeySpace is the key space of the row's item (its owner in a
	// private namespace, else empty).
	KeySpace string `json:"ks,omitempty"`
	// Seq is the row's sequence in its feed.
	Seq     string `json:"seq"`
	Version int64  `json:"v"`
	Removed bool   `json:"rm,omitempty"`
	// At is when the change was made, in epoch milliseconds.
	At int64 `json:"at"`
}

// Feed is the feed the row is in: its app, namespace and key space.
func (r Row) Feed() string { return feedOf(r.App, r.Namespace, r.KeySpace) }

// rowOf is a landed row as the queue carries it.
func rowOf(r store.FeedRow) Row {
	return Row{App: r.Key.App, Namespace: r.Key.Namespace, ID: r.Key.ID, SortKey: r.Key.SortKey, KeySpace: r.Key.Owner,
		Seq: r.Seq, Version: r.Version, Removed: r.Removed, At: r.At.UnixMilli()}
}

// feedRow is the row as the store and the engine take it.
func (r Row) feedRow() store.FeedRow {
	return store.FeedRow{
		Key: uds.Key{App: r.App, Namespace: r.Namespace, ID: r.ID, SortKey: r.SortKey, Owner: r.KeySpace},
		Seq: r.Seq, Version: r.Version, Removed: r.Removed, At: time.UnixMilli(r.At).UTC(),
	}
}

// feedOf names the feed of a key space, as the connections table files
// its subscribers: the app, the namespace and the key space joined by the
// key delimiter, as the realtime engine names them (Watcher's feed).
func feedOf(app, namespace, keySpace string) string {
	return app + uds.KeyDelimiter + namespace + uds.KeyDelimiter + keySpace
}

// body is an event as a queue message's body. The client's message is
// carried as base64 (encoding/json's form of []byte): the queue takes only
// some of Unicode, and a client's text may hold any of it.
type body struct {
	Connection string `json:"c"`
	// Message is null in an event of rows, and "" for a client's empty
	// message, which the engine answers as it answers any message that
	// is not a request.
	Message []byte `json:"m"`
	Rows    []Row  `json:"r,omitempty"`
	// Landed is Event.Landed in epoch milliseconds.
	Landed int64 `json:"l,omitempty"`
}

// encode is an event's message body.
func (e Event) encode() ([]byte, error) {
	b := body{Connection: e.Connection, Message: e.Message, Rows: e.Rows}
	if !e.Landed.IsZero() {
		b.Landed = e.Landed.UnixMilli()
	}
	return json.Marshal(b)
}

// decodeEvent reads a queue message's body.
func decodeEvent(raw string) (Event, error) {
	var b body
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		return Event{}, fmt.Errorf("an event that is not one: %w", err)
	}
	if b.Connection == "" {
		return Event{}, errors.New("an event without its connection")
	}
	if b.Message == nil && len(b.Rows) == 0 {
		return Event{}, errors.New("an event with neither a message nor rows")
	}
	ev := Event{Connection: b.Connection, Message: b.Message, Rows: b.Rows}
	if b.Landed != 0 {
		ev.Landed = time.UnixMilli(b.Landed).UTC()
	}
	return ev, nil
}

// maxEventBytes bounds an event's body below SQS's 256 KiB message: the
// publisher splits rows over several events past it.
const maxEventBytes = 200 << 10

// rowsDedup is the deduplication id of an event of rows: the same rows
// for the same connection are the same event.
func rowsDedup(connection string, encoded []byte) string {
	sum := sha256.Sum256(append([]byte(connection+"\x00"), encoded...))
	return hex.EncodeToString(sum[:])
}

// Queue takes events for the deliverer. Send returns the events it could
// not send (all of them with the error, when it could send none).
type Queue interface {
	Send(ctx context.Context, events []Event) (failed []Event, err error)
}

// SQSAPI is the part of SQS the queue takes; *sqs.Client has it.
type SQSAPI interface {
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// SQSQueue is a FIFO queue of events: each event a message, the
// connection its message group, and an explicit deduplication id, so that
// a sender's retry of a batch is taken once.
type SQSQueue struct {
	client SQSAPI
	url    string
}

// NewSQSQueue sends to the FIFO queue at url.
func NewSQSQueue(client SQSAPI, url string) *SQSQueue { return &SQSQueue{client: client, url: url} }

// sqsBatch is the most messages of one SendMessageBatch.
const sqsBatch = 10

// Send sends events in batches of ten, in order: SQS keeps the order of
// a batch's messages within a message group.
func (q *SQSQueue) Send(ctx context.Context, events []Event) ([]Event, error) {
	var failed []Event
	var firstErr error
	for start := 0; start < len(events); start += sqsBatch {
		batch := events[start:min(start+sqsBatch, len(events))]
		entries := make([]types.SendMessageBatchRequestEntry, 0, len(batch))
		for i, e := range batch {
			b, err := e.encode()
			if err != nil {
				return events[start:], err
			}
			dedup := e.Dedup
			if dedup == "" {
				dedup = rowsDedup(e.Connection, b)
			}
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id:                     aws.String(strconv.Itoa(i)),
				MessageBody:            aws.String(string(b)),
				MessageGroupId:         aws.String(e.Connection),
				MessageDeduplicationId: aws.String(dedup),
			})
		}
		out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			failed = append(failed, batch...)
			firstErr = firstError(firstErr, fmt.Errorf("send events: %w", err))
			continue
		}
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			if i >= 0 && i < len(batch) {
				failed = append(failed, batch[i])
			}
			firstErr = firstError(firstErr, fmt.Errorf("send events: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	return failed, firstErr
}

func firstError(first, next error) error {
	if first != nil {
		return first
	}
	return next
}
