package uds

import (
	"fmt"
	"mime"
	"strings"
	"time"
)

// MaxInlineBytes is the largest binary value a single request stores in the
// item itself (350 KiB): what fits one DynamoDB item beside the key, the
// attributes and the room a 1 KiB key needs. Larger values go through an
// upload to the bucket (MaxObjectBytes).
const MaxInlineBytes = 350 << 10

// MaxObjectBytes is the largest value an upload takes: 5 GB, S3's limit
// for one POST upload.
const MaxObjectBytes = 5 << 30

// MaxInlineRead is the largest large value GET ?inline streams through
// the function: a Lambda answer carries 6 MB, and base64 makes bytes a
// third larger.
const MaxInlineRead = 4 << 20

// Binary is a value of bytes with a content type, stored beside JSON under
// the same keys. A small one is held in the item (Bytes); a large one is an
// object in the bucket that the item names (Object).
type Binary struct {
	// ContentType is the media type the writer declared, as it was sent
	// (parameters included) once checked by ParseContentType.
	ContentType string
	// Bytes is the value of an inline binary item; nil for a large one.
	Bytes []byte
	// Object names the object that holds a large value: its ValueName,
	// or for an item committed before commits copied values, its
	// upload's ObjectName.
	Object string
	// From, on a restore of a large version, names the version's object,
	// which stays the version's: the store copies it to Object, a name
	// of the restored item's own, before the write commits (one object,
	// one record).
	From string
	// Size is the value's length in bytes.
	Size int64
}

// Large reports whether the value lives in the bucket.
func (b *Binary) Large() bool { return b.Object != "" }

// IsJSONType reports whether a write's Content-Type announces a JSON
// body: none at all (as before binary values existed), application/json,
// any +json type, or application/x-www-form-urlencoded. That last is what
// curl -d sends unless told otherwise, and so what JSON writes came with
// before bytes could be stored: UDS never took forms, and storing those
// bodies as bytes would silently change what such a client writes.
func IsJSONType(contentType string) bool {
	switch {
	case contentType == "application/json":
		// What nearly every JSON write declares, known without parsing.
		return true
	case strings.TrimSpace(contentType) == "":
		return true
	}
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return t == "application/json" || strings.HasSuffix(t, "+json") || t == formType
}

// formType is curl -d's default Content-Type (IsJSONType).
const formType = "application/x-www-form-urlencoded"

// ParseContentType checks the declared type of a binary value and returns
// it as it will be stored and answered: a well-formed media type (RFC 9110)
// of at most 255 bytes, without control characters, and not a range of
// types (*/*, image/*).
func ParseContentType(field, contentType string) (string, error) {
	contentType = strings.TrimSpace(contentType)
	if contentType == "" {
		return "", Invalid(field, "is empty; name the media type of the bytes, such as image/png")
	}
	if len(contentType) > 255 {
		return "", Invalid(field, "is longer than 255 bytes")
	}
	for _, c := range contentType {
		if c < 0x20 || c == 0x7f || c > 0x7e {
			return "", Invalid(field, "holds a character a header cannot carry")
		}
	}
	t, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		// Say which half is wrong: the type, or what follows it.
		if base, _, hasParams := strings.Cut(contentType, ";"); hasParams && typeAndSubtype(strings.TrimSpace(base)) {
			return "", Invalid(field, "has a malformed parameter after %s: each is name=value (the value a token or quoted), each name once", strings.TrimSpace(base))
		}
	}
	if err != nil || !typeAndSubtype(t) {
		return "", Invalid(field, "is not a media type of the form type/subtype")
	}
	if IsJSONType(t) {
		return "", Invalid(field, "is %s, which announces a JSON write; send bytes with the media type they are, such as image/png or application/octet-stream", t)
	}
	// A type or subtype of "*" names a range of types, as Accept does, not
	// the type of any bytes.
	if main, sub, _ := strings.Cut(t, "/"); main == "*" || sub == "*" {
		return "", Invalid(field, "is %s, a range of media types (as Accept names them), not one; name the type the bytes are, such as image/png or application/octet-stream", t)
	}
	return mime.FormatMediaType(t, params), nil
}

// typeAndSubtype reports whether t reads type/subtype, both of token
// characters.
func typeAndSubtype(t string) bool {
	main, sub, ok := strings.Cut(t, "/")
	return ok && isToken(main) && isToken(sub)
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

// MediaType is the type/subtype of a content type, lower-cased, without
// parameters.
func MediaType(contentType string) string {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(contentType))
	}
	return t
}

// MaxBinaryTypes bounds the content types a namespace's binary rule names.
const MaxBinaryTypes = 20

// BinaryRule is what a namespace's policy says of binary values: the
// content types it accepts and how large one may be. A namespace without
// a rule takes any binary value unless it has a JSON Schema, which
// describes JSON only, and then takes none.
type BinaryRule struct {
	// ContentTypes are media types ("image/png") or whole types
	// ("image/*"), lower-case, without parameters.
	ContentTypes []string
	// MaxBytes caps a value's size; 0 leaves MaxObjectBytes.
	MaxBytes int64
}

// ParseBinaryType checks one content type of a binary rule and returns it
// lower-cased.
func ParseBinaryType(field, s string) (string, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	main, sub, ok := strings.Cut(t, "/")
	if !ok || main == "" || sub == "" || main == "*" || strings.ContainsAny(t, " ;,\"") || len(t) > 255 {
		return "", Invalid(field, `must be a media type such as "image/png", or a whole type such as "image/*", got %q`, Truncate(s, 64))
	}
	if _, _, err := mime.ParseMediaType(t); err != nil && sub != "*" {
		return "", Invalid(field, `must be a media type such as "image/png", or a whole type such as "image/*", got %q`, Truncate(s, 64))
	}
	if IsJSONType(t) {
		return "", Invalid(field, "names %s, which announces a JSON write, never a binary value", t)
	}
	return t, nil
}

// Check refuses a binary value the rule does not accept, as a
// *SchemaError (422) that says why. A nil rule is the policy without one:
// withSchema says whether the namespace has a JSON Schema.
func (r *BinaryRule) Check(b *Binary, withSchema bool) error {
	refuse := func(location, format string, args ...any) error {
		return &SchemaError{Violations: []Violation{{KeywordLocation: location, Message: fmt.Sprintf(format, args...)}}}
	}
	if r == nil {
		if withSchema {
			return refuse("/binary", "the namespace's JSON Schema takes JSON only; its policy's binary member names the content types it accepts")
		}
		return nil
	}
	t := MediaType(b.ContentType)
	accepted := false
	for _, want := range r.ContentTypes {
		main, sub, _ := strings.Cut(want, "/")
		accepted = accepted || want == t || (sub == "*" && strings.HasPrefix(t, main+"/"))
	}
	if !accepted {
		return refuse("/binary/contentTypes", "content type %q is not one the namespace accepts (%s)", Truncate(t, 64), strings.Join(r.ContentTypes, ", "))
	}
	if r.MaxBytes > 0 && b.Size > r.MaxBytes {
		return refuse("/binary/maxBytes", "the value has %d bytes; the namespace accepts at most %d", b.Size, r.MaxBytes)
	}
	return nil
}

// UploadWindow is how long an upload's presigned POST is valid, and
// UploadGrace how long after it the reservation waits for the object to
// arrive (a large file started late in the window) before it lapses and
// its bytes go back to the owner.
const (
	UploadWindow = 15 * time.Minute
	UploadGrace  = time.Hour
)

// Upload is a reservation of an owner's quota for a large value on its way
// to the bucket.
type Upload struct {
	ID string
	// Lapses is when the reservation is released if the upload has not
	// been committed.
	Lapses time.Time
}

// ErrUploadPending: the upload's object has not arrived in the bucket yet.
var ErrUploadPending = NewError(CodeUploadPending, "upload not received")

// ErrUploadMismatch: the object that arrived is not the size or type the
// upload declared; it was discarded with its reservation.
var ErrUploadMismatch = NewError(CodeUploadMismatch, "upload does not match")

// UploadMismatchError says how the object differs from the declaration.
type UploadMismatchError struct{ Reason string }

func (e *UploadMismatchError) Error() string { return "upload does not match: " + e.Reason }

// Is makes errors.Is(err, ErrUploadMismatch) hold.
func (e *UploadMismatchError) Is(target error) bool { return target == ErrUploadMismatch }

// Code returns CodeUploadMismatch.
func (e *UploadMismatchError) Code() Code { return CodeUploadMismatch }

// ErrNoBucket: large values are not configured in this deployment.
var ErrNoBucket = NewError(CodeNotConfigured, "large values not configured")

// ObjectName names the object an upload's presigned POST sends: its app
// and the upload's ID. Items committed before commits copied their values
// (ValueName) name it too, and keep reading it.
func ObjectName(app, uploadID string) string { return app + "/" + uploadID }

// ValueName names the object a commit copies an upload's object to, which
// the item then names: no presigned POST names it, so a form still valid
// after its commit cannot change a committed value.
func ValueName(app, uploadID string) string { return valuePrefix + ObjectName(app, uploadID) }

// IsValueName reports whether name is one ValueName makes.
func IsValueName(name string) bool { return strings.HasPrefix(name, valuePrefix) }

// valuePrefix starts every ValueName: the bucket keeps committed values
// under it, apart from uploads.
const valuePrefix = "values/"

// ParseObjectName parses an object name; false for one UDS did not make
// (an upload ID is 32 lower-case hex digits).
func ParseObjectName(name string) (app, uploadID string, ok bool) {
	app, uploadID, ok = strings.Cut(name, "/")
	if !ok || app == "" || !ValidUploadID(uploadID) {
		return "", "", false
	}
	return app, uploadID, true
}

// ValidUploadID reports whether id has the form of the IDs uploads get.
func ValidUploadID(id string) bool {
	return len(id) == 32 && strings.Trim(id, "0123456789abcdef") == ""
}

// PresignedPost is an S3 POST a client sends as multipart/form-data: every
// field, then the file as the field "file".
type PresignedPost struct {
	URL    string
	Fields map[string]string
}

// DownloadHeaders are the headers a presigned GET asks S3 to answer an
// object's bytes with (GetObject's response-content-type and
// response-content-disposition), so that the bucket answers them as the
// API answers stored bytes. An empty field asks for nothing: S3 answers
// what the object was stored with.
type DownloadHeaders struct {
	ContentType        string
	ContentDisposition string
}
