// Package faults injects DynamoDB failures into the store's traffic, at the
// HTTP transport of the SDK client: throttling, server errors and resets
// that DynamoDB never sees, answers lost after DynamoDB applied the
// request, and latency. Rules aim at operations by name, at a rate or at
// the n-th matching call, and draw from a seeded generator so a failing
// run can be repeated.
package faults

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kind is a kind of fault.
type Kind int

// Fault kinds. The first four stop the request before DynamoDB sees it;
// the two "after commit" kinds let DynamoDB apply it and then lose the
// answer, which is what makes retries dangerous; Delay slows it down.
// Conflict stops a transaction before DynamoDB sees it, too, with the
// cancellation DynamoDB answers when another transaction holds one of its
// items: DynamoDB Local applies transactions one at a time and never
// answers so.
const (
	Throttle         Kind = iota // 400 ProvisionedThroughputExceededException
	ServerError                  // 500 InternalServerError
	Unavailable                  // 503 ServiceUnavailable
	Reset                        // the connection resets before the request is sent
	LostAfterCommit              // DynamoDB applies the request; the answer is a 500
	ResetAfterCommit             // DynamoDB applies the request; the connection resets
	Delay                        // the request is sent after Rule.Delay
	Conflict                     // 400 TransactionCanceledException, one action in a TransactionConflict
	numKinds
)

var kindNames = [...]string{"throttle", "500", "503", "reset", "lost-after-commit", "reset-after-commit", "delay", "conflict"}

func (k Kind) String() string {
	if k >= 0 && k < numKinds {
		return kindNames[k]
	}
	return "unknown"
}

// Rule says which calls get a fault.
type Rule struct {
	Kind Kind
	// Ops names the DynamoDB operations the rule applies to ("PutItem",
	// "TransactWriteItems", ...); empty means every operation.
	Ops []string
	// Rate is the probability that a matching call gets the fault.
	Rate float64
	// Nth, when positive, aims the rule at the n-th matching call only
	// (counting from 1), and Rate is ignored.
	Nth int
	// Delay is how long a Delay fault holds the request.
	Delay time.Duration
}

type rule struct {
	Rule
	seen int
}

// matches reports whether the rule applies to a call of op. A conflict
// cancels a transaction, so it applies to TransactWriteItems only,
// whatever Ops says.
func (r *rule) matches(op string) bool {
	if r.Kind == Conflict && op != "TransactWriteItems" {
		return false
	}
	if len(r.Ops) == 0 {
		return true
	}
	for _, o := range r.Ops {
		if o == op {
			return true
		}
	}
	return false
}

// Transport is an http.RoundTripper that injects faults into the requests
// it passes to Base. It is safe for concurrent use.
type Transport struct {
	base  http.RoundTripper
	mu    sync.Mutex
	rng   *rand.Rand
	rules []*rule
	count map[Kind]int
	calls int
	// opCalls counts the calls per operation, faulted or not.
	opCalls map[string]int
}

// New returns a transport over base with the given seed and rules.
func New(seed uint64, base http.RoundTripper, rules ...Rule) *Transport {
	t := &Transport{base: base, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	t.Set(rules...)
	return t
}

// Set replaces the rules and starts counting afresh.
func (t *Transport) Set(rules ...Rule) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = t.rules[:0]
	for _, r := range rules {
		t.rules = append(t.rules, &rule{Rule: r})
	}
	t.count = map[Kind]int{}
	t.calls = 0
	t.opCalls = map[string]int{}
}

// Injected returns how many faults of each kind were injected, and how many
// calls passed through, since the last Set.
func (t *Transport) Injected() (map[Kind]int, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[Kind]int, len(t.count))
	for k, n := range t.count {
		out[k] = n
	}
	return out, t.calls
}

// Calls returns how many calls of op ("TransactWriteItems", ...) passed
// through since the last Set, faulted or not: a test counts with it the
// attempts a fault made the caller send again.
func (t *Transport) Calls(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.opCalls[op]
}

// pick chooses the fault for one call of op, if any: the first rule that
// fires wins.
func (t *Transport) pick(op string) (Rule, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	t.opCalls[op]++
	for _, r := range t.rules {
		if !r.matches(op) {
			continue
		}
		r.seen++
		fire := r.Nth > 0 && r.seen == r.Nth || r.Nth <= 0 && t.rng.Float64() < r.Rate
		if fire {
			t.count[r.Kind]++
			return r.Rule, true
		}
	}
	return Rule{}, false
}

// intN draws a number in [0, n) from the transport's generator.
func (t *Transport) intN(n int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rng.IntN(n)
}

// WithKill gives ctx a kill switch, for a request whose process is
// killed midway. Once kill is called, no call made under ctx is sent, as a
// dead process makes no more calls; a call already handed to the
// transport goes on to DynamoDB, which applies a request whose sender died
// after sending it, and ctx is cancelled once no such call is left, so
// that whatever the request was doing stops at once (its answers, the
// answer to that last call included, are lost). The transport refuses a
// call made in between with an error the SDK does not retry. A deadline
// would stand in badly: the API takes a deadline for its host's and keeps
// a margin before it, which would end every killed request before it
// began; and cancelling ctx at the kill would abort the calls in flight,
// which the engine may then apply at any later moment.
func WithKill(ctx context.Context) (_ context.Context, kill func()) {
	ctx, cancel := context.WithCancel(ctx)
	k := &killSwitch{cancel: cancel}
	return context.WithValue(ctx, killKey{}, k), k.kill
}

type killKey struct{}

// killSwitch is a request's kill: whether it came, and the calls in
// flight it waits for before it cancels the request's context.
type killSwitch struct {
	mu       sync.Mutex
	killed   bool
	inFlight int
	cancel   context.CancelFunc
}

func (k *killSwitch) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killed = true
	if k.inFlight == 0 {
		k.cancel()
	}
}

// send reports whether a call may be sent, counting it in flight if so.
func (k *killSwitch) send() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed {
		return false
	}
	k.inFlight++
	return true
}

// answered counts a call as no longer in flight.
func (k *killSwitch) answered() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.inFlight--
	if k.killed && k.inFlight == 0 {
		k.cancel()
	}
}

// killedError is the error of a call made after its process was killed:
// a cancellation to the SDK, which retries none.
type killedError struct{}

func (killedError) Error() string       { return "killed before this call was sent" }
func (killedError) CanceledError() bool { return true }

// RoundTrip sends the request through its fault, if one fires.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if k, ok := req.Context().Value(killKey{}).(*killSwitch); ok {
		if !k.send() {
			drain(req)
			return nil, killedError{}
		}
		defer k.answered()
	}
	op := operation(req)
	r, ok := t.pick(op)
	if !ok {
		return t.base.RoundTrip(req)
	}
	switch r.Kind {
	case Throttle:
		return errorResponse(req, 400, "ProvisionedThroughputExceededException"), nil
	case ServerError:
		return errorResponse(req, 500, "InternalServerError"), nil
	case Unavailable:
		return errorResponse(req, 503, "ServiceUnavailable"), nil
	case Reset:
		drain(req)
		return nil, connectionReset()
	case Conflict:
		return t.conflict(req), nil
	case Delay:
		select {
		case <-time.After(r.Delay):
		case <-req.Context().Done():
			drain(req)
			return nil, req.Context().Err()
		}
		return t.base.RoundTrip(req)
	}
	// After commit: DynamoDB applies the request, the caller never learns.
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if r.Kind == ResetAfterCommit {
		return nil, connectionReset()
	}
	return errorResponse(req, 500, "InternalServerError"), nil
}

// operation is the DynamoDB operation a request calls, from its
// X-Amz-Target header ("DynamoDB_20120810.PutItem").
func operation(req *http.Request) string {
	target := req.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		return target[i+1:]
	}
	return target
}

func drain(req *http.Request) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
}

// connectionReset is the error a read on a reset TCP connection returns.
func connectionReset() error {
	return &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

// conflict is DynamoDB's answer to a TransactWriteItems that another
// transaction got in the way of: cancelled, with one reason per action,
// TransactionConflict for one of them (drawn at random) and None for the
// others. A body that is not a transaction is answered as one action.
func (t *Transport) conflict(req *http.Request) *http.Response {
	var in struct{ TransactItems []json.RawMessage }
	if req.Body != nil {
		_ = json.NewDecoder(req.Body).Decode(&in)
	}
	n := max(1, len(in.TransactItems))
	held := t.intN(n)
	codes := make([]string, n)
	reasons := make([]map[string]string, n)
	for i := range n {
		codes[i], reasons[i] = "None", map[string]string{"Code": "None"}
		if i == held {
			codes[i], reasons[i] = "TransactionConflict", map[string]string{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
		}
	}
	body, _ := json.Marshal(map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#" + transactionCanceled,
		"Message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
		"CancellationReasons": reasons,
	})
	return response(req, 400, transactionCanceled, string(body))
}

const transactionCanceled = "TransactionCanceledException"

// errorResponse is a DynamoDB error answer in the JSON protocol.
func errorResponse(req *http.Request, status int, code string) *http.Response {
	return response(req, status, code, `{"__type":"com.amazonaws.dynamodb.v20120810#`+code+`","message":"injected fault"}`)
}

// response is an answer of DynamoDB's JSON protocol with the given error
// code and body; the request is read to its end, as DynamoDB would.
func response(req *http.Request, status int, code, body string) *http.Response {
	drain(req)
	return &http.Response{
		Status:        http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Errortype": {code}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
