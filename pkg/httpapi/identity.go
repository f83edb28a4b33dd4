package httpapi

import (
	"net/http"
	"strconv"

	"github.com/udsproject/uds/pkg/uds"
)

// Anonymous is the subject of callers without an authorizer (seed 002's
// public mode).
const Anonymous = uds.Anonymous

// SubjectHeader carries the subject to a local server that trusts it (on a
// loopback address, or with UDS_TRUST_SUBJECT_HEADER=1). Where it is not
// trusted, and on Lambda always, a request that carries it is refused
// (Config.RefuseSubjectHeader).
const SubjectHeader = "X-Uds-Subject"

// ErrUntrustedSubjectHeader is answered 400 to a request that carries
// SubjectHeader where the host does not take the caller from it.
var ErrUntrustedSubjectHeader = uds.NewError(uds.CodeInvalid, "subject header not trusted")

// AnonymousSubject names every caller anonymous.
func AnonymousSubject(*http.Request) (string, error) { return Anonymous, nil }

// HeaderSubject takes the subject from SubjectHeader, anonymous without it.
// It is for local testing only: any client can claim any identity.
func HeaderSubject(r *http.Request) (string, error) {
	values := r.Header.Values(SubjectHeader)
	if len(values) > 1 {
		// Reading either would store a write under a caller the client
		// may not have meant.
		return "", Unauthenticated(SubjectHeader + " is sent " + strconv.Itoa(len(values)) + " times; a request has one caller: send it once")
	}
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
func (e *unauthenticatedError) Code() uds.Code       { return uds.CodeUnauthenticated }

// checkSubjectHeader refuses a request that names its caller in
// SubjectHeader where the host takes the caller from elsewhere. Ignoring
// the header would store the write under another subject than the client
// meant, without a word; the refusal says where this host takes the caller
// from (a.refuseHeader) instead. An empty header counts: the client still
// meant to name someone.
func (a *API) checkSubjectHeader(r *http.Request) error {
	if a.refuseHeader == "" || len(r.Header.Values(SubjectHeader)) == 0 {
		return nil
	}
	return &untrustedHeaderError{a.refuseHeader}
}

// untrustedHeaderError is an ErrUntrustedSubjectHeader whose text, the
// host's explanation, is shown to the caller.
type untrustedHeaderError struct{ details string }

func (e *untrustedHeaderError) Error() string        { return e.details }
func (e *untrustedHeaderError) Is(target error) bool { return target == ErrUntrustedSubjectHeader }
func (e *untrustedHeaderError) Code() uds.Code       { return uds.CodeInvalid }
