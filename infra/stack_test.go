package main

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// TestMain closes the jsii kernel (a node child process) once, after every
// test has synthesized what it needs.
func TestMain(m *testing.M) {
	code := m.Run()
	closeJSII()
	os.Exit(code)
}

// synthesized is one synthesized stack and its template as plain JSON.
type synthesized struct {
	stack     *UdsStack
	props     *UdsStackProps
	resources map[string]resource
	outputs   map[string]any
}

type resource struct {
	Type           string         `json:"Type"`
	Properties     map[string]any `json:"Properties"`
	DeletionPolicy string         `json:"DeletionPolicy"`
	UpdateReplace  string         `json:"UpdateReplacePolicy"`
	DependsOn      []string       `json:"DependsOn"`
}

// cdkJSONFile is what the tests read of cdk.json.
type cdkJSONFile struct {
	App     string         `json:"app"`
	Output  string         `json:"output"`
	Context map[string]any `json:"context"`
}

func readCDKJSON(t *testing.T) cdkJSONFile {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "cdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f cdkJSONFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("cdk.json: %v", err)
	}
	return f
}

// cdkJSONContext is the context block of cdk.json: the feature flags the CLI
// hands the app. The tests synthesize with it so that they check the
// template the CLI would produce.
func cdkJSONContext(t *testing.T) map[string]any { return readCDKJSON(t).Context }

// synth builds the stack from context the way main does, with the function
// zips replaced by dummies in a temporary directory (CDK requires an asset
// to exist), and returns its template.
func synth(t *testing.T, context map[string]any) *synthesized {
	t.Helper()
	dir := t.TempDir()
	assets := filepath.Join(dir, "build")
	writeDummyZips(t, assets)
	ctx := cdkJSONContext(t)
	ctx[ctxAssetDir] = assets
	for k, v := range context {
		ctx[k] = v
	}
	app := awscdk.NewApp(&awscdk.AppProps{
		Outdir:  jsii.String(filepath.Join(dir, "cdk.out")),
		Context: &ctx,
	})
	props, err := PropsFromContext(app.Node())
	if err != nil {
		t.Fatalf("PropsFromContext: %v", err)
	}
	if err := props.CheckAssets(); err != nil {
		t.Fatalf("CheckAssets: %v", err)
	}
	stack := NewUdsStack(app, *props.StackName, props)
	raw, err := json.Marshal(assertions.Template_FromStack(stack.Stack, nil).ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]resource `json:"Resources"`
		Outputs   map[string]any      `json:"Outputs"`
	}
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	return &synthesized{stack: stack, props: props, resources: tpl.Resources, outputs: tpl.Outputs}
}

func writeDummyZips(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range functionSpecs {
		out, err := os.Create(f.zipPath(dir))
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(out)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "bootstrap", Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "#!/bin/sh\necho %s\n", f.Name)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// ofType returns the logical IDs of the resources of one type, sorted.
func (s *synthesized) ofType(typ string) []string {
	var ids []string
	for id, r := range s.resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// logicalID is the logical ID of the CloudFormation resource behind an L2
// construct.
func (s *synthesized) logicalID(t *testing.T, c constructs.IConstruct) string {
	t.Helper()
	el, ok := c.Node().DefaultChild().(awscdk.CfnElement)
	if !ok {
		t.Fatalf("%s has no CloudFormation resource", *c.Node().Path())
	}
	return *s.stack.Stack.GetLogicalId(el)
}

// logicalIDOf finds the resource of the stack's direct child construct id.
func (s *synthesized) logicalIDOf(t *testing.T, id string) string {
	t.Helper()
	return s.logicalID(t, s.stack.Stack.Node().FindChild(jsii.String(id)))
}

// flatten renders a CloudFormation value with intrinsics as one string:
// {"Ref": X} as ${X}, {"Fn::GetAtt": [X, A]} as ${X.A}, Fn::Join joined.
// It makes ARNs built from tokens comparable as text.
func flatten(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(v)
	case bool:
		return fmt.Sprint(v)
	case []any:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = flatten(p)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		if ref, ok := v["Ref"]; ok {
			return "${" + flatten(ref) + "}"
		}
		if att, ok := v["Fn::GetAtt"].([]any); ok && len(att) == 2 {
			return "${" + flatten(att[0]) + "." + flatten(att[1]) + "}"
		}
		if join, ok := v["Fn::Join"].([]any); ok && len(join) == 2 {
			sep := flatten(join[0])
			var parts []string
			for _, p := range join[1].([]any) {
				parts = append(parts, flatten(p))
			}
			return strings.Join(parts, sep)
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func asStrings(v any) []string {
	var out []string
	for _, e := range asList(v) {
		out = append(out, flatten(e))
	}
	return out
}

// wantAccess is the DynamoDB access each function must have, written out
// independently of functionAccess so that a change there has to be made
// deliberately here as well. Keys are table IDs, or "ID/index/name", with
// "[pattern]" for a grant limited to the items whose partition key
// matches the pattern (dynamodb:LeadingKeys), "{attr,...}" for one
// limited to requests that name those attributes only
// (dynamodb:Attributes).
var wantAccess = map[string]map[string][]string{
	fnKV: {
		"DataTable":                   {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem", "ConditionCheckItem"},
		"ListTable":                   {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem", "ConditionCheckItem"},
		"HistoryTable":                {"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
		"IndexTable":                  {"PutItem", "DeleteItem", "Query"},
		"UsageTable":                  {"GetItem", "UpdateItem", "BatchGetItem"},
		"AppsTable":                   {"GetItem", "BatchGetItem"},
		"AppsTable[rate#*]":           {"UpdateItem"},
		"DataTable/index/byOwner":     {"Query"},
		"ListTable/index/byOwner":     {"Query"},
		"NamespacesTable":             {"GetItem"},
		"ChangesTable":                {"Query"},
		"UsageTable/index/byAppShard": {"Query"},
		"NamespacesTable{app,namespace,heldSince}":     {"UpdateItem"},
		"AppsTable{app,heldSince,registry,appNameKey}": {"UpdateItem"},
	},
	fnList: {
		"ListTable":               {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem", "ConditionCheckItem"},
		"HistoryTable":            {"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
		"IndexTable":              {"PutItem", "DeleteItem"},
		"UsageTable":              {"GetItem", "UpdateItem", "BatchGetItem"},
		"AppsTable":               {"GetItem", "BatchGetItem"},
		"AppsTable[rate#*]":       {"UpdateItem"},
		"DataTable":               {"DeleteItem"},
		"DataTable/index/byOwner": {"Query"},
		"ListTable/index/byOwner": {"Query"},
		"NamespacesTable":         {"GetItem"},
		"NamespacesTable{app,namespace,heldSince}":     {"UpdateItem"},
		"AppsTable{app,heldSince,registry,appNameKey}": {"UpdateItem"},
	},
	fnAdmin: {
		"UsageTable":                  {"GetItem", "UpdateItem", "Query", "BatchGetItem", "PutItem", "DeleteItem"},
		"UsageTable/index/byAppShard": {"Query"},
		"AppsTable":                   {"GetItem", "UpdateItem", "BatchGetItem", "PutItem", "DeleteItem"},
		"AppsTable/index/byName":      {"Query"},
		"DataTable":                   {"PutItem", "DeleteItem", "BatchGetItem", "Scan", "UpdateItem", "GetItem"},
		"ListTable":                   {"PutItem", "DeleteItem", "BatchGetItem", "Scan", "UpdateItem", "GetItem"},
		"DataTable/index/byOwner":     {"Query"},
		"ListTable/index/byOwner":     {"Query"},
		"HistoryTable":                {"Scan", "GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
		"HistoryTable/index/byOwner":  {"Query"},
		"IndexTable":                  {"Scan", "BatchWriteItem", "PutItem", "DeleteItem"},
		"NamespacesTable":             {"GetItem", "UpdateItem", "Query"},
	},
	fnExpiry: {
		"UsageTable":      {"GetItem", "UpdateItem"},
		"AppsTable":       {"PutItem"},
		"NamespacesTable": {"GetItem"},
		"DataTable":       {"ConditionCheckItem"},
		"ListTable":       {"ConditionCheckItem"},
		"IndexTable":      {"DeleteItem"},
		"NamespacesTable{app,namespace,heldSince}":     {"UpdateItem"},
		"AppsTable{app,heldSince,registry,appNameKey}": {"UpdateItem"},
		"DataTable/stream":                             {"DescribeStream", "GetRecords", "GetShardIterator", "ListStreams"},
		"ListTable/stream":                             {"DescribeStream", "GetRecords", "GetShardIterator", "ListStreams"},
		"HistoryTable/stream":                          {"DescribeStream", "GetRecords", "GetShardIterator", "ListStreams"},
	},
	// The changes function puts the feed's rows and reads the data
	// tables' streams, and finds the realtime subscribers of what it
	// landed: nothing else, and nothing of the bucket.
	fnChanges: {
		"ChangesTable":     {"BatchWriteItem"},
		"DataTable/stream": {"DescribeStream", "GetRecords", "GetShardIterator", "ListStreams"},
		"ListTable/stream": {"DescribeStream", "GetRecords", "GetShardIterator", "ListStreams"},
		"ConnectionsTable": {"Query"},
	},
	// The realtime function records and removes connections, and
	// nothing else.
	fnRealtime: {
		"ConnectionsTable": {"PutItem", "GetItem", "BatchWriteItem", "DeleteItem"},
	},
	// The deliver function keeps sessions and subscriptions, and reads
	// the changes feed as the kv function's feed route does: its reads,
	// and the rate buckets a subscribe is charged to.
	fnDeliver: {
		"ConnectionsTable":            {"GetItem", "UpdateItem", "PutItem", "DeleteItem", "BatchWriteItem"},
		"AppsTable[rate#*]":           {"UpdateItem"},
		"ChangesTable":                {"Query"},
		"DataTable":                   {"GetItem", "BatchGetItem"},
		"ListTable":                   {"GetItem", "BatchGetItem"},
		"HistoryTable":                {"GetItem", "BatchGetItem"},
		"IndexTable":                  {"Query"},
		"UsageTable":                  {"GetItem", "BatchGetItem"},
		"AppsTable":                   {"GetItem", "BatchGetItem"},
		"NamespacesTable":             {"GetItem"},
		"DataTable/index/byOwner":     {"Query"},
		"ListTable/index/byOwner":     {"Query"},
		"UsageTable/index/byAppShard": {"Query"},
	},
}

// wantBucketAccess is the S3 access each function must have, written out
// independently of objectAccess: actions by resource, "bucket" for the
// bucket, "uploads/*" and "values/*" for the objects under uploads/ and
// values/.
var wantBucketAccess = map[string]map[string][]string{
	fnKV: {
		"uploads/*": {"PutObject", "PutObjectTagging", "GetObject", "DeleteObject"},
		"values/*":  {"PutObject", "PutObjectTagging", "AbortMultipartUpload", "GetObject", "DeleteObject"},
		"bucket":    {"ListBucket"},
	},
	fnList: {
		"uploads/*": {"PutObject", "PutObjectTagging", "GetObject", "DeleteObject"},
		"values/*":  {"PutObject", "PutObjectTagging", "AbortMultipartUpload", "GetObject", "DeleteObject"},
		"bucket":    {"ListBucket"},
	},
	fnAdmin: {
		"uploads/*": {"GetObject", "DeleteObject"},
		"values/*":  {"GetObject", "DeleteObject"},
		"bucket":    {"ListBucket"},
	},
	fnExpiry: {
		"uploads/*": {"GetObject", "GetObjectTagging", "DeleteObject"},
		"values/*":  {"PutObject", "PutObjectTagging", "AbortMultipartUpload", "GetObject", "DeleteObject"},
		"bucket":    {"ListBucket"},
	},
	fnChanges:  {},
	fnRealtime: {},
	fnDeliver:  {},
}

// wantRoutes is every route key of the API and the function behind it.
var wantRoutes = map[string]string{
	"POST /rest/api/v1/data/{app}/{namespace}/{id}":              fnKV,
	"PUT /rest/api/v1/data/{app}/{namespace}/{id}":               fnKV,
	"PATCH /rest/api/v1/data/{app}/{namespace}/{id}":             fnKV,
	"GET /rest/api/v1/data/{app}/{namespace}/{id}":               fnKV,
	"HEAD /rest/api/v1/data/{app}/{namespace}/{id}":              fnKV,
	"DELETE /rest/api/v1/data/{app}/{namespace}/{id}":            fnKV,
	"GET /rest/api/v1/data/{app}/{namespace}":                    fnKV,
	"HEAD /rest/api/v1/data/{app}/{namespace}":                   fnKV,
	"GET /rest/api/v1/data/{app}/quota":                          fnKV,
	"POST /rest/api/v1/data/{app}/batch":                         fnKV,
	"HEAD /rest/api/v1/data/{app}/quota":                         fnKV,
	"GET /rest/api/v1/data/{app}/{namespace}/{id}/list":          fnList,
	"HEAD /rest/api/v1/data/{app}/{namespace}/{id}/list":         fnList,
	"DELETE /rest/api/v1/data/{app}/{namespace}/{id}/list":       fnList,
	"POST /rest/api/v1/data/{app}/{namespace}/{id}/{sortKey+}":   fnList,
	"PUT /rest/api/v1/data/{app}/{namespace}/{id}/{sortKey+}":    fnList,
	"PATCH /rest/api/v1/data/{app}/{namespace}/{id}/{sortKey+}":  fnList,
	"GET /rest/api/v1/data/{app}/{namespace}/{id}/{sortKey+}":    fnList,
	"HEAD /rest/api/v1/data/{app}/{namespace}/{id}/{sortKey+}":   fnList,
	"DELETE /rest/api/v1/data/{app}/{namespace}/{id}/{sortKey+}": fnList,
	"ANY /rest/api/v1/admin/{proxy+}":                            fnAdmin,
}

// public is the context of a stack whose data routes are public, the
// explicit choice every stack without a JWT authorizer needs.
func public() map[string]any { return map[string]any{ctxPublicDataRoutes: "true"} }

func TestDefaultStack(t *testing.T) {
	s := synth(t, public())

	t.Run("resource counts", func(t *testing.T) {
		want := map[string]int{
			"AWS::DynamoDB::Table":            len(schema.Tables) + 1, // and the connections table
			"AWS::Lambda::Function":           len(functionSpecs),
			"AWS::IAM::Role":                  len(functionSpecs),
			"AWS::IAM::Policy":                len(functionSpecs),
			"AWS::ApiGatewayV2::Api":          2, // the HTTP API and the realtime WebSocket API
			"AWS::ApiGatewayV2::Stage":        2,
			"AWS::ApiGatewayV2::Integration":  len(apiFunctions) + len(realtimeRoutes), // not the stream functions; one per WebSocket route
			"AWS::ApiGatewayV2::Route":        len(wantRoutes) + len(realtimeRoutes),
			"AWS::ApiGatewayV2::Authorizer":   0,
			"AWS::Lambda::Permission":         len(wantRoutes) + 1 + len(realtimeRoutes), // and S3's, for upload events
			"AWS::Lambda::EventInvokeConfig":  1,                                         // the expiry function's upload events
			"AWS::Logs::LogGroup":             len(functionSpecs) + 1,
			"AWS::CloudWatch::Alarm":          1 + len(functionSpecs) + len(apiFunctions) + 1 + 1 + 2 + 1 + 4, // and the expiry stream's, the changes feed's lag, and realtime's four
			"AWS::CloudWatch::Dashboard":      1,
			"AWS::Lambda::EventSourceMapping": 3 + 2 + 1, // expiry: data, list and history; changes: data and list; deliver: the realtime queue
			"AWS::SQS::Queue":                 3,         // the expiry function's failures; realtime's queue and its dead letters
			"AWS::S3::Bucket":                 1,
			"AWS::S3::BucketPolicy":           1,
		}
		for typ, n := range want {
			if got := len(s.ofType(typ)); got != n {
				t.Errorf("%s: %d resources, want %d", typ, got, n)
			}
		}
	})

	for _, table := range schema.Tables {
		t.Run("table/"+table.ID, func(t *testing.T) {
			checkTable(t, s, table, table.DefaultName)
		})
	}

	for _, f := range functionSpecs {
		t.Run("function/"+f.Name, func(t *testing.T) {
			r := s.resources[s.logicalID(t, s.stack.Functions[f.Name])]
			p := r.Properties
			checkEqual(t, "Runtime", p["Runtime"], "provided.al2023")
			checkEqual(t, "Architectures", p["Architectures"], []any{"arm64"})
			checkEqual(t, "Handler", p["Handler"], "bootstrap")
			checkEqual(t, "MemorySize", p["MemorySize"], f.MemoryMB)
			checkEqual(t, "Timeout", p["Timeout"], f.Timeout.Seconds())
			if servesRoutes(f.Name) && f.Timeout.Seconds() > 29 {
				t.Errorf("timeout %v is longer than API Gateway waits", f.Timeout)
			}
			if _, ok := p["Code"].(map[string]any)["S3Key"]; !ok {
				t.Errorf("Code is not an asset: %v", p["Code"])
			}
			logGroup := strings.TrimSuffix(strings.TrimPrefix(flatten(p["LoggingConfig"].(map[string]any)["LogGroup"]), "${"), "}")
			checkEqual(t, "log group type", s.resources[logGroup].Type, "AWS::Logs::LogGroup")
			checkEqual(t, "log retention", s.resources[logGroup].Properties["RetentionInDays"], 30.0)
			logging := p["LoggingConfig"].(map[string]any)
			checkEqual(t, "LogFormat", logging["LogFormat"], "JSON")
			checkEqual(t, "ApplicationLogLevel", logging["ApplicationLogLevel"], "INFO")
			checkEqual(t, "SystemLogLevel", logging["SystemLogLevel"], "INFO")
		})
	}

	for _, f := range functionSpecs {
		t.Run("environment/"+f.Name, func(t *testing.T) {
			env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			want := map[string]string{
				config.EnvSubjectClaim:      "sub",
				config.EnvCursorSecret:      "${AWS::StackId}",
				config.EnvDefaultLimitBytes: "0",
				config.EnvDefaultLimitItems: "0",
				config.EnvLogLevel:          "INFO",
				"UDS_BUCKET":                "udsstack-values-${AWS::AccountId}-${AWS::Region}",
			}
			for _, table := range schema.Tables {
				want[table.EnvVar] = table.DefaultName
			}
			if f.Name == fnList {
				want[config.EnvDeleteAllBudget] = "25s"
			}
			if _, ok := realtimeManagement[f.Name]; ok {
				want[schema.Connections.EnvVar] = schema.Connections.DefaultName
				want[config.EnvRealtimeCallback] = "https://${" + s.logicalID(t, s.stack.RealtimeAPI) + "}.execute-api.${AWS::Region}.${AWS::URLSuffix}/live"
				if f.Name != fnDeliver {
					want[config.EnvRealtimeQueue] = "${" + s.logicalID(t, s.stack.RealtimeQueue) + "}"
				}
			}
			got := map[string]string{}
			for k, v := range env {
				got[k] = flatten(v)
			}
			checkEqual(t, "environment", got, want)
		})
	}

	checkAccess(t, s, func(table schema.Table) string {
		return "${" + s.logicalID(t, s.stack.Tables[table.ID]) + ".Arn}"
	})

	t.Run("function roles/no managed policies", func(t *testing.T) {
		for _, id := range s.ofType("AWS::IAM::Role") {
			if mp := s.resources[id].Properties["ManagedPolicyArns"]; mp != nil {
				t.Errorf("role %s has managed policies %v", id, mp)
			}
		}
	})

	t.Run("function roles/log permissions only on own log group", func(t *testing.T) {
		for _, f := range functionSpecs {
			fn := s.resources[s.logicalID(t, s.stack.Functions[f.Name])]
			logGroup := flatten(fn.Properties["LoggingConfig"].(map[string]any)["LogGroup"])
			wantResource := strings.Replace(logGroup, "}", ".Arn}", 1)
			for _, st := range s.statements(t, f.Name) {
				for _, a := range asStrings(st["Action"]) {
					if strings.HasPrefix(a, "logs:") {
						checkEqual(t, f.Name+" "+a+" resources", asStrings(st["Resource"]), []string{wantResource})
					}
				}
			}
		}
	})

	checkRoutes(t, s, "NONE")

	t.Run("api/no authorizers on public data routes", func(t *testing.T) {
		if ids := s.ofType("AWS::ApiGatewayV2::Authorizer"); len(ids) != 0 {
			t.Errorf("authorizers %v, want none", ids)
		}
	})

	t.Run("api/no cors without origins", func(t *testing.T) {
		api := s.resources[s.ofType("AWS::ApiGatewayV2::Api")[0]]
		if c, ok := api.Properties["CorsConfiguration"]; ok {
			t.Errorf("CorsConfiguration %v, want none", c)
		}
	})

	t.Run("api/default stage", func(t *testing.T) {
		r := s.resources[s.ofType("AWS::ApiGatewayV2::Stage")[0]]
		checkEqual(t, "RouteSettings", r.Properties["RouteSettings"], nil)
		checkEqual(t, "DependsOn", r.DependsOn, []string(nil))
		stage := r.Properties
		checkEqual(t, "StageName", stage["StageName"], "$default")
		checkEqual(t, "AutoDeploy", stage["AutoDeploy"], true)
		checkEqual(t, "DefaultRouteSettings", stage["DefaultRouteSettings"], map[string]any{
			"ThrottlingRateLimit": 100.0, "ThrottlingBurstLimit": 200.0,
		})
		logs, _ := stage["AccessLogSettings"].(map[string]any)
		if !strings.HasPrefix(flatten(logs["DestinationArn"]), "${ApiAccessLogs") {
			t.Errorf("access log destination %v", logs["DestinationArn"])
		}
		var format map[string]string
		if err := json.Unmarshal([]byte(flatten(logs["Format"])), &format); err != nil {
			t.Fatalf("access log format is not JSON: %v", err)
		}
		for _, k := range []string{"requestId", "routeKey", "status", "integrationError", "integrationStatus", "responseLatency"} {
			if format[k] == "" {
				t.Errorf("access log format lacks %s: %v", k, format)
			}
		}
	})

	t.Run("the counts docs/cost.md states", func(t *testing.T) {
		checkCostCounts(t, s)
	})

	t.Run("alarms", func(t *testing.T) {
		metrics := map[string]int{}
		for _, id := range s.ofType("AWS::CloudWatch::Alarm") {
			p := s.resources[id].Properties
			if p["Threshold"].(float64) <= 0 {
				t.Errorf("alarm %s threshold %v", id, p["Threshold"])
			}
			checkEqual(t, id+" TreatMissingData", p["TreatMissingData"], "notBreaching")
			if name, ok := p["MetricName"].(string); ok {
				metrics[p["Namespace"].(string)+"/"+name]++
				continue
			}
			for _, m := range asList(p["Metrics"]) {
				stat, ok := m.(map[string]any)["MetricStat"].(map[string]any)
				if !ok {
					continue
				}
				metric := stat["Metric"].(map[string]any)
				metrics[metric["Namespace"].(string)+"/"+metric["MetricName"].(string)]++
			}
		}
		checkEqual(t, "alarm metrics", metrics, map[string]int{
			"AWS/ApiGateway/5xx":                         1,
			"AWS/ApiGateway/Count":                       1,
			"AWS/Lambda/IteratorAge":                     2, // the expiry and changes functions' lag
			"AWS/SQS/ApproximateNumberOfMessagesVisible": 2, // the expiry function's failures, realtime's dead letters
			"AWS/SQS/ApproximateAgeOfOldestMessage":      1,
			"AWS/Lambda/Errors":                          len(functionSpecs),
			"UDS/DynamoDBThrottles":                      len(functionSpecs) - 3, // not the changes, realtime and deliver functions, which write none
			"UDS/Latency":                                len(apiFunctions),
			"UDS/UploadCommitFailures":                   1,
			"UDS/PostFailures":                           1,
			"UDS/PublishFailures":                        1,
		})
	})

	t.Run("request alarms", func(t *testing.T) {
		for _, f := range functionSpecs {
			threshold, api := p99LatencyThresholdMs[f.Name]
			if !api {
				continue
			}
			latency := s.resources[s.logicalIDOf(t, f.ConstructID+"LatencyP99Alarm")].Properties
			checkEqual(t, f.Name+" latency metric", []any{latency["Namespace"], latency["MetricName"], latency["ExtendedStatistic"]}, []any{"UDS", "Latency", "p99"})
			checkEqual(t, f.Name+" latency dimensions", latency["Dimensions"], []any{map[string]any{"Name": "function", "Value": f.Name}})
			checkEqual(t, f.Name+" latency threshold", latency["Threshold"], threshold)
			checkEqual(t, f.Name+" latency periods", []any{latency["EvaluationPeriods"], latency["DatapointsToAlarm"]}, []any{3.0, 2.0})
		}
		share := s.resources[s.logicalIDOf(t, "ApiServerErrorShareAlarm")].Properties
		checkEqual(t, "share threshold", share["Threshold"], float64(serverErrorSharePercent))
		checkEqual(t, "share expression", mathExpression(share), "IF(requests >= 20, 100 * FILL(errors, 0) / requests, 0)")
		throttles := s.resources[s.logicalIDOf(t, "DynamoDBThrottlesAlarm")].Properties
		checkEqual(t, "throttles threshold", throttles["Threshold"], float64(dynamoDBThrottlesThreshold))
		checkEqual(t, "throttles expression", mathExpression(throttles), "FILL(kv, 0) + FILL(list, 0) + FILL(admin, 0) + FILL(expiry, 0)")
	})

	t.Run("dashboard", func(t *testing.T) {
		ids := s.ofType("AWS::CloudWatch::Dashboard")
		if len(ids) != 1 {
			t.Fatalf("%d dashboards", len(ids))
		}
		body := flatten(s.resources[ids[0]].Properties["DashboardBody"])
		checkDashboardMetrics(t, body)
		if strings.Contains(body, "SEARCH('{UDS,function,route}") {
			t.Errorf("the default dashboard graphs per-route metrics, which the functions do not publish by default")
		}
		// Under the JSON log format a cold start's init duration is in
		// the platform.report record (the system log level must let it
		// through: see the functions' logging config above).
		var dashboard struct {
			Widgets []struct {
				Properties struct{ Title, Query string }
			}
		}
		if err := json.Unmarshal([]byte(body), &dashboard); err != nil {
			t.Fatalf("the dashboard body is not JSON: %v", err)
		}
		var query string
		queries := map[string]string{}
		for _, w := range dashboard.Widgets {
			if w.Properties.Title == "Cold starts: init duration (ms)" {
				query = w.Properties.Query
			}
			if strings.HasPrefix(w.Properties.Title, "Per route: ") {
				queries[w.Properties.Title] = w.Properties.Query
			}
		}
		// The per-route detail comes from the API functions' request
		// lines: each query reads their three log groups and no other.
		want := map[string][]string{
			"Per route: requests, p50 and p99 latency (ms)":                                            routeLatencyQuery,
			"Per route: 4xx and 5xx answers":                                                           routeErrorsQuery,
			"Per route: quota refusals, conditional failures (409/412), 429s, rate limits let through": refusalsQuery,
			"Per route: DynamoDB calls, retries, throttles and capacity units":                         routeDynamoDBQuery,
		}
		if len(queries) != len(want) {
			t.Errorf("per-route queries %v, want %d", queries, len(want))
		}
		for title, lines := range want {
			q := queries[title]
			for _, f := range apiFunctions {
				if !strings.Contains(q, "SOURCE '${"+s.logicalID(t, s.stack.Functions[f].LogGroup())+"}'") {
					t.Errorf("%s does not read the %s function's log group: %s", title, f, q)
				}
			}
			if strings.Count(q, "SOURCE ") != len(apiFunctions) || !strings.HasSuffix(q, strings.Join(lines, "\n| ")) {
				t.Errorf("%s: query %q, want %q over the API functions' log groups", title, q, lines)
			}
		}
		_, query, _ = strings.Cut(query, "| filter ")
		checkEqual(t, "init duration query", query, `type = "platform.report" and ispresent(record.metrics.initDurationMs)`+"\n| "+
			`stats count() as coldStarts, avg(record.metrics.initDurationMs) as avgInitMs, pct(record.metrics.initDurationMs, 99) as p99InitMs by bin(5m)`)
	})

	t.Run("outputs", func(t *testing.T) {
		if _, ok := s.outputs["ApiUrl"]; !ok {
			t.Error("no ApiUrl output")
		}
		dashboard, _ := s.outputs["DashboardUrl"].(map[string]any)
		if url := flatten(dashboard["Value"]); !strings.Contains(url, "#dashboards:name=${Dashboard") {
			t.Errorf("DashboardUrl %q", url)
		}
		for _, f := range functionSpecs {
			out, _ := s.outputs[f.ConstructID+"LogGroup"].(map[string]any)
			if v := flatten(out["Value"]); !strings.HasPrefix(v, "${"+f.ConstructID+"Logs") {
				t.Errorf("%sLogGroup output %q", f.ConstructID, v)
			}
		}
		for _, table := range schema.Tables {
			out, _ := s.outputs[table.ID+"Name"].(map[string]any)
			checkEqual(t, table.ID+"Name output", out["Value"], table.DefaultName)
		}
		out, _ := s.outputs["BucketName"].(map[string]any)
		checkEqual(t, "BucketName output", flatten(out["Value"]), "udsstack-values-${AWS::AccountId}-${AWS::Region}")
	})
}

// checkTable compares the table named name with its schema description.
func checkTable(t *testing.T, s *synthesized, table schema.Table, name string) {
	t.Helper()
	var found []resource
	for _, id := range s.ofType("AWS::DynamoDB::Table") {
		if s.resources[id].Properties["TableName"] == name {
			found = append(found, s.resources[id])
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d tables named %q, want 1", len(found), name)
	}
	r := found[0]
	p := r.Properties

	checkEqual(t, "KeySchema", p["KeySchema"], keySchema(table.Hash, table.Range))

	wantAttrs := map[string]string{}
	addAttr := func(a *schema.KeyAttr) {
		if a != nil {
			wantAttrs[a.Name] = string(a.Type)
		}
	}
	addAttr(&table.Hash)
	addAttr(table.Range)
	for _, idx := range table.Indexes {
		addAttr(&idx.Hash)
		addAttr(idx.Range)
	}
	gotAttrs := map[string]string{}
	for _, a := range asList(p["AttributeDefinitions"]) {
		a := a.(map[string]any)
		gotAttrs[a["AttributeName"].(string)] = a["AttributeType"].(string)
	}
	checkEqual(t, "AttributeDefinitions", gotAttrs, wantAttrs)

	var wantGSIs []any
	for _, idx := range table.Indexes {
		projection := map[string]any{"ProjectionType": "KEYS_ONLY"}
		if len(idx.NonKeyAttributes) > 0 {
			var attrs []any
			for _, a := range idx.NonKeyAttributes {
				attrs = append(attrs, a)
			}
			projection = map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": attrs}
		}
		wantGSIs = append(wantGSIs, map[string]any{
			"IndexName":  idx.Name,
			"KeySchema":  keySchema(idx.Hash, idx.Range),
			"Projection": projection,
		})
	}
	checkEqual(t, "GlobalSecondaryIndexes", asList(p["GlobalSecondaryIndexes"]), wantGSIs)

	checkEqual(t, "BillingMode", p["BillingMode"], "PAY_PER_REQUEST")
	checkEqual(t, "PointInTimeRecoverySpecification", p["PointInTimeRecoverySpecification"],
		map[string]any{"PointInTimeRecoveryEnabled": true})
	checkEqual(t, "TimeToLiveSpecification", p["TimeToLiveSpecification"],
		map[string]any{"AttributeName": schema.AttrExpiresAt, "Enabled": true})
	checkEqual(t, "DeletionPolicy", r.DeletionPolicy, "Retain")
	checkEqual(t, "UpdateReplacePolicy", r.UpdateReplace, "Retain")
}

func keySchema(hash schema.KeyAttr, rng *schema.KeyAttr) []any {
	ks := []any{map[string]any{"AttributeName": hash.Name, "KeyType": "HASH"}}
	if rng != nil {
		ks = append(ks, map[string]any{"AttributeName": rng.Name, "KeyType": "RANGE"})
	}
	return ks
}

// statements returns the policy statements attached to a function's role.
func (s *synthesized) statements(t *testing.T, fn string) []map[string]any {
	t.Helper()
	role := "${" + s.logicalID(t, s.stack.Roles[fn]) + "}"
	var out []map[string]any
	for _, id := range s.ofType("AWS::IAM::Policy") {
		p := s.resources[id].Properties
		attached := false
		for _, r := range asStrings(p["Roles"]) {
			attached = attached || r == role
		}
		if !attached {
			continue
		}
		for _, st := range asList(p["PolicyDocument"].(map[string]any)["Statement"]) {
			out = append(out, st.(map[string]any))
		}
	}
	return out
}

// checkAccess compares each function's DynamoDB permissions with
// wantAccess. tableArn renders a table's ARN as it appears flattened in the
// template.
func checkAccess(t *testing.T, s *synthesized, tableArn func(schema.Table) string) {
	t.Helper()
	// Longest first, so an ARN never matches a shorter one that prefixes
	// it (data_store is a prefix of data_store_list).
	tables := append([]schema.Table(nil), schema.Tables...)
	sort.Slice(tables, func(i, j int) bool { return len(tableArn(tables[i])) > len(tableArn(tables[j])) })
	var pairs []string
	for _, table := range tables {
		if stream := strings.Replace(tableArn(table), ".Arn}", ".StreamArn}", 1); stream != tableArn(table) {
			pairs = append(pairs, stream, table.ID+"/stream")
		}
		pairs = append(pairs, tableArn(table), table.ID)
	}
	// The stack always creates the connections table.
	pairs = append(pairs, "${"+s.logicalID(t, s.stack.Tables[schema.Connections.ID])+".Arn}", schema.Connections.ID)
	streams := slices.ContainsFunc(s.ofType("AWS::Lambda::EventSourceMapping"), func(id string) bool {
		return strings.Contains(flatten(s.resources[id].Properties["EventSourceArn"]), ".StreamArn}")
	})
	names := strings.NewReplacer(pairs...)
	checkBucketAccess(t, s)

	for _, f := range functionSpecs {
		t.Run("iam/"+f.Name, func(t *testing.T) {
			got := map[string][]string{}
			for _, st := range s.statements(t, f.Name) {
				checkEqual(t, "Effect", st["Effect"], "Allow")
				items := leadingKeys(t, st["Condition"])
				for _, a := range asStrings(st["Action"]) {
					if !strings.HasPrefix(a, "dynamodb:") {
						continue
					}
					for _, r := range asStrings(st["Resource"]) {
						key := names.Replace(r) + items
						got[key] = append(got[key], strings.TrimPrefix(a, "dynamodb:"))
					}
				}
			}
			want := map[string][]string{}
			for k, v := range wantAccess[f.Name] {
				if strings.HasSuffix(k, "/stream") && !streams {
					continue // imported tables: no stream the stack controls
				}
				want[k] = append([]string(nil), v...)
				sort.Strings(want[k])
			}
			for k := range got {
				sort.Strings(got[k])
			}
			checkEqual(t, "DynamoDB access", got, want)
		})
	}

	t.Run("iam/no wildcards", func(t *testing.T) {
		for _, id := range s.ofType("AWS::IAM::Policy") {
			for _, st := range asList(s.resources[id].Properties["PolicyDocument"].(map[string]any)["Statement"]) {
				st := st.(map[string]any)
				if _, ok := st["NotResource"]; ok {
					t.Errorf("%s uses NotResource", id)
				}
				if _, ok := st["NotAction"]; ok {
					t.Errorf("%s uses NotAction", id)
				}
				for _, r := range asStrings(st["Resource"]) {
					// The uploads and values are one wildcard, the
					// realtime stage's connections the other: their
					// keys and ids are made as they come.
					connections := strings.HasPrefix(r, "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${"+s.logicalID(t, s.stack.RealtimeAPI)+"}/live/") &&
						strings.HasSuffix(r, "/@connections/*")
					if r == "*" || strings.HasSuffix(r, "/*") && r != bucketArn(s)+"/uploads/*" && r != bucketArn(s)+"/values/*" && !connections || strings.Contains(r, "table/*") {
						t.Errorf("%s grants on wildcard resource %q", id, r)
					}
				}
				for _, a := range asStrings(st["Action"]) {
					if strings.Contains(a, "*") {
						t.Errorf("%s grants wildcard action %q", id, a)
					}
				}
			}
		}
	})
}

// wantBucketName is the bucket's name as the template writes it: the
// configured one, or the stack's name in lower case, "-values-", the
// account and the region.
func wantBucketName(s *synthesized) string {
	if s.props.BucketName != "" {
		return s.props.BucketName
	}
	return strings.ToLower(*s.props.StackName) + "-values-${AWS::AccountId}-${AWS::Region}"
}

// bucketArn is the bucket's ARN as the grants and the permission write
// it: from its name, never a reference to the bucket resource.
func bucketArn(s *synthesized) string { return "arn:${AWS::Partition}:s3:::" + wantBucketName(s) }

// checkBucketAccess compares each function's S3 permissions with
// wantBucketAccess.
func checkBucketAccess(t *testing.T, s *synthesized) {
	t.Helper()
	names := strings.NewReplacer(bucketArn(s)+"/uploads/*", "uploads/*", bucketArn(s)+"/values/*", "values/*", bucketArn(s), "bucket")
	for _, f := range functionSpecs {
		t.Run("s3/"+f.Name, func(t *testing.T) {
			got := map[string][]string{}
			for _, st := range s.statements(t, f.Name) {
				for _, a := range asStrings(st["Action"]) {
					if !strings.HasPrefix(a, "s3:") {
						continue
					}
					if st["Condition"] != nil {
						t.Errorf("%s has a condition: %v", a, st["Condition"])
					}
					for _, r := range asStrings(st["Resource"]) {
						key := names.Replace(r)
						got[key] = append(got[key], strings.TrimPrefix(a, "s3:"))
					}
				}
			}
			want := map[string][]string{}
			for k, v := range wantBucketAccess[f.Name] {
				want[k] = slices.Sorted(slices.Values(v))
			}
			for k := range got {
				sort.Strings(got[k])
			}
			checkEqual(t, "S3 access", got, want)
		})
	}
}

// leadingKeys renders a statement's condition as wantAccess names it:
// "[pattern,...]" for a grant limited by dynamodb:LeadingKeys,
// "{attr,...}" for one limited by dynamodb:Attributes, "" for none. Any
// other condition fails the test: a grant that met it would be narrower
// than wantAccess says, or wider.
func leadingKeys(t *testing.T, condition any) string {
	t.Helper()
	if condition == nil {
		return ""
	}
	c, _ := condition.(map[string]any)
	like, _ := c["ForAllValues:StringLike"].(map[string]any)
	if keys, ok := like["dynamodb:LeadingKeys"]; ok && len(c) == 1 && len(like) == 1 {
		return "[" + strings.Join(asStrings(keys), ",") + "]"
	}
	equals, _ := c["ForAllValues:StringEquals"].(map[string]any)
	if attrs, ok := equals["dynamodb:Attributes"]; ok && len(c) == 1 && len(equals) == 1 {
		return "{" + strings.Join(asStrings(attrs), ",") + "}"
	}
	t.Errorf("condition %v, want only dynamodb:LeadingKeys (StringLike) or dynamodb:Attributes (StringEquals)", condition)
	return ""
}

// httpRoutes are the logical IDs of the HTTP API's routes (not the
// realtime WebSocket API's), sorted.
func (s *synthesized) httpRoutes(t *testing.T) []string {
	t.Helper()
	api := "${" + s.logicalID(t, s.stack.API) + "}"
	var out []string
	for _, id := range s.ofType("AWS::ApiGatewayV2::Route") {
		if flatten(s.resources[id].Properties["ApiId"]) == api {
			out = append(out, id)
		}
	}
	return out
}

// checkRoutes checks that the API has exactly wantRoutes, each integrated
// with its function, with IAM authorization on admin routes and
// dataAuthorization on the others.
func checkRoutes(t *testing.T, s *synthesized, dataAuthorization string) {
	t.Helper()
	routes := map[string]map[string]any{}
	for _, id := range s.httpRoutes(t) {
		p := s.resources[id].Properties
		key := p["RouteKey"].(string)
		if _, dup := routes[key]; dup {
			t.Errorf("route %q defined twice", key)
		}
		routes[key] = p
	}
	var keys []string
	for k := range wantRoutes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		fn := wantRoutes[key]
		t.Run("route/"+key, func(t *testing.T) {
			p, ok := routes[key]
			if !ok {
				t.Fatalf("no route %q", key)
			}
			target := flatten(p["Target"])
			integrationID := strings.TrimSuffix(strings.TrimPrefix(target, "integrations/${"), "}")
			integration, ok := s.resources[integrationID]
			if !ok || integration.Type != "AWS::ApiGatewayV2::Integration" {
				t.Fatalf("target %q is not an integration", target)
			}
			fnArn := "${" + s.logicalID(t, s.stack.Functions[fn]) + ".Arn}"
			checkEqual(t, "IntegrationType", integration.Properties["IntegrationType"], "AWS_PROXY")
			checkEqual(t, "IntegrationUri", flatten(integration.Properties["IntegrationUri"]), fnArn)
			checkEqual(t, "PayloadFormatVersion", integration.Properties["PayloadFormatVersion"], "2.0")

			wantAuth := dataAuthorization
			if strings.Contains(key, "/admin/") {
				wantAuth = "AWS_IAM"
			}
			checkEqual(t, "AuthorizationType", p["AuthorizationType"], wantAuth)
			if wantAuth == "JWT" {
				authorizer := strings.TrimSuffix(strings.TrimPrefix(flatten(p["AuthorizerId"]), "${"), "}")
				if s.resources[authorizer].Type != "AWS::ApiGatewayV2::Authorizer" {
					t.Errorf("AuthorizerId %v is not an authorizer", p["AuthorizerId"])
				}
			} else if p["AuthorizerId"] != nil {
				t.Errorf("AuthorizerId %v on a %s route", p["AuthorizerId"], wantAuth)
			}

			// API Gateway may invoke the function for this route.
			path := strings.SplitN(key, " ", 2)[1]
			permitted := false
			for _, id := range s.ofType("AWS::Lambda::Permission") {
				pp := s.resources[id].Properties
				if flatten(pp["FunctionName"]) == fnArn && strings.HasSuffix(flatten(pp["SourceArn"]), "/*/*"+path) {
					permitted = true
				}
			}
			if !permitted {
				t.Errorf("no invoke permission for %s on %s", fn, path)
			}
		})
	}
	t.Run("routes/no others", func(t *testing.T) {
		for key := range routes {
			if _, ok := wantRoutes[key]; !ok {
				t.Errorf("unexpected route %q", key)
			}
			if strings.HasSuffix(key, "/") {
				t.Errorf("route %q ends in a slash, which API Gateway refuses", key)
			}
		}
	})
}

func TestJWTAuthorizer(t *testing.T) {
	s := synth(t, map[string]any{
		ctxJWTIssuer:       "https://issuer.example.com/",
		ctxJWTAudience:     "web, mobile",
		ctxJWTSubjectClaim: "email",
	})
	t.Run("one jwt authorizer", func(t *testing.T) {
		ids := s.ofType("AWS::ApiGatewayV2::Authorizer")
		if len(ids) != 1 {
			t.Fatalf("authorizers %v, want one", ids)
		}
		p := s.resources[ids[0]].Properties
		checkEqual(t, "AuthorizerType", p["AuthorizerType"], "JWT")
		checkEqual(t, "JwtConfiguration", p["JwtConfiguration"], map[string]any{
			"Issuer": "https://issuer.example.com/", "Audience": []any{"web", "mobile"},
		})
		checkEqual(t, "IdentitySource", p["IdentitySource"], []any{"$request.header.Authorization"})
	})
	checkRoutes(t, s, "JWT")
	t.Run("subject claim", func(t *testing.T) {
		for _, f := range functionSpecs {
			env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			checkEqual(t, f.Name+" "+config.EnvSubjectClaim, env[config.EnvSubjectClaim], "email")
		}
	})
}

// jwtContext puts a JWT authorizer on the data routes.
func jwtContext() map[string]any {
	return map[string]any{ctxJWTIssuer: "https://issuer.example.com/", ctxJWTAudience: "web"}
}

// Public data routes are an explicit choice, and synth warns about it on
// the API; a stack with a JWT authorizer carries no such warning.
func TestDataRouteAccess(t *testing.T) {
	cases := []struct {
		name     string
		context  map[string]any
		wantAuth string
		warned   bool
	}{
		{"public", public(), "NONE", true},
		{"jwt authorizer", jwtContext(), "JWT", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := synth(t, c.context)
			checkRoutes(t, s, c.wantAuth)
			var warnings []string
			for _, m := range *assertions.Annotations_FromStack(s.stack.Stack).FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
				warnings = append(warnings, *m.Id+": "+fmt.Sprint(m.Entry.Data))
			}
			var want []string
			if c.warned {
				want = []string{"/" + *s.props.StackName + "/Api: " + publicDataRoutesWarning + " [ack: uds:publicDataRoutes]"}
			}
			checkEqual(t, "warnings", warnings, want)
		})
	}
}

// On Lambda the caller is who the authorizer says, never a header the
// client sent: no function of any kind of stack is told to trust
// X-Uds-Subject.
func TestNoFunctionTrustsSubjectHeader(t *testing.T) {
	imported := public()
	imported[ctxImportTables] = "true"
	cases := []struct {
		name    string
		context map[string]any
	}{
		{"public", public()},
		{"jwt authorizer", jwtContext()},
		{"imported tables", imported},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := synth(t, c.context)
			fns := s.ofType("AWS::Lambda::Function")
			if len(fns) != len(functionSpecs) {
				t.Fatalf("%d functions, want %d", len(fns), len(functionSpecs))
			}
			for _, id := range fns {
				env, _ := s.resources[id].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
				if len(env) == 0 {
					t.Fatalf("%s has no environment", id)
				}
				if v, set := env[config.EnvTrustSubjectHeader]; set {
					t.Errorf("%s sets %s=%v", id, config.EnvTrustSubjectHeader, v)
				}
			}
		})
	}
}

// The tables' deletion protection and the optional caps against runaway
// cost: on-demand throughput on every table and index, reserved concurrency
// on the API's functions.
func TestSafeDefaults(t *testing.T) {
	with := func(kv ...any) map[string]any {
		ctx := public()
		for i := 0; i < len(kv); i += 2 {
			ctx[kv[i].(string)] = kv[i+1]
		}
		return ctx
	}
	cases := []struct {
		name               string
		context            map[string]any
		deletionProtection bool
		// throughput is each table's and index's OnDemandThroughput
		// (nil: none).
		throughput map[string]any
		// reserved is the API functions' reserved concurrency (nil:
		// none); the expiry function never has one.
		reserved any
	}{
		{name: "defaults", context: public(), deletionProtection: true},
		{name: "throwaway stack", context: with(ctxDeletionProtection, "false"), deletionProtection: false},
		{
			name:               "capped",
			context:            with(ctxMaxReadUnits, "1000", ctxMaxWriteUnits, 200.0, ctxReservedConcurrency, "50"),
			deletionProtection: true,
			throughput:         map[string]any{"MaxReadRequestUnits": 1000.0, "MaxWriteRequestUnits": 200.0},
			reserved:           50.0,
		},
		{
			name:               "read cap only",
			context:            with(ctxMaxReadUnits, "40", ctxDeletionProtection, true),
			deletionProtection: true,
			throughput:         map[string]any{"MaxReadRequestUnits": 40.0},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := synth(t, c.context)
			// The connections table, which holds no user data, has
			// neither (TestRealtime).
			connections := s.logicalID(t, s.stack.Tables[schema.Connections.ID])
			tables := slices.DeleteFunc(s.ofType("AWS::DynamoDB::Table"), func(id string) bool { return id == connections })
			if len(tables) != len(schema.Tables) {
				t.Fatalf("%d tables, want %d", len(tables), len(schema.Tables))
			}
			indexes := 0
			for _, id := range tables {
				p := s.resources[id].Properties
				checkEqual(t, id+" DeletionProtectionEnabled", p["DeletionProtectionEnabled"], c.deletionProtection)
				checkEqual(t, id+" OnDemandThroughput", onDemandThroughput(p), c.throughput)
				for _, gsi := range asList(p["GlobalSecondaryIndexes"]) {
					gsi := gsi.(map[string]any)
					checkEqual(t, id+" "+gsi["IndexName"].(string)+" OnDemandThroughput", onDemandThroughput(gsi), c.throughput)
					indexes++
				}
			}
			if indexes == 0 {
				t.Error("no indexes checked")
			}
			for _, f := range functionSpecs {
				p := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties
				want := c.reserved
				if !servesRoutes(f.Name) {
					want = nil
				}
				checkEqual(t, f.Name+" ReservedConcurrentExecutions", p["ReservedConcurrentExecutions"], want)
			}
		})
	}
}

// onDemandThroughput is a table's or index's OnDemandThroughput, nil when
// it has none.
func onDemandThroughput(p map[string]any) map[string]any {
	v, _ := p["OnDemandThroughput"].(map[string]any)
	return v
}

// TestExpiryStreams checks the streams and what reads them, written out
// independently of pkg/schema: the data tables keep both images (the
// streamed quota mode sums their changes), the history table old images
// (the expiry function releases the versions its TTL removed), the others
// none. The expiry function reads each stream in tumbling windows of a
// second (the window's event names the shard), one batch per shard at a
// time, with bisection, bounded retries and a failure queue; the filters
// pass TTL deletions, and on the data tables the changes of items written
// in the streamed mode. Its grants are checked with every function's
// (TestDefaultStack, iam/expiry: wantAccess).
func TestExpiryStreams(t *testing.T) {
	s := synth(t, public())
	wantViews := map[string]string{
		schema.Data.ID:    "NEW_AND_OLD_IMAGES",
		schema.List.ID:    "NEW_AND_OLD_IMAGES",
		schema.History.ID: "OLD_IMAGE",
	}
	for _, table := range schema.Tables {
		t.Run("view/"+table.ID, func(t *testing.T) {
			spec := s.resources[s.logicalID(t, s.stack.Tables[table.ID])].Properties["StreamSpecification"]
			if want, ok := wantViews[table.ID]; ok {
				checkEqual(t, "StreamSpecification", spec, map[string]any{"StreamViewType": want})
			} else if spec != nil {
				t.Errorf("a stream: %v", spec)
			}
		})
	}

	ttl := map[string]any{
		"eventName":    []any{"REMOVE"},
		"userIdentity": map[string]any{"type": []any{"Service"}, "principalId": []any{"dynamodb.amazonaws.com"}},
	}
	counted := func(image string) map[string]any {
		return map[string]any{"dynamodb": map[string]any{image: map[string]any{"streamCounted": map[string]any{"BOOL": []any{true}}}}}
	}
	wantFilters := map[string][]any{
		schema.Data.ID:    {ttl, counted("NewImage"), counted("OldImage")},
		schema.List.ID:    {ttl, counted("NewImage"), counted("OldImage")},
		schema.History.ID: {ttl},
	}
	mappings := map[string]map[string]any{} // by the table whose stream it reads
	expiry := "${" + s.logicalID(t, s.stack.Functions[fnExpiry]) + "}"
	for _, id := range s.ofType("AWS::Lambda::EventSourceMapping") {
		p := s.resources[id].Properties
		if flatten(p["FunctionName"]) != expiry {
			continue // the changes function's (TestChangesFeed)
		}
		for _, table := range schema.Tables {
			if flatten(p["EventSourceArn"]) == "${"+s.logicalID(t, s.stack.Tables[table.ID])+".StreamArn}" {
				mappings[table.ID] = p
			}
		}
	}
	checkEqual(t, "mapped tables", slices.Sorted(maps.Keys(mappings)), slices.Sorted(maps.Keys(wantViews)))
	for _, table := range slices.Sorted(maps.Keys(mappings)) {
		p := mappings[table]
		t.Run("mapping/"+table+"/start", func(t *testing.T) {
			checkEqual(t, "StartingPosition", p["StartingPosition"], "TRIM_HORIZON")
		})
		t.Run("mapping/"+table+"/tumbling window", func(t *testing.T) {
			checkEqual(t, "TumblingWindowInSeconds", p["TumblingWindowInSeconds"], float64(1))
		})
		t.Run("mapping/"+table+"/one batch per shard", func(t *testing.T) {
			checkEqual(t, "ParallelizationFactor", p["ParallelizationFactor"], float64(1))
		})
		t.Run("mapping/"+table+"/filters", func(t *testing.T) {
			var patterns []any
			for _, f := range asList(p["FilterCriteria"].(map[string]any)["Filters"]) {
				var pattern map[string]any
				if err := json.Unmarshal([]byte(f.(map[string]any)["Pattern"].(string)), &pattern); err != nil {
					t.Fatal(err)
				}
				patterns = append(patterns, pattern)
			}
			checkEqual(t, "filters", patterns, wantFilters[table])
		})
		t.Run("mapping/"+table+"/failures", func(t *testing.T) {
			checkEqual(t, "BisectBatchOnFunctionError", p["BisectBatchOnFunctionError"], true)
			checkEqual(t, "MaximumRetryAttempts", p["MaximumRetryAttempts"], float64(expiryRetries))
			checkEqual(t, "FunctionResponseTypes", p["FunctionResponseTypes"], []any{"ReportBatchItemFailures"})
			dest := p["DestinationConfig"].(map[string]any)["OnFailure"].(map[string]any)["Destination"]
			if !strings.Contains(fmt.Sprint(dest), "ExpiryFailures") {
				t.Errorf("on-failure destination %v", dest)
			}
		})
	}
}

// TestChangesFeed checks the changes function and what feeds it, written
// out independently of infra/changes.go: a mapping on each data table's
// stream and on no other, with no filter (every change is in the feed),
// from the streams' oldest record, one batch per shard at a time, batches
// of 100 gathered for at most a second, a failed batch retried from the
// record the function reports with no bound on retries or on the
// records' age (no record is ever skipped, so no failure queue); two
// readers of each data table's stream with the expiry function's; its
// alarms; and the changes table, which is read by the kv function and
// written by the changes function alone. The grants are checked with
// every function's (TestDefaultStack, iam/changes and iam/kv:
// wantAccess; s3/changes: none).
func TestChangesFeed(t *testing.T) {
	s := synth(t, public())
	fn := "${" + s.logicalID(t, s.stack.Functions[fnChanges]) + "}"

	t.Run("function", func(t *testing.T) {
		p := s.resources[s.logicalID(t, s.stack.Functions[fnChanges])].Properties
		checkEqual(t, "sizing", []any{p["Architectures"], p["MemorySize"], p["Timeout"], p["ReservedConcurrentExecutions"]},
			[]any{[]any{"arm64"}, 256.0, 60.0, nil})
		if _, ok := p["Code"].(map[string]any)["S3Key"]; !ok {
			t.Errorf("Code is not an asset: %v", p["Code"])
		}
		// The zip the root Makefile builds from functions/changes.
		i := slices.IndexFunc(functionSpecs, func(f functionSpec) bool { return f.Name == fnChanges })
		checkEqual(t, "zip", functionSpecs[i].zipPath(s.props.AssetDir), filepath.Join(s.props.AssetDir, "changes.zip"))
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		checkEqual(t, "UDS_TABLE_CHANGES", env["UDS_TABLE_CHANGES"], "data_changes")
		checkEqual(t, "UDS_TABLE_DATA", env["UDS_TABLE_DATA"], "data_store")
		checkEqual(t, "UDS_ROUTE_METRICS", env[config.EnvRouteMetrics], nil)
	})

	wantMapping := func(table schema.Table) map[string]any {
		return map[string]any{
			"FunctionName":                   fn,
			"EventSourceArn":                 "${" + s.logicalID(t, s.stack.Tables[table.ID]) + ".StreamArn}",
			"StartingPosition":               "TRIM_HORIZON",
			"BatchSize":                      "100",
			"MaximumBatchingWindowInSeconds": "1",
			"FunctionResponseTypes":          "[ReportBatchItemFailures]",
			"ParallelizationFactor":          "1",
			"MaximumRetryAttempts":           "-1",
			"MaximumRecordAgeInSeconds":      "-1",
		}
	}
	var got, want []map[string]any
	readers := map[string][]string{} // stream → functions reading it
	for _, id := range s.ofType("AWS::Lambda::EventSourceMapping") {
		p := s.resources[id].Properties
		if strings.Contains(flatten(p["EventSourceArn"]), ".StreamArn}") {
			readers[flatten(p["EventSourceArn"])] = append(readers[flatten(p["EventSourceArn"])], flatten(p["FunctionName"]))
		}
		if flatten(p["FunctionName"]) != fn {
			continue
		}
		// Every property, flattened: one the stack adds (a filter, a
		// failure destination, bisection, a tumbling window) fails.
		m := map[string]any{}
		for k, v := range p {
			m[k] = flatten(v)
		}
		got = append(got, m)
		if !slices.Contains(s.resources[id].DependsOn, s.logicalID(t, s.stack.Roles[fnChanges])) {
			t.Errorf("mapping %s does not wait for the function's role: %v", id, s.resources[id].DependsOn)
		}
	}
	for _, table := range []schema.Table{schema.Data, schema.List} {
		want = append(want, wantMapping(table))
	}
	byStream := func(a, b map[string]any) int {
		return strings.Compare(a["EventSourceArn"].(string), b["EventSourceArn"].(string))
	}
	slices.SortFunc(got, byStream)
	slices.SortFunc(want, byStream)
	t.Run("mappings", func(t *testing.T) { checkEqual(t, "mappings", got, want) })

	// DynamoDB advises at most two readers of a stream shard.
	t.Run("two readers per shard", func(t *testing.T) {
		expiry := "${" + s.logicalID(t, s.stack.Functions[fnExpiry]) + "}"
		for stream, fns := range readers {
			slices.Sort(fns)
			want := []string{expiry}
			if strings.Contains(stream, "DataTable") || strings.Contains(stream, "ListTable") {
				want = append(want, fn)
				slices.Sort(want)
			}
			checkEqual(t, stream+" readers", fns, want)
		}
	})

	t.Run("alarms", func(t *testing.T) {
		lag := s.resources[s.logicalIDOf(t, "ChangesIteratorAgeAlarm")].Properties
		checkEqual(t, "lag alarm", map[string]any{
			"metric":    []any{lag["Namespace"], lag["MetricName"], lag["Statistic"], lag["Period"], lag["EvaluationPeriods"]},
			"function":  dimensions(lag),
			"threshold": lag["Threshold"],
			"operator":  lag["ComparisonOperator"],
		}, map[string]any{
			"metric":    []any{"AWS/Lambda", "IteratorAge", "Maximum", 300.0, 1.0},
			"function":  map[string]string{"FunctionName": fn},
			"threshold": 60000.0,
			"operator":  "GreaterThanOrEqualToThreshold",
		})
		errs := s.resources[s.logicalIDOf(t, "ChangesFunctionErrorsAlarm")].Properties
		checkEqual(t, "errors alarm", []any{errs["Namespace"], errs["MetricName"], errs["Statistic"], errs["Threshold"], dimensions(errs)},
			[]any{"AWS/Lambda", "Errors", "Sum", 1.0, map[string]string{"FunctionName": fn}})
	})

	t.Run("dashboard", func(t *testing.T) {
		body := flatten(s.resources[s.ofType("AWS::CloudWatch::Dashboard")[0]].Properties["DashboardBody"])
		for _, want := range []string{
			`"title":"Changes feed: lag, the stream iterator age (ms)"`,
			`"AWS/Lambda","IteratorAge","FunctionName","` + fn + `"`,
			`"title":"Changes feed: records, rows written, lag (ms) and throttles"`,
			`SOURCE '${` + s.logicalID(t, s.stack.Functions[fnChanges].LogGroup()) + `}' | filter message = \"changes batch\"`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the dashboard lacks %s", want)
			}
		}
	})

	t.Run("table", func(t *testing.T) {
		r := s.resources[s.logicalID(t, s.stack.Tables[schema.Changes.ID])]
		p := r.Properties
		checkEqual(t, "TableName", p["TableName"], "data_changes")
		checkEqual(t, "KeySchema", p["KeySchema"], []any{
			map[string]any{"AttributeName": "changesKey", "KeyType": "HASH"},
			map[string]any{"AttributeName": "seq", "KeyType": "RANGE"},
		})
		checkEqual(t, "AttributeDefinitions", p["AttributeDefinitions"], []any{
			map[string]any{"AttributeName": "changesKey", "AttributeType": "S"},
			map[string]any{"AttributeName": "seq", "AttributeType": "S"},
		})
		checkEqual(t, "GlobalSecondaryIndexes", p["GlobalSecondaryIndexes"], nil)
		// Rows leave by the TTL, 31 days after they were written.
		checkEqual(t, "TimeToLiveSpecification", p["TimeToLiveSpecification"], map[string]any{"AttributeName": "expiresAt", "Enabled": true})
		// Nothing reads the feed's own changes.
		checkEqual(t, "StreamSpecification", p["StreamSpecification"], nil)
		checkDurable(t, r)
	})
}

// dimensions are an alarm's metric's dimensions, their values flattened.
func dimensions(alarm map[string]any) map[string]string {
	out := map[string]string{}
	for _, d := range asList(alarm["Dimensions"]) {
		d := d.(map[string]any)
		out[d["Name"].(string)] = flatten(d["Value"])
	}
	return out
}

// TestHistoryTable writes the history table out as the store uses it,
// independently of pkg/schema, so that a change there has to be made
// deliberately here as well. It is the one table whose sort key is a
// number (the version), and its TTL deletions reach the expiry function
// as the data tables' do.
func TestHistoryTable(t *testing.T) {
	s := synth(t, public())
	id := s.logicalID(t, s.stack.Tables[schema.History.ID])
	r := s.resources[id]
	p := r.Properties

	t.Run("keys", func(t *testing.T) {
		checkEqual(t, "TableName", p["TableName"], "data_history")
		checkEqual(t, "KeySchema", p["KeySchema"], []any{
			map[string]any{"AttributeName": "historyKey", "KeyType": "HASH"},
			map[string]any{"AttributeName": "version", "KeyType": "RANGE"},
		})
		attrs := map[string]any{}
		for _, a := range asList(p["AttributeDefinitions"]) {
			a := a.(map[string]any)
			attrs[a["AttributeName"].(string)] = a["AttributeType"]
		}
		checkEqual(t, "AttributeDefinitions", attrs, map[string]any{"historyKey": "S", "version": "N", "ownerKey": "S", "keptOrder": "S"})
	})
	t.Run("owner index", func(t *testing.T) {
		checkEqual(t, "GlobalSecondaryIndexes", p["GlobalSecondaryIndexes"], []any{map[string]any{
			"IndexName": "byOwner",
			"KeySchema": []any{
				map[string]any{"AttributeName": "ownerKey", "KeyType": "HASH"},
				map[string]any{"AttributeName": "keptOrder", "KeyType": "RANGE"},
			},
			"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": []any{"itemSize", "expiresAtMs"}},
		}})
	})
	t.Run("expiry", func(t *testing.T) {
		checkEqual(t, "TimeToLiveSpecification", p["TimeToLiveSpecification"], map[string]any{"AttributeName": "expiresAt", "Enabled": true})
		checkEqual(t, "StreamSpecification", p["StreamSpecification"], map[string]any{"StreamViewType": "OLD_IMAGE"})
		var mappings []string
		for _, m := range s.ofType("AWS::Lambda::EventSourceMapping") {
			mp := s.resources[m].Properties
			if flatten(mp["EventSourceArn"]) == "${"+id+".StreamArn}" {
				mappings = append(mappings, flatten(mp["FunctionName"]))
			}
		}
		checkEqual(t, "functions reading the stream", mappings, []string{"${" + s.logicalID(t, s.stack.Functions[fnExpiry]) + "}"})
	})
	t.Run("durability", func(t *testing.T) { checkDurable(t, r) })
	t.Run("environment", func(t *testing.T) {
		for _, f := range functionSpecs {
			env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			checkEqual(t, f.Name+" UDS_TABLE_HISTORY", env["UDS_TABLE_HISTORY"], "data_history")
		}
	})
}

// TestAppsTable writes the apps table's registry index out as the store
// uses it, independently of pkg/schema: sparse (only registered apps carry
// its keys), one partition listed by folded name, projecting what a
// listing shows.
func TestAppsTable(t *testing.T) {
	s := synth(t, public())
	p := s.resources[s.logicalID(t, s.stack.Tables[schema.Apps.ID])].Properties
	checkEqual(t, "KeySchema", p["KeySchema"], []any{map[string]any{"AttributeName": "app", "KeyType": "HASH"}})
	checkEqual(t, "GlobalSecondaryIndexes", p["GlobalSecondaryIndexes"], []any{map[string]any{
		"IndexName": "byName",
		"KeySchema": []any{
			map[string]any{"AttributeName": "registry", "KeyType": "HASH"},
			map[string]any{"AttributeName": "appNameKey", "KeyType": "RANGE"},
		},
		"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": []any{
			"appName", "appDescription", "registeredDate", "registryUpdated", "limitBytes", "limitItems",
		}},
	}})
}

// TestIndexTable writes the index table out as the store uses it,
// independently of pkg/schema, so that a change there has to be made
// deliberately here as well. It is the one table whose sort key is
// binary (an entry's value and item key, in an encoding whose byte order
// is theirs); it has no secondary index, and no stream, since an entry
// carries no usage for the expiry function to release.
func TestIndexTable(t *testing.T) {
	s := synth(t, public())
	id := s.logicalID(t, s.stack.Tables[schema.IndexEntries.ID])
	r := s.resources[id]
	p := r.Properties

	t.Run("keys", func(t *testing.T) {
		checkEqual(t, "TableName", p["TableName"], "data_index")
		checkEqual(t, "KeySchema", p["KeySchema"], []any{
			map[string]any{"AttributeName": "indexKey", "KeyType": "HASH"},
			map[string]any{"AttributeName": "indexSort", "KeyType": "RANGE"},
		})
		attrs := map[string]any{}
		for _, a := range asList(p["AttributeDefinitions"]) {
			a := a.(map[string]any)
			attrs[a["AttributeName"].(string)] = a["AttributeType"]
		}
		checkEqual(t, "AttributeDefinitions", attrs, map[string]any{"indexKey": "S", "indexSort": "B"})
	})
	t.Run("no secondary index", func(t *testing.T) {
		checkEqual(t, "GlobalSecondaryIndexes", p["GlobalSecondaryIndexes"], nil)
	})
	t.Run("no stream", func(t *testing.T) {
		checkEqual(t, "StreamSpecification", p["StreamSpecification"], nil)
		for _, m := range s.ofType("AWS::Lambda::EventSourceMapping") {
			if arn := flatten(s.resources[m].Properties["EventSourceArn"]); strings.Contains(arn, id) {
				t.Errorf("mapping %s reads %s", m, arn)
			}
		}
	})
	t.Run("durability", func(t *testing.T) { checkDurable(t, r) })
	t.Run("environment", func(t *testing.T) {
		for _, f := range functionSpecs {
			env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			checkEqual(t, f.Name+" UDS_TABLE_INDEX", env["UDS_TABLE_INDEX"], "data_index")
		}
	})
}

// checkDurable checks that a table survives what a stack may do to it:
// on demand, point-in-time recovery, deletion protection, and retained
// when the stack deletes or replaces it.
func checkDurable(t *testing.T, r resource) {
	t.Helper()
	p := r.Properties
	checkEqual(t, "BillingMode", p["BillingMode"], "PAY_PER_REQUEST")
	checkEqual(t, "PointInTimeRecoverySpecification", p["PointInTimeRecoverySpecification"], map[string]any{"PointInTimeRecoveryEnabled": true})
	checkEqual(t, "DeletionProtectionEnabled", p["DeletionProtectionEnabled"], true)
	checkEqual(t, "policies", []string{r.DeletionPolicy, r.UpdateReplace}, []string{"Retain", "Retain"})
}

// TestKeyAttribute maps each key type of the schema to the CDK's, and
// refuses a type it does not know instead of defining a string key.
func TestKeyAttribute(t *testing.T) {
	for _, c := range []struct {
		typ  schema.AttrType
		want awsdynamodb.AttributeType
	}{
		{schema.String, awsdynamodb.AttributeType_STRING},
		{schema.Number, awsdynamodb.AttributeType_NUMBER},
		{schema.Binary, awsdynamodb.AttributeType_BINARY},
	} {
		t.Run(string(c.typ), func(t *testing.T) {
			got := keyAttribute(&schema.KeyAttr{Name: "k", Type: c.typ})
			checkEqual(t, "attribute", []string{*got.Name, string(got.Type)}, []string{"k", string(c.want)})
		})
	}
	t.Run("none", func(t *testing.T) {
		if got := keyAttribute(nil); got != nil {
			t.Errorf("keyAttribute(nil) = %v, want nil", got)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("no panic for an unknown type")
			}
		}()
		keyAttribute(&schema.KeyAttr{Name: "k", Type: "SS"})
	})
}

func TestImportExistingTables(t *testing.T) {
	names := map[string]string{}
	context := map[string]any{ctxImportTables: "true", ctxPublicDataRoutes: "true"}
	for _, table := range schema.Tables {
		names[table.ID] = "prod_" + table.DefaultName
		context[tableContextKey(table)] = names[table.ID]
	}
	s := synth(t, context)

	t.Run("creates no tables but the connections table", func(t *testing.T) {
		want := []string{s.logicalID(t, s.stack.Tables[schema.Connections.ID])}
		if ids := s.ofType("AWS::DynamoDB::Table"); !slices.Equal(ids, want) {
			t.Errorf("tables %v, want %v", ids, want)
		}
	})
	t.Run("functions use the imported names", func(t *testing.T) {
		for _, f := range functionSpecs {
			env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			for _, table := range schema.Tables {
				checkEqual(t, f.Name+" "+table.EnvVar, env[table.EnvVar], names[table.ID])
			}
		}
	})
	checkAccess(t, s, func(table schema.Table) string {
		return "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/" + names[table.ID]
	})
	checkRoutes(t, s, "NONE")
}

// An earlier deployment has some of the tables: the stack imports those by
// name and creates the others, the changes table among them whatever it
// imports, and feeds the streams of those it creates (and only those) to
// the expiry function, and the data tables' to the changes function.
func TestImportSomeTables(t *testing.T) {
	cases := []struct {
		name    string
		imports string
		// created are the names of the tables the stack creates.
		created []string
		// streams are the tables whose streams the expiry function
		// reads, changes those the changes function reads.
		streams, changes []schema.Table
	}{
		{
			name: "seed deployment", imports: "data, list",
			created: []string{"data_usage", "apps", "namespace_policies", "data_history", "data_index", "data_changes"},
			streams: []schema.Table{schema.History},
		},
		{
			name: "release before namespace policies", imports: "data,list,usage,apps",
			created: []string{"namespace_policies", "data_history", "data_index", "data_changes"},
			streams: []schema.Table{schema.History},
		},
		{
			name: "release before version history", imports: "data,list,usage,apps,namespaces",
			created: []string{"data_history", "data_index", "data_changes"},
			streams: []schema.Table{schema.History},
		},
		{
			// The index table has no stream, so the stack creating it
			// adds no mapping.
			name: "release before namespace indexes", imports: "data,list,history,usage,apps,namespaces",
			created: []string{"data_index", "data_changes"},
		},
		{
			// Nor has the changes table: the feed reads the data
			// tables' streams, which the stack does not control once
			// they are imported.
			name: "release before the changes feed", imports: "data,list,history,index,usage,apps,namespaces",
			created: []string{"data_changes"},
		},
		{
			name: "history alone", imports: "HISTORY",
			created: []string{"legacy_data", "data_store_list", "data_index", "data_usage", "apps", "namespace_policies", "data_changes"},
			streams: []schema.Table{schema.Data, schema.List},
			changes: []schema.Table{schema.Data, schema.List},
		},
		{
			name: "list alone", imports: "list",
			created: []string{"legacy_data", "data_history", "data_index", "data_usage", "apps", "namespace_policies", "data_changes"},
			streams: []schema.Table{schema.Data, schema.History},
			changes: []schema.Table{schema.Data},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := synth(t, map[string]any{ctxImportTables: c.imports, tableContextKey(schema.Data): "legacy_data", ctxPublicDataRoutes: "true"})
			created := map[string]bool{}
			connections := s.logicalID(t, s.stack.Tables[schema.Connections.ID])
			for _, id := range s.ofType("AWS::DynamoDB::Table") {
				if id == connections {
					continue
				}
				p := s.resources[id].Properties
				created[p["TableName"].(string)] = true
				checkEqual(t, id+" DeletionProtectionEnabled", p["DeletionProtectionEnabled"], true)
			}
			want := map[string]bool{}
			for _, name := range c.created {
				want[name] = true
			}
			checkEqual(t, "created tables", created, want)

			for fn, tables := range map[string][]schema.Table{fnExpiry: c.streams, fnChanges: c.changes} {
				var got, want []string
				for _, id := range s.ofType("AWS::Lambda::EventSourceMapping") {
					p := s.resources[id].Properties
					if flatten(p["FunctionName"]) == "${"+s.logicalID(t, s.stack.Functions[fn])+"}" {
						got = append(got, flatten(p["EventSourceArn"]))
					}
				}
				for _, table := range tables {
					want = append(want, "${"+s.logicalID(t, s.stack.Tables[table.ID])+".StreamArn}")
				}
				sort.Strings(got)
				sort.Strings(want)
				checkEqual(t, fn+" streams", got, want)
			}

			// The admin routes refuse the streamed quota mode, and the kv
			// function reads of the changes feed, unless both data
			// tables' streams are read.
			var streamedQuotas any = "off"
			read := func(table schema.Table) bool {
				return slices.ContainsFunc(c.streams, func(s schema.Table) bool { return s.ID == table.ID })
			}
			if read(schema.Data) && read(schema.List) {
				streamedQuotas = nil
			}
			for _, f := range functionSpecs {
				env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
				checkEqual(t, f.Name+" data table", env[schema.Data.EnvVar], "legacy_data")
				want := any(nil)
				if f.Name == fnAdmin || f.Name == fnKV || f.Name == fnDeliver {
					want = streamedQuotas
				}
				checkEqual(t, f.Name+" "+config.EnvStreamedQuotas, env[config.EnvStreamedQuotas], want)
			}
		})
	}
}

func TestContextConfiguration(t *testing.T) {
	context := map[string]any{
		ctxStackName:          "UdsStaging",
		ctxCursorSecret:       "s3cret",
		ctxDefaultLimitBytes:  "1048576",
		ctxDefaultLimitItems:  1000.0,
		ctxCORSOrigins:        "https://app.example.com, https://admin.example.com",
		ctxThrottleRateLimit:  "50",
		ctxThrottleBurstLimit: 75.0,
		ctxLogLevel:           "warn",
		ctxPublicDataRoutes:   "true",
		ctxRatePerCaller:      "10/20",
		ctxRatePerApp:         " 500/1000 ",
		ctxCreatedContentApp:  "D53065BD-F932-4841-83FB-849717D8DF0F",
	}
	for _, table := range schema.Tables {
		context[tableContextKey(table)] = "staging-" + table.DefaultName
	}
	s := synth(t, context)

	// WARN is the functions' to apply: Lambda stays at INFO, where it
	// keeps the EMF records, which have no level.
	t.Run("log level", func(t *testing.T) {
		for _, f := range functionSpecs {
			fn := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties
			logging := fn["LoggingConfig"].(map[string]any)
			checkEqual(t, f.Name+" ApplicationLogLevel", logging["ApplicationLogLevel"], "INFO")
			checkEqual(t, f.Name+" SystemLogLevel", logging["SystemLogLevel"], "INFO")
			checkEqual(t, f.Name+" "+config.EnvLogLevel, fn["Environment"].(map[string]any)["Variables"].(map[string]any)[config.EnvLogLevel], "WARN")
		}
	})

	t.Run("stack name", func(t *testing.T) {
		checkEqual(t, "stack name", *s.stack.Stack.StackName(), "UdsStaging")
	})
	for _, table := range schema.Tables {
		t.Run("table/"+table.ID, func(t *testing.T) {
			checkTable(t, s, table, "staging-"+table.DefaultName)
		})
	}
	t.Run("environment", func(t *testing.T) {
		for _, f := range functionSpecs {
			env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			checkEqual(t, f.Name+" cursor secret", env[config.EnvCursorSecret], "s3cret")
			checkEqual(t, f.Name+" limit bytes", env[config.EnvDefaultLimitBytes], "1048576")
			checkEqual(t, f.Name+" limit items", env[config.EnvDefaultLimitItems], "1000")
			checkEqual(t, f.Name+" data table", env[schema.Data.EnvVar], "staging-data_store")
		}
	})
	// The deployment's rate limits reach the functions that serve the
	// data routes, and the deliver function, which charges subscribes to
	// them, and no other.
	t.Run("rate limits", func(t *testing.T) {
		for _, f := range functionSpecs {
			env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			want := []any{nil, nil}
			if f.Name == fnKV || f.Name == fnList || f.Name == fnDeliver {
				want = []any{"10/20", "500/1000"}
			}
			checkEqual(t, f.Name+" rate limits", []any{env[config.EnvRatePerCaller], env[config.EnvRatePerApp]}, want)
		}
	})
	// Only the admin function registers names, so only it reserves the
	// created-content app's, in lower case as keys hold app ids.
	t.Run("created-content app", func(t *testing.T) {
		for _, f := range functionSpecs {
			env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			var want any
			if f.Name == fnAdmin {
				want = "d53065bd-f932-4841-83fb-849717d8df0f"
			}
			checkEqual(t, f.Name+" "+config.EnvCreatedContentApp, env[config.EnvCreatedContentApp], want)
		}
	})
	t.Run("cors", func(t *testing.T) {
		cors, _ := s.resources[s.ofType("AWS::ApiGatewayV2::Api")[0]].Properties["CorsConfiguration"].(map[string]any)
		checkEqual(t, "AllowOrigins", cors["AllowOrigins"], []any{"https://app.example.com", "https://admin.example.com"})
		checkEqual(t, "ExposeHeaders", cors["ExposeHeaders"], []any{
			"ETag", "Location", "Retry-After", "RateLimit", "RateLimit-Policy",
			"Uds-Version", "Uds-Created-Date", "Uds-Created-By-Subject", "Uds-Updated-Date", "Uds-Updated-By-Subject",
			"Uds-Expires-At", "Uds-Class-Name", "Uds-Content-Type", "Uds-Size", "Content-Range", "Accept-Ranges", "Accept-Patch",
		})
		headers := strings.Join(asStrings(cors["AllowHeaders"]), ",")
		for _, h := range []string{"Authorization", "Content-Type", "If-Match", "If-None-Match", "Uds-Class-Name", "Uds-Ttl", "Uds-Expires-At", "Range", "If-Range", "Content-Encoding"} {
			if !strings.Contains(headers, h) {
				t.Errorf("AllowHeaders %s lacks %s", headers, h)
			}
		}
	})
	t.Run("throttling", func(t *testing.T) {
		stage := s.resources[s.ofType("AWS::ApiGatewayV2::Stage")[0]].Properties
		checkEqual(t, "DefaultRouteSettings", stage["DefaultRouteSettings"], map[string]any{
			"ThrottlingRateLimit": 50.0, "ThrottlingBurstLimit": 75.0,
		})
	})
}

// Single routes get throttles of their own, from a JSON object on the
// command line or in cdk.json: the stage's route settings, keyed by route
// key, beside the stage's default. The stage then waits for every route,
// since API Gateway refuses settings for a route it does not have yet.
func TestRouteThrottles(t *testing.T) {
	const batch, get = "POST /rest/api/v1/data/{app}/batch", "GET /rest/api/v1/data/{app}/{namespace}/{id}"
	want := map[string]any{
		batch: map[string]any{"ThrottlingRateLimit": 10.0, "ThrottlingBurstLimit": 20.0},
		get:   map[string]any{"ThrottlingRateLimit": 0.5, "ThrottlingBurstLimit": 1.0},
	}
	for _, c := range []struct {
		name  string
		value any
	}{
		{"command line", `{"` + batch + `": {"rateLimit": 10, "burstLimit": 20}, "` + get + `": {"rateLimit": 0.5, "burstLimit": 1}}`},
		{"cdk.json", map[string]any{
			batch: map[string]any{"rateLimit": 10.0, "burstLimit": 20.0},
			get:   map[string]any{"rateLimit": 0.5, "burstLimit": 1.0},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := public()
			ctx[ctxRouteThrottles] = c.value
			s := synth(t, ctx)
			r := s.resources[s.ofType("AWS::ApiGatewayV2::Stage")[0]]
			checkEqual(t, "RouteSettings", r.Properties["RouteSettings"], want)
			checkEqual(t, "DefaultRouteSettings", r.Properties["DefaultRouteSettings"], map[string]any{
				"ThrottlingRateLimit": 100.0, "ThrottlingBurstLimit": 200.0,
			})
			routes := s.httpRoutes(t)
			deps := slices.Clone(r.DependsOn)
			sort.Strings(deps)
			checkEqual(t, "DependsOn", deps, routes)
		})
	}
	t.Run("every route key", func(t *testing.T) {
		var keys []string
		for k := range wantRoutes {
			keys = append(keys, k)
		}
		got := routeKeys()
		sort.Strings(keys)
		sort.Strings(got)
		checkEqual(t, "route keys", got, keys)
	})
}

// The RateLimited alarms are optional: none by default, and with
// rateLimitedAlarm one per function that serves data routes (the admin
// routes are not limited), on the function's RateLimited metric.
func TestRateLimitedAlarm(t *testing.T) {
	for _, c := range []struct {
		name    string
		context map[string]any
		want    map[string]float64 // alarm → threshold
	}{
		{"none by default", public(), map[string]float64{}},
		{"threshold", map[string]any{ctxPublicDataRoutes: "true", ctxRateLimitedAlarm: "50"},
			map[string]float64{"KvFunctionRateLimitedAlarm": 50, "ListFunctionRateLimitedAlarm": 50}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := synth(t, c.context)
			got := map[string]float64{}
			for _, id := range s.ofType("AWS::CloudWatch::Alarm") {
				p := s.resources[id].Properties
				if p["MetricName"] != "RateLimited" {
					continue
				}
				var fn string
				for _, d := range asList(p["Dimensions"]) {
					if d := d.(map[string]any); d["Name"] == "function" {
						fn = d["Value"].(string)
					}
				}
				name := map[string]string{fnKV: "KvFunction", fnList: "ListFunction", fnAdmin: "AdminFunction"}[fn] + "RateLimitedAlarm"
				checkEqual(t, name+" logical ID", strings.HasPrefix(id, name), true)
				checkEqual(t, name+" metric", []any{p["Namespace"], p["Statistic"], p["Period"], p["EvaluationPeriods"]}, []any{"UDS", "Sum", 300.0, 1.0})
				checkEqual(t, name+" comparison", p["ComparisonOperator"], "GreaterThanOrEqualToThreshold")
				got[name] = p["Threshold"].(float64)
			}
			checkEqual(t, "RateLimited alarms", got, c.want)
		})
	}
}

// Lambda filters only below INFO, and DEBUG only when the functions log
// at DEBUG: any level above INFO would drop the EMF records.
func TestLambdaLogLevel(t *testing.T) {
	for level, want := range map[string]string{"DEBUG": "DEBUG", "INFO": "INFO", "WARN": "INFO", "ERROR": "INFO"} {
		t.Run(level, func(t *testing.T) {
			checkEqual(t, "Lambda's level", lambdaLogLevel(level), want)
		})
	}
}

func TestPropsFromContextErrors(t *testing.T) {
	// Both ways forward, as the refusal of a stack without an
	// authorizer names them.
	noAuthorizer := []string{"jwtIssuer and jwtAudience (make JWT_ISSUER=... JWT_AUDIENCE=...)", "publicDataRoutes=true (make PUBLIC_DATA_ROUTES=true)"}
	cases := []struct {
		name    string
		context map[string]any
		want    []string
	}{
		{"issuer without audience", map[string]any{ctxJWTIssuer: "https://issuer.example.com/"}, []string{"must be set together"}},
		{"audience without issuer", map[string]any{ctxJWTAudience: "web"}, []string{"must be set together"}},
		{"issuer not https", map[string]any{ctxJWTIssuer: "http://issuer.example.com/", ctxJWTAudience: "web"}, []string{"https URL"}},
		{"no authorizer", map[string]any{}, noAuthorizer},
		{"no authorizer, public false", map[string]any{ctxPublicDataRoutes: "false"}, noAuthorizer},
		{"public with jwt", map[string]any{ctxJWTIssuer: "https://issuer.example.com/", ctxJWTAudience: "web", ctxPublicDataRoutes: true}, []string{"publicDataRoutes=true contradicts"}},
		{"public with audience only", map[string]any{ctxJWTAudience: "web", ctxPublicDataRoutes: "true"}, []string{"publicDataRoutes=true contradicts"}},
		{"bad public", map[string]any{ctxPublicDataRoutes: "yes please"}, []string{ctxPublicDataRoutes + ": want true or false"}},
		{"bad deletion protection", map[string]any{ctxDeletionProtection: "maybe"}, []string{ctxDeletionProtection + ": want true or false"}},
		{"zero read cap", map[string]any{ctxMaxReadUnits: "0"}, []string{ctxMaxReadUnits + ": want a whole number of at least 1"}},
		{"negative read cap", map[string]any{ctxMaxReadUnits: "-1"}, []string{ctxMaxReadUnits + ": want a whole number of at least 1"}},
		{"fractional write cap", map[string]any{ctxMaxWriteUnits: "2.5"}, []string{ctxMaxWriteUnits + ": want a whole number"}},
		{"fractional write cap from cdk.json", map[string]any{ctxMaxWriteUnits: 2.5}, []string{ctxMaxWriteUnits + ": want a whole number"}},
		{"zero reserved concurrency", map[string]any{ctxReservedConcurrency: "0"}, []string{ctxReservedConcurrency + ": want a whole number of at least 1"}},
		{"negative reserved concurrency", map[string]any{ctxReservedConcurrency: "-1"}, []string{ctxReservedConcurrency + ": want a whole number of at least 1"}},
		{"reserved concurrency not a number", map[string]any{ctxReservedConcurrency: "many"}, []string{ctxReservedConcurrency + ": want a whole number"}},
		{"bad boolean", map[string]any{ctxImportTables: "maybe"}, []string{ctxImportTables}},
		{"unknown table to import", map[string]any{ctxImportTables: "data,versions"}, []string{
			ctxImportTables + `: "versions" is not a table (data, list, history, index, usage, apps, namespaces, changes)`,
		}},
		{"bad limit", map[string]any{ctxDefaultLimitBytes: "1.5"}, []string{ctxDefaultLimitBytes}},
		{"negative limit", map[string]any{ctxDefaultLimitItems: "-1"}, []string{"must not be negative"}},
		{"bad throttle", map[string]any{ctxThrottleRateLimit: "fast"}, []string{ctxThrottleRateLimit}},
		{"zero throttle", map[string]any{ctxThrottleBurstLimit: "0"}, []string{"must be positive"}},
		{"shared table name", map[string]any{"tableApps": "data_store"}, []string{"would share the name"}},
		{"bad log level", map[string]any{ctxLogLevel: "verbose"}, []string{ctxLogLevel}},
		{"a KMS alias", map[string]any{ctxKMSKey: "arn:aws:kms:eu-west-1:123456789012:alias/uds"}, []string{ctxKMSKey + `: want "create" or the ARN of a KMS key`}},
		{"a KMS key id", map[string]any{ctxKMSKey: "1234abcd-12ab-34cd-56ef-1234567890ab"}, []string{ctxKMSKey + `: want "create" or the ARN of a KMS key`}},
		{"rate without burst", map[string]any{ctxRatePerCaller: "10"}, []string{ctxRatePerCaller + `: want R/B`}},
		{"created-content app not a UUID", map[string]any{ctxCreatedContentApp: "hmh"}, []string{ctxCreatedContentApp + `: invalid applicationUuid`}},
		{"rate of zero", map[string]any{ctxRatePerApp: "0/10"}, []string{ctxRatePerApp + `: want R/B`}},
		{"unlimited rate", map[string]any{ctxRatePerApp: "-1/0"}, []string{ctxRatePerApp + `: want R/B`}},
		{"rate as a number", map[string]any{ctxRatePerCaller: 10.0}, []string{ctxRatePerCaller + `: want R/B`}},
		{"zero alarm threshold", map[string]any{ctxRateLimitedAlarm: "0"}, []string{ctxRateLimitedAlarm + ": want a whole number of at least 1"}},
		{"route throttles not JSON", map[string]any{ctxRouteThrottles: "batch=10"}, []string{ctxRouteThrottles + ": want a JSON object"}},
		{"unknown route", map[string]any{ctxRouteThrottles: `{"POST /rest/api/v1/data/{app}/batches": {"rateLimit": 1, "burstLimit": 1}}`},
			[]string{ctxRouteThrottles + `: "POST /rest/api/v1/data/{app}/batches" is not a route of the API`, "POST /rest/api/v1/data/{app}/batch,"}},
		{"route throttle misspelt", map[string]any{ctxRouteThrottles: `{"POST /rest/api/v1/data/{app}/batch": {"rate": 1, "burstLimit": 1}}`},
			[]string{ctxRouteThrottles + `: "POST /rest/api/v1/data/{app}/batch": want {"rateLimit": n, "burstLimit": n}`}},
		{"route throttle without burst", map[string]any{ctxRouteThrottles: map[string]any{"ANY /rest/api/v1/admin/{proxy+}": map[string]any{"rateLimit": 5.0}}},
			[]string{ctxRouteThrottles + `: "ANY /rest/api/v1/admin/{proxy+}": want`}},
		{"route throttle of zero", map[string]any{ctxRouteThrottles: `{"POST /rest/api/v1/data/{app}/batch": {"rateLimit": 0, "burstLimit": 1}}`},
			[]string{"want a rateLimit above 0"}},
		{"fractional route burst", map[string]any{ctxRouteThrottles: `{"POST /rest/api/v1/data/{app}/batch": {"rateLimit": 1, "burstLimit": 1.5}}`},
			[]string{"burstLimit that is a whole number of at least 1"}},
		{"bucket name in capitals", map[string]any{ctxBucketName: "Uds_Values"}, []string{ctxBucketName + `: "Uds_Values" is not a bucket name`}},
		{"bucket name with two dots", map[string]any{ctxBucketName: "uds..values"}, []string{ctxBucketName + `: "uds..values" is not a bucket name`}},
		{"bucket name too long", map[string]any{ctxBucketName: strings.Repeat("v", 64)}, []string{ctxBucketName + ": " + `"vvv`}},
		{"stack name too long for the default bucket name", map[string]any{ctxStackName: "Uds" + strings.Repeat("x", 26)},
			[]string{"the default bucket name uds" + strings.Repeat("x", 26) + "-values-<account>-<region> may be longer than the 63 characters S3 allows: set context bucketName"}},
		{"bad import bucket", map[string]any{ctxImportBucket: "maybe"}, []string{ctxImportBucket + ": want true or false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := map[string]any{ctxAssetDir: t.TempDir()}
			for k, v := range c.context {
				ctx[k] = v
			}
			app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
			_, err := PropsFromContext(app.Node())
			if err == nil {
				t.Fatalf("no error, want one mentioning %q", c.want)
			}
			for _, want := range c.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want one mentioning %q", err, want)
				}
			}
		})
	}
}

// Props filled directly, as the tests do, are checked as strictly as
// context values.
func TestValidate(t *testing.T) {
	valid := func() *UdsStackProps {
		return &UdsStackProps{SubjectClaim: "sub", LogLevel: "INFO", PublicDataRoutes: true, ThrottleRateLimit: 1, ThrottleBurstLimit: 1}
	}
	cases := []struct {
		name   string
		change func(p *UdsStackProps)
		want   string
	}{
		{"valid", func(p *UdsStackProps) {}, ""},
		{"jwt", func(p *UdsStackProps) {
			p.PublicDataRoutes, p.JWTIssuer, p.JWTAudience = false, "https://issuer.example.com/", []string{"web"}
		}, ""},
		{"caps", func(p *UdsStackProps) {
			p.MaxReadRequestUnits, p.MaxWriteRequestUnits, p.ReservedConcurrency = 1, 1, 1
		}, ""},
		{"neither jwt nor public", func(p *UdsStackProps) { p.PublicDataRoutes = false }, "the data routes have no authorizer"},
		{"jwt and public", func(p *UdsStackProps) { p.JWTIssuer, p.JWTAudience = "https://issuer.example.com/", []string{"web"} }, "contradicts"},
		{"negative write cap", func(p *UdsStackProps) { p.MaxWriteRequestUnits = -1 }, ctxMaxWriteUnits},
		{"negative reserved concurrency", func(p *UdsStackProps) { p.ReservedConcurrency = -1 }, ctxReservedConcurrency},
		{"rate limits", func(p *UdsStackProps) {
			p.RatePerCaller, p.RatePerApp = uds.Rate{PerSecond: 1, Burst: 1}, uds.Rate{PerSecond: 1_000_000, Burst: 1_000_000}
			p.RouteThrottles = map[string]RouteThrottle{"ANY /rest/api/v1/admin/{proxy+}": {RateLimit: 0.1, BurstLimit: 1}}
			p.RateLimitedAlarm = 1
		}, ""},
		{"rate without burst", func(p *UdsStackProps) { p.RatePerCaller = uds.Rate{PerSecond: 5} }, ctxRatePerCaller},
		{"rate past the largest", func(p *UdsStackProps) { p.RatePerApp = uds.Rate{PerSecond: 2_000_000, Burst: 1} }, ctxRatePerApp},
		{"throttle of a route the API lacks", func(p *UdsStackProps) {
			p.RouteThrottles = map[string]RouteThrottle{"GET /": {RateLimit: 1, BurstLimit: 1}}
		}, "not a route of the API"},
		{"negative alarm threshold", func(p *UdsStackProps) { p.RateLimitedAlarm = -1 }, ctxRateLimitedAlarm},
		// The default bucket name has room for a stack name of 28
		// characters; a longer one needs a bucket name of its own.
		{"longest stack name for the default bucket name", func(p *UdsStackProps) { p.StackName = jsii.String(strings.Repeat("U", 28)) }, ""},
		{"stack name too long for the default bucket name", func(p *UdsStackProps) { p.StackName = jsii.String(strings.Repeat("U", 29)) }, ctxBucketName},
		{"long stack name with a bucket name", func(p *UdsStackProps) {
			p.StackName, p.BucketName = jsii.String(strings.Repeat("U", 29)), "uds-values"
		}, ""},
		{"bucket name not S3's", func(p *UdsStackProps) { p.BucketName = "-uds-values" }, ctxBucketName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := valid()
			c.change(p)
			err := p.Validate()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("Validate: %v, want %q", err, c.want)
			}
		})
	}
}

func TestPropsDefaults(t *testing.T) {
	ctx := public()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), Context: &ctx})
	p, err := PropsFromContext(app.Node())
	if err != nil {
		t.Fatal(err)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, "StackName", *p.StackName, "UdsStack")
	checkEqual(t, "AssetDir", p.AssetDir, filepath.Join(root, "build"))
	checkEqual(t, "SubjectClaim", p.SubjectClaim, "sub")
	checkEqual(t, "ImportTables", p.ImportTables, map[string]bool{})
	checkEqual(t, "throttle", []float64{p.ThrottleRateLimit, p.ThrottleBurstLimit}, []float64{100, 200})
	checkEqual(t, "PublicDataRoutes", p.PublicDataRoutes, true)
	checkEqual(t, "DeletionProtection", p.DeletionProtection, true)
	checkEqual(t, "caps", []int64{p.MaxReadRequestUnits, p.MaxWriteRequestUnits, p.ReservedConcurrency}, []int64{0, 0, 0})
	checkEqual(t, "rate limits", []uds.Rate{p.RatePerCaller, p.RatePerApp}, []uds.Rate{{}, {}})
	checkEqual(t, "route throttles", p.RouteThrottles, map[string]RouteThrottle(nil))
	checkEqual(t, "RateLimitedAlarm", p.RateLimitedAlarm, int64(0))
	checkEqual(t, "RouteMetrics", p.RouteMetrics, false)
	checkEqual(t, "bucket", []any{p.BucketName, p.ImportBucket}, []any{"", false})
	for _, table := range schema.Tables {
		checkEqual(t, table.ID, p.TableName(table), table.DefaultName)
	}
	if _, err := os.Stat(filepath.Join(root, "infra", "go.mod")); err != nil {
		t.Errorf("repository root %s has no infra/go.mod: %v", root, err)
	}

	p.AssetDir = t.TempDir()
	if err := p.CheckAssets(); err == nil || !strings.Contains(err.Error(), "make build-zips") {
		t.Errorf("CheckAssets on an empty directory: %v", err)
	}
}

// TestCDKJSON checks that the CLI runs the app from the repository root,
// where the relative paths it passes (cdk.out and files in it) resolve.
func TestCDKJSON(t *testing.T) {
	cdkJSON := readCDKJSON(t)
	checkEqual(t, "output", cdkJSON.Output, "cdk.out")
	if !strings.HasPrefix(cdkJSON.App, "go -C infra build ") || strings.Contains(cdkJSON.App, "cd infra") {
		t.Errorf("app %q: want the app built from infra/ and run from the root", cdkJSON.App)
	}
}

func TestTableContextKeys(t *testing.T) {
	var got []string
	for _, table := range schema.Tables {
		got = append(got, tableContextKey(table))
	}
	checkEqual(t, "context keys", got, []string{"tableData", "tableList", "tableHistory", "tableIndex", "tableUsage", "tableApps", "tableNamespaces", "tableChanges"})
}

func checkEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s:\n got  %s\n want %s", what, g, w)
	}
}

// The bucket for large values: private, encrypted, TLS only, unversioned
// and retained; abandoned uploads and stray multipart uploads expire;
// browsers may upload from the API's origins; every upload invokes the
// expiry function. An imported bucket is left as it is, and synth says
// what is left to do.
func TestBucket(t *testing.T) {
	withContext := func(kv ...string) map[string]any {
		ctx := public()
		for i := 0; i < len(kv); i += 2 {
			ctx[kv[i]] = kv[i+1]
		}
		return ctx
	}
	reads := map[string]any{
		"Id": "Reads", "AllowedMethods": []any{"GET", "HEAD"}, "AllowedOrigins": []any{"*"},
		"AllowedHeaders": []any{"Range", "If-Match", "If-None-Match"},
		"ExposedHeaders": []any{"ETag", "Content-Range", "Accept-Ranges"}, "MaxAge": 3600.0,
	}
	cases := []struct {
		name     string
		context  map[string]any
		imported bool
		// cors is the bucket's CorsConfiguration (nil: none).
		cors any
	}{
		{name: "defaults", context: public()},
		{name: "named", context: withContext(ctxBucketName, "uds-prod.values")},
		{name: "named stack", context: withContext(ctxStackName, "UdsStaging-2")},
		{
			name:    "cors origins",
			context: withContext(ctxCORSOrigins, "https://app.example.com, https://admin.example.com"),
			cors: map[string]any{"CorsRules": []any{
				map[string]any{
					"Id": "Uploads", "AllowedMethods": []any{"POST"},
					"AllowedOrigins": []any{"https://app.example.com", "https://admin.example.com"},
					"ExposedHeaders": []any{"ETag", "Location"}, "MaxAge": 3600.0,
				},
				reads,
			}},
		},
		{name: "imported", context: withContext(ctxImportBucket, "true", ctxBucketName, "kept-values"), imported: true},
		{name: "imported by default name", context: withContext(ctxImportBucket, "true"), imported: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := synth(t, c.context)
			expiry := s.logicalID(t, s.stack.Functions[fnExpiry])
			var permission string
			for _, id := range s.ofType("AWS::Lambda::Permission") {
				if s.resources[id].Properties["Principal"] == "s3.amazonaws.com" {
					if permission != "" {
						t.Fatalf("permissions %s and %s for S3", permission, id)
					}
					permission = id
				}
			}

			t.Run("permission", func(t *testing.T) {
				p := s.resources[permission].Properties
				checkEqual(t, "permission", map[string]string{
					"Action": flatten(p["Action"]), "FunctionName": flatten(p["FunctionName"]), "Principal": flatten(p["Principal"]),
					"SourceArn": flatten(p["SourceArn"]), "SourceAccount": flatten(p["SourceAccount"]),
				}, map[string]string{
					"Action": "lambda:InvokeFunction", "FunctionName": "${" + expiry + ".Arn}", "Principal": "s3.amazonaws.com",
					"SourceArn": bucketArn(s), "SourceAccount": "${AWS::AccountId}",
				})
			})
			t.Run("environment", func(t *testing.T) {
				for _, f := range functionSpecs {
					env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
					checkEqual(t, f.Name+" UDS_BUCKET", flatten(env["UDS_BUCKET"]), wantBucketName(s))
				}
			})
			checkBucketAccess(t, s)
			t.Run("failed upload events", func(t *testing.T) {
				ids := s.ofType("AWS::Lambda::EventInvokeConfig")
				if len(ids) != 1 {
					t.Fatalf("event invoke configs %v, want one", ids)
				}
				p := s.resources[ids[0]].Properties
				checkEqual(t, "FunctionName", flatten(p["FunctionName"]), "${"+expiry+"}")
				checkEqual(t, "MaximumRetryAttempts", p["MaximumRetryAttempts"], 2.0)
				dest := flatten(p["DestinationConfig"].(map[string]any)["OnFailure"].(map[string]any)["Destination"])
				checkEqual(t, "on-failure destination", dest, "${"+s.logicalIDOf(t, "ExpiryFailures")+".Arn}")
			})
			t.Run("output", func(t *testing.T) {
				out, _ := s.outputs["BucketName"].(map[string]any)
				checkEqual(t, "BucketName output", flatten(out["Value"]), wantBucketName(s))
			})
			t.Run("warning", func(t *testing.T) {
				var warned bool
				for _, m := range *assertions.Annotations_FromStack(s.stack.Stack).FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
					warned = warned || strings.Contains(fmt.Sprint(m.Entry.Data), importedBucketWarning)
				}
				checkEqual(t, "imported bucket warning", warned, c.imported)
			})

			buckets := s.ofType("AWS::S3::Bucket")
			if c.imported {
				checkEqual(t, "buckets", buckets, []string(nil))
				checkEqual(t, "bucket policies", s.ofType("AWS::S3::BucketPolicy"), []string(nil))
				return
			}
			if len(buckets) != 1 {
				t.Fatalf("buckets %v, want one", buckets)
			}
			r := s.resources[buckets[0]]
			p := r.Properties
			t.Run("name", func(t *testing.T) { checkEqual(t, "BucketName", flatten(p["BucketName"]), wantBucketName(s)) })
			t.Run("private", func(t *testing.T) {
				checkEqual(t, "PublicAccessBlockConfiguration", p["PublicAccessBlockConfiguration"], map[string]any{
					"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
				})
				checkEqual(t, "OwnershipControls", p["OwnershipControls"], map[string]any{
					"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}},
				})
			})
			t.Run("encryption", func(t *testing.T) {
				checkEqual(t, "BucketEncryption", p["BucketEncryption"], map[string]any{
					"ServerSideEncryptionConfiguration": []any{map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}}},
				})
			})
			t.Run("tls only", func(t *testing.T) {
				policies := s.ofType("AWS::S3::BucketPolicy")
				if len(policies) != 1 {
					t.Fatalf("bucket policies %v, want one", policies)
				}
				bp := s.resources[policies[0]].Properties
				checkEqual(t, "Bucket", flatten(bp["Bucket"]), "${"+buckets[0]+"}")
				statements := asList(bp["PolicyDocument"].(map[string]any)["Statement"])
				if len(statements) != 1 {
					t.Fatalf("statements %v, want one", statements)
				}
				st := maps.Clone(statements[0].(map[string]any))
				arn := "${" + buckets[0] + ".Arn}"
				checkEqual(t, "resources", asStrings(st["Resource"]), []string{arn, arn + "/*"})
				delete(st, "Resource")
				checkEqual(t, "statement", st, map[string]any{
					"Action": "s3:*", "Effect": "Deny", "Principal": map[string]any{"AWS": "*"},
					"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
				})
			})
			t.Run("unversioned", func(t *testing.T) {
				if v, ok := p["VersioningConfiguration"]; ok {
					t.Errorf("VersioningConfiguration %v, want none", v)
				}
			})
			t.Run("retained", func(t *testing.T) {
				checkEqual(t, "policies", []string{r.DeletionPolicy, r.UpdateReplace}, []string{"Retain", "Retain"})
			})
			t.Run("lifecycle", func(t *testing.T) {
				checkEqual(t, "LifecycleConfiguration", p["LifecycleConfiguration"], map[string]any{"Rules": []any{
					map[string]any{
						"Id": "AbandonedUploads", "Status": "Enabled", "Prefix": "uploads/",
						"TagFilters":       []any{map[string]any{"Key": "uds-pending", "Value": "1"}},
						"ExpirationInDays": 2.0,
					},
					map[string]any{
						"Id": "IncompleteMultipartUploads", "Status": "Enabled",
						"AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 1.0},
					},
				}})
			})
			t.Run("upload events", func(t *testing.T) {
				checkEqual(t, "NotificationConfiguration", p["NotificationConfiguration"], map[string]any{"LambdaConfigurations": []any{
					map[string]any{
						"Event":    "s3:ObjectCreated:*",
						"Filter":   map[string]any{"S3Key": map[string]any{"Rules": []any{map[string]any{"Name": "prefix", "Value": "uploads/"}}}},
						"Function": map[string]any{"Fn::GetAtt": []any{expiry, "Arn"}},
					},
				}})
				// S3 checks its permission when the notification is set.
				checkEqual(t, "DependsOn", r.DependsOn, []string{permission})
			})
			t.Run("cors", func(t *testing.T) { checkEqual(t, "CorsConfiguration", p["CorsConfiguration"], c.cors) })
		})
	}
}

// mathExpression is the expression of an alarm on metric math.
func mathExpression(alarm map[string]any) string {
	for _, m := range asList(alarm["Metrics"]) {
		if e, ok := m.(map[string]any)["Expression"].(string); ok {
			return e
		}
	}
	return ""
}

// checkDashboardMetrics checks that a dashboard's body graphs the metrics
// the functions publish whatever the deployment's choice of layout, and
// AWS's own.
func checkDashboardMetrics(t *testing.T, body string) {
	t.Helper()
	for _, want := range []string{
		`"UDS","Requests","function","kv"`, `"UDS","Latency","function","list"`, `"stat":"p99"`, `"stat":"p50"`,
		`"UDS","ClientErrors","function","admin"`, `"UDS","ServerErrors","function","kv"`,
		`"UDS","DynamoDBThrottles","function","kv"`, `"UDS","RateLimited","function","list"`,
		`"ConsumedReadCapacityUnits"`, `"ConsumedWriteCapacityUnits"`, `MetricName=\"ThrottledRequests\" (TableName=\"data_store\" OR`,
		`"Duration"`, `"ConcurrentExecutions"`, `"Errors"`, `"Throttles"`, `"IteratorAge"`, `"Releases"`, `"ReleaseFailures"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the dashboard lacks %s", want)
		}
	}
}

// With routeMetrics the API functions publish per-route metrics too, and
// the dashboard graphs them beside the request lines' queries; the alarms
// are the default stack's.
func TestRouteMetrics(t *testing.T) {
	ctx := public()
	ctx[ctxRouteMetrics] = "true"
	s := synth(t, ctx)
	for _, f := range functionSpecs {
		env := s.resources[s.logicalID(t, s.stack.Functions[f.Name])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		var want any = "1"
		if !servesRoutes(f.Name) {
			want = nil
		}
		checkEqual(t, f.Name+" "+config.EnvRouteMetrics, env[config.EnvRouteMetrics], want)
	}
	body := flatten(s.resources[s.ofType("AWS::CloudWatch::Dashboard")[0]].Properties["DashboardBody"])
	checkDashboardMetrics(t, body)
	for _, want := range []string{
		`SEARCH('{UDS,function,route} MetricName=\"Requests\"', 'Sum', 300)`, `MetricName=\"Latency\"', 'p99'`,
		`MetricName=\"ClientErrors\"`, `MetricName=\"ServerErrors\"`, `"Per route: 4xx and 5xx answers"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the dashboard lacks %s", want)
		}
	}
	checkEqual(t, "alarms", len(s.ofType("AWS::CloudWatch::Alarm")), stackCounts(synth(t, public()))["alarms"])
}
