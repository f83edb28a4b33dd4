package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Binary values: a POST or PUT whose Content-Type is not JSON stores its
// body's bytes as the item's value, and a GET answers them as they came.
// What a JSON write carries in its body beside the data (className, ttl,
// expiresAt) comes in headers, and a GET answers the item's fields in
// headers too, since the body is the value.
const (
	HeaderClassName   = "Uds-Class-Name"
	HeaderTTL         = "Uds-Ttl"
	HeaderExpiresAt   = "Uds-Expires-At"
	HeaderVersion     = "Uds-Version"
	HeaderCreatedDate = "Uds-Created-Date"
	HeaderCreatedBy   = "Uds-Created-By-Subject"
	HeaderUpdatedDate = "Uds-Updated-Date"
	HeaderUpdatedBy   = "Uds-Updated-By-Subject"
	// HeaderValueType and HeaderSize say a large value's type and size on
	// the 302 to its bytes, which carries no body of its own.
	HeaderValueType = "Uds-Content-Type"
	HeaderSize      = "Uds-Size"
	// The standard headers UDS sets, by the names http.Header keeps them
	// under (canonical: "Etag", not "ETag"), so that an answer may set
	// one by key, without Header.Set canonicalising its name again;
	// TestHeaderNamesCanonical keeps them so.
	headerContentType    = "Content-Type"
	headerContentLength  = "Content-Length"
	headerContentRange   = "Content-Range"
	headerETag           = "Etag"
	headerLocation       = "Location"
	headerNoSniff        = "X-Content-Type-Options"
	binaryBodyTooLargeFY = "the value has more than %d bytes (350 KiB), the most one request stores; send larger values (up to 5 GB) with POST {item}?upload, which answers a URL to upload them to"
)

// isBinaryWrite reports whether a write request carries bytes rather
// than JSON.
func isBinaryWrite(r *http.Request) bool { return !uds.IsJSONType(r.Header.Get(headerContentType)) }

// readBinaryWrite reads a binary write into w: the body's bytes with their
// declared content type, and the item's class name and expiry from the
// request's headers.
func readBinaryWrite(r *http.Request, w *uds.Write, now time.Time) error {
	contentType, err := uds.ParseContentType("Content-Type", r.Header.Get(headerContentType))
	if err != nil {
		return err
	}
	body, err := readBody(r, uds.MaxInlineBytes, fmt.Sprintf(binaryBodyTooLargeFY, uds.MaxInlineBytes))
	if err != nil {
		return err
	}
	w.Binary = &uds.Binary{ContentType: contentType, Bytes: body, Size: int64(len(body))}
	return readHeaderFields(r, w, now)
}

// itemHeaders are the headers that carry an item's fields in a write whose
// body is not JSON's writeBody.
var itemHeaders = []string{HeaderClassName, HeaderTTL, HeaderExpiresAt}

// readHeaderFields reads the item's class name and expiry from a write's
// headers (a binary write's, or a patch's).
func readHeaderFields(r *http.Request, w *uds.Write, now time.Time) (err error) {
	for _, name := range itemHeaders {
		if n := len(r.Header.Values(name)); n > 1 {
			return uds.Invalid(name, "is sent %d times; an item has one: send the header once", n)
		}
	}
	if name := r.Header.Values(HeaderClassName); len(name) > 0 {
		cn, ok := uds.ParseHeaderText(name[0])
		if !ok {
			return uds.Invalid(HeaderClassName+" header", "holds a %% that begins no escape of two hex digits: the header carries a class name percent-encoded where it holds %%, characters outside printable ASCII or spaces at its ends (%%25 for %%)")
		}
		if err := checkClassName(cn); err != nil {
			return inHeader(HeaderClassName, err)
		}
		w.ClassName = cn
	}
	w.ExpiresAt, err = headerExpiry(r, now)
	return err
}

// inlineBinary reads a binary value a JSON body carries: dataBase64 (the
// bytes in standard base64) with its contentType, and no data.
func inlineBinary(b *writeBody) (*uds.Binary, error) {
	switch {
	case len(b.Data) > 0 && string(b.Data) != "null":
		return nil, uds.Invalid("data", "cannot be given with dataBase64 or contentType; send JSON in data, or bytes in dataBase64 with their contentType")
	case b.DataBase64 == nil:
		return nil, uds.Invalid("dataBase64", "is required with contentType: the value's bytes in standard base64")
	case b.ContentType == nil:
		return nil, uds.Invalid("contentType", "is required with dataBase64: the media type of the bytes, such as image/png")
	case base64.StdEncoding.DecodedLen(len(*b.DataBase64)) > uds.MaxInlineBytes+2:
		return nil, &uds.TooLargeError{Reason: fmt.Sprintf(binaryBodyTooLargeFY, uds.MaxInlineBytes)}
	}
	contentType, err := uds.ParseContentType("contentType", *b.ContentType)
	if err != nil {
		return nil, err
	}
	bytes, err := base64.StdEncoding.Strict().DecodeString(*b.DataBase64)
	switch {
	case err != nil:
		return nil, uds.Invalid("dataBase64", "is not standard base64 (RFC 4648, with padding)")
	case len(bytes) > uds.MaxInlineBytes:
		return nil, &uds.TooLargeError{Reason: fmt.Sprintf(binaryBodyTooLargeFY, uds.MaxInlineBytes)}
	}
	return &uds.Binary{ContentType: contentType, Bytes: bytes, Size: int64(len(bytes))}, nil
}

// headerExpiry reads Uds-Ttl or Uds-Expires-At as a JSON body's ttl and
// expiresAt are read.
func headerExpiry(r *http.Request, now time.Time) (time.Time, error) {
	var b writeBody
	for _, name := range []string{HeaderTTL, HeaderExpiresAt} {
		// An empty header is not no header: it meant to set an expiry.
		if v := r.Header.Values(name); len(v) > 0 && strings.TrimSpace(v[0]) == "" {
			return time.Time{}, uds.Invalid(name+" header", "is empty; give it a value, or leave the header out")
		}
	}
	if ttl := r.Header.Get(HeaderTTL); ttl != "" {
		b.TTL = json.RawMessage(ttl)
	}
	if at := r.Header.Get(HeaderExpiresAt); at != "" {
		b.ExpiresAt, _ = json.Marshal(at)
	}
	t, err := expiry(&b, now)
	var invalid *uds.InvalidError
	if errors.As(err, &invalid) {
		header := HeaderTTL
		if invalid.Field == "expiresAt" {
			header = HeaderExpiresAt
		}
		return t, inHeader(header, err)
	}
	return t, err
}

// inHeader names the header an invalid value came in.
func inHeader(header string, err error) error {
	var invalid *uds.InvalidError
	if errors.As(err, &invalid) {
		return &uds.InvalidError{Field: header + " header", Reason: invalid.Reason}
	}
	return err
}

// checkValue applies the namespace's rules to a write's value: its JSON
// Schema to JSON, its binary rule to bytes.
func (a *API) checkValue(sc *scope, w *uds.Write) error {
	if w.Binary != nil {
		return sc.policy.Binary.Check(w.Binary, sc.policy.Schema != nil)
	}
	return a.checkData(sc, w.Data)
}

// setItemHeaders answers an item's fields in headers, for a binary value
// whose body is the bytes.
func setItemHeaders(h http.Header, it *uds.Item) {
	h.Set(headerETag, it.Revision().ETag())
	h.Set(HeaderVersion, strconv.FormatInt(it.Version, 10))
	for _, f := range []struct {
		name string
		at   time.Time
	}{{HeaderCreatedDate, it.CreatedDate}, {HeaderUpdatedDate, it.UpdatedDate}, {HeaderExpiresAt, it.ExpiresAt}} {
		if !f.at.IsZero() {
			h.Set(f.name, store.FormatTime(f.at))
		}
	}
	// Subjects and class names may hold any character; a header carries
	// them percent-encoded where they hold more than printable ASCII.
	for _, f := range []struct{ name, value string }{
		{HeaderCreatedBy, it.CreatedBy}, {HeaderUpdatedBy, it.UpdatedBy}, {HeaderClassName, it.ClassName},
	} {
		if f.value != "" {
			h.Set(f.name, uds.HeaderText(f.value))
		}
	}
}

// Stored bytes are a client's data, never a page of the API's origin
// (docs/decisions/browser.md, "Stored values are inert"): a browser that opens them
// neither runs nor renders what they hold, whatever type they were stored
// with. storedBytesPolicy allows the bytes nothing and sandboxes them into
// an origin of their own; storedBytesDisposition has the browser save
// them rather than show them, for every type alike.
const (
	storedBytesPolicy      = "default-src 'none'; sandbox"
	storedBytesDisposition = "attachment"
)

// setInert makes an answer of stored bytes inert in a browser. It is the
// one place that decides those headers; the presigned GET of a large
// value asks S3 for the same (inertDownload).
func setInert(h http.Header) {
	h.Set(headerNoSniff, "nosniff")
	h.Set("Content-Security-Policy", storedBytesPolicy)
	h.Set("Content-Disposition", storedBytesDisposition)
}

// inertDownload is what a presigned GET of a large value of contentType
// asks S3 to answer with: the type UDS recorded, saved rather than shown.
// S3 sends no Content-Security-Policy or nosniff of its own, but answers
// from the bucket's origin, not the API's.
func inertDownload(contentType string) uds.DownloadHeaders {
	return uds.DownloadHeaders{ContentType: contentType, ContentDisposition: storedBytesDisposition}
}

// answerBinary answers the bytes of an inline binary item, or the part a
// Range header asks for (206, or 416 when it lies past the end).
func answerBinary(w http.ResponseWriter, r *http.Request, it *uds.Item) {
	h := w.Header()
	setInert(h)
	setItemHeaders(h, it)
	h.Set(headerContentType, it.Binary.ContentType)
	h.Set("Accept-Ranges", "bytes")
	body := it.Binary.Bytes
	status := http.StatusOK
	if spec := r.Header.Get("Range"); spec != "" && ifRangeHolds(r, h.Get(headerETag)) {
		start, end, ok := parseRange(spec, int64(len(body)))
		switch {
		case !ok:
			// A range UDS does not serve (several parts, another unit)
			// is ignored, as RFC 9110 allows: the whole value answers.
		case start < 0:
			h.Set(headerContentRange, "bytes */"+strconv.Itoa(len(body)))
			k := it.Key
			writeJSON(w, http.StatusRequestedRangeNotSatisfiable, errorBody{Code: uds.CodeRangeNotSatisfiable, Error: "Range not satisfiable",
				Details: fmt.Sprintf("the value has %d bytes", len(body)), Timestamp: now(),
				ApplicationUUID: k.App, Namespace: k.Namespace, ID: k.ID, SortKey: k.SortKey})
			return
		default:
			h.Set(headerContentRange, fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(body)))
			body, status = body[start:end], http.StatusPartialContent
		}
	}
	h.Set(headerContentLength, strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// ifRangeHolds reports whether a Range applies: without If-Range, or
// with an If-Range naming the item's current ETag.
func ifRangeHolds(r *http.Request, etag string) bool {
	v := r.Header.Get("If-Range")
	return v == "" || v == etag
}

// parseRange reads a single byte range (RFC 9110 14.1.2) of a value of
// size bytes: ok is false for a range UDS ignores; start < 0 for one that
// cannot be satisfied. end is exclusive.
func parseRange(spec string, size int64) (start, end int64, ok bool) {
	unit, set, found := strings.Cut(strings.TrimSpace(spec), "=")
	if !found || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || strings.Contains(set, ",") {
		return 0, 0, false
	}
	first, last, found := strings.Cut(strings.TrimSpace(set), "-")
	if !found {
		return 0, 0, false
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	number := func(s string) (int64, bool) {
		if s == "" || strings.TrimLeft(s, "0123456789") != "" || len(s) > 18 {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	switch {
	case first == "":
		// The last n bytes.
		n, isNum := number(last)
		switch {
		case !isNum:
			return 0, 0, false
		case n == 0 || size == 0:
			return -1, 0, true
		case n > size:
			n = size
		}
		return size - n, size, true
	default:
		from, isNum := number(first)
		if !isNum {
			return 0, 0, false
		}
		to := size - 1
		if last != "" {
			l, isNum := number(last)
			if !isNum || l < from {
				return 0, 0, false
			}
			to = min(l, size-1)
		}
		if from >= size {
			return -1, 0, true
		}
		return from, to + 1, true
	}
}
