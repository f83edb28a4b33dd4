package jsonpatch

import (
	"errors"
	"strconv"
	"strings"
)

// pointer is a JSON Pointer (RFC 6901): its text, as written, and its
// reference tokens, unescaped. The root, "", has no tokens.
type pointer struct {
	text   string
	tokens []string
}

// parsePointer reads a JSON Pointer. Whether a token names an array
// element is up to the document, so that is checked as the pointer is
// followed, not here.
func parsePointer(text string) (pointer, error) {
	if text == "" {
		return pointer{}, nil
	}
	if text[0] != '/' {
		return pointer{}, errors.New(`a JSON Pointer starts with "/" (or is "", the whole document)`)
	}
	parts := strings.Split(text[1:], "/")
	for i, p := range parts {
		if !strings.Contains(p, "~") {
			continue
		}
		// ~0 is ~ and ~1 is /; a ~ before anything else is an error.
		for j := 0; j < len(p); j++ {
			if p[j] == '~' && (j+1 == len(p) || p[j+1] != '0' && p[j+1] != '1') {
				return pointer{}, errors.New(`a "~" in a JSON Pointer is followed by "0" or "1"`)
			}
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return pointer{text: text, tokens: parts}, nil
}

// isPrefixOf reports whether p is a proper prefix of q: a location inside
// p's.
func (p pointer) isPrefixOf(q pointer) bool {
	if len(p.tokens) >= len(q.tokens) {
		return false
	}
	for i, t := range p.tokens {
		if q.tokens[i] != t {
			return false
		}
	}
	return true
}

// arrayIndex reads a token as an index into an array of n elements:
// digits without a leading zero (RFC 6901, section 4), less than n. ok
// is false for a token that is no index; in range is false for an index
// past the array.
func arrayIndex(tok string, n int) (i int, ok, inRange bool) {
	if tok == "" || len(tok) > 1 && tok[0] == '0' {
		return 0, false, false
	}
	for k := 0; k < len(tok); k++ {
		if !isDigit(tok[k]) {
			return 0, false, false
		}
	}
	i, err := strconv.Atoi(tok)
	if err != nil {
		// Only digits, so too large for an int: past any array.
		return 0, true, false
	}
	return i, true, i < n
}

// escapeToken writes a token as it appears in a pointer.
func escapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}
