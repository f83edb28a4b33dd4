package httpapi

import "errors"

// compactJSON appends src to dst without insignificant white space, as
// json.Compact does with HTML escaping off, and fails where json.Compact
// fails: src must be exactly one JSON value (RFC 8259), nested at most
// maxJSONDepth deep. It does the same work several times faster:
// encoding/json's scanner takes every byte through a state function, and a
// write's body is mostly the inside of strings, which this copies in runs
// (a test compares the two on random documents and mutations of them).
func compactJSON(dst, src []byte) ([]byte, error) {
	c := compactor{src: src, dst: dst}
	c.space()
	if err := c.value(0); err != nil {
		return dst, err
	}
	c.space()
	if c.i != len(c.src) {
		return dst, errJSONSyntax
	}
	return c.dst, nil
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

var errJSONSyntax = errors.New("invalid JSON")

type compactor struct {
	src, dst []byte
	i        int
}

func (c *compactor) space() {
	for c.i < len(c.src) {
		switch c.src[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *compactor) value(depth int) error {
	if c.i >= len(c.src) {
		return errJSONSyntax
	}
	switch b := c.src[c.i]; {
	case b == '"':
		return c.string()
	case b == '{':
		return c.container(depth, '}', true)
	case b == '[':
		return c.container(depth, ']', false)
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number()
	}
	return errJSONSyntax
}

// container copies an object (members) or array, its opening byte at c.i.
func (c *compactor) container(depth int, end byte, members bool) error {
	if depth+1 > maxJSONDepth {
		return errJSONSyntax
	}
	c.dst = append(c.dst, c.src[c.i])
	c.i++
	c.space()
	if c.i < len(c.src) && c.src[c.i] == end {
		c.dst = append(c.dst, end)
		c.i++
		return nil
	}
	for {
		if members {
			if c.i >= len(c.src) || c.src[c.i] != '"' {
				return errJSONSyntax
			}
			if err := c.string(); err != nil {
				return err
			}
			c.space()
			if c.i >= len(c.src) || c.src[c.i] != ':' {
				return errJSONSyntax
			}
			c.dst = append(c.dst, ':')
			c.i++
			c.space()
		}
		if err := c.value(depth + 1); err != nil {
			return err
		}
		c.space()
		if c.i >= len(c.src) {
			return errJSONSyntax
		}
		switch c.src[c.i] {
		case ',':
			c.dst = append(c.dst, ',')
			c.i++
			c.space()
		case end:
			c.dst = append(c.dst, end)
			c.i++
			return nil
		default:
			return errJSONSyntax
		}
	}
}

// string copies a string, its opening quote at c.i: runs of plain bytes
// at once, escapes checked one by one.
func (c *compactor) string() error {
	start := c.i
	c.i++
	for c.i < len(c.src) {
		switch b := c.src[c.i]; {
		case b == '"':
			c.i++
			c.dst = append(c.dst, c.src[start:c.i]...)
			return nil
		case b == '\\':
			if c.i+1 >= len(c.src) {
				return errJSONSyntax
			}
			switch c.src[c.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				c.i += 2
			case 'u':
				if c.i+6 > len(c.src) || !isHex(c.src[c.i+2]) || !isHex(c.src[c.i+3]) || !isHex(c.src[c.i+4]) || !isHex(c.src[c.i+5]) {
					return errJSONSyntax
				}
				c.i += 6
			default:
				return errJSONSyntax
			}
		case b < 0x20:
			return errJSONSyntax
		default:
			c.i++
		}
	}
	return errJSONSyntax
}

func isHex(b byte) bool {
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

func (c *compactor) literal(word string) error {
	if len(c.src)-c.i < len(word) || string(c.src[c.i:c.i+len(word)]) != word {
		return errJSONSyntax
	}
	c.dst = append(c.dst, word...)
	c.i += len(word)
	return nil
}

// number copies -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (c *compactor) number() error {
	start := c.i
	if c.src[c.i] == '-' {
		c.i++
	}
	switch {
	case c.i < len(c.src) && c.src[c.i] == '0':
		c.i++
	case c.i < len(c.src) && c.src[c.i] >= '1' && c.src[c.i] <= '9':
		c.digits()
	default:
		return errJSONSyntax
	}
	if c.i < len(c.src) && c.src[c.i] == '.' {
		c.i++
		if c.digits() == 0 {
			return errJSONSyntax
		}
	}
	if c.i < len(c.src) && (c.src[c.i] == 'e' || c.src[c.i] == 'E') {
		c.i++
		if c.i < len(c.src) && (c.src[c.i] == '+' || c.src[c.i] == '-') {
			c.i++
		}
		if c.digits() == 0 {
			return errJSONSyntax
		}
	}
	c.dst = append(c.dst, c.src[start:c.i]...)
	return nil
}

func (c *compactor) digits() int {
	start := c.i
	for c.i < len(c.src) && c.src[c.i] >= '0' && c.src[c.i] <= '9' {
		c.i++
	}
	return c.i - start
}
