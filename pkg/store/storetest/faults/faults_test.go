package faults

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// server counts the requests that reach it, as DynamoDB would apply them.
func server(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var applied atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		applied.Add(1)
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	return srv, &applied
}

func call(t *testing.T, tr *Transport, url, op string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	return tr.RoundTrip(req)
}

func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		kind    Kind
		applied int64
		status  int // 0: a connection reset
		code    string
	}{
		{Throttle, 0, 400, "ProvisionedThroughputExceededException"},
		{ServerError, 0, 500, "InternalServerError"},
		{Unavailable, 0, 503, "ServiceUnavailable"},
		{Reset, 0, 0, ""},
		{LostAfterCommit, 1, 500, "InternalServerError"},
		{ResetAfterCommit, 1, 0, ""},
		{Delay, 1, 200, ""},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			srv, applied := server(t)
			tr := New(1, http.DefaultTransport, Rule{Kind: tc.kind, Rate: 1})
			res, err := call(t, tr, srv.URL, "PutItem")
			if got := applied.Load(); got != tc.applied {
				t.Errorf("the server applied %d requests, want %d", got, tc.applied)
			}
			if tc.status == 0 {
				if !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(err.Error(), "connection reset") {
					t.Fatalf("error %v, want a connection reset", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status || !strings.Contains(string(body), tc.code) || res.Header.Get("X-Amzn-Errortype") != tc.code {
				t.Errorf("answer %d %s (type %q), want %d %s", res.StatusCode, body, res.Header.Get("X-Amzn-Errortype"), tc.status, tc.code)
			}
		})
	}
}

func TestAiming(t *testing.T) {
	srv, _ := server(t)
	tr := New(7, http.DefaultTransport, Rule{Kind: Throttle, Ops: []string{"UpdateItem"}, Nth: 2})
	var statuses []int
	for _, op := range []string{"UpdateItem", "GetItem", "UpdateItem", "UpdateItem"} {
		res, err := call(t, tr, srv.URL, op)
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, res.StatusCode)
	}
	if want := []int{200, 200, 400, 200}; !slices.Equal(statuses, want) {
		t.Errorf("statuses %v, want %v: only the second UpdateItem is throttled", statuses, want)
	}
	if injected, calls := tr.Injected(); injected[Throttle] != 1 || calls != 4 {
		t.Errorf("injected %v over %d calls, want one throttle over 4", injected, calls)
	}
}

func TestRateIsSeeded(t *testing.T) {
	srv, _ := server(t)
	run := func(seed uint64) []int {
		tr := New(seed, http.DefaultTransport, Rule{Kind: ServerError, Rate: 0.3})
		var out []int
		for range 40 {
			res, err := call(t, tr, srv.URL, "Query")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, res.StatusCode)
		}
		return out
	}
	a, b, c := run(3), run(3), run(4)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave different faults")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds gave the same faults")
	}
	faults := 0
	for _, s := range a {
		if s == 500 {
			faults++
		}
	}
	if faults < 4 || faults > 20 {
		t.Errorf("%d faults in 40 calls at a rate of 0.3", faults)
	}
}

// A conflict is DynamoDB's cancellation of a transaction that another one
// got in the way of, as the SDK reads it: one reason per action, one of
// them a TransactionConflict. DynamoDB never sees the transaction, and
// other operations pass.
func TestConflict(t *testing.T) {
	srv, applied := server(t)
	tr := New(5, http.DefaultTransport, Rule{Kind: Conflict, Rate: 1})
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{},
		HTTPClient: &http.Client{Transport: tr}, RetryMaxAttempts: 1,
	})
	put := func(id string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}}}
	}
	_, err := client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put("a"), put("b"), put("c")}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("error %v, want a TransactionCanceledException", err)
	}
	var codes []string
	for _, r := range tce.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	conflicts := slices.Index(codes, "TransactionConflict")
	want := []string{"None", "None", "None"}
	if conflicts >= 0 {
		want[conflicts] = "TransactionConflict"
	}
	if conflicts < 0 || !slices.Equal(codes, want) {
		t.Errorf("reasons %v, want one TransactionConflict and None for the other two actions", codes)
	}
	if msg := "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"; tce.ErrorMessage() != msg {
		t.Errorf("message %q, want %q", tce.ErrorMessage(), msg)
	}
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t"), Item: put("d").Put.Item}); err != nil {
		t.Errorf("a PutItem met %v: a conflict is for transactions only", err)
	}
	if applied.Load() != 1 || tr.Calls("TransactWriteItems") != 1 || tr.Calls("PutItem") != 1 {
		t.Errorf("the server applied %d requests of %d transactions and %d puts sent, want the put only",
			applied.Load(), tr.Calls("TransactWriteItems"), tr.Calls("PutItem"))
	}
}

// A request killed midway: the call in flight when it dies goes on to
// DynamoDB, and the request's context ends once that call is back; a call
// made in between is refused unsent, and the SDK takes the refusal as a
// cancellation, which it does not retry. Killed with nothing in flight,
// the context ends at once.
func TestWithKill(t *testing.T) {
	idle, killIdle := WithKill(context.Background())
	killIdle()
	if idle.Err() == nil {
		t.Error("killed with no call in flight, the context goes on")
	}

	inFlight, release := make(chan struct{}), make(chan struct{})
	var applied atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.TransactWriteItems" {
			close(inFlight)
			<-release
		}
		applied.Add(1)
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	tr := New(1, http.DefaultTransport)
	var attempts atomic.Int64
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{},
		HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			attempts.Add(1)
			return tr.RoundTrip(r)
		})},
	})
	ctx, kill := WithKill(context.Background())
	key := map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "k"}}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_, _ = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: key, ConditionExpression: aws.String("attribute_exists(k)")}},
		}})
	}()
	<-inFlight
	kill()
	if ctx.Err() != nil {
		t.Error("the context ended with a call in flight")
	}
	_, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key})
	var canceled interface{ CanceledError() bool }
	if !errors.As(err, &canceled) || !canceled.CanceledError() || attempts.Load() != 2 {
		t.Errorf("a call after the kill: %v after %d attempts in all; want a cancellation, tried once", err, attempts.Load())
	}
	close(release)
	<-sent
	if applied.Load() != 1 || ctx.Err() == nil {
		t.Errorf("%d calls applied, context %v; want the call in flight applied, then the context ended", applied.Load(), ctx.Err())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
