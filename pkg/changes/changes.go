// Package changes is the function that keeps the changes feed: it reads
// the data and list tables' streams, a second reader of each shard beside
// the expiry function, and writes a row of the feed per change
// (store.LogChanges). Its event source mapping has no filter: every
// change of an item is in the feed. A batch it cannot write fails whole
// and Lambda hands it over again; the rows written the first time stay,
// and a read of the feed shows their items once more, which a replica
// takes as it takes any change.
package changes

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/expiry"
	"github.com/udsproject/uds/pkg/lambdamain"
	"github.com/udsproject/uds/pkg/store"
)

// Logger writes the feed's rows of a batch of stream records;
// *store.Store has it.
type Logger interface {
	LogChanges(ctx context.Context, changes []store.StreamChange) (int, error)
}

// Handler writes the feed's rows of one shard's batch. It takes the event
// of a mapping with or without a tumbling window (the local poller sends
// windows, the deployed mapping has none) and answers an empty state
// either way. A batch that fails is reported failed from its first
// record, so that Lambda sends it again whole. Each batch leaves one log
// line: records, rows written, the newest record's age when written
// (lagMs, DynamoDB's stream times are to the second), and the DynamoDB
// calls taken; a batch that wrote nothing is logged at DEBUG.
func Handler(l Logger, log *slog.Logger) func(context.Context, events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
	return func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		resp := events.DynamoDBTimeWindowEventResponse{}
		resp.State = map[string]string{}
		if len(ev.Records) == 0 {
			return resp, nil
		}
		start := time.Now()
		ctx, calls := store.WithCallStats(ctx)
		rows, err := l.LogChanges(ctx, expiry.StreamChanges(ev.Records))
		newest := ev.Records[len(ev.Records)-1].Change.ApproximateCreationDateTime.Time
		c := calls.Snapshot()
		attrs := []slog.Attr{
			slog.Int("records", len(ev.Records)), slog.Int("rows", rows),
			slog.Float64("lagMs", emf.DurationMs(time.Since(newest))),
			slog.Float64("latencyMs", emf.DurationMs(time.Since(start))),
			slog.Int("dynamodbCalls", c.Calls), slog.Int("dynamodbRetries", c.Retries), slog.Int("dynamodbThrottles", c.Throttles),
			slog.Float64("writeUnits", c.WriteUnits),
		}
		level := slog.LevelInfo
		switch {
		case err != nil:
			level = slog.LevelError
			rec := ev.Records[0]
			attrs = append(attrs, slog.String("cause", fmt.Errorf("batch from record %s: %w", rec.EventID, err).Error()))
			resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: rec.Change.SequenceNumber}}
		case rows == 0:
			level = slog.LevelDebug
		}
		log.LogAttrs(ctx, level, "changes batch", attrs...)
		return resp, nil
	}
}

// Landed builds, at init, what takes the rows each batch lands as soon
// as they are written (store.WithLanded), or nil for nothing: the
// deployed realtime endpoint's publisher (wsgateway.LandedHook), passed in
// by the function's main so that this package does not link it.
type Landed func(ctx context.Context, cfg config.Config, logger *slog.Logger) (func([]store.FeedRow), error)

// Main is the changes function's whole main (see lambdamain.Start): the
// DynamoDB client and landed's function are built at init, then stream
// batches are served.
func Main(landed Landed) {
	lambdamain.Start(func(ctx context.Context, cfg config.Config, logger *slog.Logger) (any, error) {
		client, err := store.NewClient(ctx, cfg.Endpoint)
		if err != nil {
			return nil, err
		}
		hook, err := landed(ctx, cfg, logger)
		if err != nil {
			return nil, err
		}
		var opts []store.Option
		if hook != nil {
			opts = append(opts, store.WithLanded(hook))
		}
		return Handler(store.New(client, cfg.Tables, opts...), logger), nil
	})
}
