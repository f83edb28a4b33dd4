// Package expiry is the fourth function: it reads the data tables'
// DynamoDB streams. It releases the usage of every item DynamoDB's TTL
// deleted, once per item however often a record is delivered, and counts
// every change of an item written in streamed quota mode into its owner's
// usage, once per change. Items UDS removes itself (a read or write
// meeting an expired item) are released by the request that removed them;
// their records come from UDS, not from DynamoDB, and are skipped here
// unless the stream counts the item (the event source mapping's filter
// keeps the rest from invoking the function at all).
package expiry

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/lambdamain"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
)

// TTLPrincipal is the stream record identity of DynamoDB's TTL deletions.
const TTLPrincipal = "dynamodb.amazonaws.com"

// Accounter releases the usage of an item DynamoDB's TTL deleted, given its
// old image, and counts the changes of items written in streamed mode;
// *store.Store has it.
type Accounter interface {
	ReleaseRemoved(ctx context.Context, old map[string]types.AttributeValue, removedAt time.Time) (bool, error)
	CountStreamed(ctx context.Context, shard string, changes []store.StreamChange) (int, error)
}

// Handler processes a batch of one shard's stream records in order. The
// event source mapping has a tumbling window so that each batch names its
// shard, which streamed counting keys its marks by; the window's state is
// not used (each batch is counted as it comes) and goes back empty. It
// reports the first record it could not count or release as the batch's
// failure, so Lambda retries from there (records of one shard stay in
// order; what came before is counted once however often it is delivered
// again). Each batch leaves one log line and one EMF record: records,
// streamed changes counted, releases and failures, and the DynamoDB calls
// they took.
func Handler(r Accounter, log *slog.Logger, metrics *emf.Writer) func(context.Context, events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
	return func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		resp := events.DynamoDBTimeWindowEventResponse{}
		resp.State = map[string]string{}
		if len(ev.Records) == 0 {
			// A window's final invocation: the handler keeps no state, so
			// there is nothing to act on.
			return resp, nil
		}
		start := time.Now()
		ctx, calls := store.WithCallStats(ctx)
		changes := StreamChanges(ev.Records)
		done, failure := r.CountStreamed(ctx, ev.ShardID, changes)
		// counted is the records of items the stream counts (written in
		// streamed mode), released the TTL's deletions of other items.
		released, counted := 0, 0
		for i, rec := range ev.Records[:done] {
			_, before := rec.Change.OldImage[schema.AttrStreamCounted]
			if _, after := rec.Change.NewImage[schema.AttrStreamCounted]; before || after {
				counted++
			}
			if !IsTTLRemoval(rec) {
				continue
			}
			ok, err := r.ReleaseRemoved(ctx, changes[i].Old, rec.Change.ApproximateCreationDateTime.Time)
			if err != nil {
				done, failure = i, err
				break
			}
			if ok {
				released++
			}
		}
		if done < len(ev.Records) {
			rec := ev.Records[done]
			failure = fmt.Errorf("record %s: %w", rec.EventID, failure)
			resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: rec.Change.SequenceNumber}}
		}
		c := calls.Snapshot()
		attrs := []slog.Attr{
			slog.Int("records", len(ev.Records)), slog.Int("released", released), slog.Int("counted", counted),
			slog.Int("failed", len(resp.BatchItemFailures)), slog.Float64("latencyMs", emf.DurationMs(time.Since(start))),
			slog.Int("dynamodbCalls", c.Calls), slog.Int("dynamodbRetries", c.Retries), slog.Int("dynamodbThrottles", c.Throttles),
			slog.Float64("writeUnits", c.WriteUnits),
		}
		// A batch that released and counted nothing (the stream's
		// records of items in the other quota modes, which the local
		// server hands over unfiltered: one per write) is logged at
		// DEBUG, so that a log at INFO shows work done, not every write
		// twice. Its EMF record is written all the same.
		level := slog.LevelInfo
		switch {
		case failure != nil:
			level = slog.LevelError
			attrs = append(attrs, slog.String("cause", failure.Error()))
		case released == 0 && counted == 0:
			level = slog.LevelDebug
		}
		log.LogAttrs(ctx, level, "expiry batch", attrs...)
		_ = metrics.Write(batchLayout, []emf.Dimension{{Name: "function", Value: "expiry"}}, []float64{
			float64(released), float64(len(resp.BatchItemFailures)), float64(c.Throttles),
		})
		return resp, nil
	}
}

// batchLayout is the EMF record of one stream batch, per function: what
// the dashboard graphs and the alarms read, each series a custom metric
// billed by the month. The batch's other counts (records, calls, retries,
// write units) are in its log line.
var batchLayout = emf.NewLayout(emf.Directive{DimensionSets: [][]string{{"function"}}, Metrics: []emf.Metric{
	{Name: "Releases", Unit: emf.Count}, {Name: "ReleaseFailures", Unit: emf.Count}, {Name: "DynamoDBThrottles", Unit: emf.Count},
}})

// IsTTLRemoval reports whether a record is DynamoDB's TTL deleting an item.
func IsTTLRemoval(rec events.DynamoDBEventRecord) bool {
	return rec.EventName == "REMOVE" && rec.UserIdentity != nil &&
		rec.UserIdentity.Type == "Service" && rec.UserIdentity.PrincipalID == TTLPrincipal
}

// StreamChanges converts stream records to the store's changes, in order.
func StreamChanges(records []events.DynamoDBEventRecord) []store.StreamChange {
	changes := make([]store.StreamChange, len(records))
	for i, rec := range records {
		changes[i] = store.StreamChange{
			Sequence: rec.Change.SequenceNumber, At: rec.Change.ApproximateCreationDateTime.Time,
			Old: image(rec.Change.OldImage), New: image(rec.Change.NewImage),
		}
	}
	return changes
}

// image converts a stream image to the SDK's attribute values.
func image(m map[string]events.DynamoDBAttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = value(v)
	}
	return out
}

func value(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}
	case events.DataTypeList:
		l := v.List()
		out := make([]types.AttributeValue, len(l))
		for i, e := range l {
			out[i] = value(e)
		}
		return &types.AttributeValueMemberL{Value: out}
	case events.DataTypeMap:
		return &types.AttributeValueMemberM{Value: image(v.Map())}
	}
	return &types.AttributeValueMemberNULL{Value: true}
}

// Main is the expiry function's whole main (see lambdamain.Start): the
// DynamoDB and S3 clients are built at init, then stream batches and the
// bucket's upload events are served.
func Main() {
	lambdamain.Start(func(ctx context.Context, cfg config.Config, logger *slog.Logger) (any, error) {
		client, err := store.NewClient(ctx, cfg.Endpoint)
		if err != nil {
			return nil, err
		}
		bucket, err := blob.FromConfig(ctx, cfg.Bucket, cfg.S3Endpoint)
		if err != nil {
			return nil, err
		}
		var opts []store.Option
		if bucket != nil {
			opts = append(opts, store.WithObjects(blob.Objects{Bucket: bucket}))
		}
		st := store.New(client, cfg.Tables, opts...)
		metrics := emf.NewWriter(os.Stdout)
		created := func(ev events.S3Event) []string { return blob.CreatedUploads(ev, cfg.Bucket) }
		return Dispatch(Handler(st, logger, metrics), UploadHandler(st, created, logger, metrics)), nil
	})
}
