package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

const (
	// batchSize is BatchWriteItem's limit of requests per call.
	batchSize = 25
	// deleteWorkers is how many batches are in flight at once. Reading
	// the list is sequential (one partition), so a few writers keep up
	// with it.
	deleteWorkers = 8
	backoffBase   = 20 * time.Millisecond
	backoffMax    = 1 * time.Second
)

// DeleteList removes every item of a list. Keys are read page by page while
// batches of 25 deletes run in parallel; unprocessed items and throttled
// batches are retried with jittered exponential backoff until none is left.
// When ctx ends first, the result is a *uds.IncompleteError that says how
// many items were deleted: the caller answers so, never silently.
func (s *Store) DeleteList(ctx context.Context, list uds.Key) (int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan deleteBatch, deleteWorkers)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		deleted int
		// freed is the usage of deleted items per owner. It is released
		// once at the end, not per batch: one usage write per owner per
		// call. A crash before that over-counts, which recompute repairs.
		freed = map[string]uds.Usage{}
	)
	for range deleteWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range batches {
				if err := s.writeBatch(ctx, batch.requests); err != nil {
					cancel(err)
					return
				}
				mu.Lock()
				deleted += len(batch.requests)
				for who, u := range batch.usage {
					f := freed[who]
					freed[who] = uds.Usage{Bytes: f.Bytes + u.Bytes, Items: f.Items + u.Items}
				}
				mu.Unlock()
			}
		}()
	}
	readErr := s.readKeys(ctx, list, batches)
	close(batches)
	wg.Wait()
	n := deleted
	// Release with a context of its own: the request's may be what ended.
	release, cancelRelease := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelRelease()
	for who, u := range freed {
		if err := s.adjust(release, list.App, who, u.Negate()); err != nil {
			return n, fmt.Errorf("delete list %s: release usage: %w", list.DataKey(), err)
		}
	}
	// A failed batch cancels the context with its error as the cause;
	// report that rather than the cancellation it caused.
	err := readErr
	if cause := context.Cause(ctx); cause != nil && (err == nil || errors.Is(err, context.Canceled)) {
		err = cause
	}
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return n, &uds.IncompleteError{Deleted: n}
	default:
		return n, fmt.Errorf("delete list %s after %d items: %w", list.DataKey(), n, err)
	}
}

// deleteBatch is up to 25 deletes and the usage they hold per owner.
type deleteBatch struct {
	requests []types.WriteRequest
	usage    map[string]uds.Usage
}

func newDeleteBatch() deleteBatch {
	return deleteBatch{requests: make([]types.WriteRequest, 0, batchSize), usage: map[string]uds.Usage{}}
}

// readKeys queries the list's keys, owners and sizes and sends them in
// batches of 25.
func (s *Store) readKeys(ctx context.Context, list uds.Key, batches chan<- deleteBatch) error {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.List),
		KeyConditionExpression: aws.String("#k = :k"),
		ProjectionExpression:   aws.String("#k, #s, #o, #z"),
		ExpressionAttributeNames: map[string]string{
			"#k": schema.AttrDataKey, "#s": schema.AttrSortKey, "#o": schema.AttrOwnerKey, "#z": schema.AttrItemSize,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: list.DataKey()}},
	}
	batch := newDeleteBatch()
	send := func() error {
		select {
		case batches <- batch:
			batch = newDeleteBatch()
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return err
		}
		for _, it := range out.Items {
			batch.requests = append(batch.requests, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{
				schema.AttrDataKey: it[schema.AttrDataKey], schema.AttrSortKey: it[schema.AttrSortKey],
			}}})
			if who, counted := owner(list.App, it); counted {
				u := batch.usage[who]
				u.Bytes += num(it, schema.AttrItemSize)
				u.Items++
				batch.usage[who] = u
			}
			if len(batch.requests) == batchSize {
				if err := send(); err != nil {
					return err
				}
			}
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if len(batch.requests) > 0 {
		return send()
	}
	return nil
}

// writeBatch runs one BatchWriteItem until every request is processed,
// backing off between attempts that left work undone or were throttled.
func (s *Store) writeBatch(ctx context.Context, batch []types.WriteRequest) error {
	pending := map[string][]types.WriteRequest{s.tables.List: batch}
	for attempt := 0; ; attempt++ {
		out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
		switch {
		case err == nil && len(out.UnprocessedItems) == 0:
			return nil
		case err == nil:
			pending = out.UnprocessedItems
		case !isThrottle(err):
			return err
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
}

// isThrottle reports whether DynamoDB refused for capacity reasons, after
// the SDK's own retries gave up.
func isThrottle(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded":
		return true
	}
	return false
}

// backoff is full-jitter exponential backoff.
func backoff(attempt int) time.Duration {
	d := backoffBase << min(attempt, 10)
	if d > backoffMax {
		d = backoffMax
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
