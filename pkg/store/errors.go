package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/udsproject/uds/pkg/uds"
)

// failed wraps the error of a DynamoDB call with what the store was doing.
// A transient failure (throttling, a server error, a lost connection, the
// request's time budget running out) becomes a *uds.UnavailableError, which
// the HTTP layer answers 503 with Retry-After: the client may retry, and
// nothing claims that the request was wrong.
func failed(op string, err error) error {
	if isTransient(err) {
		return &uds.UnavailableError{Op: op, Err: err}
	}
	return fmt.Errorf("%s: %w", op, wrapSizeError(err))
}

// errContended says why a write gave up after losing every race.
var errContended = errors.New("the item kept changing under concurrent writers")

// unknownOutcome is the answer when an attempt of a write got no answer and
// what is there now neither shows its write token nor rules it out.
func unknownOutcome(op, why string) error {
	return &uds.UnavailableError{Op: op, Err: errors.New("an attempt got no answer and " + why + " since: the outcome is unknown")}
}

// withoutRetries turns the SDK's retries off for one call whose retries
// the store makes itself.
func withoutRetries(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// transientCodes are DynamoDB error codes that say "not now" rather than
// "not this request".
var transientCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"TransactionInProgressException":         true,
	"TransactionConflictException":           true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
}

// isTransient reports whether err is a failure that retrying later may
// cure.
func isTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && transientCodes[apiErr.ErrorCode()] {
		return true
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() >= 500 {
		return true
	}
	// What the SDK's standard retryer retries: connection errors, its
	// throttling and transient codes, and a request its signing clock's
	// skew got refused (retried once the skew is corrected), among others.
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// isConditionFailed reports whether a single-item write was refused by its
// condition.
func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return asCCF(err, &ccf)
}

// asCCF finds a conditional check failure in err, with the old item
// DynamoDB returns when asked to.
func asCCF(err error, target **types.ConditionalCheckFailedException) bool {
	return err != nil && errors.As(err, target)
}

// wrapSizeError turns DynamoDB's refusal of an oversized item into
// uds.ErrTooLarge. encodeValue bounds sizes from above, so this is a
// backstop, not the rule.
func wrapSizeError(err error) error {
	var apiErr interface{ ErrorMessage() string }
	if errors.As(err, &apiErr) && strings.Contains(strings.ToLower(apiErr.ErrorMessage()), "item size") {
		return &uds.TooLargeError{Reason: "the item exceeds DynamoDB's item size limit"}
	}
	return err
}

// newToken returns a random token that identifies one logical write: the
// client request token of a transaction, or the write token stored on an
// item. 32 hex digits fit DynamoDB's 36-character token limit.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return hex.EncodeToString(b)
}

const (
	backoffBase = 20 * time.Millisecond
	backoffMax  = 1 * time.Second
)

// backoff is full-jitter exponential backoff.
func backoff(attempt int) time.Duration {
	d := backoffBase << min(attempt, 10)
	if d > backoffMax {
		d = backoffMax
	}
	return time.Duration(mrand.Int64N(int64(d)) + 1)
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
