package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
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
	batches := make(chan []types.WriteRequest, deleteWorkers)
	var deleted atomic.Int64
	var wg sync.WaitGroup
	for range deleteWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range batches {
				if err := s.writeBatch(ctx, batch); err != nil {
					cancel(err)
					return
				}
				deleted.Add(int64(len(batch)))
			}
		}()
	}
	readErr := s.readKeys(ctx, list, batches)
	close(batches)
	wg.Wait()
	n := int(deleted.Load())
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

// readKeys queries the list's keys and sends them in batches of 25.
func (s *Store) readKeys(ctx context.Context, list uds.Key, batches chan<- []types.WriteRequest) error {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.List),
		KeyConditionExpression:    aws.String("#k = :k"),
		ProjectionExpression:      aws.String("#k, #s"),
		ExpressionAttributeNames:  map[string]string{"#k": schema.AttrDataKey, "#s": schema.AttrSortKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: list.DataKey()}},
	}
	batch := make([]types.WriteRequest, 0, batchSize)
	send := func() error {
		select {
		case batches <- batch:
			batch = make([]types.WriteRequest, 0, batchSize)
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
		for _, key := range out.Items {
			batch = append(batch, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key}})
			if len(batch) == batchSize {
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
	if len(batch) > 0 {
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
