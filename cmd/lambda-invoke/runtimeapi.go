package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The subset of the Lambda Runtime API (version 2018-06-01) that a custom
// runtime such as aws-lambda-go uses, plus the two Extensions API calls
// aws-lambda-go makes when a function enables SIGTERM handling. See
// https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html and
// aws-lambda-go/lambda/runtime_api_client.go.
const (
	pathNext            = "/2018-06-01/runtime/invocation/next"
	pathResponse        = "/2018-06-01/runtime/invocation/{id}/response"
	pathError           = "/2018-06-01/runtime/invocation/{id}/error"
	pathInitError       = "/2018-06-01/runtime/init/error"
	pathExtRegister     = "/2020-01-01/extension/register"
	pathExtNext         = "/2020-01-01/extension/event/next"
	headerRequestID     = "Lambda-Runtime-Aws-Request-Id"
	headerDeadline      = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN   = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID       = "Lambda-Runtime-Trace-Id"
	headerErrorType     = "Lambda-Runtime-Function-Error-Type"
	trailerErrorBody    = "Lambda-Runtime-Function-Error-Body"
	headerExtensionName = "Lambda-Extension-Name"
	headerExtensionID   = "Lambda-Extension-Identifier"

	// maxResponseBytes is Lambda's limit for a buffered (non-streamed)
	// synchronous response payload.
	maxResponseBytes = 6 * 1024 * 1024
	// maxErrorBytes bounds what is read of an error report.
	maxErrorBytes = 1024 * 1024
)

// outcomeKind says how an invocation (or the init phase) ended.
type outcomeKind int

const (
	outcomeResponse  outcomeKind = iota // POST .../{id}/response
	outcomeError                        // POST .../{id}/error, or a response the API refused
	outcomeInitError                    // POST /runtime/init/error
)

func (k outcomeKind) String() string {
	switch k {
	case outcomeResponse:
		return "response"
	case outcomeError:
		return "error"
	case outcomeInitError:
		return "init-error"
	}
	return "unknown"
}

// outcome is what the runtime reported through the API.
type outcome struct {
	kind        outcomeKind
	requestID   string
	body        []byte
	contentType string
	errorType   string
	at          time.Time // when the report was fully received
}

// invocation is one event handed out (or waiting to be handed out) by /next.
type invocation struct {
	id          string
	event       []byte
	traceID     string
	deliveredAt time.Time
	delivered   bool
	reported    bool
}

// runtimeAPI serves the Runtime API for one execution environment. It is an
// http.Handler; the caller owns the listener.
type runtimeAPI struct {
	functionName string
	functionARN  string
	timeout      time.Duration // invocation timeout, for Lambda-Runtime-Deadline-Ms
	now          func() time.Time
	mux          *http.ServeMux

	queue     chan *invocation // events waiting for a /next
	outcomes  chan outcome     // reports, in arrival order
	firstNext chan struct{}    // closed at the first /next
	stop      chan struct{}    // closed by shutdown: blocked long polls return

	firstOnce sync.Once
	stopOnce  sync.Once

	mu          sync.Mutex
	firstNextAt time.Time
	invocations map[string]*invocation
}

func newRuntimeAPI(functionName, functionARN string, timeout time.Duration) *runtimeAPI {
	a := &runtimeAPI{
		functionName: functionName,
		functionARN:  functionARN,
		timeout:      timeout,
		now:          time.Now,
		mux:          http.NewServeMux(),
		queue:        make(chan *invocation, 16),
		outcomes:     make(chan outcome, 16),
		firstNext:    make(chan struct{}),
		stop:         make(chan struct{}),
		invocations:  make(map[string]*invocation),
	}
	a.mux.HandleFunc("GET "+pathNext, a.handleNext)
	a.mux.HandleFunc("POST "+pathResponse, a.handleResponse)
	a.mux.HandleFunc("POST "+pathError, a.handleError)
	a.mux.HandleFunc("POST "+pathInitError, a.handleInitError)
	a.mux.HandleFunc("POST "+pathExtRegister, a.handleExtensionRegister)
	a.mux.HandleFunc("GET "+pathExtNext, a.handleExtensionNext)
	return a
}

func (a *runtimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// enqueue makes an event available to the next /next and returns its
// request id.
func (a *runtimeAPI) enqueue(event []byte) string {
	inv := &invocation{id: newUUID(), event: event, traceID: newTraceID(a.now())}
	a.mu.Lock()
	a.invocations[inv.id] = inv
	a.mu.Unlock()
	a.queue <- inv
	return inv.id
}

// shutdown releases every long poll; later polls return at once.
func (a *runtimeAPI) shutdown() { a.stopOnce.Do(func() { close(a.stop) }) }

// firstNextTime is when the runtime first asked for work (zero if never).
func (a *runtimeAPI) firstNextTime() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.firstNextAt
}

// deliveredAt is when the event with this id was handed out (zero if not).
func (a *runtimeAPI) deliveredAt(id string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if inv := a.invocations[id]; inv != nil {
		return inv.deliveredAt
	}
	return time.Time{}
}

func (a *runtimeAPI) handleNext(w http.ResponseWriter, r *http.Request) {
	// Init ends when the runtime first asks for an event: this is the
	// instant Lambda reports as the end of "Init Duration".
	at := a.now()
	a.firstOnce.Do(func() {
		a.mu.Lock()
		a.firstNextAt = at
		a.mu.Unlock()
		close(a.firstNext)
	})

	var inv *invocation
	select {
	case inv = <-a.queue:
	case <-a.stop:
		apiError(w, http.StatusGone, "Runtime.ShuttingDown", "the execution environment is shutting down")
		return
	case <-r.Context().Done():
		return
	}

	now := a.now()
	a.mu.Lock()
	inv.delivered = true
	inv.deliveredAt = now
	a.mu.Unlock()

	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(headerRequestID, inv.id)
	h.Set(headerDeadline, strconv.FormatInt(now.Add(a.timeout).UnixMilli(), 10))
	h.Set(headerFunctionARN, a.functionARN)
	h.Set(headerTraceID, inv.traceID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(inv.event)
}

// claim marks the invocation as reported; it answers with an API error and
// returns false when the id is unknown, not yet delivered or already done.
func (a *runtimeAPI) claim(w http.ResponseWriter, id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	inv := a.invocations[id]
	switch {
	case inv == nil || !inv.delivered:
		apiError(w, http.StatusBadRequest, "InvalidRequestID", fmt.Sprintf("unknown request id %q", id))
		return false
	case inv.reported:
		apiError(w, http.StatusForbidden, "InvalidStateTransition", fmt.Sprintf("request %q already has a response or error", id))
		return false
	}
	inv.reported = true
	return true
}

func (a *runtimeAPI) handleResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := io.ReadAll(io.LimitReader(r.Body, maxResponseBytes+1))
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequest", "reading the response body: "+err.Error())
		return
	}
	if !a.claim(w, id) {
		return
	}
	if len(body) > maxResponseBytes {
		_, _ = io.Copy(io.Discard, r.Body)
		msg := fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", maxResponseBytes)
		a.report(outcome{kind: outcomeError, requestID: id, errorType: "Function.ResponseSizeTooLarge",
			body: errorJSON("Function.ResponseSizeTooLarge", msg), contentType: "application/json"})
		apiError(w, http.StatusRequestEntityTooLarge, "Function.ResponseSizeTooLarge", msg)
		return
	}
	// aws-lambda-go reports a handler whose io.Reader failed mid-stream in
	// trailers, after a partial body: that invocation is a function error.
	if et := r.Trailer.Get(headerErrorType); et != "" {
		errBody, derr := base64.StdEncoding.DecodeString(r.Trailer.Get(trailerErrorBody))
		if derr != nil || len(errBody) == 0 {
			errBody = errorJSON(et, "the function's response stream failed")
		}
		a.report(outcome{kind: outcomeError, requestID: id, errorType: et, body: errBody, contentType: "application/json"})
		acceptedStatus(w)
		return
	}
	a.report(outcome{kind: outcomeResponse, requestID: id, body: body, contentType: r.Header.Get("Content-Type")})
	acceptedStatus(w)
}

func (a *runtimeAPI) handleError(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := io.ReadAll(io.LimitReader(r.Body, maxErrorBytes))
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequest", "reading the error body: "+err.Error())
		return
	}
	if !a.claim(w, id) {
		return
	}
	a.report(outcome{kind: outcomeError, requestID: id, body: body, contentType: r.Header.Get("Content-Type"),
		errorType: errorTypeOf(r.Header.Get(headerErrorType), body, "Function.Unhandled")})
	acceptedStatus(w)
}

func (a *runtimeAPI) handleInitError(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxErrorBytes))
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequest", "reading the error body: "+err.Error())
		return
	}
	a.report(outcome{kind: outcomeInitError, body: body, contentType: r.Header.Get("Content-Type"),
		errorType: errorTypeOf(r.Header.Get(headerErrorType), body, "Runtime.InitError")})
	acceptedStatus(w)
}

// handleExtensionRegister accepts aws-lambda-go's internal
// "GoLangEnableSIGTERM" extension (lambda.WithEnableSIGTERM), so such
// functions start here as they do on Lambda.
func (a *runtimeAPI) handleExtensionRegister(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set(headerExtensionID, newUUID())
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"functionName": a.functionName, "functionVersion": "$LATEST", "handler": "bootstrap"})
}

// handleExtensionNext blocks until shutdown, then announces it.
func (a *runtimeAPI) handleExtensionNext(w http.ResponseWriter, r *http.Request) {
	select {
	case <-a.stop:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"eventType": "SHUTDOWN", "shutdownReason": "spindown", "deadlineMs": a.now().Add(500 * time.Millisecond).UnixMilli()})
	case <-r.Context().Done():
	}
}

// report records an outcome with the time it arrived. The channel is
// buffered beyond what one execution environment can produce (each
// invocation is claimed once), so this never blocks a handler.
func (a *runtimeAPI) report(o outcome) {
	o.at = a.now()
	select {
	case a.outcomes <- o:
	default:
	}
}

func acceptedStatus(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

func apiError(w http.ResponseWriter, status int, errorType, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorJSON(errorType, msg))
}

// errorJSON is the Lambda error document.
func errorJSON(errorType, msg string) []byte {
	b, _ := json.Marshal(struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}{msg, errorType})
	return b
}

// errorTypeOf picks the error type from the header, else from the body's
// errorType, else the fallback.
func errorTypeOf(header string, body []byte, fallback string) string {
	if header != "" {
		return header
	}
	var doc struct {
		Type string `json:"errorType"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.Type != "" {
		return doc.Type
	}
	return fallback
}

// newUUID returns a random (version 4) UUID, the form of Lambda request ids.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// newTraceID returns an X-Ray trace header value as Lambda passes it.
func newTraceID(now time.Time) string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", now.Unix(), h[:24], h[24:40])
}
