// Package config reads the process configuration from the environment once,
// at start-up. Every knob UDS has is listed here with its default.
package config

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Environment variables beside the table names (schema.Table.EnvVar).
const (
	EnvDynamoDBEndpoint  = "UDS_DYNAMODB_ENDPOINT"
	EnvSubjectClaim      = "UDS_SUBJECT_CLAIM"
	EnvCursorSecret      = "UDS_CURSOR_SECRET"
	EnvDefaultLimitBytes = "UDS_DEFAULT_LIMIT_BYTES"
	EnvDefaultLimitItems = "UDS_DEFAULT_LIMIT_ITEMS"
	EnvLimitsCacheTTL    = "UDS_LIMITS_CACHE_TTL"
	// EnvRatePerCaller and EnvRatePerApp are the deployment's rate limits,
	// "R/B": R requests a second with bursts of up to B (unset: none).
	EnvRatePerCaller      = "UDS_RATE_PER_CALLER"
	EnvRatePerApp         = "UDS_RATE_PER_APP"
	EnvDeleteAllBudget    = "UDS_DELETE_ALL_BUDGET"
	EnvRequestBudget      = "UDS_REQUEST_BUDGET"
	EnvRecomputeQuiet     = "UDS_RECOMPUTE_QUIET"
	EnvSweepInterval      = "UDS_SWEEP_INTERVAL"
	EnvListenAddr         = "UDS_LISTEN_ADDR"
	EnvTrustSubjectHeader = "UDS_TRUST_SUBJECT_HEADER"
	EnvLogFormat          = "UDS_LOG_FORMAT"
	EnvLogLevel           = "UDS_LOG_LEVEL"
	EnvEMF                = "UDS_EMF"
	// EnvRouteMetrics, 1, adds per-route and per-status-class series to
	// the functions' EMF metrics (unset or 0: per function only).
	EnvRouteMetrics = "UDS_ROUTE_METRICS"
	// EnvAllowedOrigins lists the browser origins, comma-separated, whose
	// pages may call the local server and its S3 engine (unset: its own
	// page only). Of the functions only the realtime one reads it: the
	// stack gives it the HTTP API's CORS origins, whose pages may connect
	// (the HTTP API's own CORS is API Gateway's).
	EnvAllowedOrigins      = "UDS_ALLOWED_ORIGINS"
	DefaultListenAddr      = "127.0.0.1:8080"
	DefaultSubjectClaim    = "sub"
	DefaultLimitsCacheTTL  = 30 * time.Second
	DefaultDeleteAllBudget = 25 * time.Second
	// DefaultRequestBudget stays under API Gateway's 30 s integration
	// limit, with room to answer.
	DefaultRequestBudget = 25 * time.Second
	// DefaultRecomputeQuiet covers the longest request (a write stamps its
	// usage change when it is built, before any retry) plus the owner
	// index's propagation lag, which is normally under a second.
	DefaultRecomputeQuiet = 60 * time.Second
	// DefaultSweepInterval is how often the local server removes expired
	// items (DynamoDB Local's tables have no TTL deletion).
	DefaultSweepInterval = 30 * time.Second
)

// The bucket of large values, and the local server's S3 engine.
const (
	// EnvBucket names the S3 bucket of large values (unset: none, and
	// uploads are refused); EnvS3Endpoint is an S3-compatible engine's
	// endpoint, addressed by path (unset: AWS's).
	EnvBucket     = "UDS_BUCKET"
	EnvS3Endpoint = "UDS_S3_ENDPOINT"
	// EnvS3ListenAddr is where the local server serves its own S3 engine
	// when neither UDS_BUCKET nor UDS_S3_ENDPOINT is set.
	EnvS3ListenAddr     = "UDS_S3_LISTEN_ADDR"
	DefaultS3ListenAddr = "127.0.0.1:8081"
)

// The deployed realtime endpoint (pkg/wsgateway), set by the stack.
const (
	// EnvRealtimeQueue is the FIFO queue's URL (the realtime and changes
	// functions send to it); unset, the changes function publishes
	// nothing.
	EnvRealtimeQueue = "UDS_REALTIME_QUEUE"
	// EnvRealtimeCallback is the WebSocket stage's Management API
	// endpoint, https://{api}.execute-api.{region}.amazonaws.com/{stage}.
	EnvRealtimeCallback = "UDS_REALTIME_CALLBACK"
	// EnvJWTIssuer and EnvJWTAudience are the HTTP API's JWT authorizer's
	// issuer and audiences (comma-separated), which the realtime function
	// verifies tokens against; unset where the data routes are public.
	EnvJWTIssuer   = "UDS_JWT_ISSUER"
	EnvJWTAudience = "UDS_JWT_AUDIENCE"
)

// EnvCreatedContentApp names the deployment's created-content app: the app
// that seed 000's reserved name "hmh" (data.user.*) stands for, and the
// only one that may register that name (unset: none).
const EnvCreatedContentApp = "UDS_CREATED_CONTENT_APP"

// EnvStreamedQuotas is "off" where nothing reads the data tables' streams
// (tables imported from a seed deployment): the streamed quota mode and
// reads of the changes feed are then refused.
const EnvStreamedQuotas = "UDS_STREAMED_QUOTAS"

// Config is everything the functions and the local server read from the
// environment.
type Config struct {
	Tables schema.TableNames
	// Endpoint overrides the DynamoDB endpoint (DynamoDB Local, dynoxide).
	Endpoint string
	// SubjectClaim is the JWT claim that names the caller.
	SubjectClaim string
	// CursorSecret keys the sealing that makes pagination cursors opaque
	// and tamper-evident. All functions of a deployment must share it.
	CursorSecret []byte
	// DefaultLimitBytes and DefaultLimitItems are the global per-user quota
	// applied when neither the app nor the user has one; 0 is unlimited.
	DefaultLimitBytes, DefaultLimitItems int64
	// RatePerCaller and RatePerApp are the deployment's rate limits, where
	// an app and a user set none (the zero Rate: no limit).
	RatePerCaller, RatePerApp uds.Rate
	// LimitsCacheTTL bounds how long a limit change takes to be enforced.
	LimitsCacheTTL time.Duration
	// DeleteAllBudget is how long one delete-all request may run before it
	// answers that the list was only partly deleted.
	DeleteAllBudget time.Duration
	// RequestBudget bounds any request, DynamoDB retries included, before
	// it answers 503 with Retry-After; on Lambda the function's timeout
	// bounds it too.
	RequestBudget time.Duration
	// RecomputeQuiet is how long an owner's usage must have been quiet
	// before recompute may lower it.
	RecomputeQuiet time.Duration
	// LogFormat is the local server's log format, "text" or "json"; on
	// Lambda the function's log format (the stack sets JSON) decides.
	LogFormat string
	// LogLevel is the least level of the log lines written: DEBUG, INFO
	// (a line per request), WARN or ERROR (failures only). On Lambda UDS
	// applies it, not Lambda: Lambda files the EMF records, which have no
	// level, as INFO, and a function log level above INFO would drop them.
	LogLevel slog.Level
	// SweepInterval is how often the local server removes expired items;
	// 0 turns it off. The functions ignore it.
	SweepInterval time.Duration
	// ListenAddr is the local server's address (host:port).
	ListenAddr string
	// Bucket is the S3 bucket that holds large values; empty, the
	// deployment takes none.
	Bucket string
	// S3Endpoint overrides the S3 endpoint (an S3-compatible engine, the
	// local server's own).
	S3Endpoint string
	// CreatedContentApp is the created-content app's id, lower case, or
	// empty (EnvCreatedContentApp).
	CreatedContentApp string
	// NoStreamedQuotas is EnvStreamedQuotas set to "off".
	NoStreamedQuotas bool
	// S3ListenAddr is the local server's S3 engine's address (host:port);
	// the functions ignore it.
	S3ListenAddr string
	// TrustSubjectHeader is UDS_TRUST_SUBJECT_HEADER: true for 1, false
	// for 0, nil when unset, and then the local server trusts the header
	// on a loopback address only. The functions never trust it.
	TrustSubjectHeader *bool
	// AllowedOrigins are the browser origins whose pages may call the
	// local server and its S3 engine, as browsers spell them in Origin
	// (EnvAllowedOrigins); the functions ignore them.
	AllowedOrigins []string
	// EMF makes the local server write an EMF record per request to
	// stdout, as the functions always do (UDS_EMF=1). Off by default: a
	// person reading make run's output wants the request lines.
	EMF bool
	// RouteMetrics adds per-route and per-status-class series to the EMF
	// records (EnvRouteMetrics): each route a deployment serves then
	// makes a few custom metrics, billed each month they receive data.
	// Off by default: a function's few metrics, and the request lines for
	// the detail.
	RouteMetrics bool
}

// FromEnv reads the configuration. Only malformed values are errors.
func FromEnv() (Config, error) {
	c := Config{
		Tables: schema.TableNames{
			Data:       envOr(schema.Data.EnvVar, schema.Data.DefaultName),
			List:       envOr(schema.List.EnvVar, schema.List.DefaultName),
			History:    envOr(schema.History.EnvVar, schema.History.DefaultName),
			Index:      envOr(schema.IndexEntries.EnvVar, schema.IndexEntries.DefaultName),
			Usage:      envOr(schema.Usage.EnvVar, schema.Usage.DefaultName),
			Apps:       envOr(schema.Apps.EnvVar, schema.Apps.DefaultName),
			Namespaces: envOr(schema.Namespaces.EnvVar, schema.Namespaces.DefaultName),
			Changes:    envOr(schema.Changes.EnvVar, schema.Changes.DefaultName),
		},
		Endpoint:     os.Getenv(EnvDynamoDBEndpoint),
		SubjectClaim: envOr(EnvSubjectClaim, DefaultSubjectClaim),
		ListenAddr:   envOr(EnvListenAddr, DefaultListenAddr),
		Bucket:       os.Getenv(EnvBucket),
		S3Endpoint:   os.Getenv(EnvS3Endpoint),
		S3ListenAddr: envOr(EnvS3ListenAddr, DefaultS3ListenAddr),
	}
	// Without a configured secret the cursor key is derived from the table
	// names: cursors still cannot be forged by accident, and every function
	// of one deployment agrees. Deployments set a real secret.
	secret := os.Getenv(EnvCursorSecret)
	if secret == "" {
		secret = "uds-cursor|" + c.Tables.Data + "|" + c.Tables.List + "|" + c.Tables.Usage
	}
	c.CursorSecret = []byte(secret)

	var err error
	switch v := os.Getenv(EnvStreamedQuotas); v {
	case "", "on":
	case "off":
		c.NoStreamedQuotas = true
	default:
		return c, fmt.Errorf("%s: %q is neither on nor off", EnvStreamedQuotas, v)
	}
	if app := os.Getenv(EnvCreatedContentApp); app != "" {
		if c.CreatedContentApp, err = uds.ParseApp(app); err != nil {
			return c, fmt.Errorf("%s: %w", EnvCreatedContentApp, err)
		}
	}
	if c.DefaultLimitBytes, err = envInt(EnvDefaultLimitBytes); err != nil {
		return c, err
	}
	if c.DefaultLimitItems, err = envInt(EnvDefaultLimitItems); err != nil {
		return c, err
	}
	if c.LimitsCacheTTL, err = envDuration(EnvLimitsCacheTTL, DefaultLimitsCacheTTL); err != nil {
		return c, err
	}
	if c.RatePerCaller, err = envRate(EnvRatePerCaller); err != nil {
		return c, err
	}
	if c.RatePerApp, err = envRate(EnvRatePerApp); err != nil {
		return c, err
	}
	if c.DeleteAllBudget, err = envDuration(EnvDeleteAllBudget, DefaultDeleteAllBudget); err != nil {
		return c, err
	}
	if c.RequestBudget, err = envDuration(EnvRequestBudget, DefaultRequestBudget); err != nil {
		return c, err
	}
	if c.RecomputeQuiet, err = envDuration(EnvRecomputeQuiet, DefaultRecomputeQuiet); err != nil {
		return c, err
	}
	if c.SweepInterval, err = envDuration(EnvSweepInterval, DefaultSweepInterval); err != nil {
		return c, err
	}
	level := envOr(EnvLogLevel, "INFO")
	var known bool
	if c.LogLevel, known = logLevels[strings.ToUpper(level)]; !known {
		return c, fmt.Errorf("%s: want DEBUG, INFO, WARN or ERROR, got %q", EnvLogLevel, level)
	}
	switch c.LogFormat = envOr(EnvLogFormat, "text"); c.LogFormat {
	case "text", "json":
	default:
		return c, fmt.Errorf("%s: want text or json, got %q", EnvLogFormat, c.LogFormat)
	}
	if c.TrustSubjectHeader, err = envSwitch(EnvTrustSubjectHeader); err != nil {
		return c, err
	}
	if v := os.Getenv(EnvAllowedOrigins); v != "" {
		if c.AllowedOrigins, err = ParseOrigins(v); err != nil {
			return c, fmt.Errorf("%s: %w", EnvAllowedOrigins, err)
		}
	}
	emf, err := envSwitch(EnvEMF)
	if err != nil {
		return c, err
	}
	c.EMF = emf != nil && *emf
	routes, err := envSwitch(EnvRouteMetrics)
	if err != nil {
		return c, err
	}
	c.RouteMetrics = routes != nil && *routes
	return c, nil
}

// The local server's defaults where a deployment's would not serve a
// person: one process serves every route and forgets its cache when it
// changes a limit or a policy, so nothing needs caching against a local
// engine (an admin change applies at once), and DynamoDB Local never
// throttles, so a request needs no long budget for retries. Together they
// bound how long a change into or out of private settles: 15 s here, a
// minute with the deployment's defaults.
const (
	LocalLimitsCacheTTL = 0
	LocalRequestBudget  = 10 * time.Second
)

// LocalBucket is the bucket of the local server's own S3 engine, which it
// serves when the environment names neither a bucket nor an endpoint.
const LocalBucket = "uds-local"

// LocalFromEnv is FromEnv for the local server: its defaults where the
// environment sets no value.
func LocalFromEnv() (Config, error) {
	c, err := FromEnv()
	if err != nil {
		return c, err
	}
	if os.Getenv(EnvLimitsCacheTTL) == "" {
		c.LimitsCacheTTL = LocalLimitsCacheTTL
	}
	if os.Getenv(EnvRequestBudget) == "" {
		c.RequestBudget = LocalRequestBudget
	}
	return c, nil
}

// logLevels are the levels UDS_LOG_LEVEL names, the stack's and Lambda's.
var logLevels = map[string]slog.Level{
	"DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo, "WARN": slog.LevelWarn, "ERROR": slog.LevelError,
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func envInt(name string) (int64, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: want a non-negative integer, got %q", name, v)
	}
	return n, nil
}

// envRate reads a rate limit written "R/B" (requests a second, burst);
// unset is none.
func envRate(name string) (uds.Rate, error) {
	v := os.Getenv(name)
	if v == "" {
		return uds.Rate{}, nil
	}
	rate, err := ParseRate(v)
	if err != nil {
		return uds.Rate{}, fmt.Errorf("%s: %w", name, err)
	}
	return rate, nil
}

// ParseRate reads a deployment's rate limit as UDS_RATE_PER_CALLER and
// UDS_RATE_PER_APP write it, "R/B": R requests a second with bursts of up
// to B, whole numbers from 1 to uds.MaxRatePerSecond. The CDK app checks
// its context values with it, so a value synth accepts is one the
// functions start with.
func ParseRate(v string) (uds.Rate, error) {
	rs, bs, ok := strings.Cut(v, "/")
	r, err1 := strconv.ParseInt(rs, 10, 64)
	b, err2 := strconv.ParseInt(bs, 10, 64)
	rate := uds.Rate{PerSecond: r, Burst: b}
	if !ok || err1 != nil || err2 != nil || rate.PerSecond == uds.Unlimited || rate.Validate("rate") != nil {
		return uds.Rate{}, fmt.Errorf("want R/B, requests a second and a burst, whole numbers from 1 to %d, got %q", uds.MaxRatePerSecond, v)
	}
	return rate, nil
}

// FormatRate writes a rate limit as ParseRate reads it.
func FormatRate(r uds.Rate) string {
	return strconv.FormatInt(r.PerSecond, 10) + "/" + strconv.FormatInt(r.Burst, 10)
}

// envSwitch reads a variable that is 1 (on) or 0 (off); unset is nil.
// Anything else is an error rather than a guess: a misspelt switch that
// silently stayed off would leave the server doing what it was told not to.
func envSwitch(name string) (*bool, error) {
	var on bool
	switch v := os.Getenv(name); v {
	case "":
		return nil, nil
	case "1":
		on = true
	case "0":
	default:
		return nil, fmt.Errorf("%s: want 1 or 0, got %q", name, v)
	}
	return &on, nil
}

func envDuration(name string, fallback time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return fallback, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s: want a duration such as 30s, got %q", name, v)
	}
	return d, nil
}

// ParseOrigins reads a list of browser origins, comma-separated, as
// UDS_ALLOWED_ORIGINS writes it. Each is written exactly as a browser
// sends it in Origin, since it is compared with that header as it is:
// http or https, a lower-case host, a port only where it is not the
// scheme's, and nothing after it (no path, not even "/"). Anything else,
// "*" and "null" included, is an error that says how to write it.
func ParseOrigins(v string) ([]string, error) {
	var origins []string
	for _, o := range strings.Split(v, ",") {
		o = strings.TrimSpace(o)
		if err := checkOrigin(o); err != nil {
			return nil, err
		}
		if !slices.Contains(origins, o) {
			origins = append(origins, o)
		}
	}
	return origins, nil
}

func checkOrigin(o string) error {
	if o == "" {
		return fmt.Errorf("an empty origin (two commas together, or one at an end): want scheme://host[:port], such as http://localhost:3000")
	}
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q is not an origin: want scheme://host[:port] with scheme http or https, such as http://localhost:3000", o)
	}
	host, port := u.Hostname(), u.Port()
	hostport := strings.ToLower(u.Host)
	if port == defaultPorts[u.Scheme] {
		hostport = strings.TrimSuffix(hostport, ":"+port)
	}
	want := u.Scheme + "://" + hostport
	switch {
	case !validHost(strings.ToLower(host)):
		return fmt.Errorf("%q: %q is neither a host name (letters, digits, hyphens and dots) nor an IP address", o, host)
	case port != "" && !validPort(port):
		return fmt.Errorf("%q: the port %q is not a number from 1 to 65535", o, port)
	case o != want:
		return fmt.Errorf("%q is not an origin as a browser writes it in Origin: want %s (a lower-case host, no default port, nothing after the port)", o, want)
	}
	return nil
}

// defaultPorts are the ports a browser leaves out of an origin.
var defaultPorts = map[string]string{"http": "80", "https": "443"}

// validHost is a host name of letters, digits, hyphens and dots (an
// internationalised name in its xn-- form, as browsers send it), or an
// IP address.
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return false
		}
	}
	return true
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535 && strconv.Itoa(n) == p
}
