package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBackoffIsBounded checks the pauses of a client allowed many retries
// with a long first pause: none is negative or past maxBackoff, where the
// doubling would overflow a shift (and panic drawing a random pause).
func TestBackoffIsBounded(t *testing.T) {
	t.Parallel()
	c := &Client{maxRetries: 200, backoff: time.Hour}
	err := errors.New("connection reset")
	for attempt := range c.maxRetries {
		if w := c.wait(err, attempt); w < 0 || w > maxBackoff {
			t.Fatalf("attempt %d waits %v, want 0 to %v", attempt, w, maxBackoff)
		}
	}
	if w := (&Client{backoff: -time.Second}).wait(err, 3); w != 0 {
		t.Errorf("a negative backoff waits %v, want 0", w)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	soon := time.Now().Add(90 * time.Second)
	for _, tc := range []struct {
		name, value string
		min, max    time.Duration
	}{
		{"none", "", 0, 0},
		{"seconds", "7", 7 * time.Second, 7 * time.Second},
		{"zero", "0", 0, 0},
		{"negative", "-3", 0, 0},
		{"an HTTP date", soon.UTC().Format(http.TimeFormat), 88 * time.Second, 90 * time.Second},
		{"an HTTP date past", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), 0, 0},
		{"neither", "soon", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryAfter(http.Header{"Retry-After": {tc.value}}); got < tc.min || got > tc.max {
				t.Errorf("Retry-After %q reads as %v, want %v to %v", tc.value, got, tc.min, tc.max)
			}
		})
	}
}

// TestRetryAfterHasJitter checks the pause after a Retry-After: never
// shorter than the server asked, at most half as long again, and spread
// between, so that callers a rate limit refused together come back apart.
func TestRetryAfterHasJitter(t *testing.T) {
	t.Parallel()
	c := &Client{backoff: time.Millisecond}
	err := &APIError{Status: http.StatusTooManyRequests, RetryAfter: 2 * time.Second}
	lowest, highest := time.Duration(1<<62), time.Duration(0)
	for range 1000 {
		w := c.wait(err, 0)
		if w < 2*time.Second || w > 3*time.Second {
			t.Fatalf("Retry-After 2s: waits %v, want 2s to 3s", w)
		}
		lowest, highest = min(lowest, w), max(highest, w)
	}
	// 1000 draws over a second fall into both of its outer quarters,
	// unless the pause is not drawn at random.
	if lowest > 2250*time.Millisecond || highest < 2750*time.Millisecond {
		t.Errorf("Retry-After 2s: pauses from %v to %v, want them spread over 2s to 3s", lowest, highest)
	}
}

// TestAPIErrorKindsFollowTheCode checks that an answer's kind is its code,
// whatever its message says, and its status when it has no code of a kind.
func TestAPIErrorKindsFollowTheCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  *APIError
		kind error
	}{
		{"a quota", &APIError{Status: 403, Code: "quota_exceeded", Message: "Quota exceeded"}, ErrQuotaExceeded},
		{"a quota whatever its message", &APIError{Status: 403, Code: "quota_exceeded", Message: "Over the limit"}, ErrQuotaExceeded},
		{"a refusal whose message reads like a quota", &APIError{Status: 403, Code: "forbidden", Message: "Quota exceeded"}, ErrForbidden},
		{"a 403 without a code", &APIError{Status: 403, Message: "Quota exceeded"}, ErrForbidden},
		{"an index still building", &APIError{Status: 409, Code: "index_not_ready"}, ErrIndexNotReady},
		{"a code of its status's kind", &APIError{Status: 409, Code: "in_use"}, ErrConflict},
		{"a policy change under way", &APIError{Status: 503, Code: "policy_pending"}, ErrUnavailable},
		{"a deployment without a bucket", &APIError{Status: 501, Code: "not_configured"}, ErrNotImplemented},
		{"a changes feed's cursor too old", &APIError{Status: 410, Code: "cursor_expired"}, ErrCursorExpired},
		{"an erase holding the writer's writes", &APIError{Status: 409, Code: "erasing"}, ErrErasing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.kind) {
				t.Errorf("%v is not %v", tc.err, tc.kind)
			}
		})
	}
}

// TestRetryable checks which failures are sent again, and after how
// long, against the bounds of attempts and of the pauses in total.
func TestRetryable(t *testing.T) {
	t.Parallel()
	c := &Client{maxRetries: 4, backoff: 10 * time.Millisecond, maxWait: time.Minute}
	answer := func(status int, code string, retryAfter time.Duration) error {
		return &APIError{Status: status, Code: code, RetryAfter: retryAfter}
	}
	rateLimited := answer(http.StatusTooManyRequests, "rate_limited", time.Second)
	dial := &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	for _, tc := range []struct {
		name     string
		err      error
		retry    retry
		attempt  int
		waited   time.Duration
		want     bool
		min, max time.Duration // the pause, when want
	}{
		{"a rate limit, a create", rateLimited, unsent, 0, 0, true, time.Second, 1500 * time.Millisecond},
		{"a rate limit, a read", rateLimited, always, 3, 10 * time.Second, true, time.Second, 1500 * time.Millisecond},
		{"a rate limit, attempts spent", rateLimited, always, 4, 0, false, 0, 0},
		{"a rate limit, its Retry-After past the wait left", rateLimited, always, 1, time.Minute - 999*time.Millisecond, false, 0, 0},
		{"a rate limit, its jitter cut to the wait left", rateLimited, always, 1, time.Minute - time.Second, true, time.Second, time.Second},
		{"a rate limit asking for more than the whole wait", answer(http.StatusTooManyRequests, "rate_limited", time.Hour), always, 0, 0, false, 0, 0},
		{"API Gateway's throttle, no Retry-After", answer(http.StatusTooManyRequests, "", 0), unsent, 2, 0, true, 0, 40 * time.Millisecond},
		{"503, a read", answer(http.StatusServiceUnavailable, "unavailable", 2*time.Second), always, 0, 0, true, 2 * time.Second, 3 * time.Second},
		{"503, a create", answer(http.StatusServiceUnavailable, "unavailable", 2*time.Second), unsent, 0, 0, false, 0, 0},
		// A namespace changing its access mode wrote nothing.
		{"503 policy_pending, a create", answer(http.StatusServiceUnavailable, "policy_pending", 2*time.Second), unsent, 0, 0, true, 2 * time.Second, 3 * time.Second},
		{"500", answer(http.StatusInternalServerError, "internal", 0), always, 0, 0, false, 0, 0},
		{"no connection, a create", dial, unsent, 0, 0, true, 0, 10 * time.Millisecond},
		{"a connection lost, a create", errors.New("connection reset"), unsent, 0, 0, false, 0, 0},
		{"a connection lost, a read", errors.New("connection reset"), always, 1, 0, true, 0, 20 * time.Millisecond},
		{"no connection, the wait spent", dial, unsent, 1, time.Minute, true, 0, 0},
		{"the context's end", context.Canceled, always, 0, 0, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, ok := c.retryable(request{retry: tc.retry}, tc.err, tc.attempt, tc.waited)
			if ok != tc.want || (ok && (wait < tc.min || wait > tc.max)) {
				t.Errorf("retry %v after %v; want %v after %v to %v", ok, wait, tc.want, tc.min, tc.max)
			}
		})
	}
}

// TestAPIErrorKinds checks the sentinels a 429 matches: every 429 is
// ErrThrottled, a rate limit's also ErrRateLimited; and that an error
// says how often its request was sent.
func TestAPIErrorKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                   string
		err                    *APIError
		throttled, rateLimited bool
		text                   string
	}{
		{"a rate limit", &APIError{Status: 429, Code: "rate_limited", Message: "Too many requests", Details: "over the caller rate limit of 2 requests a second (burst 2)", Attempts: 5, Waited: 6234 * time.Millisecond},
			true, true, "429 Too many requests: over the caller rate limit of 2 requests a second (burst 2) (sent 5 times over 6.2s)"},
		{"API Gateway's throttle", &APIError{Status: 429, Message: "Too Many Requests", Attempts: 1}, true, false, "429 Too Many Requests"},
		{"a throttle whose message reads like a rate limit", &APIError{Status: 429, Message: "Too many requests", Attempts: 1}, true, false, "429 Too many requests"},
		{"another status", &APIError{Status: 503, Message: "Service unavailable", Attempts: 2, Waited: time.Second}, false, false, "503 Service unavailable (sent 2 times over 1s)"},
		{"S3's XML", &APIError{Status: 403, Body: []byte("<?xml version=\"1.0\"?>\n<Error>\n  <Code>AccessDenied</Code>\n  <Message>the request is not signed</Message>\n</Error>\n"), Attempts: 1},
			false, false, `403: <?xml version="1.0"?> <Error> <Code>AccessDenied</Code> <Message>the request is not signed</Message> </Error>`},
		{"a long page cut", &APIError{Status: 502, Body: []byte("<html>" + strings.Repeat("é", 150)), Attempts: 1},
			false, false, "502: <html>" + strings.Repeat("é", 97) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if errors.Is(tc.err, ErrThrottled) != tc.throttled || errors.Is(tc.err, ErrRateLimited) != tc.rateLimited || tc.err.Error() != tc.text {
				t.Errorf("ErrThrottled %v, ErrRateLimited %v, %q; want %v, %v, %q", errors.Is(tc.err, ErrThrottled), errors.Is(tc.err, ErrRateLimited), tc.err.Error(),
					tc.throttled, tc.rateLimited, tc.text)
			}
		})
	}
}
