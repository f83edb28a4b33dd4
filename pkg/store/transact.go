package store

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Every write that changes usage is one TransactWriteItems: the data write
// and the owner's usage change commit together or not at all, so usage
// never drifts from the data, not even when a process dies between calls.
// The transaction carries a client request token; DynamoDB applies a token
// once and answers its repeats (within ten minutes) with the first
// outcome. The attempts transact sends again after one whose answer was
// lost therefore never apply a write twice.

// cancelled is the per-action outcome of a transaction that DynamoDB
// cancelled: the condition that failed, with the item as it stood.
type cancelled []types.CancellationReason

// conditionFailed reports whether action i was refused by its condition.
func (c cancelled) conditionFailed(i int) bool {
	return i < len(c) && aws.ToString(c[i].Code) == "ConditionalCheckFailed"
}

// anyConditionFailed reports whether a condition refused one of the
// actions.
func (c cancelled) anyConditionFailed() bool {
	for i := range c {
		if c.conditionFailed(i) {
			return true
		}
	}
	return false
}

// item is the current state of action i's item when its condition failed
// (nil if the item does not exist).
func (c cancelled) item(i int) map[string]types.AttributeValue {
	if i < len(c) {
		return c[i].Item
	}
	return nil
}

// conflictOnly reports whether the transaction was cancelled only because
// another transaction held one of its items: nothing is wrong with it and
// it may be sent again.
func (c cancelled) conflictOnly() bool {
	conflict := false
	for _, r := range c {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			conflict = true
		default:
			return false
		}
	}
	return conflict
}

// transact commits actions as one idempotent transaction. It returns the
// cancellation reasons when a condition refused it (nil when it
// committed). Cancellations caused only by conflicting transactions are
// retried with backoff within ctx; so is every transient error, with the
// same token, so that a commit whose answer was lost is recognised.
//
// transact makes each attempt itself, with the SDK's retries off, so that
// it sees how every attempt ended: one that was throttled or cancelled for
// a conflict applied nothing, while one that went unanswered (a server
// error, a reset connection, a timeout) may have committed. When the
// transaction fails after such an attempt, its error says so
// (mayHaveCommitted), and the write keeps what it made ready for the
// commit.
func (s *Store) transact(ctx context.Context, op string, actions ...types.TransactWriteItem) (cancelled, error) {
	in := &dynamodb.TransactWriteItemsInput{
		TransactItems:      actions,
		ClientRequestToken: aws.String(newToken()),
	}
	unanswered := false
	fail := func(err error) error {
		if unanswered {
			err = maybeCommitted{err}
		}
		return failed(op, err)
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			countAsRetry(ctx)
		}
		_, err := s.client.TransactWriteItems(ctx, in, withoutRetries)
		var tce *types.TransactionCanceledException
		switch {
		case err == nil:
			return nil, nil
		case errors.As(err, &tce) && !cancelled(tce.CancellationReasons).conflictOnly():
			return tce.CancellationReasons, nil
		case errors.As(err, &tce):
			// Cancelled for a conflict: nothing applied; sent again below.
		case isTransient(err):
			unanswered = unanswered || !appliedNothing(err)
		default:
			return nil, fail(err)
		}
		if serr := sleep(ctx, backoff(attempt)); serr != nil {
			return nil, fail(errors.Join(err, serr))
		}
	}
}

// maybeCommitted wraps the failure of a write one of whose attempts went
// unanswered: it may have been applied.
type maybeCommitted struct{ error }

func (m maybeCommitted) Unwrap() error { return m.error }

// mayHaveCommitted reports whether a failed write's error says that one of
// its attempts may have been applied.
func mayHaveCommitted(err error) bool {
	var m maybeCommitted
	return errors.As(err, &m)
}

// appliedNothing reports whether a transient error is DynamoDB's refusal
// of a request before applying any of it: throttling, a single write
// meeting a transaction on its item, or a signature refused for the
// signing clock's skew. Every other transient failure may come after the
// request was applied, with its answer lost on the way.
func appliedNothing(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "TransactionConflictException",
		"InvalidSignatureException", "SignatureDoesNotMatch", "AuthFailure", "RequestTimeTooSkewed", "AccessDeniedException":
		return true
	}
	return false
}

// errUnexpectedCancel describes a cancellation that no condition of the
// caller explains (a validation error inside the transaction, say).
func errUnexpectedCancel(c cancelled) error {
	codes := make([]string, len(c))
	for i, r := range c {
		codes[i] = aws.ToString(r.Code) + " " + aws.ToString(r.Message)
	}
	return errors.New("transaction cancelled: " + strings.Join(codes, "; "))
}
