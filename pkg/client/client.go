package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// basePath prefixes every route of the API.
const basePath = "/rest/api/v1"

// Client calls one UDS deployment. It is safe for concurrent use.
type Client struct {
	base string
	// http sends API requests; it follows no redirect, since the one the
	// API answers (302 to a large value's bytes in S3) must not carry the
	// API's credentials.
	http *http.Client
	// transfer moves large values to and from S3: http without a time
	// limit on the whole exchange, which a file of gigabytes may take;
	// idle bounds a transfer instead, as the time in which no byte moves
	// (http's Timeout; 0: no bound).
	transfer   *http.Client
	idle       time.Duration
	token      string
	subject    string
	userAgent  string
	signer     *Signer
	maxRetries int
	backoff    time.Duration
	// maxWait bounds the pauses between one call's attempts, in total.
	maxWait time.Duration
	// realtime is the WebSocket URL subscriptions connect to.
	realtime string
}

// Option configures a Client.
type Option func(*Client)

// WithToken authenticates every request with a bearer token (a JWT that
// the HTTP API's JWT authorizer accepts).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient sends requests through hc instead of a default client.
// Redirects are not followed whatever hc says, and hc's Timeout bounds an
// API request, but a transfer of a large value to or from S3 only in the
// time no byte moves (see PutBytes).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithSubject names the caller to a local server that trusts the
// X-Uds-Subject header (on a loopback address, or started with
// UDS_TRUST_SUBJECT_HEADER=1). Deployed APIs, and a local server that does
// not trust it, refuse requests that carry it (400): there the caller is
// who the authorizer says.
func WithSubject(subject string) Option { return func(c *Client) { c.subject = subject } }

// WithUserAgent sets the User-Agent of every request.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// The retry bounds of a client that WithRetries and WithMaxRetryWait do
// not change. DefaultMaxRetryWait leaves room for a rate limit's
// Retry-After of a few seconds at every attempt, and for a write that
// waits out a namespace's change of access (503 policy_pending, with a
// Retry-After of about a minute on a default deployment).
const (
	DefaultRetries      = 4
	DefaultBackoff      = 100 * time.Millisecond
	DefaultMaxRetryWait = 2 * time.Minute
)

// WithRetries sets how many times a request that may be retried is sent
// again (DefaultRetries), and the first pause, which doubles with every
// retry up to maxBackoff (DefaultBackoff; each pause is drawn at random
// below its bound).
func WithRetries(n int, backoff time.Duration) Option {
	return func(c *Client) { c.maxRetries, c.backoff = n, backoff }
}

// WithMaxRetryWait bounds the pauses between one call's attempts, in total
// (DefaultMaxRetryWait): a retry whose pause would take them past d is not
// made, and the call returns the answer that asked for it. The pause a
// Retry-After asks for counts in full, so a server that asks for a longer
// one than is left is not asked again.
func WithMaxRetryWait(d time.Duration) Option { return func(c *Client) { c.maxWait = d } }

// New returns a client of the API at endpoint, such as
// "http://127.0.0.1:8080" (make run) or the stack's ApiUrl output.
func New(endpoint string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(endpoint, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q is not an http(s) URL", endpoint)
	}
	c := &Client{
		base: u.String(), http: &http.Client{Timeout: 60 * time.Second},
		userAgent: "uds-go-client", maxRetries: DefaultRetries, backoff: DefaultBackoff, maxWait: DefaultMaxRetryWait,
	}
	for _, o := range opts {
		o(c)
	}
	if c.realtime, err = realtimeURL(c.base, c.realtime); err != nil {
		return nil, err
	}
	api := *c.http
	api.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	transfer := api
	transfer.Timeout = 0
	c.http, c.transfer, c.idle = &api, &transfer, api.Timeout
	return c, nil
}

// retry says when a failed request may be sent again. A write that a
// repeat would apply a second time is sent again only when it certainly
// did nothing. The others may be repeated after their answer was lost: a
// conditional write that took effect the first time is then refused
// (412), which the caller resolves by reading the item.
type retry int

const (
	// unsent: only when the request certainly did nothing: the
	// connection could not be made, or the answer was 429 (API Gateway's
	// throttle, or one of UDS's rate limits, which refuse a request
	// before it does anything). Creates and batches, whose repeat would
	// answer 409 for the caller's own write, and updates and restores
	// without If-Match, whose repeat would bump the version again and
	// could overwrite a write made in between.
	unsent retry = iota
	// always: reads, and writes whose repetition leaves the data as one
	// would (conditional PUT and restore, DELETE, delete-all, dropping a
	// history, import, recompute, limits, policies, index build steps):
	// also after a 502, 503 or 504 or a connection lost mid-request.
	always
)

// request is one API call.
type request struct {
	method string
	path   string     // below basePath, already escaped
	query  url.Values // a parameter with an empty value goes as its name alone
	body   []byte     // JSON, or nil
	// contentType is the body's type where it is not JSON (a binary
	// value's bytes).
	contentType string
	header      http.Header
	retry       retry
	// refused, when set, is why the request is not sent: its path would
	// name something other than what the call is about (Key.checkItem).
	refused error
}

// response is an answer with a status the caller expects.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends r, retrying as r.retry allows, and returns the answer when its
// status is one of ok; any other status is an *APIError, which says how
// many times the request was sent.
func (c *Client) do(ctx context.Context, r request, ok ...int) (response, error) {
	var res response
	err := c.exchange(ctx, r, func(answer *http.Response) error {
		b, err := io.ReadAll(answer.Body)
		res = response{status: answer.StatusCode, header: answer.Header, body: b}
		return err
	}, ok...)
	return res, err
}

// exchange sends r as do does, and hands an answer of a status in ok to
// take, which reads its body (exchange closes it). An error of take counts
// as a failure of the attempt, retried as a lost connection is, unless it
// is a *deliveredError: part of the answer has gone where it cannot be
// taken back.
func (c *Client) exchange(ctx context.Context, r request, take func(*http.Response) error, ok ...int) error {
	if r.refused != nil {
		return r.refused
	}
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		err := c.attempt(ctx, r, take, ok)
		if err == nil {
			return nil
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) {
			apiErr.Attempts, apiErr.Waited = attempt+1, waited
		}
		wait, retryable := c.retryable(r, err, attempt, waited)
		if !retryable {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		waited += wait
	}
}

// attempt sends r once and hands an answer of a status in ok to take; any
// other status is an *APIError.
func (c *Client) attempt(ctx context.Context, r request, take func(*http.Response) error, ok []int) error {
	res, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if !contains(ok, res.StatusCode) {
		body, err := io.ReadAll(res.Body)
		if err != nil {
			return err
		}
		return newAPIError(res.StatusCode, res.Header, body)
	}
	return take(res)
}

// deliveredError is a failure after part of an answer went to the
// caller (a value's bytes written to its writer): sending the request
// again would deliver them twice.
type deliveredError struct{ err error }

func (e *deliveredError) Error() string { return e.err.Error() }
func (e *deliveredError) Unwrap() error { return e.err }

// retryable reports whether a failed attempt may be sent again, after
// the pauses so far (waited), and after how long.
func (c *Client) retryable(r request, err error, attempt int, waited time.Duration) (time.Duration, bool) {
	if attempt >= c.maxRetries {
		return 0, false
	}
	var apiErr *APIError
	var delivered *deliveredError
	switch {
	case errors.As(err, &delivered):
		return 0, false
	case errors.As(err, &apiErr):
		switch apiErr.Status {
		case http.StatusTooManyRequests:
			// Refused before anything was done: any request may be
			// sent again.
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			// A namespace changing its access mode refuses a write
			// before it does anything (policy_pending): any request may
			// be sent again, after the Retry-After the server gives.
			if r.retry != always && apiErr.Code != "policy_pending" {
				return 0, false
			}
		default:
			return 0, false
		}
		// The pause the server asked for, in full, must fit in what is
		// left; the jitter above it is cut to fit.
		if waited+apiErr.RetryAfter > c.maxWait {
			return 0, false
		}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return 0, false
	case !notSent(err) && r.retry != always:
		// A network error after the request may have reached the server.
		return 0, false
	}
	return min(c.wait(err, attempt), max(c.maxWait-waited, 0)), true
}

// maxBackoff bounds the pause before a retry, however many retries
// WithRetries allows.
const maxBackoff = 30 * time.Second

// wait is the pause before retry number attempt (from 0) of a request
// that failed with err: the server's Retry-After when it gave one, plus
// up to half as much again drawn at random, so that callers a rate limit
// refused at the same instant do not all come back at the same instant;
// otherwise exponential backoff with full jitter.
func (c *Client) wait(err error, attempt int) time.Duration {
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		return apiErr.RetryAfter + time.Duration(rand.Int64N(int64(apiErr.RetryAfter/2)+1))
	}
	// Doubled step by step rather than shifted, so that a large attempt
	// cannot overflow into a negative bound.
	bound := max(c.backoff, 0)
	for i := 0; i < attempt && bound < maxBackoff; i++ {
		bound *= 2
	}
	return time.Duration(rand.Int64N(int64(min(bound, maxBackoff)) + 1))
}

// transient reports whether a failure of a request that is not repeated
// once it may have reached UDS (retry unsent) may pass if the request is
// sent again: the gateway or UDS unavailable, or the connection lost
// mid-request. A 429 and a connection that could not be made are not
// among them: do has already sent such a request again as far as its
// bounds allow.
func transient(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return errors.Is(apiErr, ErrUnavailable)
	}
	return !notSent(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// notSent reports whether a transport error happened before the request
// could reach the server (no connection was made).
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// send makes one attempt and returns the answer, its body unread.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	u := c.base + basePath + r.path
	if len(r.query) > 0 {
		u += "?" + encodeQuery(r.query)
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", c.userAgent)
	switch {
	case r.contentType != "":
		req.Header.Set("Content-Type", r.contentType)
	case r.body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	if c.subject != "" {
		req.Header.Set("X-Uds-Subject", c.subject)
	}
	switch {
	case c.signer != nil:
		if err := c.signer.Sign(ctx, req, r.body); err != nil {
			return nil, err
		}
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.http.Do(req)
}

// encodeQuery is q as url.Values.Encode writes it (sorted by name), but
// for a parameter with an empty value, which goes as its name alone: the
// API's switches are written so ("?history"), and the data routes read
// both forms alike.
func encodeQuery(q url.Values) string {
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		for _, v := range q[name] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(name))
			if v != "" {
				b.WriteString("=" + url.QueryEscape(v))
			}
		}
	}
	return b.String()
}

// call sends r and decodes a JSON answer into out (when out is not nil).
func (c *Client) call(ctx context.Context, r request, out any, ok ...int) (response, error) {
	res, err := c.do(ctx, r, ok...)
	if err != nil || out == nil || len(res.body) == 0 {
		return res, err
	}
	if err := json.Unmarshal(res.body, out); err != nil {
		return res, fmt.Errorf("%s %s answered %d with a body that is not the expected JSON: %w", r.method, r.path, res.status, err)
	}
	return res, nil
}

// jsonBody encodes v for a request body. HTML escaping is off: it would
// rewrite <, > and & inside the caller's JSON data (json.RawMessage
// included), which UDS stores byte for byte.
func jsonBody(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode the request body: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func contains(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// retryAfter reads a Retry-After header, given in seconds or as an HTTP
// date (RFC 9110, 10.2.3); 0 when there is none, it cannot be read, or the
// date has passed.
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
