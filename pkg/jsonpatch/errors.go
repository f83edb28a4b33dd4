package jsonpatch

import (
	"strconv"
	"strings"
)

// InvalidError is a patch document that is not one: not JSON, not the
// shape RFC 6902 gives a JSON Patch, or past this package's limits. An
// HTTP server answers it with 400 Bad Request.
type InvalidError struct {
	// Index is the operation's index in a JSON Patch, or -1 when the
	// error is not in one operation (a merge patch, or a JSON Patch that
	// is not an array).
	Index int
	// Field is the member of the operation that is wrong ("op", "path",
	// "from", "value"); in a merge patch, the JSON Pointer of the object
	// that is wrong; "" when the document as a whole is.
	Field string
	// Reason says what is wrong.
	Reason string
}

func (e *InvalidError) Error() string { return "invalid patch: " + e.Detail() }

// Detail is where the patch is wrong and why, without Error's "invalid
// patch" before it: for a reader that already says the patch is invalid
// (an HTTP answer's title).
func (e *InvalidError) Detail() string {
	var b strings.Builder
	if e.Index >= 0 {
		b.WriteString("operation ")
		b.WriteString(strconv.Itoa(e.Index))
	}
	if e.Field != "" {
		if e.Index >= 0 {
			b.WriteString(", member ")
		} else {
			b.WriteString("at ")
		}
		b.WriteString(strconv.Quote(e.Field))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// ConflictError is a well-formed JSON Patch operation that cannot apply
// to the document: a test that failed, or a location the operation needs
// that is missing (RFC 6902, section 5, says to stop at it and apply
// none of the patch). An HTTP server answers it with 409 Conflict.
type ConflictError struct {
	Index int    // the operation's index in the patch
	Op    string // the operation: "add", "remove", "replace", "move", "copy" or "test"
	Path  string // the operation's path, as written
	From  string // the operation's from, as written, for move and copy
	// Reason says what does not apply; when it is the from location that
	// is missing, it says so.
	Reason string
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	b.WriteString("patch conflict: operation ")
	b.WriteString(strconv.Itoa(e.Index))
	b.WriteString(" (")
	b.WriteString(e.Op)
	if e.Op == "move" || e.Op == "copy" {
		b.WriteString(" from ")
		b.WriteString(strconv.Quote(e.From))
		b.WriteString(" to ")
	} else {
		b.WriteString(" ")
	}
	b.WriteString(strconv.Quote(e.Path))
	b.WriteString("): ")
	b.WriteString(e.Reason)
	return b.String()
}

// DocumentError is a document to patch that is not valid JSON, or names
// a member twice in an object a patch goes into.
type DocumentError struct {
	Reason string
}

func (e *DocumentError) Error() string { return "the document to patch is not valid JSON: " + e.Reason }

// TooLargeError is a result that would pass the limit of Patch.ApplyLimit
// (or DefaultMaxBytes): copy operations can double a document each. An
// HTTP server answers it with 413 Content Too Large.
type TooLargeError struct {
	Index int // the operation that passed the limit
	Limit int
}

func (e *TooLargeError) Error() string {
	return "patch result too large: operation " + strconv.Itoa(e.Index) + " makes the document larger than " + strconv.Itoa(e.Limit) + " bytes"
}
