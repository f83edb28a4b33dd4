package uds

import "errors"

// Code names the kind of an error the API answers. It is the "code" member
// of every error body, so clients tell kinds apart without reading the
// message, which is prose for people and may change. The HTTP status of
// each code is the HTTP layer's (httpapi.statusOf); several codes may share
// a status (a quota and a refusal are both 403), never the other way round.
type Code string

// The codes, one per kind of error the API answers.
const (
	// CodeInvalid: the request is malformed (a field, the path, a header).
	CodeInvalid Code = "invalid"
	// CodeUnauthenticated: the request carries no identity the API can use.
	CodeUnauthenticated Code = "unauthenticated"
	// CodeForbidden: the caller may not do this.
	CodeForbidden Code = "forbidden"
	// CodeQuotaExceeded: the write would take an owner past a limit.
	CodeQuotaExceeded Code = "quota_exceeded"
	// CodeNotFound: no such item, version, upload, registration or route.
	CodeNotFound Code = "not_found"
	// CodeMethodNotAllowed: the route has no such method.
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeConflict: the item, or the app name, is taken.
	CodeConflict Code = "conflict"
	// CodeInUse: the namespace holds data a policy change would strand.
	CodeInUse Code = "in_use"
	// CodeIndexNotReady: the index is still being built.
	CodeIndexNotReady Code = "index_not_ready"
	// CodeUploadPending: the upload's object has not arrived yet.
	CodeUploadPending Code = "upload_pending"
	// CodePreconditionFailed: If-Match names none of the item's ETags.
	CodePreconditionFailed Code = "precondition_failed"
	// CodeTooLarge: the value or the request passes a size limit.
	CodeTooLarge Code = "too_large"
	// CodeUnsupportedMediaType: the body comes in a coding UDS does not read.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	// CodeRangeNotSatisfiable: the requested range lies past the value.
	CodeRangeNotSatisfiable Code = "range_not_satisfiable"
	// CodeSchemaViolation: the data fails the namespace's JSON Schema.
	CodeSchemaViolation Code = "schema_violation"
	// CodeUploadMismatch: the uploaded object is not what was declared.
	CodeUploadMismatch Code = "upload_mismatch"
	// CodeRateLimited: over the caller's or the app's rate limit.
	CodeRateLimited Code = "rate_limited"
	// CodeInternal: anything the API did not expect; its text is logged,
	// never answered.
	CodeInternal Code = "internal"
	// CodeNotConfigured: the deployment lacks what the request needs (a
	// bucket for large values, streams for streamed quotas).
	CodeNotConfigured Code = "not_configured"
	// CodeUnavailable: the data store did not answer in time; retry.
	CodeUnavailable Code = "unavailable"
	// CodeIncomplete: a bulk delete ran out of time; repeat it.
	CodeIncomplete Code = "incomplete"
	// CodePolicyPending: the namespace's access mode is changing and takes
	// no writes until the change completes; retry.
	CodePolicyPending Code = "policy_pending"
	// CodeCursorExpired: a changes feed's cursor is older than the feed
	// keeps, or the namespace's key space changed since; start again.
	CodeCursorExpired Code = "cursor_expired"
	// CodeErasing: the user's data is being erased, or was and is held
	// erased; their writes are refused.
	CodeErasing Code = "erasing"
)

// Codes lists every code, for the OpenAPI document's enum and its test.
func Codes() []Code {
	return []Code{
		CodeInvalid, CodeUnauthenticated, CodeForbidden, CodeQuotaExceeded,
		CodeNotFound, CodeMethodNotAllowed, CodeConflict, CodeInUse,
		CodeIndexNotReady, CodeUploadPending, CodePreconditionFailed,
		CodeTooLarge, CodeUnsupportedMediaType, CodeRangeNotSatisfiable,
		CodeSchemaViolation, CodeUploadMismatch, CodeRateLimited,
		CodeInternal, CodeNotConfigured, CodeUnavailable, CodeIncomplete,
		CodePolicyPending, CodeCursorExpired, CodeErasing,
	}
}

// coded is an error that names its code. Sentinels (NewError) and the
// typed errors carry one; wrapping keeps it, since CodeOf looks down the
// chain.
type coded interface {
	error
	Code() Code
}

// Error is a sentinel error with its code.
type Error struct {
	code Code
	text string
}

// NewError returns a sentinel of the given code. Layers above the domain
// (the HTTP layer's unknown upload, say) declare theirs with it too, so
// that one CodeOf serves them all.
func NewError(code Code, text string) *Error { return &Error{code, text} }

func (e *Error) Error() string { return e.text }

// Code returns the sentinel's code.
func (e *Error) Code() Code { return e.code }

// CodeOf returns the code of the first coded error in err's chain:
// CodeInternal when there is none, "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var c coded
	if errors.As(err, &c) {
		return c.Code()
	}
	return CodeInternal
}

// PublicOf returns err's text as it may be shown to a caller: the text of
// its coded error, without the context that wrapped it (keys, operations),
// and a generic text for an internal error, whose text may tell what a
// caller should not learn (tables, causes) and belongs in the log.
func PublicOf(err error) string {
	if err == nil {
		return ""
	}
	var c coded
	if !errors.As(err, &c) || c.Code() == CodeInternal {
		return "Internal server error"
	}
	if p, ok := c.(interface{ Public() string }); ok {
		return p.Public()
	}
	return c.Error()
}
