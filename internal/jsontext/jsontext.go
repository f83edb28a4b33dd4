// Package jsontext appends JSON strings to a byte slice without
// encoding/json's reflection, for the hand-encoded answers and log lines
// of the request path. Two encoders write JSON strings there, and a line
// or an answer must match theirs byte for byte: encoding/json with HTML
// escaping off (the API's answers) and log/slog's JSON handler (Lambda's
// JSON log format). They differ in one thing only: encoding/json writes
// \b and \f by their short forms, slog as \u0008 and \u000c. It also
// appends the numbers those lines and the EMF records write most, whole
// thousandths, as all of them write them (AppendThousandths).
package jsontext

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off: quotes, backslashes and control characters
// escaped (\b, \f, \n, \r and \t by their short forms), invalid UTF-8 as
// U+FFFD, and U+2028 and U+2029 escaped.
func AppendString(b []byte, s string) []byte { return appendString(b, s, true) }

// AppendSlogString appends s as a JSON string exactly as log/slog's JSON
// handler does: as AppendString, but \b and \f as \u0008 and \u000c.
func AppendSlogString(b []byte, s string) []byte { return appendString(b, s, false) }

func appendString(b []byte, s string, shortBF bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b' && shortBF:
				b = append(b, '\\', 'b')
			case c == '\f' && shortBF:
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendThousandths appends f as strconv.AppendFloat(b, f, 'f', -1, 64)
// does when f is a whole number of thousandths below a million (a latency
// in milliseconds to the microsecond, a count of capacity units), from
// the integer, and reports whether it did. That is the shortest decimal
// that reads back as f, which encoding/json, slog and strconv's 'g' all
// write for such a value; the integer spares the float formatting every
// request line and EMF record would otherwise pay for its latency.
func AppendThousandths(b []byte, f float64) ([]byte, bool) {
	t := math.Round(f * 1000)
	if t/1000 != f || math.Abs(t) >= 1e9 || (t == 0 && math.Signbit(f)) {
		return b, false
	}
	n := int64(t)
	if n < 0 {
		b, n = append(b, '-'), -n
	}
	b = strconv.AppendInt(b, n/1000, 10)
	if frac := n % 1000; frac != 0 {
		digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		end := 3
		for digits[end-1] == '0' {
			end--
		}
		b = append(append(b, '.'), digits[:end]...)
	}
	return b, true
}
