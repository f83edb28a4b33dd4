package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/ratelimit"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
)

const (
	app  = "d53065bd-f932-4841-83fb-849717d8df0f"
	base = "/rest/api/v1/data/" + app
)

// env is an API over fresh tables in the test engine, served over HTTP.
type env struct {
	t      *testing.T
	srv    *httptest.Server
	tables store.Tables
	client *dynamodb.Client
	// clock is the API's and the store's clock (newEnv's API only).
	clock *storetest.Clock
	// objects is the bucket of large values, on an S3 engine of the
	// env's own (newEnv's API only).
	objects blob.Objects
	// st is the API's store (newEnv's API only), for the tests that run
	// what no route does: the local server's sweep of expired items, the
	// stream function's release of what DynamoDB's TTL deleted.
	st *store.Store
}

// lifetime is how far ahead the tests' expiring items expire: longer than
// any machine takes to write them. Tests then move the clock past it.
const lifetime = time.Hour

// newEnv serves the API over fresh tables; opts, if any, come after the
// store's test options and so override them.
func newEnv(t *testing.T, opts ...store.Option) *env {
	t.Helper()
	return newEnvOn(t, blobtest.New(t), opts...)
}

// newEnvOn is newEnv with its large values in bucket.
func newEnvOn(t *testing.T, bucket *blob.Bucket, opts ...store.Option) *env {
	t.Helper()
	return newEnvOver(t, storetest.NewTables(t), bucket, opts...)
}

// newEnvOver is newEnvOn over the given tables.
func newEnvOver(t *testing.T, tables store.Tables, bucket *blob.Bucket, opts ...store.Option) *env {
	t.Helper()
	return newEnvThrough(t, storetest.Client(t), tables, blob.Objects{Bucket: bucket}, &storetest.Clock{}, apitest.Budget, opts...)
}

// newEnvThrough serves the API over tables and objects through client
// (a faulty one, say), on clock, each request within budget.
func newEnvThrough(t *testing.T, client *dynamodb.Client, tables store.Tables, objects blob.Objects, clock *storetest.Clock, budget time.Duration, opts ...store.Option) *env {
	t.Helper()
	// The quiet period outlasts every move of the clock, so recompute
	// never lowers a record in these tests and a drift stays visible. A
	// change into or out of private settles quickly: these tests do not
	// race writes against it (policy_race_test.go does).
	st := store.New(client, tables, append([]store.Option{store.WithClock(clock.Now), store.WithRecomputeQuiet(24 * lifetime),
		store.WithPolicySettle(testSettle), store.WithObjects(objects)}, opts...)...)
	api := httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject:         httpapi.HeaderSubject,
		CursorSecret:    []byte("test secret"),
		DeleteAllBudget: apitest.Budget,
		RequestBudget:   budget,
		Logger:          apitest.Logger(t),
		Now:             clock.Now,
		Limiter:         ratelimit.New(st, clock.Now),
		Bucket:          objects,
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, tables: tables, client: client, clock: clock, objects: objects, st: st}
}

// now is the env's API's clock: the real time where it has none of its own.
func (e *env) now() time.Time {
	if e.clock == nil {
		return time.Now()
	}
	return e.clock.Now()
}

// expiresAt is an expiresAt lifetime ahead on the env's clock, as the API
// writes instants.
func (e *env) expiresAt() string {
	return e.clock.Now().Add(lifetime).UTC().Format("2006-01-02T15:04:05.000Z")
}

// expire moves the env's clock past every expiresAt made so far.
func (e *env) expire() { e.clock.Advance(lifetime + time.Second) }

// on is the env with t as the test its helpers fail, for subtests.
func (e *env) on(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a request; headers come in name, value pairs. A body goes as
// JSON and the answer, if any, must be a JSON object.
func (e *env) do(method, path, body string, headers ...string) response {
	e.t.Helper()
	if body != "" {
		headers = append([]string{"Content-Type", "application/json"}, headers...)
	}
	r := e.send(method, path, []byte(body), headers...)
	if len(r.raw) > 0 {
		// UseNumber: stored numbers may exceed float64 (1e400).
		dec := json.NewDecoder(bytes.NewReader(r.raw))
		dec.UseNumber()
		if err := dec.Decode(&r.body); err != nil {
			e.t.Fatalf("%s %s: body is not a JSON object: %q", method, path, r.raw)
		}
	}
	return r
}

// send sends a request with the body and headers as given (a header set
// twice is sent twice), and does not decode the answer or follow a
// redirect.
func (e *env) send(method, path string, body []byte, headers ...string) response {
	e.t.Helper()
	return e.roundTrip(testTransport, method, path, body, headers...)
}

// testTransport carries the tests' requests. It is not
// http.DefaultTransport: every httptest.Server closes that one's idle
// connections when it closes, and a request of a test running beside it
// that had just taken one fails (a POST or PUT is not sent again).
var testTransport = http.DefaultTransport.(*http.Transport).Clone()

// testClient is a client of testTransport that follows redirects.
var testClient = &http.Client{Transport: testTransport}

// roundTrip sends a request through rt and returns the answer undecoded.
func (e *env) roundTrip(rt http.RoundTripper, method, path string, body []byte, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := rt.RoundTrip(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, raw: raw}
}

// expect fails the test unless the response has the status.
func (r response) expect(t *testing.T, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.raw)
	}
	return r
}

// count returns how many items a table holds.
func (e *env) count(table string) int32 {
	e.t.Helper()
	out, err := e.client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), Select: "COUNT", ConsistentRead: aws.Bool(true)})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Count
}
