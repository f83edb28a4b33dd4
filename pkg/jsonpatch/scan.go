package jsonpatch

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// MaxDepth is how deeply a document, a patch or a result may nest arrays
// and objects: encoding/json's limit, so that whatever this package
// accepts or returns, encoding/json reads too.
const MaxDepth = 10000

// bigContainer is the size past which the validating scan records where a
// container ends. Finding the end of a value otherwise means reading it,
// and a path into a deeply nested document would read the inner levels
// once for every level above them: quadratic in the depth.
const bigContainer = 512

// source is one JSON text, read and validated once, that raw nodes point
// into. Nothing ever writes to data.
type source struct {
	data []byte
	// spaced is whether the text has white space outside strings within
	// its value. A compact text (which a stored item's data is) is copied
	// as it is; a spaced one is compacted as it is copied.
	spaced bool
	// ends maps the offset of each container of more than bigContainer
	// bytes to the offset just past it.
	ends map[int]int
}

// syntaxError is JSON that does not follow RFC 8259's grammar, or nests
// deeper than MaxDepth, and where the reading stopped.
type syntaxError struct {
	offset int
	msg    string
}

func (e *syntaxError) Error() string {
	return e.msg + " at byte " + strconv.Itoa(e.offset)
}

// parseSource validates data as exactly one JSON value and returns it as
// a source and the raw node of that value. Like encoding/json, it accepts
// any bytes inside strings (invalid UTF-8 is left as it is) and white
// space around the value.
func parseSource(data []byte) (*source, *node, error) {
	s := &source{data: data}
	sc := scanner{s: s, data: data}
	sc.space()
	start := sc.i
	if err := sc.value(); err != nil {
		return nil, nil, err
	}
	end := sc.i
	// White space after the value is not inside it.
	for sc.i < len(data) && isSpace(data[sc.i]) {
		sc.i++
	}
	if sc.i != len(data) {
		return nil, nil, &syntaxError{sc.i, "unexpected " + quoteByte(data[sc.i]) + " after the value"}
	}
	return s, &node{src: s, start: start, end: end}, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func quoteByte(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return "byte 0x" + strconv.FormatUint(uint64(c), 16)
	}
	return strconv.QuoteRune(rune(c))
}

type scanner struct {
	s     *source
	data  []byte
	i     int
	stack []int // the offsets of the containers open at i
}

// space skips white space inside the value, noting that there was some.
func (sc *scanner) space() {
	for sc.i < len(sc.data) && isSpace(sc.data[sc.i]) {
		sc.i++
		if len(sc.stack) > 0 {
			sc.s.spaced = true
		}
	}
}

func (sc *scanner) fail(msg string) error {
	if sc.i >= len(sc.data) {
		return &syntaxError{sc.i, "unexpected end of JSON input"}
	}
	if msg == "" {
		msg = "unexpected " + quoteByte(sc.data[sc.i])
	}
	return &syntaxError{sc.i, msg}
}

// value reads one value from sc.i. It keeps its own stack rather than
// recursing, so that a document at the depth limit costs no deep Go stack.
func (sc *scanner) value() error {
	data := sc.data
	for {
		// A value starts here.
		sc.space()
		if sc.i >= len(data) {
			return sc.fail("")
		}
		switch c := data[sc.i]; c {
		case '{', '[':
			if len(sc.stack) >= MaxDepth {
				return sc.fail("exceeded max depth")
			}
			sc.stack = append(sc.stack, sc.i)
			sc.i++
			sc.space()
			if sc.i < len(data) && data[sc.i] == c+2 { // '}' is '{'+2, ']' is '['+2
				sc.close()
				break
			}
			if c == '{' {
				if err := sc.name(); err != nil {
					return err
				}
			}
			continue
		case '"':
			if err := sc.str(); err != nil {
				return err
			}
		case 't':
			if err := sc.literal("true"); err != nil {
				return err
			}
		case 'f':
			if err := sc.literal("false"); err != nil {
				return err
			}
		case 'n':
			if err := sc.literal("null"); err != nil {
				return err
			}
		default:
			if err := sc.number(); err != nil {
				return err
			}
		}
		// A value ended: close the containers it ends, or go on to the
		// next member or element.
		for {
			if len(sc.stack) == 0 {
				return nil
			}
			sc.space()
			if sc.i >= len(data) {
				return sc.fail("")
			}
			open := data[sc.stack[len(sc.stack)-1]]
			c := data[sc.i]
			if c == ',' {
				sc.i++
				if open == '{' {
					sc.space()
					if err := sc.name(); err != nil {
						return err
					}
				}
				break
			}
			if c != open+2 {
				return sc.fail("")
			}
			sc.close()
		}
	}
}

// close ends the innermost container, at sc.i.
func (sc *scanner) close() {
	start := sc.stack[len(sc.stack)-1]
	sc.stack = sc.stack[:len(sc.stack)-1]
	sc.i++
	if sc.i-start > bigContainer {
		if sc.s.ends == nil {
			sc.s.ends = make(map[int]int)
		}
		sc.s.ends[start] = sc.i
	}
}

// name reads a member's name and its colon.
func (sc *scanner) name() error {
	if sc.i >= len(sc.data) || sc.data[sc.i] != '"' {
		return sc.fail("expected a member name")
	}
	if err := sc.str(); err != nil {
		return err
	}
	sc.space()
	if sc.i >= len(sc.data) || sc.data[sc.i] != ':' {
		return sc.fail("expected ':' after a member name")
	}
	sc.i++
	return nil
}

func (sc *scanner) literal(word string) error {
	if len(sc.data)-sc.i < len(word) || string(sc.data[sc.i:sc.i+len(word)]) != word {
		return sc.fail("invalid literal")
	}
	sc.i += len(word)
	return nil
}

// str reads a string from its opening quote.
func (sc *scanner) str() error {
	data := sc.data
	sc.i++
	for sc.i < len(data) {
		c := data[sc.i]
		switch {
		case c == '"':
			sc.i++
			return nil
		case c == '\\':
			sc.i++
			if sc.i >= len(data) {
				return sc.fail("")
			}
			switch data[sc.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				sc.i++
			case 'u':
				sc.i++
				for k := 0; k < 4; k++ {
					if sc.i >= len(data) || !isHex(data[sc.i]) {
						return sc.fail("invalid \\u escape")
					}
					sc.i++
				}
			default:
				return sc.fail("invalid escape")
			}
		case c < 0x20:
			return sc.fail("control character in a string")
		default:
			sc.i++
		}
	}
	return sc.fail("")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (sc *scanner) number() error {
	data := sc.data
	if data[sc.i] == '-' {
		sc.i++
	}
	if sc.i >= len(data) || !isDigit(data[sc.i]) {
		return sc.fail("")
	}
	if data[sc.i] == '0' {
		sc.i++
	} else {
		for sc.i < len(data) && isDigit(data[sc.i]) {
			sc.i++
		}
	}
	if sc.i < len(data) && data[sc.i] == '.' {
		sc.i++
		if sc.i >= len(data) || !isDigit(data[sc.i]) {
			return sc.fail("expected a digit after the decimal point")
		}
		for sc.i < len(data) && isDigit(data[sc.i]) {
			sc.i++
		}
	}
	if sc.i < len(data) && (data[sc.i] == 'e' || data[sc.i] == 'E') {
		sc.i++
		if sc.i < len(data) && (data[sc.i] == '+' || data[sc.i] == '-') {
			sc.i++
		}
		if sc.i >= len(data) || !isDigit(data[sc.i]) {
			return sc.fail("expected a digit in the exponent")
		}
		for sc.i < len(data) && isDigit(data[sc.i]) {
			sc.i++
		}
	}
	return nil
}

// skip returns the offset just past the value that starts at i of a
// validated source, reading no more of it than it must.
func (s *source) skip(i int) int {
	data := s.data
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		if end, ok := s.ends[i]; ok {
			return end
		}
		depth := 0
		for {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	default:
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the offset just past the string that starts at i.
func skipString(data []byte, i int) int {
	for i++; ; i++ {
		switch data[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
}

// appendCompact appends a validated value without its white space.
// Everything else, number spellings and string escapes included, is
// copied as it is.
func appendCompact(dst, v []byte) []byte {
	for i := 0; i < len(v); {
		c := v[i]
		if c == '"' {
			end := skipString(v, i)
			dst = append(dst, v[i:end]...)
			i = end
			continue
		}
		if !isSpace(c) {
			dst = append(dst, c)
		}
		i++
	}
	return dst
}

// compactLen is the length appendCompact would append.
func compactLen(v []byte) int {
	n := 0
	for i := 0; i < len(v); {
		if v[i] == '"' {
			end := skipString(v, i)
			n += end - i
			i = end
			continue
		}
		if !isSpace(v[i]) {
			n++
		}
		i++
	}
	return n
}

// rawDepth is how deeply a validated value nests.
func rawDepth(v []byte) int {
	depth, most := 0, 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			i = skipString(v, i) - 1
		case '{', '[':
			depth++
			most = max(most, depth)
		case '}', ']':
			depth--
		}
	}
	return most
}

// decodeString returns the text of a validated JSON string, as
// encoding/json decodes it: escapes decoded, and each byte that is not
// part of valid UTF-8 read as U+FFFD. So a member name and a JSON Pointer
// token match when encoding/json would find them equal.
func decodeString(q []byte) string {
	body := q[1 : len(q)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	var s string
	// The string is valid, so this cannot fail.
	_ = json.Unmarshal(q, &s)
	return s
}

// quoteString returns s as a JSON string, escaping only what JSON
// requires: a name a JSON Pointer adds reads as the client wrote it.
func quoteString(s string) []byte {
	const hex = "0123456789abcdef"
	q := make([]byte, 0, len(s)+2)
	q = append(q, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			q = append(q, '\\', c)
		case c == '\n':
			q = append(q, '\\', 'n')
		case c == '\r':
			q = append(q, '\\', 'r')
		case c == '\t':
			q = append(q, '\\', 't')
		case c < 0x20:
			q = append(q, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			q = append(q, c)
		}
	}
	return append(q, '"')
}
