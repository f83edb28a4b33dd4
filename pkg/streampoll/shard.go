package streampoll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// stream is one table's stream and the shards found in it so far.
type stream struct {
	Stream
	// index is the stream's place among the poller's, for the faults'
	// seed.
	index  int
	shards map[string]*shard
	// order is the shards in the order they were found: DescribeStream
	// lists parents before their children.
	order []*shard
	// childless is the shards read to their end whose children are not
	// listed yet.
	childless map[string]bool
}

// shard is one shard's checkpoint and window. Only the goroutine a pass
// reads the shard in touches it; its stream is the pass's.
type shard struct {
	stream     *stream
	id, parent string
	// iterator is where the next read starts; nil when a new one is to
	// be asked for (at the start, or after an iterator expired or a
	// delivery was cut short).
	iterator *string
	// checkpoint is the sequence number of the last record the handler
	// accepted; empty before the first.
	checkpoint string
	// ended: read to its end; a closed shard's children may be read.
	ended bool
	// window is the start of the window the handler was last called in
	// with records, and state its answer; windowOpen says whether that
	// window still awaits its final invocation.
	window     time.Time
	windowOpen bool
	state      map[string]string
	// rng draws the faults' decisions (nil without faults), and
	// duplicates holds the batches to be delivered a second time.
	rng        *rand.Rand
	duplicates []duplicate
}

// duplicate is a batch to deliver again once after more batches of its
// shard have been.
type duplicate struct {
	records []events.DynamoDBEventRecord
	after   int
}

// add records a shard found in the stream, if it is new.
func (st *stream) add(id, parent string, f Faults) {
	if _, ok := st.shards[id]; ok {
		return
	}
	sh := &shard{stream: st, id: id, parent: parent}
	delete(st.childless, parent)
	if f != (Faults{}) {
		sh.rng = rand.New(rand.NewPCG(f.Seed, uint64(st.index)<<32|uint64(len(st.order))))
	}
	st.shards[id] = sh
	st.order = append(st.order, sh)
}

// ready is the shards to read now: not read to their end, and whose parent
// is read to its end, or gone from the stream (trimmed after 24 hours), as
// Lambda reads a parent shard's records before its children's.
func (st *stream) ready() []*shard {
	var out []*shard
	for _, sh := range st.order {
		if sh.ended {
			continue
		}
		if parent, ok := st.shards[sh.parent]; ok && !parent.ended {
			continue
		}
		out = append(out, sh)
	}
	return out
}

// readResult is what reading a shard in a pass did.
type readResult struct {
	delivered int
	ended     bool
	err       error
}

// read hands over the shard's records from its checkpoint up to where they
// end for now, or to the shard's end, then delivers the duplicates still
// held and closes the window when it is over (or drain asks it to be).
func (p *Poller) read(ctx context.Context, sh *shard, drain bool) readResult {
	var r readResult
	for {
		fresh := sh.iterator == nil
		if fresh {
			if r.err = p.position(ctx, sh); r.err != nil {
				return r
			}
		}
		out, err := p.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{
			ShardIterator: sh.iterator, Limit: aws.Int32(int32(min(p.opts.batchSize, 1000))),
		})
		var (
			expired *types.ExpiredIteratorException
			trimmed *types.TrimmedDataAccessException
		)
		if !fresh && (errors.As(err, &expired) || errors.As(err, &trimmed)) {
			// An iterator lasts 15 minutes, which a handler failing
			// that long outlives. And DynamoDB Local refuses, as
			// trimmed, an iterator taken while its shard was empty
			// once the shard's first record came after another
			// stream's (its sequence numbers are shared): a new
			// iterator at the checkpoint reads on.
			sh.iterator = nil
			continue
		}
		if err != nil {
			r.err = fmt.Errorf("shard %s: get records: %w", sh.id, err)
			return r
		}
		recs := make([]events.DynamoDBEventRecord, len(out.Records))
		for i, rec := range out.Records {
			if recs[i], err = record(rec, sh.stream.ARN); err != nil {
				r.err = fmt.Errorf("shard %s: %w", sh.id, err)
				return r
			}
		}
		for len(recs) > 0 {
			n := p.batchLen(sh, len(recs))
			if r.err = p.deliver(ctx, sh, recs[:n], false); r.err != nil {
				// The rest of what was read is read again, from the
				// checkpoint.
				sh.iterator = nil
				return r
			}
			r.delivered += n
			recs = recs[n:]
		}
		sh.iterator = out.NextShardIterator
		if sh.iterator == nil {
			sh.ended, r.ended = true, true
		}
		if len(out.Records) == 0 || sh.ended {
			break
		}
	}
	if r.err = p.flushDuplicates(ctx, sh); r.err != nil {
		return r
	}
	if sh.windowOpen && (drain || sh.ended || !time.Now().Before(sh.window.Add(p.opts.window))) {
		r.err = p.closeWindow(ctx, sh)
	}
	return r
}

// position asks for an iterator at the shard's checkpoint: just after the
// last record accepted, or at the shard's oldest record.
func (p *Poller) position(ctx context.Context, sh *shard) error {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(sh.stream.ARN), ShardId: aws.String(sh.id),
		ShardIteratorType: types.ShardIteratorTypeTrimHorizon}
	if sh.checkpoint != "" {
		in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(sh.checkpoint)
	}
	out, err := p.client.GetShardIterator(ctx, in)
	if err != nil {
		return fmt.Errorf("shard %s: get shard iterator: %w", sh.id, err)
	}
	sh.iterator = out.ShardIterator
	return nil
}

// batchLen is how many of the n records read next go in one batch: the
// batch size, or a random size up to it with Faults.Split.
func (p *Poller) batchLen(sh *shard, n int) int {
	size := p.opts.batchSize
	if p.opts.faults.Split {
		size = 1 + sh.rng.IntN(size)
	}
	return min(size, n)
}

// deliver hands recs to the handler until it accepts all of them: after a
// failure, from the first record not accepted, after a backoff. A
// duplicate (Faults.Duplicate) leaves the checkpoint alone. It fails only
// when ctx ends.
func (p *Poller) deliver(ctx context.Context, sh *shard, recs []events.DynamoDBEventRecord, dup bool) error {
	if !dup {
		if err := p.deliverDuplicatesDue(ctx, sh); err != nil {
			return err
		}
		if f := p.opts.faults; f.Late > 0 && sh.rng.Float64() < f.Late {
			if err := sleep(ctx, time.Duration(sh.rng.Int64N(int64(f.MaxDelay)+1))); err != nil {
				return err
			}
		}
	}
	all := recs
	for attempt := 0; len(recs) > 0; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return err
			}
		}
		now := time.Now()
		window := now.Truncate(p.opts.window)
		if sh.windowOpen && !sh.window.Equal(window) {
			if err := p.closeWindow(ctx, sh); err != nil {
				return err
			}
		}
		resp, err := p.handle(ctx, p.event(sh, recs, window, false))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		accepted, failure := accepted(recs, resp, err)
		if failure != nil {
			p.opts.logger.Warn("stream batch failed; handing it over again", slog.String("shard", sh.id),
				slog.Int("records", len(recs)), slog.Int("accepted", accepted), slog.String("cause", failure.Error()))
		}
		if err == nil && resp.State != nil {
			sh.window, sh.windowOpen, sh.state = window, true, resp.State
		}
		if accepted == 0 {
			continue
		}
		if !dup {
			sh.checkpoint = recs[accepted-1].Change.SequenceNumber
		}
		if p.opts.deliveries != nil {
			newest := recs[accepted-1].Change.ApproximateCreationDateTime.Time
			p.opts.deliveries(Delivery{StreamARN: sh.stream.ARN, ShardID: sh.id, Records: accepted,
				Newest: newest, HandedAt: now, Lag: now.Sub(newest), Duplicate: dup})
		}
		recs = recs[accepted:]
	}
	if f := p.opts.faults; !dup && f.Duplicate > 0 && sh.rng.Float64() < f.Duplicate {
		sh.duplicates = append(sh.duplicates, duplicate{records: all, after: sh.rng.IntN(3)})
	}
	return nil
}

// accepted is how many of recs the handler's answer accepted, and why not
// all of them: an error or an answer without state (as Lambda counts it)
// accepts none; reported failures accept the records before the first
// failed one, or none when one names a record not in the batch.
func accepted(recs []events.DynamoDBEventRecord, resp events.DynamoDBTimeWindowEventResponse, err error) (int, error) {
	switch {
	case err != nil:
		return 0, err
	case resp.State == nil:
		return 0, errors.New("the answer has no state, which Lambda counts as a failed invocation")
	case len(resp.BatchItemFailures) == 0:
		return len(recs), nil
	}
	first := len(recs)
	for _, f := range resp.BatchItemFailures {
		i := indexOf(recs, f.ItemIdentifier)
		if i < 0 {
			return 0, fmt.Errorf("reported failed record %q is not in the batch", f.ItemIdentifier)
		}
		first = min(first, i)
	}
	return first, fmt.Errorf("reported record %s failed", recs[first].Change.SequenceNumber)
}

// indexOf is the place in recs of the record with sequence number seq, or
// -1.
func indexOf(recs []events.DynamoDBEventRecord, seq string) int {
	for i, r := range recs {
		if r.Change.SequenceNumber == seq {
			return i
		}
	}
	return -1
}

// deliverDuplicatesDue delivers the held duplicates whose turn has come
// and counts down the others, before a new batch of the shard.
func (p *Poller) deliverDuplicatesDue(ctx context.Context, sh *shard) error {
	var later []duplicate
	for _, d := range sh.duplicates {
		if d.after > 0 {
			d.after--
			later = append(later, d)
			continue
		}
		if err := p.deliver(ctx, sh, d.records, true); err != nil {
			return err
		}
	}
	sh.duplicates = later
	return nil
}

// flushDuplicates delivers every duplicate still held, when the shard has
// no more records for now.
func (p *Poller) flushDuplicates(ctx context.Context, sh *shard) error {
	for len(sh.duplicates) > 0 {
		if err := p.deliver(ctx, sh, sh.duplicates[0].records, true); err != nil {
			return err
		}
		sh.duplicates = sh.duplicates[1:]
	}
	return nil
}

// closeWindow makes the final invocation of the shard's open window, with
// no records and the window's state, until the handler accepts it, as
// Lambda holds the shard until it does.
func (p *Poller) closeWindow(ctx context.Context, sh *shard) error {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return err
			}
		}
		resp, err := p.handle(ctx, p.event(sh, nil, sh.window, true))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, failure := accepted(nil, resp, err); failure != nil {
			p.opts.logger.Warn("a window's final invocation failed; making it again", slog.String("shard", sh.id),
				slog.String("cause", failure.Error()))
			continue
		}
		sh.windowOpen, sh.state = false, nil
		return nil
	}
}

// event is the tumbling-window event of recs in the window starting at
// start, with the state of the shard's window when it is that one.
func (p *Poller) event(sh *shard, recs []events.DynamoDBEventRecord, start time.Time, final bool) events.DynamoDBTimeWindowEvent {
	state := map[string]string{}
	if sh.windowOpen && sh.window.Equal(start) {
		state = maps.Clone(sh.state)
	}
	return events.DynamoDBTimeWindowEvent{
		DynamoDBEvent: events.DynamoDBEvent{Records: recs},
		TimeWindowProperties: events.TimeWindowProperties{
			Window: events.Window{Start: events.RFC3339EpochTime{Time: start}, End: events.RFC3339EpochTime{Time: start.Add(p.opts.window)}},
			State:  state, ShardID: sh.id, EventSourceARN: sh.stream.ARN, IsFinalInvokeForWindow: final,
		},
	}
}

// backoff is the wait before the attempt'th delivery of a batch: 50 ms,
// doubling up to 2 s.
func backoff(attempt int) time.Duration {
	return min(50*time.Millisecond<<min(attempt-1, 6), 2*time.Second)
}
