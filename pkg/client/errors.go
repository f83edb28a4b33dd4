package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Sentinel errors: an *APIError is one of them (errors.Is) by its code, or
// by its status when the answer has no code (API Gateway's, a proxy's, S3's)
// or a code without a sentinel of its own; a rate limit's (ErrRateLimited)
// is also ErrThrottled, as every 429 is.
var (
	ErrInvalid            = errors.New("invalid request")          // 400
	ErrUnauthenticated    = errors.New("unauthenticated")          // 401
	ErrForbidden          = errors.New("forbidden")                // 403, other than a quota
	ErrQuotaExceeded      = errors.New("quota exceeded")           // 403 "Quota exceeded"
	ErrNotFound           = errors.New("not found")                // 404
	ErrCursorExpired      = errors.New("cursor expired")           // 410 "cursor_expired": a changes feed's cursor the feed no longer continues; read it again from the beginning into an empty replica
	ErrConflict           = errors.New("conflict")                 // 409, other than an index not ready or an erase
	ErrIndexNotReady      = errors.New("index not ready")          // 409 "Index not ready": the index is still building (Client.BuildIndexes)
	ErrErasing            = errors.New("data being erased")        // 409 "erasing": an erase of the writer's data, or the owner's, is running or holds their writes (EraseUser); nothing was written
	ErrPreconditionFailed = errors.New("precondition failed")      // 412
	ErrTooLarge           = errors.New("payload too large")        // 413
	ErrSchema             = errors.New("schema validation failed") // 422
	ErrThrottled          = errors.New("throttled")                // 429: API Gateway's throttle, or a rate limit (ErrRateLimited)
	ErrRateLimited        = errors.New("rate limited")             // 429 "Too many requests": over the caller's or the app's rate limit
	ErrUnavailable        = errors.New("service unavailable")      // 502, 503, 504
	ErrNotModified        = errors.New("not modified")             // 304 on a read with IfNoneMatch
	ErrServer             = errors.New("internal server error")    // 500
	ErrNotImplemented     = errors.New("not implemented")          // 501: large values on a deployment without a bucket for them
	errUnexpected         = errors.New("unexpected answer status") // anything else
)

// APIError is an answer UDS (or API Gateway in front of it) gave instead of
// success, with the error body's fields. errors.As gives it; errors.Is
// matches it against the sentinels.
type APIError struct {
	Status int
	// Code is the body's "code", the kind of error ("not_found",
	// "quota_exceeded", ...: docs/openapi.json lists them); empty when the
	// answer is not UDS's.
	Code string
	// Message is the body's "error" ("Quota exceeded", "Invalid limit",
	// ...), or API Gateway's "message".
	Message string
	Details string
	// The key fields, where the answer concerns one item.
	ApplicationUUID, Namespace, ID, SortKey string
	// Quota fields, on ErrQuotaExceeded for the caller's own quota: what
	// the owner uses and the limits in effect (nil: unlimited).
	User                   string
	UsedBytes, UsedItems   int64
	LimitBytes, LimitItems *int64
	// Deleted counts what a delete-all removed before its time ran out.
	Deleted *int
	// FailedIndex names the operation that refused an atomic batch.
	FailedIndex *int
	// Violations say where data failed the namespace's JSON Schema.
	Violations []Violation
	// PatchOperation names the JSON Patch operation that did not apply,
	// on ErrConflict from Patch.
	PatchOperation *PatchOperation
	// RetryAfter is the server's Retry-After, when it gave one.
	RetryAfter time.Duration
	// Attempts is how many times the request was sent, this answer's
	// included, and Waited the pauses between them in total: a request
	// that may be sent again is retried until WithRetries or
	// WithMaxRetryWait bound it.
	Attempts int
	Waited   time.Duration
	// Body is the answer as it came, for bodies that are not UDS's JSON.
	Body []byte
}

// Violation is one place where data fails a namespace's JSON Schema.
type Violation struct {
	InstanceLocation string `json:"instanceLocation"`
	KeywordLocation  string `json:"keywordLocation"`
	Message          string `json:"message"`
}

// Error is the status, the server's message and its details: "404 Key not
// found: ...", or the start of a body that is not UDS's JSON, and how often the request was sent when that was more
// than once ("... (sent 5 times over 6.2s)"). Like every error of this
// package it names no package or program: the caller says what it was
// doing ("uds get: 404 Key not found").
func (e *APIError) Error() string {
	msg := strconv.Itoa(e.Status)
	switch {
	case e.Message != "":
		msg += " " + e.Message
	case len(e.Body) > 0:
		// An answer that is not UDS's (S3's XML, a proxy's page) says
		// what went wrong only in its body.
		msg += ": " + bodyExcerpt(e.Body)
	}
	if e.Details != "" {
		msg += ": " + e.Details
	}
	if e.Attempts > 1 {
		msg += " (sent " + strconv.Itoa(e.Attempts) + " times over " + e.Waited.Round(100*time.Millisecond).String() + ")"
	}
	return msg
}

// Is matches the sentinel of the answer's kind, and ErrThrottled for
// ErrRateLimited.
func (e *APIError) Is(target error) bool {
	kind := e.kind()
	return target == kind || (kind == ErrRateLimited && target == ErrThrottled)
}

// codeKinds gives the sentinel of the codes that name one; the other codes
// (in_use, upload_mismatch, ...) are their status's kind.
var codeKinds = map[string]error{
	"invalid":             ErrInvalid,
	"unauthenticated":     ErrUnauthenticated,
	"forbidden":           ErrForbidden,
	"quota_exceeded":      ErrQuotaExceeded,
	"not_found":           ErrNotFound,
	"cursor_expired":      ErrCursorExpired,
	"conflict":            ErrConflict,
	"index_not_ready":     ErrIndexNotReady,
	"erasing":             ErrErasing,
	"precondition_failed": ErrPreconditionFailed,
	"too_large":           ErrTooLarge,
	"schema_violation":    ErrSchema,
	"rate_limited":        ErrRateLimited,
	"unavailable":         ErrUnavailable,
	"internal":            ErrServer,
	"not_configured":      ErrNotImplemented,
}

func (e *APIError) kind() error {
	if kind, ok := codeKinds[e.Code]; ok {
		return kind
	}
	switch e.Status {
	case http.StatusNotModified:
		return ErrNotModified
	case http.StatusBadRequest:
		return ErrInvalid
	case http.StatusUnauthorized:
		return ErrUnauthenticated
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusGone:
		return ErrCursorExpired
	case http.StatusConflict:
		return ErrConflict
	case http.StatusPreconditionFailed:
		return ErrPreconditionFailed
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case http.StatusUnprocessableEntity:
		return ErrSchema
	case http.StatusTooManyRequests:
		return ErrThrottled
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return ErrUnavailable
	case http.StatusInternalServerError:
		return ErrServer
	case http.StatusNotImplemented:
		return ErrNotImplemented
	}
	return errUnexpected
}

// newAPIError reads an error answer. A body that is not UDS's JSON (API
// Gateway's {"message": ...}, HTML from a proxy) is kept as it came.
func newAPIError(status int, h http.Header, body []byte) *APIError {
	e := &APIError{Status: status, RetryAfter: retryAfter(h), Body: body}
	var b struct {
		Code            string          `json:"code"`
		Error           string          `json:"error"`
		Message         string          `json:"message"`
		Details         string          `json:"details"`
		ApplicationUUID string          `json:"applicationUuid"`
		Namespace       string          `json:"namespace"`
		ID              string          `json:"id"`
		SortKey         string          `json:"sortKey"`
		User            string          `json:"user"`
		UsedBytes       int64           `json:"usedBytes"`
		UsedItems       int64           `json:"usedItems"`
		LimitBytes      *int64          `json:"limitBytes"`
		LimitItems      *int64          `json:"limitItems"`
		Deleted         *int            `json:"deleted"`
		FailedIndex     *int            `json:"failedIndex"`
		Violations      []Violation     `json:"violations"`
		PatchOperation  *PatchOperation `json:"patchOperation"`
	}
	if json.Unmarshal(body, &b) != nil {
		return e
	}
	e.Code, e.Message, e.Details = b.Code, b.Error, b.Details
	if e.Message == "" {
		e.Message = b.Message
	}
	e.ApplicationUUID, e.Namespace, e.ID, e.SortKey = b.ApplicationUUID, b.Namespace, b.ID, b.SortKey
	e.User, e.UsedBytes, e.UsedItems, e.LimitBytes, e.LimitItems = b.User, b.UsedBytes, b.UsedItems, b.LimitBytes, b.LimitItems
	e.Deleted, e.FailedIndex, e.Violations, e.PatchOperation = b.Deleted, b.FailedIndex, b.Violations, b.PatchOperation
	return e
}

// invalid is a call the client refuses before sending anything, because
// its request would not do what the call says: ErrInvalid, as the API's
// 400, with what was wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// maxExcerpt bounds what an error message quotes of a body.
const maxExcerpt = 200

// bodyExcerpt is the start of a body for an error message: its runs of
// white space as one space, invalid UTF-8 replaced, at most maxExcerpt
// bytes and an ellipsis after a cut.
func bodyExcerpt(body []byte) string {
	text := strings.Join(strings.Fields(strings.ToValidUTF8(string(body[:min(len(body), 4*maxExcerpt)]), "\uFFFD")), " ")
	if len(text) <= maxExcerpt {
		return text
	}
	cut := maxExcerpt
	for !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}
