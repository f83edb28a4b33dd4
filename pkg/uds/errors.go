// Package uds holds the domain of the Universal Data Store: keys, items,
// usage and limits, and the errors that cross layers. It depends on nothing
// but the standard library; storage and transport live in subpackages.
package uds

import (
	"fmt"
	"time"
)

// Sentinel errors, each with its code (codes.go). Layers wrap them with
// context; the HTTP layer maps codes to statuses in one map
// (httpapi.statusOf).
var (
	// ErrNotFound: the item does not exist.
	ErrNotFound = NewError(CodeNotFound, "not found")
	// ErrConflict: the item already exists.
	ErrConflict = NewError(CodeConflict, "already exists")
	// ErrPrecondition: an If-Match precondition did not hold.
	ErrPrecondition = NewError(CodePreconditionFailed, "precondition failed")
	// ErrInvalid: the request is malformed; an *InvalidError says how.
	ErrInvalid = NewError(CodeInvalid, "invalid input")
	// ErrTooLarge: the value exceeds what UDS stores.
	ErrTooLarge = NewError(CodeTooLarge, "too large")
	// ErrQuotaExceeded: the write would pass the owner's limit; a
	// *QuotaError carries usage and limit.
	ErrQuotaExceeded = NewError(CodeQuotaExceeded, "quota exceeded")
	// ErrIncomplete: a bulk operation ran out of time before finishing.
	ErrIncomplete = NewError(CodeIncomplete, "incomplete")
	// ErrUnavailable: the data store did not answer in time (throttling,
	// server errors, lost connections); the client may retry. An
	// *UnavailableError carries the cause, for the log.
	ErrUnavailable = NewError(CodeUnavailable, "unavailable")
	// ErrCursorExpired: a changes feed's cursor is older than the feed
	// keeps its changes, or was taken in a key space the namespace no
	// longer uses; the client starts again from the beginning.
	ErrCursorExpired = NewError(CodeCursorExpired, "cursor expired")
)

// InvalidError names the part of a request that is wrong and why.
type InvalidError struct {
	Field  string // e.g. "applicationUuid", "limit", "body"
	Reason string
}

func (e *InvalidError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Code returns CodeInvalid.
func (e *InvalidError) Code() Code { return CodeInvalid }

// Invalid returns an *InvalidError.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// TooLargeError says which size limit was passed.
type TooLargeError struct {
	Reason string
}

func (e *TooLargeError) Error() string { return "too large: " + e.Reason }

// Is makes errors.Is(err, ErrTooLarge) hold.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Code returns CodeTooLarge.
func (e *TooLargeError) Code() Code { return CodeTooLarge }

// QuotaError is returned when a write would take an owner past a limit.
type QuotaError struct {
	Quota Quota
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota exceeded for user %q in app %s", e.Quota.User, e.Quota.App)
}

// Is makes errors.Is(err, ErrQuotaExceeded) hold.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// Code returns CodeQuotaExceeded.
func (e *QuotaError) Code() Code { return CodeQuotaExceeded }

// IncompleteError reports how far a bulk delete got before its time budget
// ran out.
type IncompleteError struct {
	Deleted int
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("deleted %d items before the time budget ran out", e.Deleted)
}

// Is makes errors.Is(err, ErrIncomplete) hold.
func (e *IncompleteError) Is(target error) bool { return target == ErrIncomplete }

// Code returns CodeIncomplete.
func (e *IncompleteError) Code() Code { return CodeIncomplete }

// UnavailableError is a transient failure of the data store that outlived
// the request's retries. For a write, the outcome is unknown: it may or may
// not have been applied.
type UnavailableError struct {
	Op  string
	Err error
	// Reason, when set, is safe to show the client; RetryAfter, when
	// set, is how long it should wait.
	Reason     string
	RetryAfter time.Duration
}

func (e *UnavailableError) Error() string { return e.Op + ": data store unavailable: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) hold.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Code returns CodeUnavailable.
func (e *UnavailableError) Code() Code { return CodeUnavailable }

// Public is Reason when set: the cause names the data store's internals.
func (e *UnavailableError) Public() string {
	if e.Reason != "" {
		return e.Reason
	}
	return "data store unavailable"
}
