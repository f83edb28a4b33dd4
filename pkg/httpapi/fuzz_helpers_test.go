package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// The fuzz targets of this package (fuzz_*_test.go) give every parser of
// client input arbitrary bytes and check what it makes of them: a refusal
// is one of the domain's typed errors, which the API answers with a 4xx
// that says what was wrong (checkRefusal); what is accepted is well formed
// and agrees with a reference where there is one. Their seeds run in
// go test; make fuzz runs each target for a while.

// fuzzApp is the app the targets parse requests for.
const fuzzApp = "d53065bd-f932-4841-83fb-849717d8df0f"

// fuzzNow is the instant the targets' expiries are taken against, one for
// the whole run, so that a write's expiry reads the same in every check.
var fuzzNow = time.Now()

// fuzzAPI answers refusals as the handlers do, and serves the parsers
// that need an API (cursors, dispatch). It has no store: nothing the
// targets run reaches one.
var fuzzAPI = New(Stores{}, GroupAll, Config{
	Subject: AnonymousSubject, CursorSecret: []byte("fuzz"), Logger: slog.New(slog.DiscardHandler),
})

// internalMarkers are texts of Go's own errors (encoding/json's name Go
// types) that must never reach a client unless the client sent them.
var internalMarkers = []string{"json: ", "Go value", "Go struct", "*httpapi.", "*uds."}

// checkRefusal checks that err, a parser's refusal of input, is a typed
// client error, and that the API answers it with a 4xx whose JSON body
// names the error and details that carry no internal error text.
func checkRefusal(t *testing.T, input []byte, err error) {
	t.Helper()
	var invalid *uds.InvalidError
	var tooLarge *uds.TooLargeError
	var coding *encodingError
	if !errors.As(err, &invalid) && !errors.As(err, &tooLarge) && !errors.As(err, &coding) {
		t.Fatalf("refused with %v (%T): not a *uds.InvalidError, *uds.TooLargeError or *encodingError, so a 500", err, err)
	}
	rec := httptest.NewRecorder()
	fuzzAPI.fail(rec, httptest.NewRequest(http.MethodPost, "/", nil), err, nil)
	var body struct{ Error, Details string }
	if rec.Code < 400 || rec.Code > 499 || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error == "" || body.Details == "" {
		t.Fatalf("%v is answered %d %s; want a 4xx whose JSON body has error and details", err, rec.Code, rec.Body)
	}
	for _, m := range internalMarkers {
		if strings.Contains(body.Details, m) && !bytes.Contains(input, []byte(m)) {
			t.Fatalf("details %q show an internal error text (%q)", body.Details, m)
		}
	}
}

// checkInvalidField checks that err is a refusal naming a field that
// starts with one of prefixes.
func checkInvalidField(t *testing.T, err error, prefixes ...string) {
	t.Helper()
	var invalid *uds.InvalidError
	if !errors.As(err, &invalid) {
		return
	}
	for _, p := range prefixes {
		if strings.HasPrefix(invalid.Field, p) {
			return
		}
	}
	t.Fatalf("%v names field %q, want one starting with one of %q", err, invalid.Field, prefixes)
}

// objectMembers decodes an accepted body's top-level members, failing if
// it is not an object, names a member twice or names one outside known.
// It is the reference the targets hold the strict decoder's results to.
func objectMembers(t *testing.T, body []byte, known ...string) map[string]json.RawMessage {
	t.Helper()
	if repeatsName(body) {
		t.Fatalf("accepted %q, which names a member twice", body)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("accepted %q, which is not a JSON object: %v", body, err)
	}
	for name := range m {
		found := false
		for _, k := range known {
			found = found || k == name
		}
		if !found {
			t.Fatalf("accepted %q, whose member %q is none of %q", body, name, known)
		}
	}
	return m
}

// compactOf is json.Compact of raw, the reference for stored JSON.
func compactOf(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("json.Compact(%q): %v", raw, err)
	}
	return b.Bytes()
}

// checkStoredJSON checks that data, as a parser will store it, is compact
// JSON without repeated member names, equal to json.Compact of raw, the
// value the client sent.
func checkStoredJSON(t *testing.T, data, raw json.RawMessage) {
	t.Helper()
	if !json.Valid(data) || repeatsName(data) {
		t.Fatalf("stores %q: not JSON, or an object naming a member twice", data)
	}
	if want := compactOf(t, raw); !bytes.Equal(data, want) {
		t.Fatalf("stores %q for %q; json.Compact gives %q", data, raw, want)
	}
	if len(data) > uds.MaxDataBytes {
		t.Fatalf("stores %d bytes of data, past the %d allowed", len(data), uds.MaxDataBytes)
	}
}

// deepJSON is a value nested n deep.
func deepJSON(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
