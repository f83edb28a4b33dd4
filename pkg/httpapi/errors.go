package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// ErrUnauthenticated is returned by a SubjectFunc when the request carries
// no identity the API can use.
var ErrUnauthenticated = uds.NewError(uds.CodeUnauthenticated, "unauthenticated")

// errorBody is every error response: what went wrong, details where they
// help, when, and the key fields of the resource concerned.
type errorBody struct {
	// Code is the error's kind (uds.Code), for clients to match on.
	Code            uds.Code `json:"code"`
	Error           string   `json:"error"`
	Details         string   `json:"details,omitempty"`
	Timestamp       string   `json:"timestamp"`
	ApplicationUUID string   `json:"applicationUuid,omitempty"`
	Namespace       string   `json:"namespace,omitempty"`
	ID              string   `json:"id,omitempty"`
	SortKey         string   `json:"sortKey,omitempty"`
	// Quota fields, on 403 Quota exceeded.
	User      string `json:"user,omitempty"`
	UsedBytes *int64 `json:"usedBytes,omitempty"`
	UsedItems *int64 `json:"usedItems,omitempty"`
	// HistoryBytes is the part of UsedBytes that kept versions hold.
	HistoryBytes *int64 `json:"historyBytes,omitempty"`
	LimitBytes   *int64 `json:"limitBytes,omitempty"`
	LimitItems   *int64 `json:"limitItems,omitempty"`
	// Deleted counts what a partial delete-all removed.
	Deleted *int `json:"deleted,omitempty"`
	// FailedIndex names the operation that refused an atomic batch.
	FailedIndex *int `json:"failedIndex,omitempty"`
	// Resync, on 410, tells a changes feed's client to start again from
	// the beginning.
	Resync *bool `json:"resync,omitempty"`
	// Violations, on 422, say where data fails the namespace's schema.
	Violations []violationJSON `json:"violations,omitempty"`
	// PatchOperation, on 409 Patch does not apply, names the JSON Patch
	// operation that did not apply.
	PatchOperation *patchOperationJSON `json:"patchOperation,omitempty"`
}

// patchOperationJSON is a JSON Patch operation by its index in the patch,
// its op and its path.
type patchOperationJSON struct {
	Index int    `json:"index"`
	Op    string `json:"op"`
	Path  string `json:"path"`
}

type violationJSON struct {
	InstanceLocation string `json:"instanceLocation"`
	KeywordLocation  string `json:"keywordLocation"`
	Message          string `json:"message"`
}

// statusOf is the one place where errors become HTTP: each code's status.
// Errors carry their code (uds.CodeOf); TestErrorCodesHaveStatuses checks
// that every code has a status here.
var statusOf = map[uds.Code]int{
	uds.CodeInvalid:              http.StatusBadRequest,
	uds.CodeUnauthenticated:      http.StatusUnauthorized,
	uds.CodeForbidden:            http.StatusForbidden,
	uds.CodeQuotaExceeded:        http.StatusForbidden,
	uds.CodeNotFound:             http.StatusNotFound,
	uds.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	uds.CodeConflict:             http.StatusConflict,
	uds.CodeInUse:                http.StatusConflict,
	uds.CodeIndexNotReady:        http.StatusConflict,
	uds.CodeUploadPending:        http.StatusConflict,
	uds.CodePreconditionFailed:   http.StatusPreconditionFailed,
	uds.CodeTooLarge:             http.StatusRequestEntityTooLarge,
	uds.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	uds.CodeRangeNotSatisfiable:  http.StatusRequestedRangeNotSatisfiable,
	uds.CodeSchemaViolation:      http.StatusUnprocessableEntity,
	uds.CodeUploadMismatch:       http.StatusUnprocessableEntity,
	uds.CodeRateLimited:          http.StatusTooManyRequests,
	uds.CodeInternal:             http.StatusInternalServerError,
	uds.CodeNotConfigured:        http.StatusNotImplemented,
	uds.CodeUnavailable:          http.StatusServiceUnavailable,
	uds.CodeIncomplete:           http.StatusServiceUnavailable,
	uds.CodePolicyPending:        http.StatusServiceUnavailable,
	uds.CodeCursorExpired:        http.StatusGone,
	uds.CodeErasing:              http.StatusConflict,
}

// messages gives the "error" member of the errors whose message is not
// their public text (uds.PublicOf): the seed's messages for keys and list
// items ("Key not found", "Item not found", ...), and the others in the
// same style. Several errors share a code and differ in message (an
// unknown upload is "Upload not found", an unknown item "Key not found").
var messages = []struct {
	err           error
	key, listItem string
}{
	{uds.ErrInvalid, "Bad request", "Bad request"},
	{ErrUnauthenticated, "Unauthenticated", "Unauthenticated"},
	{ErrUntrustedSubjectHeader, "Subject header not trusted", "Subject header not trusted"},
	{uds.ErrQuotaExceeded, "Quota exceeded", "Quota exceeded"},
	{uds.ErrForbidden, "Forbidden", "Forbidden"},
	{uds.ErrSchema, "Schema validation failed", "Schema validation failed"},
	{uds.ErrInUse, "Namespace holds data", "Namespace holds data"},
	{uds.ErrIndexNotReady, "Index not ready", "Index not ready"},
	{errNoUpload, "Upload not found", "Upload not found"},
	{errNotRegistered, "App not registered", "App not registered"},
	{uds.ErrUploadPending, "Upload not received", "Upload not received"},
	{uds.ErrUploadMismatch, "Upload does not match", "Upload does not match"},
	{uds.ErrNoBucket, "Large values not configured", "Large values not configured"},
	{uds.ErrNoStreams, "Streamed quotas not available", "Streamed quotas not available"},
	{uds.ErrNoChangesFeed, "Changes feed not available", "Changes feed not available"},
	{uds.ErrNotFound, "Key not found", "Item not found"},
	{uds.ErrConflict, "Key already exists", "Item already exists"},
	{uds.ErrPrecondition, "Precondition failed", "Precondition failed"},
	{uds.ErrTooLarge, "Payload too large", "Payload too large"},
	{errUnsupportedEncoding, "Unsupported content encoding", "Unsupported content encoding"},
	{errPatchType, "Unsupported patch document", "Unsupported patch document"},
	{uds.ErrIncomplete, "List not fully deleted", "List not fully deleted"},
	{uds.ErrUnavailable, "Service unavailable", "Service unavailable"},
	{uds.ErrRateLimited, "Too many requests", "Too many requests"},
	{uds.ErrCursorExpired, "Cursor expired", "Cursor expired"},
	{uds.ErrErasing, "User data being erased", "User data being erased"},
	{errNoErasure, "No erase of this user", "No erase of this user"},
}

// fail answers err with its code's status and a message safe to show;
// an internal error is answered 500 without its text, which goes to the
// request's log line.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error, key *uds.Key) {
	caller, _ := a.subject(r)
	status, body, retryAfter := describe(err, key, caller)
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	observationFrom(r.Context()).noteError(status, body.Error, err)
	writeJSON(w, status, body)
}

// maxEchoBytes bounds each key part an error echoes: a valid key's parts
// are at most 2048 bytes together (DynamoDB's partition key).
const maxEchoBytes = 2048

// describe is what an error answers: its status, its body and, when the
// client may try again after a while, the Retry-After seconds. caller is
// who asked, whose own quota a refusal may show.
func describe(err error, key *uds.Key, caller string) (status int, body errorBody, retryAfter string) {
	if uds.CodeOf(err) == uds.CodeInternal && errors.Is(err, context.DeadlineExceeded) {
		// The request's time ran out where no layer said what that
		// means: the data store did not answer in time (503), which a
		// client tries again, not an internal error.
		err = &uds.UnavailableError{Op: "request", Err: err}
	}
	code := uds.CodeOf(err)
	body = errorBody{Code: code, Error: uds.PublicOf(err), Timestamp: now()}
	if key != nil {
		// A key's parts are echoed whole up to the longest a valid key
		// has; past it a refused one is cut, so that a path of a megabyte
		// is not answered with a body of one.
		body.ApplicationUUID, body.Namespace = uds.Truncate(key.App, maxEchoBytes), uds.Truncate(key.Namespace, maxEchoBytes)
		body.ID, body.SortKey = uds.Truncate(key.ID, maxEchoBytes), uds.Truncate(key.SortKey, maxEchoBytes)
	}
	status = statusOf[code]
	if code != uds.CodeInternal {
		for _, m := range messages {
			if errors.Is(err, m.err) {
				body.Error = m.key
				if key != nil && key.SortKey != "" {
					body.Error = m.listItem
				}
				break
			}
		}
	}
	var invalid *uds.InvalidError
	var tooLarge *uds.TooLargeError
	var quota *uds.QuotaError
	var incomplete *uds.IncompleteError
	var unavailable *uds.UnavailableError
	var batch *uds.BatchError
	var forbidden *uds.ForbiddenError
	var schemaErr *uds.SchemaError
	var coding *encodingError
	var changing *uds.ChangingError
	var version *notKept
	var missing *notCreated
	var notReady *uds.IndexNotReadyError
	var limited *uds.RateLimitedError
	var mismatch *uds.UploadMismatchError
	var taken *uds.NameTakenError
	var patchConflict *uds.PatchConflictError
	var patchType *patchTypeError
	if errors.As(err, &batch) {
		body.FailedIndex = &batch.Index
	}
	switch {
	case errors.As(err, &invalid):
		body.Error = "Invalid " + invalid.Field
		body.Details = invalid.Reason
	case errors.As(err, &tooLarge):
		body.Details = tooLarge.Reason
	case errors.As(err, &mismatch):
		body.Details = mismatch.Reason + "; the object and the reservation were discarded: upload again"
	case errors.As(err, &taken) && taken.Reserved:
		body.Error = "App name reserved"
		body.Details = fmt.Sprintf("the name %s is reserved for app %s, this deployment's created-content app (UDS_CREATED_CONTENT_APP)", strconv.Quote(taken.Name), taken.App)
	case errors.As(err, &taken):
		body.Error = "App name taken"
		body.Details = fmt.Sprintf("the name %s is registered by app %s (names are unique whatever their case)", strconv.Quote(taken.Name), taken.App)
	case errors.Is(err, errNotRegistered):
		body.Details = "no name is registered for this app: PUT one to register it (its data, limits and policies do not depend on it)"
	case errors.Is(err, errNoUpload):
		body.Details = "no upload of this item has that uploadId: it lapsed, was discarded, or was committed and the item has changed since"
	case errors.Is(err, uds.ErrUploadPending):
		body.Details = "the upload's object has not arrived in the bucket: POST the file to the upload's url first, then commit"
	case errors.Is(err, uds.ErrNoStreams):
		body.Details = "this deployment's data tables are imported without streams the stack reads, so nothing would count writes in streamed mode; apps keep the strict mode"
	case errors.Is(err, uds.ErrNoChangesFeed):
		body.Details = "this deployment's data tables are imported without streams the stack reads, so nothing writes their changes into the feed"
	case errors.Is(err, uds.ErrCursorExpired):
		// Capitalised as the other errors' messages are.
		body.Error = "Cursor expired"
		resync := true
		body.Resync = &resync
		body.Details = "the cursor is older than the feed keeps its changes (30 days), or the namespace's access mode changed since it was taken: read the feed again from the beginning (changes=) into an empty replica"
	case errors.Is(err, uds.ErrNoBucket):
		body.Details = "this deployment has no bucket for large values; values of up to 350 KiB go in one request"
	case errors.As(err, &coding):
		body.Details = "request bodies may be sent as they are or gzip encoded, not " + strconv.Quote(coding.coding)
	case errors.As(err, &quota):
		q := quota.Quota
		if caller != q.User {
			// Another owner's usage and limits are theirs to see: the
			// caller learns only whose quota refused the write.
			body.Details = "the write would take the item's owner past the limit in effect"
			break
		}
		body.ApplicationUUID, body.User = q.App, q.User
		body.UsedBytes, body.UsedItems, body.HistoryBytes = &q.Used.Bytes, &q.Used.Items, &q.Used.History
		body.LimitBytes, body.LimitItems = limitPtr(q.Limits.Bytes), limitPtr(q.Limits.Items)
		body.Details = "the write would take the owner past the limit in effect"
	case errors.As(err, &incomplete):
		body.Deleted = &incomplete.Deleted
		body.Details = fmt.Sprintf("deleted %d items before the time budget ran out; repeat the request to delete the rest", incomplete.Deleted)
		retryAfter = "1"
	case errors.As(err, &changing):
		body.Details = fmt.Sprintf("namespace %s is changing its access mode from %s to %s, and takes no writes until the change completes; nothing was written: send the write again after the Retry-After delay",
			strconv.Quote(changing.Namespace), changing.From, changing.To)
		retryAfter = strconv.Itoa(max(1, int(changing.RetryAfter.Round(time.Second).Seconds())))
	case errors.As(err, &unavailable):
		// The cause goes to the log (the request's line); the client
		// learns that it may retry, and that a write may or may not have
		// been applied.
		body.Details = "the data store did not complete the request in time; retry after the Retry-After delay. A write answered so may or may not have been applied: GET the item (or repeat the write with If-Match) to tell"
		if unavailable.Reason != "" {
			body.Details = unavailable.Reason
		}
		retryAfter = strconv.Itoa(max(1, int(unavailable.RetryAfter.Seconds())))
	case errors.As(err, &limited) && limited.Operations != 0:
		// No wait lets this batch through, so the answer has no
		// Retry-After: a client that honours one would only send it again.
		body.Details = limited.Error() + "; nothing was done: split it into batches of at most " +
			strconv.FormatInt(limited.Rate.Burst, 10) + " operations"
	case errors.As(err, &limited):
		body.Details = limited.Error() + "; nothing was done: send it again after the Retry-After delay"
		retryAfter = strconv.Itoa(max(1, seconds(limited.RetryAfter)))
	case errors.As(err, &notReady):
		body.Details = notReady.Error() + "; it answers queries once ready (GET the namespace's policy for its state; POST .../indexes/build advances the build)"
		if wait := time.Until(notReady.SettlesAt); wait > 0 {
			retryAfter = strconv.Itoa(max(1, int(wait.Seconds()+0.999)))
		}
	case errors.As(err, &version):
		body.Details = fmt.Sprintf("version %d of the item is not kept: it never was, or it was pruned, expired or dropped; GET the item with ?history for the versions kept", version.version)
	case errors.As(err, &missing):
		body.Details = "PUT replaces an item that exists and does not create one: POST the same URL with the same body to create it (201 Created; 409 if it exists by then)"
	case errors.As(err, &patchType):
		body.Details = patchType.Error()
	case errors.As(err, &patchConflict):
		body.Error = "Patch does not apply"
		body.Details = patchConflict.Error() + "; nothing was written"
		if patchConflict.Index >= 0 {
			body.PatchOperation = &patchOperationJSON{Index: patchConflict.Index, Op: patchConflict.Op, Path: patchConflict.Path}
		}
	case errors.As(err, &forbidden):
		body.Details = forbidden.Reason
	case errors.Is(err, uds.ErrForbidden):
		body.Details = "in this owner-write namespace only the item's creator may change or delete it"
	case errors.As(err, &schemaErr):
		body.Details = "data does not match the namespace's JSON Schema"
		body.Violations = make([]violationJSON, len(schemaErr.Violations))
		for i, v := range schemaErr.Violations {
			body.Violations[i] = violationJSON(v)
		}
	case errors.Is(err, uds.ErrInUse):
		body.Details = "the namespace holds items, and a change into or out of private would move them to another key space where nobody could reach them; delete them first (items no data route reaches: GET or DELETE .../namespaces/{namespace}/strays)"
	case errors.Is(err, uds.ErrPrecondition):
		body.Details = "If-Match names none of the item's current ETags"
	case errors.Is(err, ErrUnauthenticated), errors.Is(err, ErrUntrustedSubjectHeader):
		body.Details = err.Error()
	}
	return status, body, retryAfter
}

// limitPtr renders a limit for a response: 0 (unlimited) is null.
func limitPtr(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }

const badURLError = "Invalid path"

// WriteBadEvent answers a request that its host could not turn into an
// *http.Request for another reason than malformed percent-encoding in its
// path (on Lambda, a body marked base64 that is not, or a raw control
// character in the path or query): 400, with details that say which.
func WriteBadEvent(w http.ResponseWriter, details string) {
	writeJSON(w, http.StatusBadRequest, errorBody{
		Code:      uds.CodeInvalid,
		Error:     "Bad request",
		Details:   details,
		Timestamp: now(),
	})
}

// WriteInternalError answers a request its host failed to serve (a panic
// outside the API's handlers): 500, saying nothing of why.
func WriteInternalError(w http.ResponseWriter) {
	writeJSON(w, http.StatusInternalServerError, errorBody{Code: uds.CodeInternal, Error: "Internal server error", Timestamp: now()})
}

// WriteBadURL answers a request whose URL cannot even be parsed (malformed
// percent-encoding) with the same 400 body as every other invalid input.
// Hosts call it when they cannot build an *http.Request at all.
func WriteBadURL(w http.ResponseWriter, path string) {
	writeJSON(w, http.StatusBadRequest, errorBody{
		Code:      uds.CodeInvalid,
		Error:     badURLError,
		Details:   "malformed percent-encoding in " + strconv.Quote(path),
		Timestamp: now(),
	})
}
