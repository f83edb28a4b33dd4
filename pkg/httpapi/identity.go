package httpapi

import (
	"net/http"

	"github.com/udsproject/uds/pkg/uds"
)

// Anonymous is the subject of callers without an authorizer (seed 002's
// public mode).
const Anonymous = "anonymous"

// SubjectHeader carries the subject to the local server when it is started
// with UDS_TRUST_SUBJECT_HEADER=1. Lambda functions never read it.
const SubjectHeader = "X-Uds-Subject"

// AnonymousSubject names every caller anonymous.
func AnonymousSubject(*http.Request) (string, error) { return Anonymous, nil }

// HeaderSubject takes the subject from SubjectHeader, anonymous without it.
// It is for local testing only: any client can claim any identity.
func HeaderSubject(r *http.Request) (string, error) {
	s := r.Header.Get(SubjectHeader)
	if s == "" {
		return Anonymous, nil
	}
	return CheckSubject(s)
}

// CheckSubject validates a subject taken from an identity source.
func CheckSubject(s string) (string, error) {
	if !uds.ValidSubject(s) {
		return "", Unauthenticated("the caller's identity is longer than 1024 bytes, is not valid UTF-8 or holds control characters")
	}
	return s, nil
}

// Unauthenticated is an ErrUnauthenticated that says why; the reason is
// shown to the caller.
func Unauthenticated(reason string) error { return &unauthenticatedError{reason} }

type unauthenticatedError struct{ reason string }

func (e *unauthenticatedError) Error() string        { return e.reason }
func (e *unauthenticatedError) Is(target error) bool { return target == ErrUnauthenticated }
