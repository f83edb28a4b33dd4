package store

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// Calls is what one request cost in DynamoDB: calls made, attempts beyond
// each call's first (the SDK's retries, and a transaction's attempts that
// transact sends again), throttled attempts, and the capacity units
// consumed.
type Calls struct {
	Calls, Retries, Throttles int
	ReadUnits, WriteUnits     float64
}

// CallStats collects the Calls of the requests whose context carries it.
// It is safe for concurrent use: a batch runs its operations in parallel.
type CallStats struct {
	mu sync.Mutex
	c  Calls
	// attempts counts every try, so that Retries = attempts - calls.
	attempts int
}

type callStatsKey struct{}

// WithCallStats returns a context whose DynamoDB calls are counted in the
// returned CallStats.
func WithCallStats(ctx context.Context) (context.Context, *CallStats) {
	s := &CallStats{}
	return s.Context(ctx), s
}

// Context returns a context whose DynamoDB calls are counted in s: for
// callers that keep s inside a larger per-request value.
func (s *CallStats) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, callStatsKey{}, s)
}

// Snapshot returns what was counted so far.
func (s *CallStats) Snapshot() Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.c
	c.Retries = s.attempts - c.Calls
	return c
}

// countAsRetry makes the next call counted in ctx's CallStats a retry of
// the one before it: for a caller that sends a call again itself, with the
// SDK's retries off, so that it is counted as the SDK counts its own.
func countAsRetry(ctx context.Context) {
	if s := callStatsFrom(ctx); s != nil {
		s.mu.Lock()
		s.c.Calls--
		s.mu.Unlock()
	}
}

func callStatsFrom(ctx context.Context) *CallStats {
	s, _ := ctx.Value(callStatsKey{}).(*CallStats)
	return s
}

// countCalls adds the middleware that fills CallStats to a client: one
// step around the whole call (with its retries), which asks DynamoDB for
// the consumed capacity and adds it up, and one around each attempt, which
// counts attempts and throttles. Calls without CallStats in their context
// pass through untouched.
func countCalls(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		if err := stack.Initialize.Add(callCounter{}, middleware.After); err != nil {
			return err
		}
		return stack.Finalize.Insert(attemptCounter{}, "Retry", middleware.After)
	})
}

type callCounter struct{}

func (callCounter) ID() string { return "UDSCallCounter" }

func (callCounter) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	s := callStatsFrom(ctx)
	if s == nil {
		return next.HandleInitialize(ctx, in)
	}
	askCapacity(in.Parameters)
	out, md, err := next.HandleInitialize(ctx, in)
	read, write := consumed(out.Result)
	s.mu.Lock()
	s.c.Calls++
	s.c.ReadUnits += read
	s.c.WriteUnits += write
	s.mu.Unlock()
	return out, md, err
}

// askCapacity sets ReturnConsumedCapacity where the caller left it unset
// (the tests' counting client asks for INDEXES itself).
func askCapacity(params any) {
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		askTotal(&in.ReturnConsumedCapacity)
	case *dynamodb.UpdateItemInput:
		askTotal(&in.ReturnConsumedCapacity)
	case *dynamodb.PutItemInput:
		askTotal(&in.ReturnConsumedCapacity)
	case *dynamodb.DeleteItemInput:
		askTotal(&in.ReturnConsumedCapacity)
	case *dynamodb.QueryInput:
		askTotal(&in.ReturnConsumedCapacity)
	case *dynamodb.ScanInput:
		askTotal(&in.ReturnConsumedCapacity)
	case *dynamodb.BatchGetItemInput:
		askTotal(&in.ReturnConsumedCapacity)
	case *dynamodb.TransactWriteItemsInput:
		askTotal(&in.ReturnConsumedCapacity)
	}
}

func askTotal(rc *types.ReturnConsumedCapacity) {
	if *rc == "" {
		*rc = types.ReturnConsumedCapacityTotal
	}
}

// consumed adds up the capacity a call's output reports, read and write
// apart. With TOTAL, DynamoDB reports one figure per table; it is a read
// or a write by the kind of call.
func consumed(result any) (read, write float64) {
	var cc []types.ConsumedCapacity
	isRead := true
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		cc = one(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		cc = one(out.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		cc = one(out.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		cc = out.ConsumedCapacity
	case *dynamodb.UpdateItemOutput:
		cc, isRead = one(out.ConsumedCapacity), false
	case *dynamodb.PutItemOutput:
		cc, isRead = one(out.ConsumedCapacity), false
	case *dynamodb.DeleteItemOutput:
		cc, isRead = one(out.ConsumedCapacity), false
	case *dynamodb.TransactWriteItemsOutput:
		cc, isRead = out.ConsumedCapacity, false
	}
	for _, c := range cc {
		switch {
		case c.ReadCapacityUnits != nil || c.WriteCapacityUnits != nil:
			read += deref(c.ReadCapacityUnits)
			write += deref(c.WriteCapacityUnits)
		case isRead:
			read += deref(c.CapacityUnits)
		default:
			write += deref(c.CapacityUnits)
		}
	}
	return read, write
}

func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

type attemptCounter struct{}

func (attemptCounter) ID() string { return "UDSAttemptCounter" }

func (attemptCounter) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleFinalize(ctx, in)
	if s := callStatsFrom(ctx); s != nil {
		s.mu.Lock()
		s.attempts++
		if isThrottle(err) {
			s.c.Throttles++
		}
		s.mu.Unlock()
	}
	return out, md, err
}

// isThrottle reports whether DynamoDB refused an attempt for capacity.
func isThrottle(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded":
		return true
	}
	return false
}
