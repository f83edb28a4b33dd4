package uds

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestCodeOfAndPublicOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		code   Code
		public string
	}{
		{"nil", nil, "", ""},
		{"a sentinel", ErrNotFound, CodeNotFound, "not found"},
		{"a wrapped sentinel loses its context", fmt.Errorf("get app/ns/secret-id: %w", ErrNotFound), CodeNotFound, "not found"},
		{"a typed error", Invalid("limit", "must be positive"), CodeInvalid, "invalid limit: must be positive"},
		{"a batch's operation", &BatchError{Index: 3, Err: &QuotaError{}}, CodeQuotaExceeded, `quota exceeded for user "" in app `},
		{"a policy change under way", &ChangingError{Namespace: "n", From: AccessShared, To: AccessPrivate}, CodePolicyPending, "namespace n is changing its access mode from shared to private"},
		{"a sentinel that shares its code", ErrNoStreams, CodeNotConfigured, "streamed quotas not available"},
		{"the store's cause stays in the log", &UnavailableError{Op: "put", Err: errors.New("table uds-data: throttled")}, CodeUnavailable, "data store unavailable"},
		{"a reason shown to the caller", &UnavailableError{Op: "put", Err: errors.New("x"), Reason: "try later", RetryAfter: time.Second}, CodeUnavailable, "try later"},
		{"an unexpected error", errors.New("dynamodb: table uds-data missing"), CodeInternal, "Internal server error"},
		{"a sentinel declared above the domain", NewError(CodeMethodNotAllowed, "no"), CodeMethodNotAllowed, "no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CodeOf(tc.err); got != tc.code {
				t.Errorf("CodeOf = %q, want %q", got, tc.code)
			}
			if got := PublicOf(tc.err); got != tc.public {
				t.Errorf("PublicOf = %q, want %q", got, tc.public)
			}
		})
	}
}

// TestCodesAreDistinct guards the list the OpenAPI enum is checked
// against: a code listed twice, or an empty one, is a slip.
func TestCodesAreDistinct(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if c == "" || seen[c] {
			t.Errorf("code %q is empty or listed twice", c)
		}
		seen[c] = true
	}
}
