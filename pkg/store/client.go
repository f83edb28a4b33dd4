package store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/internal/awsconf"
)

// NewClient builds a DynamoDB client from the standard AWS configuration
// chain. A non-empty endpoint points it at DynamoDB Local or another
// compatible engine; such engines accept any credentials, so placeholders
// are used when the environment has none. The client counts the calls of
// requests whose context carries CallStats. optFns adjust the client's
// options last (benchmarks replace its HTTP transport).
func NewClient(ctx context.Context, endpoint string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := awsconf.Load(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.Retryer = newRetryer()
		countCalls(o)
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			// DynamoDB Local's CRC32 response header does not always
			// match its (re-encoded) body; the SDK would only warn.
			o.DisableValidateResponseChecksum = true
		}
	}}, optFns...)...), nil
}

// maxAttempts is how often the SDK tries one call. Every write the store
// sends is idempotent or recognises its own commit (see transact.go and
// Update), so retries are safe; the request's deadline bounds them.
const maxAttempts = 8

// newRetryer is the SDK's standard retryer with more attempts, the
// store's backoff (full jitter from 20 ms, where the SDK's starts from a
// second), and no retry quota: the quota's token bucket empties under
// sustained throttling and then fails calls that a pause would have let
// through. TransactionConflictException (a single-item write meeting a
// transaction on its item) is retried too.
func newRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
			return backoff(attempt), nil
		})
		o.RateLimiter = ratelimit.None
		o.Retryables = append(o.Retryables, retry.RetryableErrorCode{
			Codes: map[string]struct{}{"TransactionConflictException": {}},
		})
	})
}
