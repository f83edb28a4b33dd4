// Package streampoll stands in, locally and in the tests, for Lambda's
// event source mapping of the tables' DynamoDB streams: it reads every
// shard of each stream, parents before children, and hands the records of
// one shard at a time, in order, to a handler, as Lambda hands them to the
// expiry function. The events are Lambda's tumbling-window events
// (events.DynamoDBTimeWindowEvent): each carries its shard's id, its
// stream's ARN, its window and the state the handler answered last in that
// window; at the end of a window the handler is called once more with no
// records and IsFinalInvokeForWindow set. Windows are aligned to their
// length, and a batch belongs to the window of the moment it is handed
// over. A batch the handler fails, or reports a failed record of, is
// handed over again from the first record not accepted after a short
// backoff, however long that takes: a record is never skipped, and its
// shard waits meanwhile. Every record is handed over: the mappings'
// filters are not applied, so the handler skips what they would.
//
// Checkpoints are kept in memory only: a poller starts each shard at
// TRIM_HORIZON, so a restarted local server hands over again every record
// the stream still holds. That is correct because the handler is
// idempotent, as it has to be on Lambda, which delivers records at least
// once; and it is what a restart ought to exercise.
//
// Run polls until its context ends; Drain reads every shard up to its end
// once and returns when all of it has been handed over and accepted, which
// is how a test waits for the stream to settle. For the randomised
// workload, Faults makes the poller deliver batches twice, late, or split
// at random sizes.
package streampoll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/udsproject/uds/internal/awsconf"
)

// Handler is the stream function's handler as Lambda calls it with a
// tumbling window configured on the mapping. Its answer must carry a
// State map, empty or not: Lambda counts an answer without one as a
// failed invocation, and so does the poller.
type Handler func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error)

// TableDescriber is the part of the DynamoDB API that finds a table's
// stream.
type TableDescriber interface {
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// StreamReader is the part of the DynamoDB Streams API the poller reads
// with; *dynamodbstreams.Client has it.
type StreamReader interface {
	DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// NewClient is a DynamoDB Streams client of the engine at endpoint (the
// default AWS endpoint when empty), configured as the store's DynamoDB
// client is (awsconf).
func NewClient(ctx context.Context, endpoint string, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.Client, error) {
	cfg, err := awsconf.Load(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	return dynamodbstreams.NewFromConfig(cfg, append([]func(*dynamodbstreams.Options){func(o *dynamodbstreams.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}}, optFns...)...), nil
}

// Stream is a table's current stream; ARN is empty when the table has no
// stream enabled.
type Stream struct {
	Table, ARN string
}

// ErrNoStream is the error of a table without a stream enabled.
var ErrNoStream = errors.New("no stream enabled")

// Streams finds the current stream of each table (DescribeTable's
// LatestStreamArn), in the order given. A table without a stream enabled
// is not an error here, only an empty ARN: the caller decides whether it
// can do without it.
func Streams(ctx context.Context, db TableDescriber, tables ...string) ([]Stream, error) {
	out := make([]Stream, 0, len(tables))
	for _, name := range tables {
		d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return nil, fmt.Errorf("describe table %s: %w", name, err)
		}
		s := Stream{Table: name}
		if spec := d.Table.StreamSpecification; spec != nil && aws.ToBool(spec.StreamEnabled) {
			s.ARN = aws.ToString(d.Table.LatestStreamArn)
		}
		out = append(out, s)
	}
	return out, nil
}

// Delivery is a batch the handler accepted (all of it, or the records
// before the first it reported failed), for whoever measures the stream:
// Lag is the age of the batch's newest record when it was handed over,
// from its ApproximateCreationDateTime. Real DynamoDB rounds that time
// down to the second and DynamoDB Local to the minute, so locally Lag is
// good to a minute only; a benchmark that wants finer figures times its
// writes itself and wraps the handler.
type Delivery struct {
	StreamARN, ShardID string
	Records            int
	Newest, HandedAt   time.Time
	Lag                time.Duration
	// Duplicate is a batch delivered a second time by Faults.Duplicate.
	Duplicate bool
}

// Faults are what the randomised workload injects into delivery, beyond
// Lambda's ordinary at-least-once. The decisions are drawn from Seed,
// per shard (in the order the shards are found), so a run with the same
// seed and the same reads of the stream makes the same ones.
type Faults struct {
	Seed uint64
	// Duplicate is the probability that an accepted batch is delivered a
	// second time, after zero to two later batches of its shard: a
	// duplicate may arrive after records that followed it, as Lambda
	// says a record processed more than once may.
	Duplicate float64
	// Late is the probability that a batch is held back, for a random
	// time up to MaxDelay, before it is handed over; its shard waits
	// meanwhile and the other shards go on.
	Late     float64
	MaxDelay time.Duration
	// Split cuts what each read returned into batches of random sizes,
	// from one record up to the batch size.
	Split bool
}

// Option configures a Poller.
type Option func(*options)

type options struct {
	batchSize  int
	interval   time.Duration
	window     time.Duration
	logger     *slog.Logger
	deliveries func(Delivery)
	faults     Faults
}

// WithBatchSize sets the most records handed over at once (default 100,
// the expiry mapping's BatchSize).
func WithBatchSize(n int) Option { return func(o *options) { o.batchSize = n } }

// WithInterval sets how long Run waits after a pass that found nothing
// new (default 200 ms; Lambda polls a shard four times a second).
func WithInterval(d time.Duration) Option { return func(o *options) { o.interval = d } }

// WithWindow sets the tumbling window (default 1 s, the expiry mapping's).
func WithWindow(d time.Duration) Option { return func(o *options) { o.window = d } }

// WithLogger sets where failed batches and failed reads are logged
// (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithDeliveries calls f with every batch the handler accepted. It is
// called from the shards' goroutines, concurrently for different shards.
func WithDeliveries(f func(Delivery)) Option { return func(o *options) { o.deliveries = f } }

// WithFaults injects f's faults into delivery.
func WithFaults(f Faults) Option { return func(o *options) { o.faults = f } }

// Poller reads tables' streams and hands their records to a handler. Run
// and Drain may be called together: one pass over the streams runs at a
// time. The handler is called concurrently for different shards, one
// batch at a time per shard, as Lambda invokes the function.
type Poller struct {
	client  StreamReader
	handle  Handler
	opts    options
	streams []*stream

	// mu makes Run's and Drain's passes take turns; a pass owns the
	// shards' checkpoints, and discovered, while it runs.
	mu sync.Mutex
	// discovered: the streams' shards have been listed once.
	discovered bool
}

// New is a poller of the given streams, each of which must have an ARN;
// reading starts with the first pass.
func New(client StreamReader, streams []Stream, handle Handler, opts ...Option) (*Poller, error) {
	p := &Poller{client: client, handle: handle, opts: options{
		batchSize: 100, interval: 200 * time.Millisecond, window: time.Second, logger: slog.Default(),
	}}
	for _, o := range opts {
		o(&p.opts)
	}
	if p.opts.batchSize < 1 || p.opts.window <= 0 {
		return nil, fmt.Errorf("streampoll: batch size %d and window %s must be positive", p.opts.batchSize, p.opts.window)
	}
	var missing []string
	for i, s := range streams {
		if s.ARN == "" {
			missing = append(missing, s.Table)
			continue
		}
		p.streams = append(p.streams, &stream{Stream: s, index: i, shards: map[string]*shard{}, childless: map[string]bool{}})
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("streampoll: table %s: %w", strings.Join(missing, ", "), ErrNoStream)
	}
	return p, nil
}

// Run polls the streams until ctx ends: a pass over every shard, at once
// again when it handed records over, after the interval when it did not.
// A pass that fails (the engine away, a record it cannot convert) is
// logged and tried again after a wait that doubles up to maxReadWait.
func (p *Poller) Run(ctx context.Context) {
	wait := p.opts.interval
	for {
		n, err := p.pass(ctx, false)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			p.opts.logger.Error("reading the tables' streams failed", slog.String("cause", err.Error()))
			wait = min(2*wait, maxReadWait)
		case n > 0:
			wait = 0
		default:
			wait = p.opts.interval
		}
		if sleep(ctx, wait) != nil {
			return
		}
	}
}

// maxReadWait bounds how long Run waits before reading again after
// failed reads.
const maxReadWait = 5 * time.Second

// Drain reads every shard up to its current end once and returns when
// every record written before the call has been handed over and accepted,
// and each shard's open window has had its final invocation (so a handler
// that sums in the window's state has written the sum). It does not stop
// while writes keep arriving faster than it hands them over.
func (p *Poller) Drain(ctx context.Context) error {
	_, err := p.pass(ctx, true)
	return err
}

// pass reads, in rounds, every shard not yet read to its end whose parent
// has been; the shards of a round are
// read concurrently, each up to where its records end for now. A shard
// that ends lets its children be read in the next round. It returns how
// many records were handed over. drain closes every open window.
func (p *Poller) pass(ctx context.Context, drain bool) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	total := 0
	for {
		// A stream gains shards only when one ends (DynamoDB closes a
		// shard and opens its children), so the shards are listed again
		// only while a shard that ended has no child listed yet.
		if !p.discovered || p.awaitingChildren() {
			if err := p.discover(ctx); err != nil {
				return total, err
			}
			p.discovered = true
		}
		var ready []*shard
		for _, st := range p.streams {
			ready = append(ready, st.ready()...)
		}
		if len(ready) == 0 {
			return total, nil
		}
		results := make([]readResult, len(ready))
		var wg sync.WaitGroup
		for i, sh := range ready {
			wg.Go(func() { results[i] = p.read(ctx, sh, drain) })
		}
		wg.Wait()
		ended := false
		var errs []error
		for i, r := range results {
			total += r.delivered
			if r.ended {
				ended = true
				sh := ready[i]
				sh.stream.childless[sh.id] = true
			}
			errs = append(errs, r.err)
		}
		if err := errors.Join(errs...); err != nil {
			return total, err
		}
		if !ended {
			return total, nil
		}
	}
}

// awaitingChildren reports whether a shard has ended whose children have
// not been listed yet.
func (p *Poller) awaitingChildren() bool {
	for _, st := range p.streams {
		if len(st.childless) > 0 {
			return true
		}
	}
	return false
}

// discover lists each stream's shards and adds those not known yet.
func (p *Poller) discover(ctx context.Context) error {
	for _, st := range p.streams {
		in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(st.ARN)}
		for {
			out, err := p.client.DescribeStream(ctx, in)
			if err != nil {
				return fmt.Errorf("describe stream of %s: %w", st.Table, err)
			}
			for _, s := range out.StreamDescription.Shards {
				st.add(aws.ToString(s.ShardId), aws.ToString(s.ParentShardId), p.opts.faults)
			}
			if out.StreamDescription.LastEvaluatedShardId == nil {
				break
			}
			in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
		}
	}
	return nil
}

// sleep waits d or until ctx ends, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
