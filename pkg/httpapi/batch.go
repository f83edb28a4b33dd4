package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/udsproject/uds/internal/safe"
	"github.com/udsproject/uds/pkg/uds"
)

// BatchStore reads many items at once and writes a batch all or none.
type BatchStore interface {
	GetMany(context.Context, []uds.Key) ([]uds.Item, []error)
	WriteAtomic(ctx context.Context, ops []uds.BatchOp) ([]uds.Item, error)
}

// maxBatchBodyBytes bounds a batch request (Lambda takes at most 6 MB).
const maxBatchBodyBytes = 6 << 20

// batchWorkers is how many operations of a non-atomic batch run at once.
const batchWorkers = 8

type batchBody struct {
	Atomic     bool          `json:"atomic"`
	Operations []batchOpJSON `json:"operations"`
}

type batchOpJSON struct {
	Method      string          `json:"method"`
	Path        string          `json:"path"`
	Body        json.RawMessage `json:"body"`
	IfMatch     string          `json:"ifMatch"`
	IfNoneMatch string          `json:"ifNoneMatch"`
	// ContentType is a PATCH's patch document type, a merge patch when
	// absent.
	ContentType string `json:"contentType"`
}

// batchResult is one operation's answer: what the single-item route would
// have answered.
type batchResult struct {
	Status int             `json:"status"`
	ETag   string          `json:"etag,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"`
	// BodyOmitted marks a write whose answer body did not fit the
	// response; the write happened (see Status and ETag).
	BodyOmitted bool `json:"bodyOmitted,omitempty"`
}

type batchJSON struct {
	Results []batchResult `json:"results"`
}

// batchOp is a checked operation.
type batchOp struct {
	uds.BatchOp
	// version is the version a GET reads (path ?version=V) or a POST
	// restores (path ?restore=V); noVersion when the path names none.
	version int64
	// ifNoneMatch holds a GET's If-None-Match value, if it has one.
	ifNoneMatch []string
	// patch is a PATCH's patch document.
	patch patchDocument
	// scope is the operation's namespace policy, applied
	// (scopeOperation): a version read and a restore need it when they
	// run.
	scope scope
}

// restores reports whether op is a restore: POST {item}?restore=V.
func (op *batchOp) restores() bool {
	return op.Method == http.MethodPost && op.version != noVersion
}

// batch serves POST .../data/{app}/batch: many item operations in one
// request, applied one by one (each answered as its own route would), or
// atomically, all or none. Every operation is checked before anything is
// written; a malformed one is a 400 naming its index.
func (a *API) batch(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	body, err := readBody(r, maxBatchBodyBytes, "a batch request takes at most 6 MB")
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	b, err := decodeBatch(body)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	subject, err := a.subject(r)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	ops, err := checkBatch(app, subject, &b, a.now())
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	observationFrom(r.Context()).noteBatch(len(ops))
	if !a.admit(w, r, p, len(ops)) {
		return
	}
	// Each operation meets its namespace's policy as on its own route.
	refused := make([]error, len(ops))
	for i := range ops {
		// A panic checking one operation refuses that one (500), not the
		// whole batch.
		if err := safe.Call(func() { refused[i] = a.scopeOperation(r.Context(), &ops[i]) }); err != nil {
			refused[i] = err
		}
	}
	if b.Atomic {
		for i, err := range refused {
			if err == nil && ops[i].restores() {
				// The version a restore writes back is read first; the
				// batch then makes it an update, or a create when the
				// item was deleted.
				err = a.prepareRestore(r.Context(), &ops[i])
			}
			if err != nil {
				a.fail(w, r, &uds.BatchError{Index: i, Err: err}, &ops[i].Write.Key)
				return
			}
		}
		a.batchAtomic(w, r, ops)
		return
	}
	a.batchOneByOne(w, r, ops, refused)
}

// batchOneByOne applies every operation on its own and answers each slot as
// the operation's route would; a slot whose operation its namespace's
// policy refused answers that refusal.
func (a *API) batchOneByOne(w http.ResponseWriter, r *http.Request, ops []batchOp, refused []error) {
	results := make([]batchResult, len(ops))
	// Reads of items go out together in one BatchGetItem; writes, and
	// reads of kept versions, run as their routes run them, with the
	// operations already checked.
	var reads []int
	var keys []uds.Key
	queued := make([]bool, len(ops))
	for i, op := range ops {
		switch {
		case refused[i] != nil:
			results[i] = a.record(r, func(w http.ResponseWriter) { a.fail(w, r, refused[i], &op.Write.Key) })
		case op.Method == http.MethodGet && op.version == noVersion:
			reads, keys = append(reads, i), append(keys, op.Write.Key)
		default:
			queued[i] = true
		}
	}
	if len(keys) > 0 {
		items, errs := a.stores.Batches.GetMany(r.Context(), keys)
		for j, i := range reads {
			results[i] = a.record(r, func(w http.ResponseWriter) { a.answerGet(w, r, keys[j], items[j], errs[j], ops[i].ifNoneMatch, false) })
		}
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(batchWorkers, len(results)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = a.record(r, func(w http.ResponseWriter) { a.applyOperation(w, r, &ops[i]) })
			}
		}()
	}
	for i := range ops {
		if queued[i] {
			next <- i
		}
	}
	close(next)
	wg.Wait()
	fitResults(results, func(i int) bool { return ops[i].Method == http.MethodGet })
	writeJSON(w, http.StatusOK, batchJSON{Results: results})
}

// applyOperation applies one checked write, or reads one kept version, of
// a non-atomic batch as its single-item route would.
func (a *API) applyOperation(w http.ResponseWriter, r *http.Request, op *batchOp) {
	switch {
	case op.Method == http.MethodGet:
		it, err := a.version(r.Context(), &op.scope, op.version)
		a.answerGet(w, r, op.Write.Key, it, err, op.ifNoneMatch, false)
	case op.restores():
		a.answerRestore(w, r, op.Write.Key, &op.scope, op.Write.IfMatch, op.version)
	case op.Method == http.MethodPost:
		a.applyWrite(w, r, op.Write, http.StatusCreated)
	case op.Method == http.MethodPut:
		a.applyWrite(w, r, op.Write, http.StatusOK)
	case op.Method == http.MethodPatch:
		a.applyPatch(w, r, op.Write, op.patcher(a))
	default:
		a.applyDelete(w, r, op.Write)
	}
}

// decodeBatch decodes a batch body, whose operations checkBatch then
// checks. The two are apart because the handler names the caller between
// them: a body that is not a batch is refused before the caller's identity
// is looked at.
func decodeBatch(body []byte) (batchBody, error) {
	var b batchBody
	err := decodeBody(body, &b, `a JSON object of the form {"atomic": false, "operations": [...]}`)
	return b, err
}

// checkBatch validates every operation and returns them parsed; expiries
// are taken against now.
func checkBatch(app, subject string, b *batchBody, now time.Time) ([]batchOp, error) {
	limit := uds.MaxBatchOps
	if b.Atomic {
		limit = uds.MaxAtomicOps
	}
	switch n := len(b.Operations); {
	case n == 0:
		return nil, uds.Invalid("operations", "must hold at least one operation")
	case n > limit:
		return nil, uds.Invalid("operations", "holds %d operations; at most %d fit a batch with \"atomic\": %v", n, limit, b.Atomic)
	}
	var ops []batchOp
	seen := map[uds.Key]int{}
	for i, o := range b.Operations {
		field := func(f string) string { return "operations[" + strconv.Itoa(i) + "]." + f }
		op, err := checkOperation(app, subject, o, b.Atomic, now)
		if err != nil {
			var inv *uds.InvalidError
			if errors.As(err, &inv) {
				return nil, &uds.InvalidError{Field: field(inv.Field), Reason: inv.Reason}
			}
			var big *uds.TooLargeError
			if errors.As(err, &big) {
				return nil, &uds.TooLargeError{Reason: field("body") + ": " + big.Reason}
			}
			return nil, err
		}
		if j, dup := seen[op.Write.Key]; dup && b.Atomic {
			return nil, uds.Invalid(field("path"), "names the same item as operations[%d]; an atomic batch writes each item once", j)
		}
		seen[op.Write.Key] = i
		ops = append(ops, op)
	}
	return ops, nil
}

// checkOperation validates one operation as its single-item route would.
func checkOperation(app, subject string, o batchOpJSON, atomic bool, now time.Time) (batchOp, error) {
	op := batchOp{BatchOp: uds.BatchOp{Method: strings.ToUpper(o.Method)}, version: noVersion}
	switch op.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	case http.MethodGet:
		if atomic {
			return op, uds.Invalid("method", "GET has no place in an atomic batch, which writes")
		}
	default:
		return op, uds.Invalid("method", "must be POST, PUT, PATCH, DELETE or GET, got %q", o.Method)
	}
	path, rawQuery, _ := strings.Cut(o.Path, "?")
	var err error
	if op.version, err = operationVersion(op.Method, rawQuery); err != nil {
		return op, err
	}
	// As on the routes, one slash may end the path (and one start it,
	// since the path is relative to the app); any other is part of it.
	segs := strings.Split(strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/"), "/")
	if len(segs) < 2 {
		return op, uds.Invalid("path", "must be {namespace}/{id} or {namespace}/{id}/{sortKey}, got %q", o.Path)
	}
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil {
			return op, uds.Invalid("path", "malformed percent-encoding in %q", s)
		}
		segs[i] = u
	}
	pp := params{app: app, namespace: segs[0], id: segs[1]}
	if len(segs) > 2 {
		pp.sortKey, pp.listItem = strings.Join(segs[2:], "/"), true
	}
	key, err := itemKey(pp)
	if err != nil {
		return op, err
	}
	op.Write = uds.Write{Key: key, Subject: subject}
	hasBody := len(o.Body) > 0 && string(o.Body) != "null"
	switch {
	case op.restores() && hasBody:
		return op, uds.Invalid("body", "has no place in a restore, which writes the version's own data and className")
	case (op.Method == http.MethodPost && !op.restores() || op.Method == http.MethodPut || op.Method == http.MethodPatch) && !hasBody:
		return op, uds.Invalid("body", "is required for %s", op.Method)
	case (op.Method == http.MethodGet || op.Method == http.MethodDelete) && hasBody:
		return op, uds.Invalid("body", "has no place in a %s", op.Method)
	case op.Method == http.MethodPatch:
		if op.patch, err = operationPatch(o); err != nil {
			return op, err
		}
	case o.ContentType != "":
		return op, uds.Invalid("contentType", "applies to PATCH, whose body is a patch document")
	case hasBody:
		if err := parseWrite(o.Body, &op.Write, now); err != nil {
			return op, err
		}
	}
	if o.IfMatch != "" {
		if op.Method != http.MethodPut && op.Method != http.MethodPatch && op.Method != http.MethodDelete && !op.restores() {
			return op, uds.Invalid("ifMatch", "applies to PUT, PATCH, DELETE and a restore (POST with ?restore=V)")
		}
		if op.Write.IfMatch, err = parseIfMatch(o.IfMatch); err != nil {
			return op, err
		}
	}
	if o.IfNoneMatch != "" {
		if op.Method != http.MethodGet {
			return op, uds.Invalid("ifNoneMatch", "applies to GET")
		}
		if _, err := entityTags(o.IfNoneMatch); err != nil {
			return op, uds.Invalid("ifNoneMatch", "%s", err)
		}
		op.ifNoneMatch = []string{o.IfNoneMatch}
	}
	return op, nil
}

// operationPatch reads a PATCH operation's patch document: its body, of
// the type contentType names, a JSON Merge Patch when it names none. A
// batch carries no headers, so a patch keeps the item's class name and
// expiry.
func operationPatch(o batchOpJSON) (patchDocument, error) {
	kind := MergePatchType
	if o.ContentType != "" {
		var err error
		if kind, err = patchKind(o.ContentType); err != nil {
			return nil, uds.Invalid("contentType", "must be %s (the default) or %s, got %q", MergePatchType, JSONPatchType, uds.Truncate(o.ContentType, 64))
		}
	}
	patch, err := parsePatch(kind, o.Body)
	var inv *uds.InvalidError
	if errors.As(err, &inv) {
		return nil, uds.Invalid("body", "%s", inv.Reason)
	}
	return patch, err
}

// patcher is a PATCH operation's uds.Patcher, under its namespace's
// policy.
func (op *batchOp) patcher(a *API) uds.Patcher {
	return a.patcher(&op.scope, op.patch, true, true)
}

// operationVersion reads the query an operation's path may carry, as the
// item routes take it: the version a GET reads (?version=V) or a POST
// restores (?restore=V); noVersion when there is none. Nothing else is
// taken.
func operationVersion(method, rawQuery string) (int64, error) {
	if rawQuery == "" {
		return noVersion, nil
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return noVersion, uds.Invalid("path", "has a malformed query string: %s", strings.TrimPrefix(err.Error(), "invalid URL escape "))
	}
	takes := map[string]string{http.MethodGet: "version", http.MethodPost: "restore"}[method]
	for name, values := range q {
		switch {
		case takes == "" || name != takes:
			return noVersion, uds.Invalid("path", "has query parameter %q; an operation's path takes ?version=V on a GET and ?restore=V on a POST, nothing else", uds.Truncate(name, 64))
		case len(values) > 1:
			return noVersion, uds.Invalid("path", "gives ?%s %d times", name, len(values))
		}
	}
	if len(q) == 0 {
		return noVersion, nil
	}
	v, ok := parseVersion(q.Get(takes))
	if !ok {
		return noVersion, uds.Invalid("path", "?%s= %s, got %q", takes, versionReason, uds.Truncate(q.Get(takes), 64))
	}
	return v, nil
}

// fitResults keeps the batch answer within Lambda's payload: past the
// budget, a read answers 413 (read that item on its own) and a write keeps
// its status and ETag without its body.
func fitResults(results []batchResult, isRead func(int) bool) {
	total := 0
	for i := range results {
		total += rawPayloadBytes(results[i].Body) + 64
		if total <= maxPageBytes || results[i].Body == nil {
			continue
		}
		if isRead(i) {
			results[i] = batchResult{Status: http.StatusRequestEntityTooLarge, Body: json.RawMessage(fmt.Sprintf(
				`{"code":"too_large","error":"Payload too large","details":"the batch answer would pass Lambda's 6 MB; read this item on its own","timestamp":%q}`, now()))}
			continue
		}
		results[i].Body, results[i].BodyOmitted = nil, true
	}
}

// record runs answer against a recorder and returns what it answered, as
// a batch slot. A panic while answering is that slot's 500: the batch's
// workers run in goroutines of their own, where a panic would otherwise
// end the process.
func (a *API) record(r *http.Request, answer func(http.ResponseWriter)) batchResult {
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	if err := safe.Call(func() { answer(rec) }); err != nil {
		rec = &recorder{header: http.Header{}, status: http.StatusOK}
		a.fail(rec, r, err, nil)
	}
	res := batchResult{Status: rec.status, ETag: rec.header.Get(headerETag)}
	if b := bytes.TrimSpace(rec.body.Bytes()); len(b) > 0 {
		res.Body = b
	}
	return res
}

// recorder captures an answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(status int)      { r.status = status }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// batchAtomic applies the writes all or none.
func (a *API) batchAtomic(w http.ResponseWriter, r *http.Request, ops []batchOp) {
	writes := make([]uds.BatchOp, len(ops))
	for i := range ops {
		writes[i] = ops[i].BatchOp
		if ops[i].Method == http.MethodPatch {
			writes[i].Patch = ops[i].patcher(a)
		}
	}
	items, err := a.stores.Batches.WriteAtomic(r.Context(), writes) // sets each restore's Method to the write it became
	if err != nil {
		var be *uds.BatchError
		if errors.As(err, &be) {
			a.fail(w, r, err, &ops[be.Index].Write.Key)
			return
		}
		a.fail(w, r, err, nil)
		return
	}
	results := make([]batchResult, len(ops))
	for i := range ops {
		switch writes[i].Method {
		case http.MethodDelete:
			results[i] = batchResult{Status: http.StatusNoContent}
		case http.MethodPost:
			results[i] = a.record(r, func(w http.ResponseWriter) { answerWritten(w, &items[i], http.StatusCreated) })
		default:
			results[i] = a.record(r, func(w http.ResponseWriter) { answerWritten(w, &items[i], http.StatusOK) })
		}
	}
	fitResults(results, func(int) bool { return false })
	writeJSON(w, http.StatusOK, batchJSON{Results: results})
}
