package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

// TestErrorCodesHaveStatuses checks that statusOf gives every code a
// status, and no code that uds does not declare: an error of a code left
// out would be answered with status 0.
func TestErrorCodesHaveStatuses(t *testing.T) {
	for _, c := range uds.Codes() {
		if s := statusOf[c]; http.StatusText(s) == "" || s < 400 {
			t.Errorf("code %q has status %d", c, s)
		}
	}
	if len(statusOf) != len(uds.Codes()) {
		t.Errorf("statusOf maps %d codes, uds declares %d", len(statusOf), len(uds.Codes()))
	}
}

// TestDeadlineIsUnavailable checks that a request whose time ran out,
// where no layer said what that means, answers 503 with Retry-After, as
// the contract says, not 500.
func TestDeadlineIsUnavailable(t *testing.T) {
	for _, err := range []error{context.DeadlineExceeded, fmt.Errorf("read limits: %w", context.DeadlineExceeded)} {
		status, body, retryAfter := describe(err, nil, "")
		if status != http.StatusServiceUnavailable || body.Code != uds.CodeUnavailable || retryAfter == "" {
			t.Errorf("%v: %d %+v, Retry-After %q; want 503 unavailable with Retry-After", err, status, body, retryAfter)
		}
	}
	if status, _, _ := describe(errors.New("boom"), nil, ""); status != http.StatusInternalServerError {
		t.Errorf("another error: %d, want 500", status)
	}
}
