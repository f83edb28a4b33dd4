package lambdahost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/internal/lambdalog"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// stubTransport answers DynamoDB at the HTTP transport, so the benchmarks
// include the SDK's request building, signing and response parsing, and
// nothing of the network or the engine. Its responses carry what
// DynamoDB's do: a request ID, the CRC32 of the body, which the client
// validates, and the capacity the call consumed when the call asks for it
// (UDS's calls all do, for the units its request lines count).
type stubTransport struct {
	// query, when set, answers Query (the list benchmarks).
	query *stubBody
}

var stubItem = `{"Item":{"dataKey":{"S":"d53065bd-f932-4841-83fb-849717d8df0f|bench|item"},` +
	`"dataValue":{"S":"{\"s\":\"` + strings.Repeat("a", 980) + `\"}"},` +
	`"createdDate":{"S":"2024-01-15T10:30:00.000Z"},"createdBySubject":{"S":"anonymous"},` +
	`"updatedDate":{"S":"2024-01-15T10:30:00.000Z"},"updatedBySubject":{"S":"anonymous"},` +
	`"version":{"N":"1"},"itemSize":{"N":"1150"},"ownerKey":{"S":"d53065bd-f932-4841-83fb-849717d8df0f|anonymous"},"schemaVersion":{"N":"1"}}}`

// stubMeta is stubItem as a write reads it first: without its value
// (store's metaProjection).
var stubMeta = `{"Item":{"dataKey":{"S":"d53065bd-f932-4841-83fb-849717d8df0f|bench|item"},` +
	`"createdDate":{"S":"2024-01-15T10:30:00.000Z"},"createdBySubject":{"S":"anonymous"},` +
	`"updatedDate":{"S":"2024-01-15T10:30:00.000Z"},"updatedBySubject":{"S":"anonymous"},` +
	`"version":{"N":"1"},"itemSize":{"N":"1150"},"ownerKey":{"S":"d53065bd-f932-4841-83fb-849717d8df0f|anonymous"}}}`

// stubBody is one answer of the stub: its body and CRC32, and the same
// answer reporting the capacity the call consumed, for a call that asks.
type stubBody struct {
	body, crc string
	capacity  *stubBody
}

// newStubBody is the answer body, and with capacity (DynamoDB's
// ConsumedCapacity of the call, as ReturnConsumedCapacity TOTAL reports
// it) the answer to a call that asks for it.
func newStubBody(body, capacity string) stubBody {
	b := stubBody{body: body, crc: crc32Of(body)}
	with := `{"ConsumedCapacity":` + capacity
	if body != "{}" {
		with += ","
	}
	with += body[1:]
	b.capacity = &stubBody{body: with, crc: crc32Of(with)}
	return b
}

func crc32Of(body string) string {
	return strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)
}

// The answers and what their calls consume: a strongly consistent read of
// up to 4 KB is one read unit; a transaction's put of the 1 KB item two
// write units a KB (four) and its usage change two.
var (
	stubGetItem  = newStubBody(stubItem, `{"TableName":"data_store","CapacityUnits":1.0,"ReadCapacityUnits":1.0}`)
	stubGetMeta  = newStubBody(stubMeta, `{"TableName":"data_store","CapacityUnits":1.0,"ReadCapacityUnits":1.0}`)
	stubBatchGet = newStubBody(`{"Responses":{}}`, `[]`)
	stubTransact = newStubBody(`{}`, `[{"TableName":"data_store","CapacityUnits":4.0,"WriteCapacityUnits":4.0},`+
		`{"TableName":"data_usage","CapacityUnits":2.0,"WriteCapacityUnits":2.0}]`)
	stubEmpty = newStubBody(`{}`, `{"TableName":"data_store","CapacityUnits":1.0}`)
)

func (t stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	target := r.Header.Get("X-Amz-Target")
	var call bytes.Buffer
	_, _ = call.ReadFrom(r.Body)
	b := stubEmpty
	switch {
	case strings.HasSuffix(target, ".GetItem") && bytes.Contains(call.Bytes(), []byte(`"ProjectionExpression"`)):
		b = stubGetMeta
	case strings.HasSuffix(target, ".GetItem"):
		b = stubGetItem
	case strings.HasSuffix(target, ".BatchGetItem"):
		b = stubBatchGet
	case strings.HasSuffix(target, ".TransactWriteItems"):
		b = stubTransact
	case strings.HasSuffix(target, ".Query") && t.query != nil:
		b = *t.query
	}
	if bytes.Contains(call.Bytes(), []byte(`"ReturnConsumedCapacity":"TOTAL"`)) {
		b = *b.capacity
	}
	return &http.Response{
		StatusCode: 200,
		Header: http.Header{
			"Content-Type":     {"application/x-amz-json-1.0"},
			"X-Amz-Crc32":      {b.crc},
			"X-Amzn-Requestid": {"BENCHREQ0000000000000000000000000000000000000000000000"},
		},
		Body:          io.NopCloser(strings.NewReader(b.body)),
		ContentLength: int64(len(b.body)),
		Request:       r,
	}, nil
}

// invocationContext is the context aws-lambda-go gives a handler for one
// invocation (lambda/invoke_loop.go): the invocation's deadline, its
// lambdacontext and its trace ID. Every handler's DynamoDB calls run
// under it, the floor's as well as UDS's: the SDK watches its deadline
// (the retry loop asks for its Done channel on every attempt) and looks
// values up through it. The runtime makes it before the handler runs, so
// the benchmarks make it outside what they time.
func invocationContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithDeadline(parent, time.Now().Add(30*time.Second))
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       "8476a536-e9f4-11e8-9739-2dfe598c3fcd",
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:kv",
	})
	// The runtime keys the trace ID by a plain string, as here.
	ctx = context.WithValue(ctx, "x-amzn-trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1") //nolint:staticcheck
	return ctx, cancel
}

// lambdaEnv gives the benchmark the environment Lambda gives a function,
// and nothing else of the machine's AWS configuration.
func lambdaEnv(tb testing.TB) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			tb.Setenv(k, "")
			_ = os.Unsetenv(k)
		}
	}
	tb.Setenv("HOME", tb.TempDir())
	tb.Setenv("AWS_LAMBDA_FUNCTION_NAME", "kv")
	tb.Setenv("AWS_REGION", "us-east-1")
	tb.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	tb.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	tb.Setenv("AWS_SESSION_TOKEN", "IQoJb3JpZ2luX2VjEXAMPLETOKEN")
}

var benchTables = store.Tables{Data: "data_store", List: "data_store_list", History: "data_history", Index: "data_index", Usage: "data_usage", Apps: "apps", Namespaces: "namespace_policies", Changes: "data_changes"}

// apiHandler serves st as the functions do, request lines (in Lambda's
// JSON log format, as the stack configures it) and EMF records included;
// they are encoded in full and then discarded rather than written to the
// terminal. The logger only decides the level, INFO, as on Lambda.
func apiHandler(st httpapi.Stores) lambdahost.HandlerFunc {
	return lambdahost.Handler(httpapi.New(st, httpapi.GroupAll, httpapi.Config{
		Subject: lambdahost.Subject("sub"), CursorSecret: []byte("k"),
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), LambdaLog: lambdalog.NewWriter(io.Discard),
		Metrics: emf.NewWriter(io.Discard), Function: "kv",
	}))
}

// quietHandler is apiHandler without request lines and metrics: the
// Quiet benchmarks beside the observed ones measure what observing costs.
func quietHandler(b *testing.B) lambdahost.HandlerFunc {
	return lambdahost.Handler(httpapi.New(httpapi.StoresOf(store.New(stubClient(b), benchTables)), httpapi.GroupAll, httpapi.Config{
		Subject: lambdahost.Subject("sub"), CursorSecret: []byte("k"), Logger: slog.New(slog.DiscardHandler),
	}))
}

// benchHandler is the production handler: the client is built by
// store.NewClient as on Lambda, and only its HTTP transport is replaced.
func benchHandler(b *testing.B) lambdahost.HandlerFunc {
	return apiHandler(httpapi.StoresOf(store.New(stubClient(b), benchTables)))
}

// stubClient is the client store.NewClient builds on Lambda, over the
// stub transport.
func stubClient(b *testing.B) *dynamodb.Client {
	return stubClientOf(b, stubTransport{})
}

// stubClientOf is that client over another transport: the stub with other
// answers, or one that counts the stub's calls.
func stubClientOf(tb testing.TB, rt http.RoundTripper) *dynamodb.Client {
	lambdaEnv(tb)
	client, err := store.NewClient(context.Background(), "", func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: rt}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return client
}

// floorHandler is the same adapter serving a constant 1 KB response.
func floorHandler() lambdahost.HandlerFunc {
	body := []byte(`{"data":{"s":"` + strings.Repeat("a", 980) + `"}}`)
	return lambdahost.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}))
}

// fakeStore is an in-memory store of one item for the item routes: with it
// the benchmarks measure our HTTP layer (routing, validation, encoding) and
// the adapter without the SDK. It is the two capabilities those routes
// call, items and the policy in effect (fakeStores), and nothing else.
type fakeStore struct {
	item uds.Item
}

func newFakeStore() *fakeStore {
	k, err := uds.NewKey("d53065bd-f932-4841-83fb-849717d8df0f", "bench", "item")
	if err != nil {
		panic(err)
	}
	t := time.Date(2024, 1, 15, 10, 30, 0, 0, time.UTC)
	return &fakeStore{item: uds.Item{
		Key: k, Data: json.RawMessage(`{"s":"` + strings.Repeat("a", 980) + `"}`),
		CreatedDate: t, CreatedBy: httpapi.Anonymous, UpdatedDate: t, UpdatedBy: httpapi.Anonymous, Version: 1,
	}}
}

// fakeStores serves the item routes from a fakeStore; a route that needs
// another capability would panic on its nil interface, and be answered 500.
func fakeStores() httpapi.Stores {
	f := newFakeStore()
	return httpapi.Stores{Items: f, Policy: f}
}

var errFake = errors.New("not in the fake store")

func (f *fakeStore) Get(_ context.Context, k uds.Key) (uds.Item, error) {
	if k != f.item.Key {
		return uds.Item{}, uds.ErrNotFound
	}
	return f.item, nil
}

func (f *fakeStore) Create(_ context.Context, w uds.Write) (uds.Item, error) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return uds.Item{Key: w.Key, Data: w.Data, ClassName: w.ClassName,
		CreatedDate: now, CreatedBy: w.Subject, UpdatedDate: now, UpdatedBy: w.Subject, Version: 1}, nil
}

func (f *fakeStore) Update(context.Context, uds.Write) (uds.Item, error) { return uds.Item{}, errFake }
func (f *fakeStore) Patch(context.Context, uds.Write, uds.Patcher) (uds.Item, error) {
	return uds.Item{}, errFake
}
func (f *fakeStore) Delete(context.Context, uds.Write) error { return errFake }

// The benchmarked namespaces have no policy: shared, without a schema.
func (f *fakeStore) Policy(context.Context, string, string) (uds.Policy, error) {
	return uds.Policy{}, nil
}

func benchEvent(method, target, body string) events.APIGatewayV2HTTPRequest {
	// API Gateway sends the query apart from the path.
	path, query, _ := strings.Cut(target, "?")
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: path, RawQueryString: query, Body: body,
		Headers: map[string]string{"content-type": "application/json", "user-agent": "bench"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: "abc.execute-api.us-east-1.amazonaws.com", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
		},
	}
}

func runBench(b *testing.B, h lambdahost.HandlerFunc, ev events.APIGatewayV2HTTPRequest, status int) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := h(ctx, ev)
		if err != nil || res.StatusCode != status {
			b.Fatalf("status %d, err %v: %s", res.StatusCode, err, res.Body)
		}
	}
}

const benchPath = "/rest/api/v1/data/d53065bd-f932-4841-83fb-849717d8df0f/bench/item"

var benchBody = `{"data":{"s":"` + strings.Repeat("a", 980) + `"}}`

// BenchmarkGet1KB and BenchmarkPost1KB run our whole layer (adapter,
// routing, validation, store, SDK) with DynamoDB stubbed at the transport;
// the Floor benchmarks run the adapter alone. The target is at most 2x.
// A POST makes one DynamoDB call (a transaction of the write and the usage
// change; the limits read is cached after the first request).
func BenchmarkGet1KB(b *testing.B) {
	runBench(b, benchHandler(b), benchEvent("GET", benchPath, ""), 200)
}

func BenchmarkPost1KB(b *testing.B) {
	runBench(b, benchHandler(b), benchEvent("POST", benchPath, benchBody), 201)
}

func BenchmarkQuietGet1KB(b *testing.B) {
	runBench(b, quietHandler(b), benchEvent("GET", benchPath, ""), 200)
}

func BenchmarkQuietPost1KB(b *testing.B) {
	runBench(b, quietHandler(b), benchEvent("POST", benchPath, benchBody), 201)
}

// The FakeStore benchmarks replace the store (and so the SDK) by an
// in-memory one: what remains is the adapter and our HTTP layer.
func BenchmarkFakeStoreGet1KB(b *testing.B) {
	runBench(b, apiHandler(fakeStores()), benchEvent("GET", benchPath, ""), 200)
}

func BenchmarkFakeStorePost1KB(b *testing.B) {
	runBench(b, apiHandler(fakeStores()), benchEvent("POST", benchPath, benchBody), 201)
}

func BenchmarkFloorGet1KB(b *testing.B) {
	runBench(b, floorHandler(), benchEvent("GET", benchPath, ""), 200)
}

func BenchmarkFloorPost1KB(b *testing.B) {
	runBench(b, floorHandler(), benchEvent("POST", benchPath, benchBody), 200)
}

// batchBody is a batch of n operations of one method on items b/0 .. b/n-1.
func batchBody(n int, method string, atomic bool) string {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = `{"method":"` + method + `","path":"b/` + strconv.Itoa(i) + `"`
		if method != "GET" {
			ops[i] += `,"body":` + benchBody
		}
		ops[i] += "}"
	}
	return `{"atomic":` + strconv.FormatBool(atomic) + `,"operations":[` + strings.Join(ops, ",") + `]}`
}

const benchBatchPath = "/rest/api/v1/data/d53065bd-f932-4841-83fb-849717d8df0f/batch"

// The batch benchmarks run a whole 100-operation batch (50 atomic)
// through the Lambda handler, DynamoDB stubbed at the transport: compare
// with 100 times BenchmarkPost1KB.
func BenchmarkBatch100Posts(b *testing.B) {
	runBench(b, benchHandler(b), benchEvent("POST", benchBatchPath, batchBody(100, "POST", false)), 200)
}

func BenchmarkBatch100Gets(b *testing.B) {
	runBench(b, benchHandler(b), benchEvent("POST", benchBatchPath, batchBody(100, "GET", false)), 200)
}

func BenchmarkBatchAtomic50Posts(b *testing.B) {
	runBench(b, benchHandler(b), benchEvent("POST", benchBatchPath, batchBody(50, "POST", true)), 200)
}
