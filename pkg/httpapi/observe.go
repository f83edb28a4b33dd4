package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/internal/lambdalog"
	"github.com/udsproject/uds/internal/safe"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// unmatched is the route of requests no route serves (404 and 405).
const unmatched = "unmatched"

// observation is what one request's log line and metrics say beyond what
// the response shows: filled by the handler (and, for batches, by its
// parallel operations) while it runs.
type observation struct {
	mu sync.Mutex
	// quotaRefusals and conditionalFailures (409 conflicts and 412
	// preconditions) count refused writes: one for a single-item route,
	// one per refused operation of a batch.
	quotaRefusals, conditionalFailures int
	// errorKind is the error body's "error" of the request's own answer
	// (for a batch, the first operation's that failed).
	errorKind string
	// cause is the first internal error behind a 5xx, for the log only.
	cause error
	// deleted counts a delete-all's items; batchOps a batch's operations.
	deleted, batchOps int
	// imported, skipped, expired and conflicts count an import's records
	// by what became of them; exported counts an export page's records.
	imported, skipped, expired, conflicts, exported int
	// rateLimiterOpen is set when a rate limit's state could not be
	// reached and the request went through unchecked; rateLimiterCause,
	// on the request that found it out of reach, says why (its line is a
	// WARN).
	rateLimiterOpen  bool
	rateLimiterCause error
}

type observationKey struct{}

func observationFrom(ctx context.Context) *observation {
	ob, _ := ctx.Value(observationKey{}).(*observation)
	return ob
}

// noteError records an answered error.
func (ob *observation) noteError(status int, kind string, err error) {
	if ob == nil {
		return
	}
	ob.mu.Lock()
	defer ob.mu.Unlock()
	switch {
	case errors.Is(err, uds.ErrQuotaExceeded):
		ob.quotaRefusals++
	case errors.Is(err, uds.ErrConflict) || errors.Is(err, uds.ErrPrecondition):
		ob.conditionalFailures++
	}
	if ob.errorKind == "" {
		ob.errorKind = kind
	}
	if status >= 500 && ob.cause == nil {
		ob.cause = err
	}
}

func (ob *observation) noteDeleted(n int) {
	if ob != nil {
		ob.mu.Lock()
		ob.deleted = n
		ob.mu.Unlock()
	}
}

// noteRateLimiterOpen records that a rate limit let the request through
// unchecked (package ratelimit's fail-open period), and why, when this
// request found its state out of reach.
func (ob *observation) noteRateLimiterOpen(cause error) {
	if ob == nil {
		return
	}
	ob.mu.Lock()
	ob.rateLimiterOpen = true
	if cause != nil {
		ob.rateLimiterCause = cause
	}
	ob.mu.Unlock()
}

func (ob *observation) noteBatch(n int) {
	if ob != nil {
		ob.mu.Lock()
		ob.batchOps = n
		ob.mu.Unlock()
	}
}

// noteImport records what an import did with its records.
func (ob *observation) noteImport(imported, skipped, expired, conflicts int) {
	if ob != nil {
		ob.mu.Lock()
		ob.imported, ob.skipped, ob.expired, ob.conflicts = imported, skipped, expired, conflicts
		ob.mu.Unlock()
	}
}

func (ob *observation) noteExport(n int) {
	if ob != nil {
		ob.mu.Lock()
		ob.exported = n
		ob.mu.Unlock()
	}
}

// observed is the response writer of an observed request: it keeps the
// status and counts the bytes written.
type observed struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (o *observed) WriteHeader(status int) {
	if o.status == 0 {
		o.status = status
	}
	o.ResponseWriter.WriteHeader(status)
}

func (o *observed) Write(p []byte) (int, error) {
	if o.status == 0 {
		o.status = http.StatusOK
	}
	n, err := o.ResponseWriter.Write(p)
	o.bytes += n
	return n, err
}

// countingBody counts the bytes of the request body the handler reads.
type countingBody struct {
	io.ReadCloser
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += n
	return n, err
}

// requestState is everything a request's observation keeps, in one
// allocation: its DynamoDB calls, what the handler noted, and the counting
// wrappers of its body and response.
type requestState struct {
	calls store.CallStats
	ob    observation
	body  countingBody
	w     observed
	cw    compressor
}

// serveObserved runs d's handler for a request and then writes its log
// line and its metrics.
func (a *API) serveObserved(w http.ResponseWriter, r *http.Request, d dispatched) {
	start := time.Now()
	st := &requestState{}
	ctx := st.calls.Context(r.Context())
	ctx = context.WithValue(ctx, observationKey{}, &st.ob)
	st.w.ResponseWriter = w
	// No answer is ever taken for another type than it says: a browser
	// that sniffed a JSON answer could render it as a page.
	w.Header()[headerNoSniff] = noSniff
	if d.handler != nil {
		// A handler runs within the request's time budget (serve).
		var cancel context.CancelFunc
		ctx, cancel = withBudget(ctx, a.request, answerMargin)
		defer cancel()
	}
	r = r.WithContext(ctx)
	// The body is counted on the copy: the server's own request keeps
	// its body, which it reads past what the handler read only as far as
	// it decides to (net/http reads up to 256 KB of a body it does not
	// know before it answers, and so would wait for bytes a refusal
	// never needed, and say 100 Continue for them).
	if r.Body != nil && r.Body != http.NoBody {
		st.body.ReadCloser = r.Body
		r.Body = &st.body
	}
	// A HEAD's answer is its GET's, headers included: the compressor
	// decides its encoding from the body the GET handler writes, and the
	// body goes no further.
	var sink http.ResponseWriter = &st.w
	if d.bodiless {
		sink = bodiless{&st.w}
	}
	st.cw = compressor{ResponseWriter: sink, acceptsGzip: acceptsGzip(r)}
	if err := requestCoding(r); err != nil {
		a.fail(&st.cw, r, err, nil)
	} else if err := safe.Call(func() { a.serve(&st.cw, r, d) }); err != nil {
		a.failPanic(st, r, err)
	}
	st.cw.finish()
	if st.w.status == 0 {
		st.w.status = http.StatusOK
	}
	// The declared length counts a body the handler refused unread.
	bytesIn := max(st.body.n, int(r.ContentLength))
	a.report(r, d.route, d.params, &st.w, bytesIn, time.Since(start), st.calls.Snapshot(), &st.ob)
}

// failPanic answers a request whose handler panicked: 500, as any internal
// failure, with the panic and its stack in the request's ERROR line. An
// answer already under way cannot change its status; it is cut short, and
// the line and metrics count it as the 500 it is.
func (a *API) failPanic(st *requestState, r *http.Request, err error) {
	if st.w.status == 0 {
		a.fail(&st.cw, r, err, nil)
		return
	}
	st.ob.noteError(http.StatusInternalServerError, "Internal server error", err)
	st.w.status = http.StatusInternalServerError
}

// ServeBadURL answers, logs and measures a request whose URL cannot even be
// parsed (malformed percent-encoding), which hosts cannot turn into an
// *http.Request: 400, as WriteBadURL answers.
func (a *API) ServeBadURL(ctx context.Context, w http.ResponseWriter, method, path string, header http.Header) {
	r := (&http.Request{Method: method, URL: &url.URL{Path: path}, Header: header, Body: http.NoBody}).WithContext(ctx)
	a.serveObserved(w, r, dispatched{route: unmatched, badURL: true})
}

// report writes one request's log line (INFO; ERROR when a 5xx was
// answered, with the internal error) and its EMF record.
func (a *API) report(r *http.Request, route string, p params, ow *observed, bytesIn int, took time.Duration, c store.Calls, ob *observation) {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	ms := emf.DurationMs(took)
	level := slog.LevelInfo
	switch {
	case ow.status >= 500 || ob.cause != nil:
		level = slog.LevelError
	case ob.rateLimiterCause != nil:
		level = slog.LevelWarn
	}
	if ctx := r.Context(); a.log.Enabled(ctx, level) {
		line := requestLine{r: r, route: route, p: p, status: ow.status, bytesIn: bytesIn, bytesOut: ow.bytes, ms: ms, c: c, ob: ob}
		line.subject, _ = a.subject(r)
		if a.requestID != nil {
			line.idKey, line.id = a.requestID(r)
		}
		if a.lambdaLog != nil {
			l := lambdalog.Start(time.Now(), level, "request")
			line.fields(l)
			_ = a.lambdaLog.Write(ctx, l)
		} else {
			line.logTo(ctx, a.log.Handler(), level)
		}
	}
	a.writeMetrics(route, ow.status, ms, c, ob)
}

// requestLine is what a request's log line says.
type requestLine struct {
	r                         *http.Request
	route, subject, idKey, id string
	p                         params
	status, bytesIn, bytesOut int
	ms                        float64
	c                         store.Calls
	ob                        *observation
}

// lineFields takes a request line's fields in their order: a line
// encoded directly (*lambdalog.Line), or slog attributes (*attrLine).
type lineFields interface {
	String(key, v string)
	Int(key string, n int)
	Float(key string, f float64)
}

// fields gives the line's fields to f. The route names the method and the
// pattern; an unmatched request's line gives its method and path instead.
// What a request did not do (zero retries, throttles, capacity units,
// counts) is left out: every field costs encoding time on every request.
func (l *requestLine) fields(f lineFields) {
	c, ob := l.c, l.ob
	f.String("route", l.route)
	if l.route == unmatched {
		f.String("method", l.r.Method)
		f.String("path", l.r.URL.Path)
	}
	f.Int("status", l.status)
	f.Float("latencyMs", l.ms)
	f.String("app", l.p.app)
	f.String("namespace", l.p.namespace)
	f.String("subject", l.subject)
	f.Int("bytesIn", l.bytesIn)
	f.Int("bytesOut", l.bytesOut)
	f.Int("dynamodbCalls", c.Calls)
	if c.Retries > 0 || c.Throttles > 0 {
		f.Int("dynamodbRetries", c.Retries)
		f.Int("dynamodbThrottles", c.Throttles)
	}
	if c.ReadUnits > 0 {
		f.Float("readUnits", c.ReadUnits)
	}
	if c.WriteUnits > 0 {
		f.Float("writeUnits", c.WriteUnits)
	}
	if ob.quotaRefusals > 0 {
		f.String("quota", "refused")
		f.Int("quotaRefusals", ob.quotaRefusals)
	}
	if ob.rateLimiterOpen {
		f.String("rateLimiter", "open")
	}
	if ob.rateLimiterCause != nil {
		f.String("rateLimiterCause", ob.rateLimiterCause.Error())
	}
	if ob.errorKind != "" {
		f.String("error", ob.errorKind)
	}
	if ob.cause != nil {
		f.String("cause", ob.cause.Error())
		var p *safe.PanicError
		if errors.As(ob.cause, &p) {
			f.String("stack", string(p.Stack))
		}
	}
	for _, n := range [...]struct {
		key string
		n   int
	}{{"deleted", ob.deleted}, {"batchOps", ob.batchOps}, {"imported", ob.imported}, {"skipped", ob.skipped},
		{"expired", ob.expired}, {"conflicts", ob.conflicts}, {"exported", ob.exported}} {
		if n.n != 0 {
			f.Int(n.key, n.n)
		}
	}
	if trace := l.r.Header.Get("X-Amzn-Trace-Id"); trace != "" {
		f.String("traceId", trace)
	}
	if l.id != "" {
		f.String(l.idKey, l.id)
	}
}

// logTo hands the line to a slog handler (the local server's, or
// Lambda's in its text format). The fields go as one group without a key,
// which handlers inline: a record keeps up to five attributes and
// allocates for more. The record goes to the handler directly, without
// the caller's program counter that Logger.LogAttrs looks up for every
// line (no handler of UDS's adds the source).
func (l *requestLine) logTo(ctx context.Context, h slog.Handler, level slog.Level) {
	al := attrLines.Get().(*attrLine)
	defer attrLines.Put(al)
	al.attrs = al.attrs[:0]
	l.fields(al)
	rec := slog.NewRecord(time.Now(), level, "request", 0)
	rec.AddAttrs(slog.Attr{Value: slog.GroupValue(al.attrs...)})
	_ = h.Handle(ctx, rec)
}

// attrLine collects a line's fields as slog attributes.
type attrLine struct {
	attrs []slog.Attr
}

func (al *attrLine) String(key, v string)        { al.attrs = append(al.attrs, slog.String(key, v)) }
func (al *attrLine) Int(key string, n int)       { al.attrs = append(al.attrs, slog.Int(key, n)) }
func (al *attrLine) Float(key string, f float64) { al.attrs = append(al.attrs, slog.Float64(key, f)) }

// attrLines recycles the attribute slices of request lines: handlers do
// not keep them past Handle.
var attrLines = sync.Pool{New: func() any { return &attrLine{attrs: make([]slog.Attr, 0, 24)} }}

// writeMetrics writes the request's EMF record: the function's few
// metrics (functionLayouts), or, where the deployment asks for them, the
// per-route and per-status-class detail too (routeLayouts). Apps and
// subjects are in the log line, never in dimensions.
func (a *API) writeMetrics(route string, status int, ms float64, c store.Calls, ob *observation) {
	if a.metrics == nil {
		return
	}
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	// A server error is a 5xx answer, or a batch whose operation was
	// answered 5xx (a panic recovered in one of them among others): the
	// failure is the server's whatever the batch's own status.
	clientError, serverError := flag(status >= 400 && status < 500), flag(status >= 500 || ob.cause != nil)
	rateLimited := status == http.StatusTooManyRequests
	dims := [...]emf.Dimension{{Name: "function", Value: a.function}, {Name: "route", Value: route},
		{Name: "statusClass", Value: statusClasses[min(status/100, 5)]}}
	var buf [18]float64 // room for every layout's values
	if !a.routeMetrics {
		values := append(buf[:0], 1, ms, clientError, serverError, float64(c.Throttles))
		layout := functionLayouts[0]
		// RateLimited is written by the requests it counts only: a
		// deployment whose rate limits refuse nothing pays for no series.
		if rateLimited {
			layout, values = functionLayouts[1], append(values, 1)
		}
		_ = a.metrics.Write(layout, dims[:1], values)
		return
	}
	values := append(buf[:0],
		1, ms, clientError, serverError, // per route
		1, // per status class
		// An import's conflicts are writes refused because the key holds
		// another item, as a 409 is: they are conditional failures too.
		float64(ob.quotaRefusals), float64(ob.conditionalFailures+ob.conflicts), float64(c.Calls), float64(c.Retries),
		float64(c.Throttles), c.ReadUnits, c.WriteUnits,
		flag(rateLimited), flag(ob.rateLimiterOpen))
	layout := routeLayouts[0]
	if ob.deleted > 0 {
		layout, values = routeLayouts[1], append(values, float64(ob.deleted))
	}
	if ob.batchOps > 0 {
		layout, values = routeLayouts[2], append(values, float64(ob.batchOps))
	}
	_ = a.metrics.Write(layout, dims[:], values)
}

// The request metrics every layout has, per function: the alarms and the
// dashboard read them whichever layout a deployment writes.
var (
	requestsMetric          = emf.Metric{Name: "Requests", Unit: emf.Count}
	latencyMetric           = emf.Metric{Name: "Latency", Unit: emf.Milliseconds}
	clientErrorsMetric      = emf.Metric{Name: "ClientErrors", Unit: emf.Count}
	serverErrorsMetric      = emf.Metric{Name: "ServerErrors", Unit: emf.Count}
	dynamoDBThrottlesMetric = emf.Metric{Name: "DynamoDBThrottles", Unit: emf.Count}
	// RateLimited counts requests refused 429.
	rateLimitedMetric = emf.Metric{Name: "RateLimited", Unit: emf.Count}
)

// functionLayout is a request's EMF layout by default: per function only,
// its requests, latency, 4xx, 5xx and DynamoDB throttles (and extra), so
// that a deployment's series are a few per function whatever its routes.
// What else a request did is in its log line, which the dashboard queries.
func functionLayout(extra ...emf.Metric) *emf.Layout {
	return emf.NewLayout(emf.Directive{DimensionSets: [][]string{{"function"}}, Metrics: append([]emf.Metric{
		requestsMetric, latencyMetric, clientErrorsMetric, serverErrorsMetric, dynamoDBThrottlesMetric,
	}, extra...)})
}

// routeMetrics are the per-function metrics of every request where the
// deployment asks for per-route metrics.
var routeMetrics = []emf.Metric{
	{Name: "QuotaRefusals", Unit: emf.Count}, {Name: "ConditionalFailures", Unit: emf.Count},
	{Name: "DynamoDBCalls", Unit: emf.Count}, {Name: "DynamoDBRetries", Unit: emf.Count},
	dynamoDBThrottlesMetric, {Name: "ReadCapacityUnits", Unit: emf.None},
	{Name: "WriteCapacityUnits", Unit: emf.None},
	// RateLimiterOpen counts the requests a rate limit let through
	// unchecked because its state was out of reach.
	rateLimitedMetric, {Name: "RateLimiterOpen", Unit: emf.Count},
}

// routeLayout is a request's EMF layout where the deployment asks for
// per-route metrics: per route and per function (requests, latency, 4xx,
// 5xx), per status class (requests), per function (routeMetrics and
// extra).
func routeLayout(extra ...emf.Metric) *emf.Layout {
	return emf.NewLayout(
		emf.Directive{DimensionSets: [][]string{{"function", "route"}, {"function"}}, Metrics: []emf.Metric{
			requestsMetric, latencyMetric, clientErrorsMetric, serverErrorsMetric,
		}},
		emf.Directive{DimensionSets: [][]string{{"function", "statusClass"}}, Metrics: []emf.Metric{{Name: "StatusClassRequests", Unit: emf.Count}}},
		emf.Directive{DimensionSets: [][]string{{"function"}}, Metrics: append(slices.Clip(routeMetrics), extra...)},
	)
}

var (
	// functionLayouts: every request; a request refused 429.
	functionLayouts = [...]*emf.Layout{functionLayout(), functionLayout(rateLimitedMetric)}
	// routeLayouts: every request; a delete-all (items deleted); a batch
	// (its operations).
	routeLayouts = [...]*emf.Layout{
		routeLayout(),
		routeLayout(emf.Metric{Name: "DeleteAllItems", Unit: emf.Count}),
		routeLayout(emf.Metric{Name: "BatchOperations", Unit: emf.Count}),
	}
	statusClasses = [...]string{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx"}
)
