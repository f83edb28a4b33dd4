package httpapi

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/udsproject/uds/pkg/uds"
)

// compactJSON appends src to dst without insignificant white space, as
// json.Compact does with HTML escaping off, and fails where json.Compact
// fails: src must be exactly one JSON value (RFC 8259), nested at most
// maxJSONDepth deep. It also fails, with a *duplicateNameError, on an
// object that names a member twice, at any depth: I-JSON (RFC 7493)
// forbids it, because readers disagree on which of the two counts (Go's
// encoding/json and the JSON Schema validator keep the last, others the
// first), so a body that means two things is refused rather than stored.
//
// It does the same work as json.Compact several times faster:
// encoding/json's scanner takes every byte through a state function, and a
// write's body is mostly the inside of strings, which this copies in runs
// (a test compares the two on random documents and mutations of them).
func compactJSON(dst, src []byte) ([]byte, error) {
	c := compactors.Get().(*compactor)
	c.src, c.dst = src, dst
	out, err := c.compact()
	c.release()
	if err != nil {
		return dst, err
	}
	return out, nil
}

// compactors keeps compactors, with the lists their reading grows, from
// one body to the next: a write's body took four allocations for them.
var compactors = sync.Pool{New: func() any { return new(compactor) }}

// pooledFrames and pooledNames bound the lists a pooled compactor keeps:
// a deeply nested or wide document's are left to the collector.
const (
	pooledFrames = 64
	pooledNames  = 256
)

// compact reads c.src whole into c.dst.
func (c *compactor) compact() ([]byte, error) {
	c.space()
	if err := c.value(0); err != nil {
		return nil, err
	}
	c.space()
	if c.i != len(c.src) {
		return nil, c.syntaxError()
	}
	return c.dst, nil
}

// release puts c back in the pool, holding nothing of what it read.
func (c *compactor) release() {
	if cap(c.frames) > pooledFrames || cap(c.names) > pooledNames {
		return
	}
	frames, names := c.frames[:cap(c.frames)], c.names[:cap(c.names)]
	clear(frames)
	clear(names)
	*c = compactor{frames: frames[:0], names: names[:0]}
	compactors.Put(c)
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// jsonSyntaxError is JSON that does not follow the grammar, and where the
// reading stopped.
type jsonSyntaxError struct {
	offset int
	// tooDeep is set when the JSON nests past maxJSONDepth, which
	// follows the grammar but is not read.
	tooDeep bool
}

func (e *jsonSyntaxError) Error() string {
	if e.tooDeep {
		return "nests objects and arrays more than " + strconv.Itoa(maxJSONDepth) + " deep (at byte " + strconv.Itoa(e.offset) + "), deeper than UDS reads"
	}
	return "syntax error at byte " + strconv.Itoa(e.offset)
}

// duplicateNameError is an object that names a member twice.
type duplicateNameError struct {
	// pointer locates the second member (RFC 6901), name is its name.
	pointer, name string
}

// refusal is the client's error for a member named twice in the JSON of
// field.
func (e *duplicateNameError) refusal(field string) error {
	return uds.Invalid(field, "names member %q twice (the second at %s); each member name may appear once in an object", uds.Truncate(e.name, 64), uds.Truncate(e.pointer, 256))
}

func (e *duplicateNameError) Error() string {
	return "member " + strconv.Quote(e.name) + " is given twice (at " + strconv.Quote(e.pointer) + "); each member name may appear once in an object"
}

type compactor struct {
	src, dst []byte
	i        int
	// frames are the containers being read, innermost last, and names
	// the member names of the objects among them (decoded), so that a
	// repeated one is found.
	frames []frame
	names  [][]byte
}

// frame is one container being read.
type frame struct {
	object bool
	// index is the element of an array being read; name the member of an
	// object. first is where the object's names start in names.
	index int
	name  []byte
	first int
	// set holds the names of an object past linearNames members, where
	// comparing with each is no longer cheap.
	set map[string]struct{}
}

// linearNames is how many names an object keeps in a list before it
// keeps them in a map: most objects are small, and comparing a handful of
// short names is cheaper than hashing them.
const linearNames = 16

// syntaxError is the error for the byte the reading stopped at.
func (c *compactor) syntaxError() error { return &jsonSyntaxError{offset: c.i} }

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
		return c.syntaxError()
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
	return c.syntaxError()
}

// container copies an object (members) or array, its opening byte at c.i.
func (c *compactor) container(depth int, end byte, members bool) error {
	if depth+1 > maxJSONDepth {
		return &jsonSyntaxError{offset: c.i, tooDeep: true}
	}
	c.dst = append(c.dst, c.src[c.i])
	c.i++
	c.space()
	if c.i < len(c.src) && c.src[c.i] == end {
		c.dst = append(c.dst, end)
		c.i++
		return nil
	}
	f := len(c.frames)
	c.frames = append(c.frames, frame{object: members, first: len(c.names)})
	for {
		if members {
			if c.i >= len(c.src) || c.src[c.i] != '"' {
				return c.syntaxError()
			}
			start := c.i
			if err := c.string(); err != nil {
				return err
			}
			if err := c.member(f, c.src[start:c.i]); err != nil {
				return err
			}
			c.space()
			if c.i >= len(c.src) || c.src[c.i] != ':' {
				return c.syntaxError()
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
			return c.syntaxError()
		}
		switch c.src[c.i] {
		case ',':
			c.dst = append(c.dst, ',')
			c.i++
			c.space()
			c.frames[f].index++
		case end:
			c.dst = append(c.dst, end)
			c.i++
			c.names = c.names[:c.frames[f].first]
			c.frames = c.frames[:f]
			return nil
		default:
			return c.syntaxError()
		}
	}
}

// member notes the name of the next member of the object read in frame f
// (quoted, as it stands in the source) and fails if the object already has
// a member of that name. Names are compared decoded: "a" and "\u0061" are
// one name.
func (c *compactor) member(f int, quoted []byte) error {
	name, err := unquoteName(quoted)
	if err != nil {
		return c.syntaxError()
	}
	fr := &c.frames[f]
	fr.name = name
	if fr.set != nil {
		if _, dup := fr.set[string(name)]; dup {
			return c.duplicate()
		}
		fr.set[string(name)] = struct{}{}
		return nil
	}
	for _, seen := range c.names[fr.first:] {
		if bytes.Equal(seen, name) {
			return c.duplicate()
		}
	}
	c.names = append(c.names, name)
	if len(c.names)-fr.first > linearNames {
		fr.set = make(map[string]struct{}, 2*linearNames)
		for _, seen := range c.names[fr.first:] {
			fr.set[string(seen)] = struct{}{}
		}
	}
	return nil
}

// unquoteName decodes a quoted member name, as it stands in valid JSON:
// the bytes between the quotes when it holds no escape, which is the
// common case and needs no copy.
func unquoteName(quoted []byte) ([]byte, error) {
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(name, '\\') < 0 {
		return name, nil
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// duplicate is the error for the member just named: its JSON pointer is
// built from the containers being read.
func (c *compactor) duplicate() error {
	var p strings.Builder
	for _, fr := range c.frames {
		p.WriteByte('/')
		if !fr.object {
			p.WriteString(strconv.Itoa(fr.index))
			continue
		}
		// RFC 6901: ~ and / in a name are written ~0 and ~1.
		p.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(string(fr.name)))
	}
	last := c.frames[len(c.frames)-1]
	return &duplicateNameError{pointer: p.String(), name: string(last.name)}
}

// string copies a string, its opening quote at c.i: runs of plain bytes
// at once, escapes checked one by one.
func (c *compactor) string() error {
	start := c.i
	c.i++
	for c.i < len(c.src) {
		c.i += plainRun(c.src[c.i:])
		if c.i >= len(c.src) {
			break
		}
		switch b := c.src[c.i]; {
		case b == '"':
			c.i++
			c.dst = append(c.dst, c.src[start:c.i]...)
			return nil
		case b == '\\':
			if c.i+1 >= len(c.src) {
				return c.syntaxError()
			}
			switch c.src[c.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				c.i += 2
			case 'u':
				if c.i+6 > len(c.src) || !isHex(c.src[c.i+2]) || !isHex(c.src[c.i+3]) || !isHex(c.src[c.i+4]) || !isHex(c.src[c.i+5]) {
					return c.syntaxError()
				}
				c.i += 6
			default:
				return c.syntaxError()
			}
		case b < 0x20:
			return c.syntaxError()
		default:
			c.i++
		}
	}
	return c.syntaxError()
}

// plainRun is how many bytes at the start of b are plain inside a
// string: neither a quote, a backslash nor a control character. It looks
// at eight bytes at a time, since most of a write's body is plain string
// bytes; the first word holding any of the three leaves the rest to a
// byte at a time.
func plainRun(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if specialIn(binary.LittleEndian.Uint64(b[i:])) {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			break
		}
	}
	return i
}

// specialIn reports whether any byte of w is a quote, a backslash or below
// 0x20. For each, a byte of x is zero exactly where w's is the one sought,
// and (x - ones) &^ x has the top bit of a byte set for any byte below
// 0x01 (below 0x20 with 0x20s subtracted), exact for whether any is.
func specialIn(w uint64) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	q, bs := w^(ones*'"'), w^(ones*'\\')
	return ((q-ones)&^q|(bs-ones)&^bs|(w-ones*0x20)&^w)&tops != 0
}

func isHex(b byte) bool {
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

func (c *compactor) literal(word string) error {
	if len(c.src)-c.i < len(word) || string(c.src[c.i:c.i+len(word)]) != word {
		return c.syntaxError()
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
		return c.syntaxError()
	}
	if c.i < len(c.src) && c.src[c.i] == '.' {
		c.i++
		if c.digits() == 0 {
			return c.syntaxError()
		}
	}
	if c.i < len(c.src) && (c.src[c.i] == 'e' || c.src[c.i] == 'E') {
		c.i++
		if c.i < len(c.src) && (c.src[c.i] == '+' || c.src[c.i] == '-') {
			c.i++
		}
		if c.digits() == 0 {
			return c.syntaxError()
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
