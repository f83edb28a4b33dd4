package expiry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// The expiry function also commits uploads of large values: the bucket
// sends it an event for every object created under uploads/, and the
// commit (store.CommitUpload) is idempotent, so the event and the client's
// POST {item}?commit may both come, in either order, and the item is
// committed once.

// Committer commits an upload; *store.Store has it.
type Committer interface {
	CommitUpload(ctx context.Context, app, id string, key *uds.Key) (uds.Item, bool, error)
}

// UploadHandler commits the uploads an S3 event names. An upload already
// committed, lapsed or discarded, whose object is not what it declared, or
// that the namespace's policy in effect refuses (its binary rule, its
// owner-write rule, a key space the namespace left, the quota: each
// discarded by the commit), or whose item's expiry passed before it
// arrived (discarded too, as invalid), is done with; any other failure fails the
// invocation, so that Lambda delivers the event again: among them a
// commit while the namespace's access mode changes, which waits as writes
// do.
func UploadHandler(c Committer, names func(events.S3Event) []string, log *slog.Logger, metrics *emf.Writer) func(context.Context, events.S3Event) error {
	return func(ctx context.Context, ev events.S3Event) error {
		start := time.Now()
		ctx, calls := store.WithCallStats(ctx)
		committed, done := 0, 0
		var failure error
		for _, name := range names(ev) {
			app, id, ok := uds.ParseObjectName(name)
			if !ok {
				done++
				continue
			}
			_, _, err := c.CommitUpload(ctx, app, id, nil)
			switch {
			case err == nil:
				committed++
			case errors.Is(err, uds.ErrNotFound), errors.Is(err, uds.ErrUploadMismatch), errors.Is(err, uds.ErrForbidden), errors.Is(err, uds.ErrQuotaExceeded),
				errors.Is(err, uds.ErrSchema), errors.Is(err, uds.ErrInvalid):
				done++
			default:
				failure = errors.Join(failure, fmt.Errorf("commit %s: %w", name, err))
			}
		}
		c := calls.Snapshot()
		attrs := []slog.Attr{
			slog.Int("records", len(ev.Records)), slog.Int("committed", committed), slog.Int("done", done),
			slog.Float64("latencyMs", emf.DurationMs(time.Since(start))),
			slog.Int("dynamodbCalls", c.Calls), slog.Float64("writeUnits", c.WriteUnits),
		}
		level := slog.LevelInfo
		if failure != nil {
			level = slog.LevelError
			attrs = append(attrs, slog.String("cause", failure.Error()))
		}
		log.LogAttrs(ctx, level, "upload commits", attrs...)
		failed := 0.0
		if failure != nil {
			failed = 1
		}
		_ = metrics.Write(uploadLayout, []emf.Dimension{{Name: "function", Value: "expiry"}}, []float64{failed})
		return failure
	}
}

// uploadLayout is the EMF record of one bucket event: its failure, which
// an alarm reads; what it committed is in its log line.
var uploadLayout = emf.NewLayout(emf.Directive{DimensionSets: [][]string{{"function"}}, Metrics: []emf.Metric{
	{Name: "UploadCommitFailures", Unit: emf.Count},
}})

// Dispatch serves the function's two kinds of event, told apart by their
// records' source: the tables' streams and the bucket's notifications.
func Dispatch(streams func(context.Context, events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error), uploads func(context.Context, events.S3Event) error) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var probe struct {
			Records []struct {
				EventSource string `json:"eventSource"`
			} `json:"Records"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, fmt.Errorf("an event that is not JSON: %w", err)
		}
		if len(probe.Records) > 0 && probe.Records[0].EventSource == "aws:s3" {
			var ev events.S3Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				return nil, fmt.Errorf("a bucket event: %w", err)
			}
			return nil, uploads(ctx, ev)
		}
		var ev events.DynamoDBTimeWindowEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("a stream event: %w", err)
		}
		return streams(ctx, ev)
	}
}
