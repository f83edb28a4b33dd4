package httpapi

import (
	"errors"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/udsproject/uds/pkg/jsonpatch"
	"github.com/udsproject/uds/pkg/uds"
)

// The patch documents PATCH takes (docs/patch.md): a JSON Merge Patch
// (RFC 7396) or a JSON Patch (RFC 6902). Accept-Patch (RFC 5789) names
// both on GET and HEAD of an item, and on a PATCH refused for its type.
const (
	MergePatchType = "application/merge-patch+json"
	JSONPatchType  = "application/json-patch+json"
	acceptPatch    = MergePatchType + ", " + JSONPatchType
)

// errPatchType is a PATCH whose body is neither patch document.
var errPatchType = uds.NewError(uds.CodeUnsupportedMediaType, "unsupported patch document")

// patchTypeError names the type a PATCH body came in.
type patchTypeError struct{ contentType string }

func (e *patchTypeError) Error() string {
	return "a PATCH body is a JSON Merge Patch (" + MergePatchType + ") or a JSON Patch (" + JSONPatchType +
		"), not " + strconv.Quote(uds.Truncate(e.contentType, 64))
}
func (e *patchTypeError) Is(target error) bool { return target == errPatchType }
func (e *patchTypeError) Code() uds.Code       { return uds.CodeUnsupportedMediaType }

// patchDocument is a parsed patch: what it makes of an item's data.
type patchDocument func(data []byte) ([]byte, error)

// patchKind is the media type of a PATCH body, one of the two patch
// documents.
func patchKind(contentType string) (string, error) {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType != MergePatchType && mediaType != JSONPatchType {
		return "", &patchTypeError{contentType}
	}
	return mediaType, nil
}

// parsePatch reads a patch document of a kind patchKind returned. It is
// read under the first rule of every JSON body (strictjson.go): UTF-8, and
// no object that names a member twice. A patch applies such an object as
// it stands, so the item would hold what a PUT refuses, checked against
// the schema as one value and read by others as another.
func parsePatch(kind string, body []byte) (patchDocument, error) {
	if !utf8.Valid(body) {
		return nil, uds.Invalid("patch", "is not valid UTF-8")
	}
	var dup *duplicateNameError
	_, err := compactJSON(make([]byte, 0, len(body)), body)
	if errors.As(err, &dup) {
		return nil, dup.refusal("patch")
	}
	if kind == MergePatchType {
		// A merge patch is any JSON value: refused here when it is not
		// JSON (the reading above failed), before the item is read.
		if err != nil {
			return nil, uds.Invalid("patch", "is not valid JSON: a JSON Merge Patch is a JSON value, usually an object of the members to change (null removes one)")
		}
		return func(data []byte) ([]byte, error) { return jsonpatch.MergePatch(data, body) }, nil
	}
	p, err := jsonpatch.Parse(body)
	if err != nil {
		return nil, patchInvalid(err)
	}
	// Copies can double a document per operation: a result past what an
	// item holds stops there (413) instead of growing on.
	return func(data []byte) ([]byte, error) { return p.ApplyLimit(data, uds.MaxDataBytes) }, nil
}

// patchInvalid is a malformed patch document's refusal (400), naming the
// operation and member at fault; the answer's title says it is an invalid
// patch, so its details do not say it again.
func patchInvalid(err error) error {
	var invalid *jsonpatch.InvalidError
	if errors.As(err, &invalid) {
		return uds.Invalid("patch", "%s", invalid.Detail())
	}
	return uds.Invalid("patch", "%s", err.Error())
}

// patchRefusal is why a patch did not apply to the item: a test that
// failed or a path missing (409), a result too large (413), the
// document's own fault (400). An item whose data names a member twice
// where the patch goes (409) was written by a patch before parsePatch
// refused such documents: a PUT of a whole value replaces it.
func patchRefusal(err error) error {
	var conflict *jsonpatch.ConflictError
	var tooLarge *jsonpatch.TooLargeError
	var invalid *jsonpatch.InvalidError
	var document *jsonpatch.DocumentError
	switch {
	case errors.As(err, &conflict):
		return &uds.PatchConflictError{Index: conflict.Index, Op: conflict.Op, Path: conflict.Path, Reason: conflict.Reason}
	case errors.As(err, &document):
		return &uds.PatchConflictError{Index: -1, Reason: "the item's data cannot be patched: " + document.Reason +
			" where the patch goes, which a JSON value may not (RFC 7493); replace the value with a PUT"}
	case errors.As(err, &tooLarge):
		return &uds.TooLargeError{Reason: tooLarge.Error() + "; data may hold at most 1 MiB of JSON"}
	case errors.As(err, &invalid):
		return patchInvalid(err)
	}
	return err
}

// patchItem changes part of an item's data (PATCH): the patch applies to
// the item as it is when the write commits, retried on a concurrent change
// (store.Patch), so that no If-Match is needed to lose nothing. The class
// name and expiry stay the item's unless Uds-Class-Name, Uds-Ttl or
// Uds-Expires-At set them. Everything a PUT checks, a patch checks on its
// result: the size, the namespace's JSON Schema, the owner-write rule, the
// quota.
func (a *API) patchItem(w http.ResponseWriter, r *http.Request, p params) {
	key, sc, _, ok := a.itemRequest(w, r, p)
	if !ok {
		return
	}
	write := uds.Write{Key: sc.key, Subject: sc.subject, History: sc.policy.History, Indexes: sc.policy.Indexes}
	patch, err := a.readPatch(r, &write, &sc)
	if errors.Is(err, errPatchType) {
		w.Header().Set("Accept-Patch", acceptPatch)
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	keepClass := len(r.Header.Values(HeaderClassName)) == 0
	keepExpiry := r.Header.Get(HeaderTTL) == "" && r.Header.Get(HeaderExpiresAt) == ""
	a.applyPatch(w, r, write, a.patcher(&sc, patch, keepClass, keepExpiry))
}

// patcher is what a patch makes of an item (uds.Patcher): the document
// applied to its data as it is, its class name and expiry kept unless the
// request sets them (keepClass, keepExpiry), the result checked as a PUT's
// value is.
func (a *API) patcher(sc *scope, patch patchDocument, keepClass, keepExpiry bool) uds.Patcher {
	return func(current *uds.Item, w *uds.Write) error {
		data, err := patch(current.Data)
		if err != nil {
			return patchRefusal(err)
		}
		if err := checkDataValue(data); err != nil {
			return err
		}
		w.Data = data
		if keepClass {
			w.ClassName = current.ClassName
		}
		if keepExpiry {
			w.ExpiresAt = current.ExpiresAt
		}
		return a.checkValue(sc, w)
	}
}

// applyPatch patches one item, for PATCH and a batch's PATCH, and answers
// as PATCH does.
func (a *API) applyPatch(w http.ResponseWriter, r *http.Request, write uds.Write, patch uds.Patcher) {
	it, err := a.stores.Items.Patch(r.Context(), write, patch)
	if err != nil {
		a.fail(w, r, err, &write.Key)
		return
	}
	answerWritten(w, &it, http.StatusOK)
}

// readPatch reads a PATCH request: its If-Match, its patch document, and
// the fields its headers set, into write.
func (a *API) readPatch(r *http.Request, write *uds.Write, sc *scope) (patchDocument, error) {
	pre, err := ifMatch(r)
	if err != nil {
		return nil, err
	}
	write.IfMatch = sc.guard(pre)
	kind, err := patchKind(r.Header.Get(headerContentType))
	if err != nil {
		return nil, err
	}
	body, err := readBody(r, maxBodyBytes, "the patch document exceeds 2 MiB")
	if err != nil {
		return nil, err
	}
	patch, err := parsePatch(kind, body)
	if err != nil {
		return nil, err
	}
	if err := readHeaderFields(r, write, a.now()); err != nil {
		return nil, err
	}
	return patch, sc.writable(a.now())
}
