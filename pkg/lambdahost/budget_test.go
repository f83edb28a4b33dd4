package lambdahost_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
	"github.com/udsproject/uds/pkg/store"
)

// TestRequestContextOfAnInvocation checks what a request gets of its
// invocation's context: its deadline and its values (the lambdacontext,
// the trace ID), not the runtime's cancellation, which only comes after
// the handler returned (the API's time budget, ending a margin before the
// deadline, stands in for it).
func TestRequestContextOfAnInvocation(t *testing.T) {
	var got context.Context
	h := lambdahost.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Context()
		w.WriteHeader(http.StatusNoContent)
	}))
	inv, cancel := invocationContext(context.Background())
	defer cancel()
	if _, err := h(inv, benchEvent("GET", benchPath, "")); err != nil {
		t.Fatal(err)
	}
	want, _ := inv.Deadline()
	if dl, ok := got.Deadline(); !ok || !dl.Equal(want) {
		t.Errorf("Deadline() = %v, %v; want the invocation's, %v", dl, ok, want)
	}
	if lc, ok := lambdacontext.FromContext(got); !ok || lc.AwsRequestID != "8476a536-e9f4-11e8-9739-2dfe598c3fcd" {
		t.Errorf("the invocation's lambdacontext is lost: %+v", lc)
	}
	if got.Value("x-amzn-trace-id") == nil {
		t.Error("the invocation's trace ID is lost")
	}
	if got.Done() != nil || got.Err() != nil {
		t.Errorf("the request carries the runtime's cancellation: Done %v, Err %v", got.Done(), got.Err())
	}
}

// TestBudgetEndsBeforeTheInvocation serves a write whose DynamoDB call
// never answers, under an invocation with little time left: the request's
// budget ends a margin before the invocation's deadline, and the client
// gets a JSON 503 rather than the gateway's error for a function that ran
// out of time.
func TestBudgetEndsBeforeTheInvocation(t *testing.T) {
	client := stubClientOf(t, hangingTransport{})
	h := apiHandler(httpapi.StoresOf(store.New(client, benchTables)))
	deadline := time.Now().Add(2 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	res, err := h(ctx, benchEvent("POST", benchPath, benchBody))
	answered := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Error string }
	if res.StatusCode != http.StatusServiceUnavailable || json.Unmarshal([]byte(res.Body), &body) != nil || body.Error == "" {
		t.Fatalf("status %d, body %s; want 503 with a JSON reason", res.StatusCode, res.Body)
	}
	// The budget is the invocation's 2 s less the answer's margin (1 s).
	if left := deadline.Sub(answered); left > time.Second || left <= 0 {
		t.Errorf("answered %v before the invocation's deadline; want less than the 1 s margin, and before it", left)
	}
}

// hangingTransport is a DynamoDB that never answers: each call waits for
// its request's context to end.
type hangingTransport struct{}

func (hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}
