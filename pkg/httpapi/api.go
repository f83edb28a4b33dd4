// Package httpapi is the HTTP layer of UDS: routing, request parsing and
// validation, and the mapping of domain errors to status codes. The same
// handler serves the Lambda functions (through the API Gateway adapter) and
// the local server.
package httpapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/internal/lambdalog"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/cursor"
	"github.com/udsproject/uds/pkg/policy"
	"github.com/udsproject/uds/pkg/ratelimit"
	"github.com/udsproject/uds/pkg/store"
)

// Stores is what the HTTP layer needs from storage: one small interface
// per capability, each declared in the file that uses it, so that a fake
// (a benchmark's, a fuzz test's) implements only what its routes call.
// StoresOf fills every one from the one *store.Store.
type Stores struct {
	Items      ItemStore
	Lists      ListStore
	Batches    BatchStore
	History    HistoryStore
	Indexes    IndexStore
	Uploads    UploadStore
	Usage      UsageStore
	QuotaModes QuotaModeStore
	Registry   RegistryStore
	RateLimits RateLimitStore
	Policy     PolicyReader
	Policies   PolicyStore
	Transfer   TransferStore
	Strays     StrayStore
	Keys       KeyStore
	Changes    ChangesStore
	Erasures   ErasureStore
}

// StoresOf returns st as every capability.
func StoresOf(st *store.Store) Stores {
	return Stores{
		Items: st, Lists: st, Batches: st, History: st, Indexes: st, Uploads: st,
		Usage: st, QuotaModes: st, Registry: st, RateLimits: st,
		Policy: st, Policies: st, Transfer: st, Strays: st, Keys: st, Changes: st, Erasures: st,
	}
}

// SubjectFunc names the caller of a request. It returns ErrUnauthenticated
// when the request carries no usable identity.
type SubjectFunc func(*http.Request) (string, error)

// Group is a route group; each Lambda function serves one.
type Group int

// Route groups.
const (
	GroupKV Group = 1 << iota
	GroupList
	GroupAdmin
	GroupAll = GroupKV | GroupList | GroupAdmin
)

// Name is the group's function name: "kv", "list", "admin", or "local"
// for the local server's all-groups API.
func (g Group) Name() string {
	switch g {
	case GroupKV:
		return "kv"
	case GroupList:
		return "list"
	case GroupAdmin:
		return "admin"
	}
	return "local"
}

// Config holds what the API needs beside the store.
type Config struct {
	Subject      SubjectFunc
	CursorSecret []byte
	// RefuseSubjectHeader, when set, says why this host does not take the
	// caller from SubjectHeader: a request that carries the header is
	// answered 400 with it as the details. Empty when Subject reads the
	// header.
	RefuseSubjectHeader string
	// DeleteAllBudget bounds the time one delete-all request may take.
	DeleteAllBudget time.Duration
	// RequestBudget bounds the time any request may take, retries of
	// DynamoDB calls included, before it answers 503 (0:
	// config.DefaultRequestBudget). On Lambda the function's deadline
	// bounds it too.
	RequestBudget time.Duration
	// Logger takes one line per request (slog.Default() if nil).
	Logger *slog.Logger
	// LambdaLog, when set, writes the request lines in Lambda's JSON log
	// format itself, encoding them directly rather than through Logger's
	// handler, which costs several times more per line; Logger still
	// decides which levels are written. Lambda functions set it when
	// their log format is JSON.
	LambdaLog *lambdalog.Writer
	// RequestID names a request in its log line, under key, with what the
	// host knows of it (the API Gateway request id on Lambda, a generated
	// one locally); an empty id is left out.
	RequestID func(*http.Request) (key, id string)
	// Metrics takes one EMF record per request; nil writes none.
	Metrics *emf.Writer
	// Function names the function in metric dimensions ("kv", "list",
	// "admin", or "local").
	Function string
	// RouteMetrics adds per-route and per-status-class series to the
	// function's few EMF metrics (config.EnvRouteMetrics).
	RouteMetrics bool
	// Now is the clock a write's ttl and expiresAt are taken against
	// (time.Now if nil); it should be the store's (store.WithClock).
	Now func() time.Time
	// Limiter enforces the rate limits of data requests; nil enforces
	// none.
	Limiter *ratelimit.Limiter
	// Bucket holds large values (upload.go); nil where none is
	// configured, and uploads are then refused.
	Bucket Bucket
}

// answerMargin is kept free before a deadline the host sets (the Lambda
// function's timeout), so the answer is always sent.
const answerMargin = time.Second

// API serves the UDS routes of its groups.
type API struct {
	stores  Stores
	groups  Group
	subject SubjectFunc
	cursors *cursor.Sealer
	// schemas holds the namespaces' compiled JSON Schemas.
	schemas *policy.Cache
	budget  time.Duration
	request time.Duration
	log     *slog.Logger
	// lambdaLog, requestID, metrics, function and routeMetrics: see
	// Config.
	lambdaLog    *lambdalog.Writer
	requestID    func(*http.Request) (key, id string)
	metrics      *emf.Writer
	function     string
	routeMetrics bool
	// refuseHeader: see Config.RefuseSubjectHeader.
	refuseHeader string
	now          func() time.Time
	// limiter enforces rate limits (ratelimits.go); nil: none.
	limiter *ratelimit.Limiter
	bucket  Bucket
}

// New returns the handler for the given route groups, served from s
// (StoresOf for a *store.Store).
func New(s Stores, groups Group, c Config) *API {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RequestBudget <= 0 {
		c.RequestBudget = config.DefaultRequestBudget
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &API{
		stores:  s,
		groups:  groups,
		subject: c.Subject,
		cursors: cursor.NewSealer(c.CursorSecret),
		schemas: &policy.Cache{},
		budget:  c.DeleteAllBudget,
		request: c.RequestBudget,
		log:     c.Logger,

		lambdaLog:    c.LambdaLog,
		requestID:    c.RequestID,
		metrics:      c.Metrics,
		function:     c.Function,
		routeMetrics: c.RouteMetrics,
		refuseHeader: c.RefuseSubjectHeader,
		now:          c.Now,
		limiter:      c.Limiter,
		bucket:       c.Bucket,
	}
}
