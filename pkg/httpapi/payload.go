package httpapi

import (
	"bytes"
	"encoding/base64"
	"unicode/utf8"

	"github.com/udsproject/uds/pkg/uds"
)

// A list page must fit what Lambda returns, not just its body: the runtime
// sends the response as JSON with the body inside a JSON string, so every
// quote and backslash of the body is escaped once more, and API Gateway
// turns a payload over 6 MB into a 500. maxPageBytes bounds that payload.
//
// maxPageBytes leaves about 1.2 MB of Lambda's 6,291,456-byte limit for the
// response's headers, the page's envelope and the item a page may end
// past its budget with.
const maxPageBytes = 5_000_000

// itemFieldBytes is what an item's JSON object adds beside its values, in
// the payload: eleven field names with their quotes, colons and commas, each
// quote escaped once more.
const itemFieldBytes = 260

// itemPayloadBytes is what an item adds to a list page's Lambda payload:
// its JSON in the body, escaped again in the payload. It counts exactly
// what grows under escaping, so a page of quote-heavy values is cut sooner
// than one of plain text.
//
// A value kept compressed goes out in a gzip answer, which Lambda carries
// base64 encoded: it adds four thirds of its compressed size.
// binaryFieldBytes is what a binary value's members add beside its bytes
// and type: their names, quotes and the size.
const binaryFieldBytes = 64

func itemPayloadBytes(it *uds.Item) int {
	n := itemFieldBytes
	switch {
	case it.Compressed != nil:
		n += (it.Compressed.CompressedSize() + 2) / 3 * 4
	case it.Binary != nil:
		// contentType, size and dataBase64 (or large), all ASCII but
		// the type, in place of data.
		n += base64.StdEncoding.EncodedLen(len(it.Binary.Bytes)) + stringPayloadBytes(it.Binary.ContentType) + binaryFieldBytes
	default:
		n += rawPayloadBytes(it.Data)
	}
	for _, s := range [...]string{it.App, it.Namespace, it.ID, it.SortKey, it.ClassName, it.CreatedBy, it.UpdatedBy} {
		n += stringPayloadBytes(s)
	}
	return n + 3*len("2006-01-02T15:04:05.000Z") + 24 // dates and version
}

// rawPayloadBytes is the payload size of JSON text placed in the body as
// it is (a stored value): quotes and backslashes are escaped once, and the
// line and paragraph separators, which Go's encoder always escapes, take
// up to seven bytes instead of three.
func rawPayloadBytes(b []byte) int {
	// bytes.Count runs vectorised, many times faster than a loop over
	// every byte; the separators are rare, so their lead byte is only
	// looked at where it occurs.
	n := len(b) + bytes.Count(b, quote) + bytes.Count(b, backslash)
	for rest := b; ; {
		i := bytes.IndexByte(rest, 0xE2) // the lead byte of U+2028 and U+2029
		if i < 0 {
			return n
		}
		if i+2 < len(rest) && rest[i+1] == 0x80 && (rest[i+2] == 0xA8 || rest[i+2] == 0xA9) {
			n += 4
		}
		rest = rest[i+1:]
	}
}

var quote, backslash = []byte{'"'}, []byte{'\\'}

// stringPayloadBytes is the payload size of a string value of the body:
// escaped in the body, then escaped again. A quote or backslash takes four
// bytes, a control character up to seven.
func stringPayloadBytes(s string) int {
	n := len(s) + 4 // its two quotes, escaped
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			n += 3
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			n += 7 - utf8.RuneLen(r)
		}
	}
	return n
}
