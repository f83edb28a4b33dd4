package client

import (
	"errors"
	"net/http"
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
