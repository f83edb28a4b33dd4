package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/udsproject/uds/pkg/uds"
)

const (
	// maxBodyBytes bounds what is read of a request body: 1 MiB of data
	// plus room for formatting whitespace and className.
	maxBodyBytes = 2 << 20
	// maxClassNameBytes bounds className (a type name, not data).
	maxClassNameBytes = 1024
)

// writeBody is the body of POST and PUT.
type writeBody struct {
	Data json.RawMessage `json:"data"`
	// DataBase64 and ContentType carry a binary value in JSON, in place
	// of data (as list pages and exports show one).
	DataBase64  *string `json:"dataBase64"`
	ContentType *string `json:"contentType"`
	ClassName   *string `json:"className"`
	// TTL (whole seconds) and ExpiresAt (an RFC 3339 instant) set when
	// the item expires; at most one of them.
	TTL       json.RawMessage `json:"ttl"`
	ExpiresAt json.RawMessage `json:"expiresAt"`
}

// checkRequestHeaders refuses what no route takes of a request's headers.
// Content-Type and Range sent more than once: Go reads the first, while a
// proxy or a browser in front may have judged the request by another; a
// body has one type, and a read one range. Content-Range: it names a part
// of a value, and UDS writes whole values (a PUT that carries it must be
// refused, RFC 9110, 14.5).
func checkRequestHeaders(r *http.Request) error {
	if n := len(r.Header.Values("Content-Type")); n > 1 || listsSeveral(r.Header.Get("Content-Type")) {
		// A header sent twice reaches a function behind API Gateway as
		// one, its values joined by a comma.
		return uds.Invalid("Content-Type", "is sent more than once (or lists several types); a body has one media type: send the header once")
	}
	if n := len(r.Header.Values("Range")); n > 1 {
		return uds.Invalid("Range", "is sent %d times; send one Range header", n)
	}
	return refuseHeaders(r, "has no place in a request: UDS writes whole values, so send the whole value without it", "Content-Range")
}

// refuseHeaders refuses a request that carries any of names, giving
// reason for the first it carries: a header a route does not keep is
// refused rather than ignored.
func refuseHeaders(r *http.Request, reason string, names ...string) error {
	for _, name := range names {
		if len(r.Header.Values(name)) > 0 {
			return uds.Invalid(name, "%s", reason)
		}
	}
	return nil
}

// listsSeveral reports whether a header value is a comma-separated list:
// a comma outside a quoted string.
func listsSeveral(v string) bool {
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return true
		}
	}
	return false
}

// readBody reads a request body of at most limit bytes: past it a
// *uds.TooLargeError with tooLarge as its reason, and any other failure
// (a gzip stream that breaks off, a connection cut) a 400.
func readBody(r *http.Request, limit int64, tooLarge string) ([]byte, error) {
	// A plain body declared longer than the limit is refused unread: a
	// client that waits for 100 Continue then sends none of it. (A gzip
	// body's limit is on what it expands to.)
	if _, gzipped := r.Body.(*gzipBody); !gzipped && r.ContentLength > limit {
		return nil, &uds.TooLargeError{Reason: tooLarge}
	}
	// The declared length sizes the buffer up to presized only: a length
	// declared and never sent must not reserve the whole limit.
	body, err := readAll(http.MaxBytesReader(nil, r.Body, limit), min(r.ContentLength, limit, presized))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, &uds.TooLargeError{Reason: tooLarge}
	case errors.Is(err, errNotGzip):
		return nil, errNotGzip
	case err != nil:
		return nil, uds.Invalid("body", "could not be read")
	}
	return body, nil
}

// presized is the largest buffer a body's declared length reserves
// before its bytes arrive; longer bodies grow theirs as they come.
const presized = 64 << 10

// readAll reads r to its end into a buffer of the body's declared length
// (none: -1), where io.ReadAll starts from 512 bytes and copies as it
// grows: a 1 KB item took four allocations and twice its size. A body
// longer than declared (one decompressed on the way) grows the buffer.
func readAll(r io.Reader, declared int64) ([]byte, error) {
	if declared <= 0 {
		return io.ReadAll(r)
	}
	// One byte more than declared, so that reading the end needs no room.
	b := make([]byte, 0, declared+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case len(b) == cap(b):
			b = append(b, 0)[:len(b)]
		}
	}
}

// readWrite parses and validates a POST or PUT body into w; expiries are
// taken against now.
func readWrite(r *http.Request, w *uds.Write, now time.Time) error {
	// Ignored, an item header would leave the client believing it set
	// the field.
	if err := refuseHeaders(r, "applies to a binary write or a patch; a JSON body carries className, ttl and expiresAt as members", itemHeaders...); err != nil {
		return err
	}
	body, err := readBody(r, maxBodyBytes, "the request body exceeds 2 MiB; data may hold at most 1 MiB of JSON")
	if err != nil {
		return err
	}
	return parseWrite(body, w, now)
}

// parseWrite validates a POST or PUT body into w; expiries are taken
// against now.
func parseWrite(body []byte, w *uds.Write, now time.Time) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return uds.Invalid("body", `is empty; send {"data": <any JSON value>}`)
	}
	if !utf8.Valid(body) {
		return uds.Invalid("body", "is not valid UTF-8")
	}
	var b writeBody
	var err error
	// Either reading compacts the body whole, data included: the common
	// form in one pass, anything else through the strict decoder, which
	// describes what is wrong.
	if _, ok := splitWriteBody(body, &b); !ok {
		if err := decodeBody(body, &b, `a JSON object of the form {"data": ..., "className": ...}`); err != nil {
			return err
		}
	}
	if b.DataBase64 != nil || b.ContentType != nil {
		if w.Binary, err = inlineBinary(&b); err != nil {
			return err
		}
	} else {
		if err := checkDataValue(b.Data); err != nil {
			return err
		}
		w.Data = b.Data
	}
	if b.ClassName != nil {
		if err := checkClassName(*b.ClassName); err != nil {
			return err
		}
		w.ClassName = *b.ClassName
	}
	w.ExpiresAt, err = expiry(&b, now)
	return err
}

// splitWriteBody reads the common form of a write body in one pass over
// its bytes: it compacts the whole body (which validates it) and splits
// the compact object into its members. It returns the compacted data and
// reports false for anything unusual (not JSON, not an object, a member
// name with escapes or in another case, an unknown member, a className that
// is not a string), which the decoder then reads or refuses with its
// precise message.
func splitWriteBody(body []byte, b *writeBody) (json.RawMessage, bool) {
	c, err := compactJSON(make([]byte, 0, len(body)), body)
	if err != nil {
		return nil, false
	}
	if c[0] != '{' {
		return nil, false
	}
	for i := 1; i < len(c) && c[i] != '}'; {
		if c[i] == ',' {
			i++
		}
		end := skipJSON(c, i)
		name := c[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return nil, false
		}
		i = end + 1 // past the colon
		end = skipJSON(c, i)
		value := json.RawMessage(c[i:end:end])
		switch string(name) {
		case "data":
			b.Data = value
		case "className":
			switch {
			case string(value) == "null":
				b.ClassName = nil
			case value[0] != '"' || json.Unmarshal(value, &b.ClassName) != nil:
				return nil, false
			}
		case "ttl":
			b.TTL = value
		case "expiresAt":
			b.ExpiresAt = value
		default:
			return nil, false
		}
		i = end
	}
	return b.Data, true
}

// skipJSON returns where the value starting at c[i] ends, in compact JSON
// that is known to be valid.
func skipJSON(c []byte, i int) int {
	depth := 0
	for j := i; j < len(c); j++ {
		switch c[j] {
		case '"':
			j = stringEnd(c, j)
			if depth == 0 {
				return j + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				if depth < 0 { // the end of the enclosing object
					return j
				}
				return j + 1
			}
		case ',':
			if depth == 0 {
				return j
			}
		}
	}
	return len(c)
}

// stringEnd returns where the closing quote is of the string whose
// opening quote is at c[i], in valid JSON: the first quote after it that
// an even run of backslashes precedes (an odd one escapes it). The quotes
// are found by bytes.IndexByte, many bytes at a time. A string left open
// (never in valid JSON) ends at len(c), rather than looping.
func stringEnd(c []byte, i int) int {
	for {
		n := bytes.IndexByte(c[i+1:], '"')
		if n < 0 {
			return len(c)
		}
		i += 1 + n
		slashes := 0
		for c[i-1-slashes] == '\\' {
			slashes++
		}
		if slashes%2 == 0 {
			return i
		}
	}
}

// checkDataValue validates a data value as decodeStrict or splitWriteBody
// left it, compacted (the form it is stored in): present, not null, at
// most uds.MaxDataBytes.
func checkDataValue(data json.RawMessage) error {
	if len(data) == 0 || string(data) == "null" {
		return uds.Invalid("data", "is required and must not be null")
	}
	if len(data) > uds.MaxDataBytes {
		return &uds.TooLargeError{Reason: "data takes " + strconv.Itoa(len(data)) + " bytes of JSON; at most 1 MiB (1048576 bytes) is stored"}
	}
	return nil
}

// checkClassName validates a className: a type name, not data.
func checkClassName(cn string) error {
	switch {
	case len(cn) > maxClassNameBytes:
		return uds.Invalid("className", "is longer than %d bytes", maxClassNameBytes)
	case !utf8.ValidString(cn):
		// A JSON body's is always valid; Uds-Class-Name's may not be.
		return uds.Invalid("className", "is not valid UTF-8")
	case strings.IndexFunc(cn, unicode.IsControl) >= 0:
		return uds.Invalid("className", "must not contain control characters")
	}
	return nil
}

// expiry reads the expiry of a write: "ttl" in whole seconds from now, or
// "expiresAt", an RFC 3339 instant in the future, both within uds.MaxTTL.
// Instants are kept to the millisecond, the precision UDS stores.
func expiry(b *writeBody, now time.Time) (time.Time, error) {
	hasTTL := len(b.TTL) > 0 && string(b.TTL) != "null"
	hasAt := len(b.ExpiresAt) > 0 && string(b.ExpiresAt) != "null"
	switch {
	case hasTTL && hasAt:
		return time.Time{}, uds.Invalid("expiresAt", "cannot be given with ttl; send one of them")
	case hasTTL:
		s := string(b.TTL)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 || n > int64(uds.MaxTTL/time.Second) || s[0] == '0' || s[0] == '+' {
			return time.Time{}, uds.Invalid("ttl", "must be a whole number of seconds from 1 to %d, got %s", int64(uds.MaxTTL/time.Second), s)
		}
		return now.Add(time.Duration(n) * time.Second).UTC().Truncate(time.Millisecond), nil
	case hasAt:
		var at string
		if err := json.Unmarshal(b.ExpiresAt, &at); err != nil {
			// Epoch numbers are the classic TTL mistake (milliseconds
			// where seconds were meant); only instants are taken.
			return time.Time{}, uds.Invalid("expiresAt", "must be an RFC 3339 instant string such as \"2030-01-15T10:30:00Z\" (for a duration use ttl, in seconds), got %s", b.ExpiresAt)
		}
		t, err := time.Parse(time.RFC3339Nano, at)
		switch {
		case err != nil:
			return time.Time{}, uds.Invalid("expiresAt", "must be an RFC 3339 instant such as 2030-01-15T10:30:00Z, got %q", at)
		case !t.After(now):
			return time.Time{}, uds.Invalid("expiresAt", "must be in the future, got %s", at)
		case t.Sub(now) > uds.MaxTTL:
			return time.Time{}, uds.Invalid("expiresAt", "must be at most ten years ahead, got %s", at)
		}
		return t.UTC().Truncate(time.Millisecond), nil
	}
	return time.Time{}, nil
}

// ifMatch parses the If-Match header of a write; without one nothing is
// imposed. The conditions a write does not keep are refused.
func ifMatch(r *http.Request) (uds.Precondition, error) {
	// A write takes If-Match alone. Ignored, If-None-Match: * on a PUT
	// (create only, in RFC 9110) or If-Unmodified-Since would let
	// through a write its client meant them to stop.
	if err := refuseHeaders(r, "has no place in a write, whose condition is If-Match (ETags, or *); a POST creates only where no item is",
		"If-None-Match", "If-Unmodified-Since"); err != nil {
		return uds.Precondition{}, err
	}
	p, _, err := ifMatchSent(r)
	return p, err
}

// ifMatchSent parses the If-Match header, and reports whether there was
// one; without one nothing is imposed.
func ifMatchSent(r *http.Request) (uds.Precondition, bool, error) {
	values := r.Header.Values("If-Match")
	if len(values) == 0 {
		return uds.Precondition{}, false, nil
	}
	p, err := parseIfMatch(strings.Join(values, ","))
	return p, true, err
}

// noConditions refuses every condition on a request that takes none
// (what says what it does): no ETag names what it removes.
func noConditions(r *http.Request, what string) error {
	return refuseHeaders(r, "has no place in "+what+"; send none", "If-Match", "If-None-Match", "If-Unmodified-Since")
}

// parseIfMatch parses an If-Match value (an empty one is invalid).
func parseIfMatch(v string) (uds.Precondition, error) {
	var p uds.Precondition
	tags, err := entityTags(v)
	if err != nil {
		return p, uds.Invalid("If-Match", "%s", err)
	}
	for _, t := range tags {
		if t == "*" {
			p.Any = true
			continue
		}
		if rev, ok := uds.ParseETag(t); ok {
			p.Revisions = append(p.Revisions, rev)
		}
	}
	if !p.Any && len(p.Revisions) == 0 {
		// Well-formed tags that UDS never issued match no item; a
		// revision no item can have keeps the condition false.
		p.Revisions = []uds.Revision{{Version: -1}}
	}
	return p, nil
}

// maxEntityTags bounds the tags one If-Match may list (each becomes a
// condition term).
const maxEntityTags = 16

// entityTags splits an If-Match or If-None-Match value into its tags: a
// list of quoted tags (a comma inside the quotes is the tag's), each weak
// or not, or *.
func entityTags(v string) ([]string, error) {
	var tags []string
	errUnquoted := errors.New(`each entity tag must be quoted, like "3-lq2x0a", or be *`)
	for v = strings.TrimLeft(v, " \t,"); v != ""; v = strings.TrimLeft(v, " \t,") {
		var t string
		switch {
		case v[0] == '*':
			t, v = "*", v[1:]
		case strings.HasPrefix(v, `"`) || strings.HasPrefix(v, `W/"`):
			open := strings.IndexByte(v, '"')
			end := strings.IndexByte(v[open+1:], '"')
			if end < 0 {
				return nil, errUnquoted
			}
			t, v = v[:open+end+2], v[open+end+2:]
		default:
			return nil, errUnquoted
		}
		// What follows a tag is the list's next comma.
		if rest := strings.TrimLeft(v, " \t"); rest != "" && rest[0] != ',' {
			return nil, errUnquoted
		}
		if body, weak := strings.CutPrefix(t, "W/"); weak {
			// A weak tag never matches under the strong comparison
			// If-Match requires; keep it as a non-UDS tag.
			t = "W" + body
		}
		tags = append(tags, t)
	}
	if len(tags) == 0 {
		return nil, errors.New("is empty")
	}
	if len(tags) > maxEntityTags {
		return nil, errors.New("lists more than " + strconv.Itoa(maxEntityTags) + " entity tags")
	}
	return tags, nil
}

// noneMatch reports whether If-None-Match names the item's current ETag.
func noneMatch(values []string, etag string) (bool, error) {
	if len(values) == 0 {
		return false, nil
	}
	tags, err := entityTags(strings.Join(values, ","))
	if err != nil {
		return false, uds.Invalid("If-None-Match", "%s", err)
	}
	for _, t := range tags {
		// If-None-Match uses weak comparison: W/"x" matches "x".
		if t == "*" || t == etag || "W"+etag == t {
			return true, nil
		}
	}
	return false, nil
}

// query parses the query string strictly: malformed percent-encoding and
// repeated parameters are errors.
func query(r *http.Request) (url.Values, error) {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, err
	}
	for k, v := range q {
		if len(v) > 1 {
			return nil, uds.Invalid(k, "is given %d times", len(v))
		}
	}
	return q, nil
}

// parseQuery parses a query string, saying what is wrong with a malformed
// one in words of its own rather than Go's.
func parseQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	switch {
	case err == nil:
		return q, nil
	case strings.Contains(raw, ";") && strings.Contains(err.Error(), "semicolon"):
		return nil, uds.Invalid("query", "separates parameters with ;, where the separator is &")
	}
	return nil, uds.Invalid("query", "holds malformed percent-encoding: %% must begin an escape of two hex digits (%%25 for %%)")
}
