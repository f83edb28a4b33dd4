package streampoll_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dt "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/streampoll"
)

var (
	streamsOnce   sync.Once
	streamsClient *dynamodbstreams.Client
	streamsErr    error
)

// streams is a DynamoDB Streams client of the test engine.
func streams(t *testing.T) *dynamodbstreams.Client {
	t.Helper()
	storetest.Client(t) // fails the test without an engine
	streamsOnce.Do(func() {
		streamsClient, streamsErr = streampoll.NewClient(context.Background(), os.Getenv(config.EnvDynamoDBEndpoint))
	})
	if streamsErr != nil {
		t.Fatal(streamsErr)
	}
	return streamsClient
}

// newTable creates a table keyed by the string k, with a stream of new
// and old images when streamed, and deletes it when the test ends.
func newTable(t *testing.T, streamed bool) string {
	t.Helper()
	db := storetest.Client(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "poll" + hex.EncodeToString(b)
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		KeySchema:            []dt.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: dt.KeyTypeHash}},
		AttributeDefinitions: []dt.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: dt.ScalarAttributeTypeS}},
		BillingMode:          dt.BillingModePayPerRequest,
	}
	if streamed {
		in.StreamSpecification = &dt.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: dt.StreamViewTypeNewAndOldImages}
	}
	if _, err := db.CreateTable(context.Background(), in); err != nil {
		t.Fatalf("create table: %v", err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// newStream is a new streamed table's stream.
func newStream(t *testing.T) streampoll.Stream {
	t.Helper()
	found, err := streampoll.Streams(t.Context(), storetest.Client(t), newTable(t, true))
	if err != nil {
		t.Fatal(err)
	}
	return found[0]
}

// newPoller is a poller of s that logs nowhere: the failures the tests
// provoke are checked, not read.
func newPoller(t *testing.T, s streampoll.Stream, h streampoll.Handler, opts ...streampoll.Option) *streampoll.Poller {
	t.Helper()
	p, err := streampoll.New(streams(t), []streampoll.Stream{s}, h,
		append([]streampoll.Option{streampoll.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs p until the test ends.
func run(t *testing.T, p *streampoll.Poller) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// op is a write and the stream record it makes.
type op struct {
	event string // INSERT, MODIFY, REMOVE
	key   string
}

func put(t *testing.T, table, key string, attrs map[string]dt.AttributeValue) op {
	t.Helper()
	item := map[string]dt.AttributeValue{"k": &dt.AttributeValueMemberS{Value: key}}
	for k, v := range attrs {
		item[k] = v
	}
	if _, err := storetest.Client(t).PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	return op{"INSERT", key}
}

func update(t *testing.T, table, key, set string, v dt.AttributeValue) op {
	t.Helper()
	if _, err := storetest.Client(t).UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: map[string]dt.AttributeValue{"k": &dt.AttributeValueMemberS{Value: key}},
		UpdateExpression:          aws.String("SET #a = :v"),
		ExpressionAttributeNames:  map[string]string{"#a": set},
		ExpressionAttributeValues: map[string]dt.AttributeValue{":v": v},
	}); err != nil {
		t.Fatal(err)
	}
	return op{"MODIFY", key}
}

func remove(t *testing.T, table, key string) op {
	t.Helper()
	if _, err := storetest.Client(t).DeleteItem(t.Context(), &dynamodb.DeleteItemInput{
		TableName: aws.String(table), Key: map[string]dt.AttributeValue{"k": &dt.AttributeValueMemberS{Value: key}},
	}); err != nil {
		t.Fatal(err)
	}
	return op{"REMOVE", key}
}

// putN puts n items, keys prefix0 to prefix{n-1}.
func putN(t *testing.T, table, prefix string, n int) []op {
	var ops []op
	for i := range n {
		ops = append(ops, put(t, table, prefix+strconv.Itoa(i), nil))
	}
	return ops
}

// recorder is a handler that keeps each call, sums the records of a
// window in its state (as a handler batching per window would), and
// answers a call as fail says when fail is set.
type recorder struct {
	mu    sync.Mutex
	calls []call
	// fail answers instead of the recorder when it says so.
	fail  func(n int, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error, bool)
	delay time.Duration
}

type call struct {
	ev   events.DynamoDBTimeWindowEvent
	resp events.DynamoDBTimeWindowEventResponse
	err  error
	at   time.Time
}

func (r *recorder) handle(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := call{ev: ev, at: time.Now()}
	var failed bool
	if r.fail != nil {
		c.resp, c.err, failed = r.fail(len(r.calls), ev)
	}
	if !failed {
		n, _ := strconv.Atoi(ev.State["n"])
		c.resp.State = map[string]string{"n": strconv.Itoa(n + len(ev.Records))}
	}
	r.calls = append(r.calls, c)
	return c.resp, c.err
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// accepted is every record the recorder accepted, in the order it did,
// duplicates included.
func (r *recorder) accepted() []events.DynamoDBEventRecord {
	var out []events.DynamoDBEventRecord
	for _, c := range r.snapshot() {
		if c.err != nil || c.resp.State == nil {
			continue
		}
		n := len(c.ev.Records)
		for _, f := range c.resp.BatchItemFailures {
			n = min(n, slices.IndexFunc(c.ev.Records, func(rec events.DynamoDBEventRecord) bool {
				return rec.Change.SequenceNumber == f.ItemIdentifier
			}))
		}
		out = append(out, c.ev.Records[:max(n, 0)]...)
	}
	return out
}

// once is recs without their repetitions: the first delivery of each.
func once(recs []events.DynamoDBEventRecord) []events.DynamoDBEventRecord {
	seen := map[string]bool{}
	var out []events.DynamoDBEventRecord
	for _, r := range recs {
		if !seen[r.EventID] {
			seen[r.EventID] = true
			out = append(out, r)
		}
	}
	return out
}

// checkRecords checks that recs are the records of ops, in order, each
// once, with rising sequence numbers.
func checkRecords(t *testing.T, recs []events.DynamoDBEventRecord, ops []op) {
	t.Helper()
	got := make([]op, len(recs))
	for i, r := range recs {
		got[i] = op{r.EventName, r.Change.Keys["k"].String()}
		if i > 0 && seq(t, r).Cmp(seq(t, recs[i-1])) <= 0 {
			t.Errorf("record %d: sequence number %s after %s", i, r.Change.SequenceNumber, recs[i-1].Change.SequenceNumber)
		}
	}
	if !slices.Equal(got, ops) {
		t.Errorf("records\n%v, want\n%v", got, ops)
	}
}

func seq(t *testing.T, r events.DynamoDBEventRecord) *big.Int {
	n, ok := new(big.Int).SetString(r.Change.SequenceNumber, 10)
	if !ok {
		t.Fatalf("sequence number %q", r.Change.SequenceNumber)
	}
	return n
}

func TestStreams(t *testing.T) {
	for _, tc := range []struct {
		name     string
		streamed bool
	}{
		{"a table with a stream: its ARN", true},
		{"a table without: no ARN, and no poller of it", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t, tc.streamed)
			found, err := streampoll.Streams(t.Context(), storetest.Client(t), table)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 1 || found[0].Table != table || (found[0].ARN != "") != tc.streamed {
				t.Fatalf("streams %+v", found)
			}
			_, err = streampoll.New(streams(t), found, (&recorder{}).handle)
			if errors.Is(err, streampoll.ErrNoStream) == tc.streamed {
				t.Errorf("New: %v", err)
			}
		})
	}
}

func TestDelivery(t *testing.T) {
	t.Run("every record once, in order, in batches of one shard", func(t *testing.T) {
		s := newStream(t)
		var ops []op
		for i := range 40 {
			key := "k" + strconv.Itoa(i)
			ops = append(ops, put(t, s.Table, key, nil))
			if i%3 == 2 {
				ops = append(ops, update(t, s.Table, key, "v", &dt.AttributeValueMemberN{Value: strconv.Itoa(i)}))
			}
			if i%5 == 4 {
				ops = append(ops, remove(t, s.Table, "k"+strconv.Itoa(i-2)))
			}
		}
		var (
			mu         sync.Mutex
			deliveries []streampoll.Delivery
		)
		rec := &recorder{}
		p := newPoller(t, s, rec.handle, streampoll.WithBatchSize(7), streampoll.WithDeliveries(func(d streampoll.Delivery) {
			mu.Lock()
			defer mu.Unlock()
			deliveries = append(deliveries, d)
		}))
		if err := p.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		checkRecords(t, rec.accepted(), ops)
		shard := ""
		for i, c := range rec.snapshot() {
			p := c.ev.TimeWindowProperties
			if shard == "" {
				shard = p.ShardID
			}
			if p.ShardID == "" || p.ShardID != shard || p.EventSourceARN != s.ARN || len(c.ev.Records) > 7 ||
				p.Window.End.Sub(p.Window.Start.Time) != time.Second || p.State == nil {
				t.Errorf("call %d: %d records, properties %+v", i, len(c.ev.Records), p)
			}
			if len(c.ev.Records) == 0 && !p.IsFinalInvokeForWindow {
				t.Errorf("call %d: no records, and not a window's final invocation", i)
			}
		}
		total := 0
		for _, d := range deliveries {
			total += d.Records
			if d.Newest.IsZero() || d.Lag < 0 || d.Lag != d.HandedAt.Sub(d.Newest) || d.ShardID != shard || d.StreamARN != s.ARN || d.Duplicate {
				t.Errorf("delivery %+v", d)
			}
		}
		if total != len(ops) {
			t.Errorf("deliveries of %d records, want %d", total, len(ops))
		}
	})

	t.Run("every attribute type, in each image", func(t *testing.T) {
		s := newStream(t)
		item := map[string]dt.AttributeValue{
			"s": &dt.AttributeValueMemberS{Value: "text"}, "n": &dt.AttributeValueMemberN{Value: "12.5"},
			"b": &dt.AttributeValueMemberB{Value: []byte{0, 1, 255}}, "t": &dt.AttributeValueMemberBOOL{Value: true},
			"f": &dt.AttributeValueMemberBOOL{Value: false}, "z": &dt.AttributeValueMemberNULL{Value: true},
			"ss": &dt.AttributeValueMemberSS{Value: []string{"a"}}, "ns": &dt.AttributeValueMemberNS{Value: []string{"7"}},
			"bs": &dt.AttributeValueMemberBS{Value: [][]byte{{9}}},
			"l": &dt.AttributeValueMemberL{Value: []dt.AttributeValue{
				&dt.AttributeValueMemberS{Value: "x"}, &dt.AttributeValueMemberN{Value: "1"},
				&dt.AttributeValueMemberM{Value: map[string]dt.AttributeValue{"y": &dt.AttributeValueMemberBOOL{Value: false}}},
			}},
			"m": &dt.AttributeValueMemberM{Value: map[string]dt.AttributeValue{
				"inner": &dt.AttributeValueMemberL{Value: []dt.AttributeValue{&dt.AttributeValueMemberNULL{Value: true}}},
				"deep":  &dt.AttributeValueMemberM{Value: map[string]dt.AttributeValue{"s": &dt.AttributeValueMemberS{Value: "v"}}},
			}},
		}
		put(t, s.Table, "all", item)
		update(t, s.Table, "all", "s", &dt.AttributeValueMemberS{Value: "changed"})
		remove(t, s.Table, "all")
		want := map[string]events.DynamoDBAttributeValue{
			"k": events.NewStringAttribute("all"),
			"s": events.NewStringAttribute("text"), "n": events.NewNumberAttribute("12.5"),
			"b": events.NewBinaryAttribute([]byte{0, 1, 255}), "t": events.NewBooleanAttribute(true),
			"f": events.NewBooleanAttribute(false), "z": events.NewNullAttribute(),
			"ss": events.NewStringSetAttribute([]string{"a"}), "ns": events.NewNumberSetAttribute([]string{"7"}),
			"bs": events.NewBinarySetAttribute([][]byte{{9}}),
			"l": events.NewListAttribute([]events.DynamoDBAttributeValue{
				events.NewStringAttribute("x"), events.NewNumberAttribute("1"),
				events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"y": events.NewBooleanAttribute(false)}),
			}),
			"m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
				"inner": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewNullAttribute()}),
				"deep":  events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"s": events.NewStringAttribute("v")}),
			}),
		}
		changed := make(map[string]events.DynamoDBAttributeValue, len(want))
		for k, v := range want {
			changed[k] = v
		}
		changed["s"] = events.NewStringAttribute("changed")
		rec := &recorder{}
		if err := newPoller(t, s, rec.handle).Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := rec.accepted()
		if len(got) != 3 {
			t.Fatalf("%d records, want 3", len(got))
		}
		for i, tc := range []struct {
			event    string
			old, new map[string]events.DynamoDBAttributeValue
		}{
			{"INSERT", nil, want},
			{"MODIFY", want, changed},
			{"REMOVE", changed, nil},
		} {
			r := got[i]
			if r.EventName != tc.event || !reflect.DeepEqual(r.Change.OldImage, tc.old) || !reflect.DeepEqual(r.Change.NewImage, tc.new) {
				t.Errorf("record %d: %s, old %v, new %v; want %s, %v, %v", i, r.EventName, r.Change.OldImage, r.Change.NewImage, tc.event, tc.old, tc.new)
			}
			if !reflect.DeepEqual(r.Change.Keys, map[string]events.DynamoDBAttributeValue{"k": events.NewStringAttribute("all")}) ||
				r.EventID == "" || r.EventSource != "aws:dynamodb" || r.EventVersion == "" || r.AWSRegion == "" ||
				r.EventSourceArn != s.ARN || r.Change.SizeBytes <= 0 || r.Change.StreamViewType != "NEW_AND_OLD_IMAGES" ||
				r.Change.ApproximateCreationDateTime.IsZero() || time.Since(r.Change.ApproximateCreationDateTime.Time) > 2*time.Minute {
				t.Errorf("record %d: %+v", i, r)
			}
			// The record survives the JSON that carries it to the
			// function on Lambda.
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var back events.DynamoDBEventRecord
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if again, _ := json.Marshal(back); string(again) != string(b) {
				t.Errorf("record %d through JSON:\n%s\n%s", i, again, b)
			}
		}
	})

	t.Run("a failed batch is handed over again, from the first record not accepted", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			// answer is the handler's answer to the first batch, whose
			// third record is the one that fails.
			answer func(ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error)
			// resumeAt is the record the next call starts with.
			resumeAt int
		}{
			{"the third record reported failed", func(ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
				return events.DynamoDBTimeWindowEventResponse{
					TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{State: map[string]string{}},
					BatchItemFailures: []events.DynamoDBBatchItemFailure{
						{ItemIdentifier: ev.Records[3].Change.SequenceNumber}, {ItemIdentifier: ev.Records[2].Change.SequenceNumber},
					},
				}, nil
			}, 2},
			{"the handler failed", func(events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
				return events.DynamoDBTimeWindowEventResponse{}, errors.New("engine away")
			}, 0},
			{"an answer without state", func(events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
				return events.DynamoDBTimeWindowEventResponse{}, nil
			}, 0},
			{"a record reported that is not in the batch", func(events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
				return events.DynamoDBTimeWindowEventResponse{
					TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{State: map[string]string{}},
					BatchItemFailures:                 []events.DynamoDBBatchItemFailure{{ItemIdentifier: "1"}},
				}, nil
			}, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := newStream(t)
				ops := putN(t, s.Table, "k", 10)
				rec := &recorder{fail: func(n int, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error, bool) {
					if n != 0 {
						return events.DynamoDBTimeWindowEventResponse{}, nil, false
					}
					resp, err := tc.answer(ev)
					return resp, err, true
				}}
				if err := newPoller(t, s, rec.handle, streampoll.WithBatchSize(4)).Drain(t.Context()); err != nil {
					t.Fatal(err)
				}
				checkRecords(t, rec.accepted(), ops)
				// A window that ends during the backoff is closed by a
				// call without records, which hands nothing over again.
				calls := slices.DeleteFunc(rec.snapshot(), func(c call) bool { return len(c.ev.Records) == 0 })
				first, next := calls[0], calls[1]
				if !reflect.DeepEqual(next.ev.Records[0], first.ev.Records[tc.resumeAt]) {
					t.Errorf("handed over again from %s, want record %d (%s)", next.ev.Records[0].Change.SequenceNumber, tc.resumeAt, first.ev.Records[tc.resumeAt].Change.SequenceNumber)
				}
				if wait := next.at.Sub(first.at); wait < 40*time.Millisecond {
					t.Errorf("handed over again after %s: no backoff", wait)
				}
			})
		}
	})

	t.Run("faults: duplicates, late and split batches, the same for the same seed", func(t *testing.T) {
		s := newStream(t)
		ops := putN(t, s.Table, "k", 40)
		faults := streampoll.Faults{Seed: 7, Duplicate: 0.5, Late: 0.5, MaxDelay: 20 * time.Millisecond, Split: true}
		// deliver drains the whole stream with the faults seeded with
		// seed, and returns the batches handed over: their first
		// sequence numbers and sizes, duplicates marked.
		deliver := func(seed uint64) []string {
			f := faults
			f.Seed = seed
			rec := &recorder{}
			var dups int
			var mu sync.Mutex
			p := newPoller(t, s, rec.handle, streampoll.WithBatchSize(10), streampoll.WithFaults(f),
				streampoll.WithDeliveries(func(d streampoll.Delivery) {
					mu.Lock()
					defer mu.Unlock()
					if d.Duplicate {
						dups++
					}
				}))
			if err := p.Drain(t.Context()); err != nil {
				t.Fatal(err)
			}
			all := rec.accepted()
			checkRecords(t, once(all), ops)
			if dups == 0 || len(all) == len(ops) {
				t.Errorf("seed %d: %d duplicate batches, %d records for %d: no duplicates", seed, dups, len(all), len(ops))
			}
			var batches []string
			sizes := map[int]bool{}
			overtaken := false
			var newest *big.Int
			for _, c := range rec.snapshot() {
				if len(c.ev.Records) == 0 {
					continue
				}
				first := seq(t, c.ev.Records[0])
				if newest != nil && first.Cmp(newest) < 0 && new(big.Int).Sub(newest, first).Cmp(big.NewInt(int64(len(c.ev.Records)))) >= 0 {
					overtaken = true
				}
				if newest == nil || first.Cmp(newest) > 0 {
					newest = seq(t, c.ev.Records[len(c.ev.Records)-1])
				}
				sizes[len(c.ev.Records)] = true
				batches = append(batches, fmt.Sprintf("%s+%d", c.ev.Records[0].Change.SequenceNumber, len(c.ev.Records)))
			}
			if len(sizes) < 3 {
				t.Errorf("seed %d: batch sizes %v: not split at random", seed, sizes)
			}
			if !overtaken {
				t.Errorf("seed %d: no duplicate came after later records: %v", seed, batches)
			}
			return batches
		}
		a, b, c := deliver(7), deliver(7), deliver(8)
		if !slices.Equal(a, b) {
			t.Errorf("seed 7 twice:\n%v\n%v", a, b)
		}
		if slices.Equal(a, c) {
			t.Errorf("seeds 7 and 8 alike: %v", a)
		}
	})

	t.Run("late batches are held back", func(t *testing.T) {
		s := newStream(t)
		ops := putN(t, s.Table, "k", 8)
		rec := &recorder{}
		p := newPoller(t, s, rec.handle, streampoll.WithBatchSize(1),
			streampoll.WithFaults(streampoll.Faults{Seed: 3, Late: 1, MaxDelay: 100 * time.Millisecond}))
		start := time.Now()
		if err := p.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		checkRecords(t, rec.accepted(), ops)
		// Eight delays of up to 100 ms drawn from seed 3: about 400 ms.
		if took := time.Since(start); took < 150*time.Millisecond {
			t.Errorf("drained in %s: no batch held back", took)
		}
	})

	t.Run("a window's state is carried, and the window closed with a final invocation", func(t *testing.T) {
		s := newStream(t)
		running := &recorder{}
		run(t, newPoller(t, s, running.handle, streampoll.WithInterval(20*time.Millisecond)))
		// Writes across more than two windows of one second.
		var ops []op
		for deadline := time.Now().Add(2500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			ops = append(ops, put(t, s.Table, "k"+strconv.Itoa(len(ops)), nil))
		}
		// Another poller reads the same stream from its start, at once.
		drained := &recorder{}
		if err := newPoller(t, s, drained.handle).Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		// Run closes its last window a moment after the window ends: a
		// second at most, and a pass over the stream, which a loaded engine
		// may make slow. The checks below say what is missing if it never
		// does.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			calls := running.snapshot()
			if len(once(running.accepted())) >= len(ops) && len(calls) > 0 && calls[len(calls)-1].ev.IsFinalInvokeForWindow {
				break
			}
		}
		for _, tc := range []struct {
			name    string
			rec     *recorder
			windows int
		}{
			{"Run, as the writes came", running, 3},
			{"Drain, all at once", drained, 1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				checkRecords(t, tc.rec.accepted(), ops)
				calls := tc.rec.snapshot()
				finals, sum := 0, 0
				var window time.Time
				for i, c := range calls {
					p := c.ev.TimeWindowProperties
					if window.IsZero() {
						window = p.Window.Start.Time
					}
					if !p.Window.Start.Equal(window) {
						t.Errorf("call %d: window %s before %s had its final invocation", i, p.Window.Start, window)
						window = p.Window.Start.Time
					}
					if got := p.State["n"]; (sum == 0 && got != "") || (sum > 0 && got != strconv.Itoa(sum)) {
						t.Errorf("call %d: state %v, want the window's %d records so far", i, p.State, sum)
					}
					sum += len(c.ev.Records)
					if p.IsFinalInvokeForWindow {
						if len(c.ev.Records) > 0 {
							t.Errorf("call %d: a final invocation with records", i)
						}
						finals++
						sum, window = 0, time.Time{}
					}
				}
				if len(calls) == 0 || !calls[len(calls)-1].ev.IsFinalInvokeForWindow {
					t.Errorf("the last window was not closed")
				}
				if finals < tc.windows {
					t.Errorf("%d windows closed, want at least %d", finals, tc.windows)
				}
			})
		}
	})

	t.Run("a shard read while it was empty, after other streams' writes", func(t *testing.T) {
		s, other := newStream(t), newStream(t)
		rec := &recorder{}
		p := newPoller(t, s, rec.handle)
		if err := p.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		// DynamoDB Local's sequence numbers are shared by its streams:
		// the other table's record takes the number the empty shard's
		// iterator stands at.
		put(t, other.Table, "o", nil)
		ops := putN(t, s.Table, "k", 2)
		if err := p.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		checkRecords(t, rec.accepted(), ops)
	})

	t.Run("Run hands over what is written until its context ends", func(t *testing.T) {
		s := newStream(t)
		rec := &recorder{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			newPoller(t, s, rec.handle).Run(ctx)
		}()
		ops := putN(t, s.Table, "k", 5)
		for deadline := time.Now().Add(10 * time.Second); len(rec.accepted()) < len(ops) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
		checkRecords(t, rec.accepted(), ops)
	})

	t.Run("Drain waits for a slow handler, beside Run", func(t *testing.T) {
		s := newStream(t)
		rec := &recorder{delay: 30 * time.Millisecond}
		p := newPoller(t, s, rec.handle, streampoll.WithBatchSize(3))
		run(t, p)
		ops := putN(t, s.Table, "k", 20)
		if err := p.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		checkRecords(t, rec.accepted(), ops)
	})
}
