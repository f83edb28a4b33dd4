package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Context keys the app reads (`cdk synth -c key=value`, or the context block
// of cdk.json). Table name keys are derived from the schema: see
// tableContextKey.
const (
	ctxStackName           = "stackName"
	ctxImportTables        = "importExistingTables"
	ctxAssetDir            = "assetDir"
	ctxJWTIssuer           = "jwtIssuer"
	ctxJWTAudience         = "jwtAudience"
	ctxJWTSubjectClaim     = "jwtSubjectClaim"
	ctxCursorSecret        = "cursorSecret"
	ctxDefaultLimitBytes   = "defaultLimitBytes"
	ctxDefaultLimitItems   = "defaultLimitItems"
	ctxCORSOrigins         = "corsOrigins"
	ctxThrottleRateLimit   = "throttleRateLimit"
	ctxThrottleBurstLimit  = "throttleBurstLimit"
	ctxLogLevel            = "logLevel"
	ctxPublicDataRoutes    = "publicDataRoutes"
	ctxDeletionProtection  = "deletionProtection"
	ctxMaxReadUnits        = "maxReadRequestUnits"
	ctxMaxWriteUnits       = "maxWriteRequestUnits"
	ctxReservedConcurrency = "reservedConcurrency"
	ctxRatePerCaller       = "ratePerCaller"
	ctxRatePerApp          = "ratePerApp"
	ctxRouteThrottles      = "routeThrottles"
	ctxRateLimitedAlarm    = "rateLimitedAlarm"
	ctxRouteMetrics        = "routeMetrics"
	ctxBucketName          = "bucketName"
	ctxImportBucket        = "importExistingBucket"
	ctxCreatedContentApp   = "createdContentApp"
	ctxKMSKey              = "kmsKey"
)

// Defaults for the context values above.
const (
	defaultStackName          = "UdsStack"
	defaultAssetDir           = "build"
	defaultThrottleRateLimit  = 100
	defaultThrottleBurstLimit = 200
	defaultLogLevel           = "INFO"
)

// UdsStackProps is everything the stack can be configured with. main fills it
// from the CDK context; the tests fill it directly.
type UdsStackProps struct {
	awscdk.StackProps

	// TableNames maps a schema.Table.ID to its physical name. A table missing
	// from the map gets its schema DefaultName.
	TableNames map[string]string
	// ImportTables names, by schema.Table.ID, the tables that already exist
	// and are referenced instead of created: all of them when adopting the
	// tables an earlier stack retained, those it had when adopting the
	// tables of an earlier release (every one but changes before the
	// changes feed, every one but index and changes before namespace
	// indexes, and so on back: history before version history,
	// namespaces before namespace policies), the two data tables when
	// moving from a seed deployment (which has no usage or apps table).
	// The stack creates every table not named, the changes table among
	// them, whatever it imports.
	ImportTables map[string]bool
	// AssetDir is the directory holding the functions' zips (kv.zip,
	// list.zip, admin.zip, expiry.zip, changes.zip), each with a single
	// executable named bootstrap.
	AssetDir string
	// JWTIssuer and JWTAudience turn on the JWT authorizer of the data routes;
	// both or neither must be set.
	JWTIssuer   string
	JWTAudience []string
	// SubjectClaim is the JWT claim that names the caller.
	SubjectClaim string
	// CursorSecret keys the sealing of pagination cursors. Empty means the stack
	// ID, which is stable for the life of the stack and differs between
	// stacks.
	CursorSecret string
	// DefaultLimitBytes and DefaultLimitItems are the global per-user quota;
	// 0 is unlimited.
	DefaultLimitBytes, DefaultLimitItems int64
	// CORSOrigins lists the browser origins allowed to call the API; empty
	// means no CORS configuration at all.
	CORSOrigins []string
	// ThrottleRateLimit (requests per second) and ThrottleBurstLimit apply to
	// the default stage as a whole.
	ThrottleRateLimit, ThrottleBurstLimit float64
	// LogLevel is the least level of the functions' log lines: DEBUG,
	// INFO (one line per request), WARN or ERROR (failures only). The
	// functions apply it (UDS_LOG_LEVEL), not Lambda, whose level filter
	// would drop the EMF records too.
	LogLevel string
	// PublicDataRoutes serves the data routes without an authorizer, to
	// anyone who has the URL. It must be chosen explicitly when there is
	// no JWT authorizer, and contradicts one.
	PublicDataRoutes bool
	// DeletionProtection turns on DynamoDB's deletion protection on every
	// table the stack creates (imported tables keep their own setting).
	DeletionProtection bool
	// MaxReadRequestUnits and MaxWriteRequestUnits cap the on-demand
	// throughput of every table the stack creates and of each of their
	// indexes, in request units per second; 0 sets no cap.
	MaxReadRequestUnits, MaxWriteRequestUnits int64
	// ReservedConcurrency reserves, and caps at, that many concurrent
	// executions for each function behind the API; 0 reserves none.
	ReservedConcurrency int64
	// RatePerCaller and RatePerApp are the deployment's rate limits, the
	// functions' own (UDS_RATE_PER_CALLER, UDS_RATE_PER_APP), where an
	// app and a user set none; the zero Rate sets none.
	RatePerCaller, RatePerApp uds.Rate
	// RouteThrottles are API Gateway's throttles of single routes, by
	// route key ("POST /rest/api/v1/data/{app}/batch"), in place of the
	// stage's for those routes.
	RouteThrottles map[string]RouteThrottle
	// RateLimitedAlarm is how many requests refused by the rate limits
	// (429 from the functions) in an alarm period fire the data
	// functions' RateLimited alarms; 0 defines none.
	RateLimitedAlarm int64
	// RouteMetrics makes the API functions publish per-route and
	// per-status-class metrics beside their own (UDS_ROUTE_METRICS): a
	// few custom metrics, each billed by the month, for every route the
	// deployment serves. Off, the dashboard takes the per-route detail
	// from the request lines.
	RouteMetrics bool
	// BucketName is the physical name of the bucket for large values;
	// empty means the stack's default (see bucketNameOf).
	BucketName string
	// ImportBucket references the bucket named BucketName, kept by an
	// earlier stack, instead of creating it.
	ImportBucket bool
	// CreatedContentApp is the app that seed 000's reserved name "hmh"
	// stands for (UDS_CREATED_CONTENT_APP); empty, none.
	CreatedContentApp string
	// KMSKey puts every table, stream, bucket, queue and log group the
	// stack creates on one customer-managed key (kms.go): "create" makes
	// it, a key's ARN imports it; empty keeps AWS's own keys.
	KMSKey string
}

// RouteThrottle is API Gateway's throttle of one route: requests a
// second and burst, as the stage's.
type RouteThrottle struct {
	RateLimit, BurstLimit float64
}

// TableName returns the physical name of t under these props.
func (p *UdsStackProps) TableName(t schema.Table) string {
	if n := p.TableNames[t.ID]; n != "" {
		return n
	}
	return t.DefaultName
}

// tableContextKey is the context key that names table t: "table" followed by
// the ID without its "Table" suffix (tableData, tableList, tableUsage,
// tableApps), so a table added to the schema gets a key without a change here.
func tableContextKey(t schema.Table) string {
	return "table" + strings.TrimSuffix(t.ID, "Table")
}

// PropsFromContext reads the stack configuration from the CDK context of node
// and checks it. Relative asset paths are resolved against the repository
// root, because the CDK CLI runs the app from infra/ (see cdk.json) while
// the build writes the zips relative to the root.
func PropsFromContext(node constructs.Node) (*UdsStackProps, error) {
	c := contextReader{node: node}
	p := &UdsStackProps{
		TableNames:           map[string]string{},
		ImportTables:         c.tables(ctxImportTables),
		JWTIssuer:            c.string(ctxJWTIssuer, ""),
		JWTAudience:          c.list(ctxJWTAudience),
		SubjectClaim:         c.string(ctxJWTSubjectClaim, config.DefaultSubjectClaim),
		CursorSecret:         c.string(ctxCursorSecret, ""),
		DefaultLimitBytes:    c.int(ctxDefaultLimitBytes),
		DefaultLimitItems:    c.int(ctxDefaultLimitItems),
		CORSOrigins:          c.list(ctxCORSOrigins),
		ThrottleRateLimit:    c.number(ctxThrottleRateLimit, defaultThrottleRateLimit),
		ThrottleBurstLimit:   c.number(ctxThrottleBurstLimit, defaultThrottleBurstLimit),
		LogLevel:             strings.ToUpper(c.string(ctxLogLevel, defaultLogLevel)),
		PublicDataRoutes:     c.bool(ctxPublicDataRoutes, false),
		DeletionProtection:   c.bool(ctxDeletionProtection, true),
		MaxReadRequestUnits:  c.positive(ctxMaxReadUnits),
		MaxWriteRequestUnits: c.positive(ctxMaxWriteUnits),
		ReservedConcurrency:  c.positive(ctxReservedConcurrency),
		RatePerCaller:        c.rate(ctxRatePerCaller),
		RatePerApp:           c.rate(ctxRatePerApp),
		RouteThrottles:       c.routeThrottles(ctxRouteThrottles),
		RateLimitedAlarm:     c.positive(ctxRateLimitedAlarm),
		RouteMetrics:         c.bool(ctxRouteMetrics, false),
		BucketName:           c.string(ctxBucketName, ""),
		ImportBucket:         c.bool(ctxImportBucket, false),
		CreatedContentApp:    c.string(ctxCreatedContentApp, ""),
		KMSKey:               c.string(ctxKMSKey, ""),
	}
	p.StackName = jsii.String(c.string(ctxStackName, defaultStackName))
	p.Description = jsii.String("UDS, the Universal Data Store: DynamoDB tables, an S3 bucket for large values, Lambda functions and the HTTP API.")
	for _, t := range schema.Tables {
		if n := c.string(tableContextKey(t), ""); n != "" {
			p.TableNames[t.ID] = n
		}
	}
	p.AssetDir = c.string(ctxAssetDir, defaultAssetDir)
	if !filepath.IsAbs(p.AssetDir) {
		root, err := repoRoot()
		if err != nil {
			return nil, err
		}
		p.AssetDir = filepath.Join(root, p.AssetDir)
	}
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// noAuthorizer refuses a stack whose data routes have no authorizer.
// mk/infra.mk says the same before it builds anything (make_test.go).
var noAuthorizer = fmt.Sprintf("the data routes have no authorizer: set context %s and %s (make JWT_ISSUER=... JWT_AUDIENCE=...) "+
	"to put a JWT authorizer on them, or %s=true (make PUBLIC_DATA_ROUTES=true) to serve them to anyone who has the URL",
	ctxJWTIssuer, ctxJWTAudience, ctxPublicDataRoutes)

// Validate reports configuration that would synthesize a stack that cannot
// deploy or cannot work.
func (p *UdsStackProps) Validate() error {
	var errs []error
	if (p.JWTIssuer == "") != (len(p.JWTAudience) == 0) {
		errs = append(errs, fmt.Errorf("context %s and %s must be set together", ctxJWTIssuer, ctxJWTAudience))
	}
	if p.JWTIssuer != "" {
		if u, err := url.Parse(p.JWTIssuer); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("context %s: want an https URL, got %q", ctxJWTIssuer, p.JWTIssuer))
		}
	}
	jwt := p.JWTIssuer != "" || len(p.JWTAudience) > 0
	switch {
	case !jwt && !p.PublicDataRoutes:
		errs = append(errs, errors.New(noAuthorizer))
	case jwt && p.PublicDataRoutes:
		errs = append(errs, fmt.Errorf("context %s=true contradicts %s and %s: the data routes are either public or behind the JWT authorizer",
			ctxPublicDataRoutes, ctxJWTIssuer, ctxJWTAudience))
	}
	if p.SubjectClaim == "" {
		errs = append(errs, fmt.Errorf("context %s must not be empty", ctxJWTSubjectClaim))
	}
	if p.DefaultLimitBytes < 0 || p.DefaultLimitItems < 0 {
		errs = append(errs, fmt.Errorf("context %s and %s must not be negative", ctxDefaultLimitBytes, ctxDefaultLimitItems))
	}
	if p.ThrottleRateLimit <= 0 || p.ThrottleBurstLimit <= 0 {
		errs = append(errs, fmt.Errorf("context %s and %s must be positive", ctxThrottleRateLimit, ctxThrottleBurstLimit))
	}
	for key, v := range map[string]int64{
		ctxMaxReadUnits: p.MaxReadRequestUnits, ctxMaxWriteUnits: p.MaxWriteRequestUnits, ctxReservedConcurrency: p.ReservedConcurrency,
		ctxRateLimitedAlarm: p.RateLimitedAlarm,
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("context %s: want a whole number of at least 1, got %d", key, v))
		}
	}
	for key, r := range map[string]uds.Rate{ctxRatePerCaller: p.RatePerCaller, ctxRatePerApp: p.RatePerApp} {
		if r == (uds.Rate{}) {
			continue
		}
		if _, err := config.ParseRate(config.FormatRate(r)); err != nil {
			errs = append(errs, fmt.Errorf("context %s: %w", key, err))
		}
	}
	errs = append(errs, validRouteThrottles(p.RouteThrottles)...)
	errs = append(errs, p.validBucketName()...)
	if err := validKMSKey(p.KMSKey); err != nil {
		errs = append(errs, err)
	}
	if p.CreatedContentApp != "" {
		if _, err := uds.ParseApp(p.CreatedContentApp); err != nil {
			errs = append(errs, fmt.Errorf("context %s: %w", ctxCreatedContentApp, err))
		}
	}
	switch p.LogLevel {
	case "DEBUG", "INFO", "WARN", "ERROR":
	default:
		errs = append(errs, fmt.Errorf("context %s: want DEBUG, INFO, WARN or ERROR, got %q", ctxLogLevel, p.LogLevel))
	}
	seen := map[string]string{}
	for _, t := range schema.Tables {
		n := p.TableName(t)
		if other, dup := seen[n]; dup {
			errs = append(errs, fmt.Errorf("tables %s and %s would share the name %q", other, t.ID, n))
		}
		seen[n] = t.ID
	}
	return errors.Join(errs...)
}

// validRouteThrottles reports the route throttles that name no route of
// the API, or whose numbers API Gateway would refuse: a rate above 0, and
// a burst that is a whole number of at least 1 (CloudFormation takes an
// integer there).
func validRouteThrottles(throttles map[string]RouteThrottle) []error {
	var errs []error
	keys := routeKeys()
	for _, key := range slices.Sorted(maps.Keys(throttles)) {
		th := throttles[key]
		if !slices.Contains(keys, key) {
			errs = append(errs, fmt.Errorf("context %s: %q is not a route of the API; the route keys are %s",
				ctxRouteThrottles, key, strings.Join(keys, ", ")))
		}
		if th.RateLimit <= 0 || th.BurstLimit < 1 || th.BurstLimit != float64(int64(th.BurstLimit)) {
			errs = append(errs, fmt.Errorf("context %s: %q: want a rateLimit above 0 and a burstLimit that is a whole number of at least 1, got %v and %v",
				ctxRouteThrottles, key, th.RateLimit, th.BurstLimit))
		}
	}
	return errs
}

// CheckAssets reports a missing function zip with a hint, before CDK fails on
// it with a less helpful message.
func (p *UdsStackProps) CheckAssets() error {
	for _, f := range functionSpecs {
		path := f.zipPath(p.AssetDir)
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("function %s: %w (run `make build-zips` at the repository root first)", f.Name, err)
		}
	}
	return nil
}

// repoRoot finds the repository root: the nearest directory at or above the
// working directory that holds cdk.json. The CDK CLI runs the app from
// infra/, `go test` from the package directory; both are below the root.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "cdk.json")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no cdk.json at or above %s: cannot locate the repository root", wd)
		}
		dir = parent
	}
}

// contextReader reads typed values from the CDK context. Values given with
// `-c key=value` arrive as strings, values from cdk.json as JSON types, so
// each reader accepts both. Malformed values are collected, not fatal, so
// one run reports all of them.
type contextReader struct {
	node constructs.Node
	errs []error
}

func (c *contextReader) raw(key string) (any, bool) {
	v := c.node.TryGetContext(jsii.String(key))
	if v == nil {
		return nil, false
	}
	if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
		return nil, false
	}
	return v, true
}

func (c *contextReader) string(key, fallback string) string {
	v, ok := c.raw(key)
	if !ok {
		return fallback
	}
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	c.errs = append(c.errs, fmt.Errorf("context %s: want a string, got %v", key, v))
	return fallback
}

// bool reads true or false.
func (c *contextReader) bool(key string, fallback bool) bool {
	v, ok := c.raw(key)
	if !ok {
		return fallback
	}
	switch v := v.(type) {
	case bool:
		return v
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b
		}
	}
	c.errs = append(c.errs, fmt.Errorf("context %s: want true or false, got %v", key, v))
	return fallback
}

// positive reads a whole number of at least 1; 0 when absent. An explicit
// 0 is refused rather than read as "none": a reserved concurrency of 0
// would stop the functions, and CloudFormation takes no throughput cap
// below 1.
func (c *contextReader) positive(key string) int64 {
	n, ok := c.whole(key)
	if ok && n < 1 {
		c.errs = append(c.errs, fmt.Errorf("context %s: want a whole number of at least 1, got %d", key, n))
		return 0
	}
	return n
}

// tables reads a set of tables: true (all), false (none), or a
// comma-separated list of the names the table context keys use (data,
// list, history, index, usage, apps, namespaces, changes).
func (c *contextReader) tables(key string) map[string]bool {
	out := map[string]bool{}
	v, ok := c.raw(key)
	if !ok {
		return out
	}
	all := false
	switch v := v.(type) {
	case bool:
		all = v
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			all = b
			break
		}
		for _, name := range c.list(key) {
			found := false
			for _, t := range schema.Tables {
				if strings.EqualFold(name, tableImportName(t)) {
					out[t.ID], found = true, true
				}
			}
			if !found {
				c.errs = append(c.errs, fmt.Errorf("context %s: %q is not a table (%s)", key, name, strings.Join(tableImportNames(), ", ")))
			}
		}
		return out
	default:
		c.errs = append(c.errs, fmt.Errorf("context %s: want true, false or a list of tables, got %v", key, v))
	}
	if all {
		for _, t := range schema.Tables {
			out[t.ID] = true
		}
	}
	return out
}

// tableImportNames are the names of the tables in a list of tables to
// import, in schema order.
func tableImportNames() []string {
	var names []string
	for _, t := range schema.Tables {
		names = append(names, tableImportName(t))
	}
	return names
}

// tableImportName is table t's name in a list of tables to import: its
// context key without the "table" prefix, in lower case (history).
func tableImportName(t schema.Table) string {
	return strings.ToLower(strings.TrimPrefix(tableContextKey(t), "table"))
}

func (c *contextReader) number(key string, fallback float64) float64 {
	v, ok := c.raw(key)
	if !ok {
		return fallback
	}
	switch v := v.(type) {
	case float64:
		return v
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err == nil {
			return f
		}
	}
	c.errs = append(c.errs, fmt.Errorf("context %s: want a number, got %v", key, v))
	return fallback
}

// int reads a whole number; 0 when absent.
func (c *contextReader) int(key string) int64 {
	n, _ := c.whole(key)
	return n
}

// whole reads a whole number and reports whether one was given; a value
// that is not a whole number is reported and reads as absent.
func (c *contextReader) whole(key string) (int64, bool) {
	v, ok := c.raw(key)
	if !ok {
		return 0, false
	}
	switch v := v.(type) {
	case float64:
		if v == float64(int64(v)) {
			return int64(v), true
		}
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err == nil {
			return n, true
		}
	}
	c.errs = append(c.errs, fmt.Errorf("context %s: want a whole number, got %v", key, v))
	return 0, false
}

// rate reads a rate limit written "R/B" (config.ParseRate); the zero Rate
// when absent.
func (c *contextReader) rate(key string) uds.Rate {
	s := c.string(key, "")
	if s == "" {
		return uds.Rate{}
	}
	r, err := config.ParseRate(s)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("context %s: %w", key, err))
	}
	return r
}

// routeThrottles reads a JSON object of route keys and throttles,
// {"POST /rest/api/v1/data/{app}/batch": {"rateLimit": 10, "burstLimit":
// 20}}: a string on the command line, an object in cdk.json. Member names
// are exact and both numbers required, so a misspelt one is an error
// rather than a route left unthrottled.
func (c *contextReader) routeThrottles(key string) map[string]RouteThrottle {
	v, ok := c.raw(key)
	if !ok {
		return nil
	}
	raw, isString := v.(string)
	if !isString {
		b, err := json.Marshal(v)
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("context %s: %w", key, err))
			return nil
		}
		raw = string(b)
	}
	const shape = `{"<route key>": {"rateLimit": n, "burstLimit": n}, ...}`
	var members map[string]map[string]float64
	if err := json.Unmarshal([]byte(raw), &members); err != nil {
		c.errs = append(c.errs, fmt.Errorf("context %s: want a JSON object %s, got %s (%v)", key, shape, raw, err))
		return nil
	}
	out := map[string]RouteThrottle{}
	for _, route := range slices.Sorted(maps.Keys(members)) {
		m := members[route]
		rate, hasRate := m["rateLimit"]
		burst, hasBurst := m["burstLimit"]
		if !hasRate || !hasBurst || len(m) != 2 {
			c.errs = append(c.errs, fmt.Errorf("context %s: %q: want {\"rateLimit\": n, \"burstLimit\": n}, got %v", key, route, m))
			continue
		}
		out[route] = RouteThrottle{RateLimit: rate, BurstLimit: burst}
	}
	return out
}

// list reads a comma-separated string or a JSON array of strings.
func (c *contextReader) list(key string) []string {
	v, ok := c.raw(key)
	if !ok {
		return nil
	}
	var parts []string
	switch v := v.(type) {
	case string:
		parts = strings.Split(v, ",")
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				c.errs = append(c.errs, fmt.Errorf("context %s: want strings, got %v", key, e))
				return nil
			}
			parts = append(parts, s)
		}
	default:
		c.errs = append(c.errs, fmt.Errorf("context %s: want a comma-separated list, got %v", key, v))
		return nil
	}
	var out []string
	for _, s := range parts {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
