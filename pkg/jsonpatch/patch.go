package jsonpatch

import (
	"bytes"
	"errors"
	"strconv"
)

// MaxOperations is the most operations Parse takes in one JSON Patch.
const MaxOperations = 1000

// DefaultMaxBytes is the largest result Apply returns. Copy operations
// can double a document each, so without a bound a short patch could ask
// for an unbounded amount of memory and work; an HTTP server passes its
// own, smaller, limit to ApplyLimit.
const DefaultMaxBytes = 4 << 20

// Patch is a parsed JSON Patch (RFC 6902). It is read-only once parsed:
// one Patch may be applied to many documents, concurrently.
type Patch struct {
	ops []operation
}

type operation struct {
	op         string // "add", "remove", "replace", "move", "copy" or "test"
	path, from pointer
	value      *node // for add, replace and test; a raw node of the patch
}

// Len is the number of operations.
func (p Patch) Len() int { return len(p.ops) }

// Parse reads a JSON Patch: an array of at most MaxOperations operations,
// each an object with an "op" member, a "path" (a JSON Pointer, RFC 6901),
// a "from" for move and copy, and a "value" for add, replace and test.
// Other members are ignored, as RFC 6902 says (section 4); a member named
// twice is refused, as it would mean two things. So is a move into its own
// from location (section 4.4).
//
// Every error is an *InvalidError naming the operation and the member.
func Parse(patch []byte) (Patch, error) {
	// The operations' values are spans of the patch: a copy of it keeps
	// them from changing with the caller's buffer.
	patch = bytes.Clone(patch)
	_, root, err := parseSource(patch)
	if err != nil {
		return Patch{}, &InvalidError{Index: -1, Reason: "not valid JSON: " + err.Error()}
	}
	if !root.isArray() {
		return Patch{}, &InvalidError{Index: -1, Reason: "a JSON Patch is an array of operations"}
	}
	_ = root.expand() // An array has no names to repeat.
	if len(root.elems) > MaxOperations {
		return Patch{}, &InvalidError{Index: MaxOperations, Reason: "a patch has at most " + strconv.Itoa(MaxOperations) + " operations"}
	}
	ops := make([]operation, len(root.elems))
	for i, e := range root.elems {
		op, err := parseOperation(e)
		if err != nil {
			err.Index = i
			return Patch{}, err
		}
		ops[i] = op
	}
	return Patch{ops: ops}, nil
}

func parseOperation(e *node) (operation, *InvalidError) {
	if !e.isObject() {
		return operation{}, &InvalidError{Reason: "an operation is an object"}
	}
	if err := e.expand(); err != nil {
		var dup *dupError
		errors.As(err, &dup)
		return operation{}, &InvalidError{Field: dup.name, Reason: "the operation names this member twice"}
	}
	get := func(name string) *node {
		if j, ok := e.lookup(name); ok {
			return e.members[j].val
		}
		return nil
	}
	str := func(name string) (string, *InvalidError) {
		v := get(name)
		if v == nil {
			return "", &InvalidError{Field: name, Reason: "missing"}
		}
		if v.first() != '"' {
			return "", &InvalidError{Field: name, Reason: "not a string"}
		}
		return decodeString(v.bytes()), nil
	}
	ptr := func(name string) (pointer, *InvalidError) {
		s, err := str(name)
		if err != nil {
			return pointer{}, err
		}
		p, perr := parsePointer(s)
		if perr != nil {
			return pointer{}, &InvalidError{Field: name, Reason: perr.Error()}
		}
		return p, nil
	}
	var op operation
	var err *InvalidError
	if op.op, err = str("op"); err != nil {
		return op, err
	}
	switch op.op {
	case "add", "remove", "replace", "move", "copy", "test":
	default:
		return op, &InvalidError{Field: "op", Reason: "unknown operation " + strconv.Quote(op.op)}
	}
	if op.path, err = ptr("path"); err != nil {
		return op, err
	}
	switch op.op {
	case "move", "copy":
		if op.from, err = ptr("from"); err != nil {
			return op, err
		}
		if op.op == "move" && op.from.isPrefixOf(op.path) {
			return op, &InvalidError{Field: "path", Reason: "a value cannot move into itself"}
		}
	case "add", "replace", "test":
		if op.value = get("value"); op.value == nil {
			return op, &InvalidError{Field: "value", Reason: "missing"}
		}
	}
	return op, nil
}

// Apply applies the patch to doc and returns the result, compact, or the
// first operation's error: an operation either all applies or the patch
// does not (RFC 6902, section 5). Apply is ApplyLimit with
// DefaultMaxBytes.
func (p Patch) Apply(doc []byte) ([]byte, error) {
	return p.ApplyLimit(doc, DefaultMaxBytes)
}

// ApplyLimit applies the patch to doc, refusing with a *TooLargeError an
// operation that grows the document past maxBytes (written compact). A
// failed test or a location that is missing is a *ConflictError; a
// result nested deeper than MaxDepth is one too. A doc that is not valid
// JSON is a *DocumentError.
func (p Patch) ApplyLimit(doc []byte, maxBytes int) ([]byte, error) {
	out, _, err := p.apply(doc, maxBytes)
	return out, err
}

// apply is ApplyLimit that also returns the size the applier kept up to
// date, which the tests compare with the result's length.
func (p Patch) apply(doc []byte, maxBytes int) ([]byte, int, error) {
	root, err := parseDocument(doc)
	if err != nil {
		return nil, 0, err
	}
	a := applier{root: root, size: root.size()}
	for i := range p.ops {
		op := &p.ops[i]
		before := a.size
		if err := a.apply(op); err != nil {
			var c conflict
			if errors.As(err, &c) {
				return nil, 0, &ConflictError{Index: i, Op: op.op, Path: op.path.text, From: op.from.text, Reason: string(c)}
			}
			return nil, 0, err
		}
		// Only growth past the limit is refused, so that a patch can
		// shrink a document that is already past it.
		if a.size > maxBytes && a.size > before {
			return nil, 0, &TooLargeError{Index: i, Limit: maxBytes}
		}
	}
	return a.root.appendTo(make([]byte, 0, a.size)), a.size, nil
}

// conflict is why an operation does not apply to the document.
type conflict string

func (c conflict) Error() string { return string(c) }

// applier holds a document as a patch changes it, and its size written
// out, kept up to date by each change.
type applier struct {
	root *node
	size int
}

func (a *applier) apply(op *operation) error {
	switch op.op {
	case "add":
		return a.add(op.path, op.value.clone(), false)
	case "replace":
		return a.add(op.path, op.value.clone(), true)
	case "remove":
		_, err := a.remove(op.path, "path")
		return err
	case "move":
		if op.from.text == op.path.text {
			_, err := a.get(op.from, "from")
			return err
		}
		v, err := a.remove(op.from, "from")
		if err != nil {
			return err
		}
		return a.add(op.path, v, false)
	case "copy":
		v, err := a.get(op.from, "from")
		if err != nil {
			return err
		}
		return a.add(op.path, v.clone(), false)
	case "test":
		v, err := a.get(op.path, "path")
		if err != nil {
			return err
		}
		var got []byte
		if v.kind == raw {
			got = v.bytes()
		} else {
			got = v.appendTo(nil)
		}
		if !equalJSON(got, op.value.bytes()) {
			return conflict("the value at " + strconv.Quote(op.path.text) + " is not the test's value")
		}
		return nil
	}
	panic("jsonpatch: unknown operation " + op.op)
}

// prefix is the text of the pointer's first k tokens.
func (p pointer) prefix(k int) string {
	slashes := 0
	for i := 0; i < len(p.text); i++ {
		if p.text[i] == '/' {
			if slashes == k {
				return p.text[:i]
			}
			slashes++
		}
	}
	return p.text
}

// walk follows the pointer's first k tokens from the root. member names
// the operation's member the pointer is, for a conflict's reason.
func (a *applier) walk(p pointer, k int, member string) (*node, error) {
	n := a.root
	for t := 0; t < k; t++ {
		if err := expandDocument(n); err != nil {
			return nil, err
		}
		tok := p.tokens[t]
		switch n.kind {
		case object:
			j, ok := n.lookup(tok)
			if !ok {
				return nil, missing(p, t+1, member)
			}
			n = n.members[j].val
		case array:
			i, ok, in := arrayIndex(tok, len(n.elems))
			if !ok {
				return nil, notIndex(p, t, member)
			}
			if !in {
				return nil, missing(p, t+1, member)
			}
			n = n.elems[i]
		default:
			return nil, conflict(member + " " + strconv.Quote(p.text) + ": " + strconv.Quote(p.prefix(t)) + " is neither an object nor an array")
		}
	}
	return n, nil
}

func missing(p pointer, k int, member string) error {
	if k == len(p.tokens) {
		return conflict(member + " " + strconv.Quote(p.text) + " does not exist")
	}
	return conflict(member + " " + strconv.Quote(p.text) + ": " + strconv.Quote(p.prefix(k)) + " does not exist")
}

// notIndex is a token, the pointer's k-th, that is no index of the array
// it goes into: not digits, or digits with a leading zero (RFC 6901,
// section 4), or "-", which names no element yet.
func notIndex(p pointer, k int, member string) error {
	return conflict(member + " " + strconv.Quote(p.text) + ": " + strconv.Quote(p.tokens[k]) + " is not an index of the array at " + strconv.Quote(p.prefix(k)))
}

// expandDocument expands a node of the document, where an object that
// names a member twice is a document error.
func expandDocument(n *node) error {
	if err := n.expand(); err != nil {
		return &DocumentError{Reason: err.Error()}
	}
	return nil
}

// get returns the value at the pointer, which must exist.
func (a *applier) get(p pointer, member string) (*node, error) {
	return a.walk(p, len(p.tokens), member)
}

// add sets the value at the pointer: as RFC 6902's add (section 4.1)
// does, or, with replace, as its replace does (section 4.3), where the
// value must exist. v is the document's from now on.
func (a *applier) add(p pointer, v *node, replace bool) error {
	// The value's containers nest inside the pointer's: one level for
	// each token.
	if !v.depthAtMost(MaxDepth - len(p.tokens)) {
		return conflict("the result would nest deeper than " + strconv.Itoa(MaxDepth) + " levels")
	}
	if len(p.tokens) == 0 {
		a.root, a.size = v, v.size()
		return nil
	}
	parent, err := a.walk(p, len(p.tokens)-1, "path")
	if err != nil {
		return err
	}
	if err := expandDocument(parent); err != nil {
		return err
	}
	tok := p.tokens[len(p.tokens)-1]
	switch parent.kind {
	case object:
		j, ok := parent.lookup(tok)
		switch {
		case ok:
			old := parent.members[j].val
			a.size += v.size() - old.size()
			parent.members[j].val = v
		case replace:
			return missing(p, len(p.tokens), "path")
		default:
			key := quoteString(tok)
			a.size += len(key) + 1 + v.size()
			if parent.live > 0 {
				a.size++
			}
			parent.appendMember(member{name: tok, key: key, val: v})
		}
	case array:
		n := len(parent.elems)
		if replace {
			i, ok, in := arrayIndex(tok, n)
			if !ok {
				return notIndex(p, len(p.tokens)-1, "path")
			}
			if !in {
				return missing(p, len(p.tokens), "path")
			}
			a.size += v.size() - parent.elems[i].size()
			parent.elems[i] = v
			return nil
		}
		i, ok, in := n, true, true
		if tok != "-" {
			// An index may be the array's length: the element goes at
			// the end.
			i, ok, in = arrayIndex(tok, n+1)
		}
		if !ok {
			return notIndex(p, len(p.tokens)-1, "path")
		}
		if !in {
			return conflict("path " + strconv.Quote(p.text) + ": index " + tok + " is past the end of the array (" + strconv.Itoa(n) + " elements)")
		}
		a.size += v.size()
		if n > 0 {
			a.size++
		}
		parent.elems = insertAt(parent.elems, i, v)
	default:
		return conflict("path " + strconv.Quote(p.text) + ": " + strconv.Quote(p.prefix(len(p.tokens)-1)) + " is neither an object nor an array")
	}
	return nil
}

// remove takes the value at the pointer out of the document and returns
// it (RFC 6902, section 4.2). The whole document cannot be removed: a
// document is a value. member names the operation's member the pointer
// is.
func (a *applier) remove(p pointer, member string) (*node, error) {
	if len(p.tokens) == 0 {
		return nil, conflict("the whole document cannot be removed")
	}
	parent, err := a.walk(p, len(p.tokens)-1, member)
	if err != nil {
		return nil, err
	}
	if err := expandDocument(parent); err != nil {
		return nil, err
	}
	tok := p.tokens[len(p.tokens)-1]
	switch parent.kind {
	case object:
		j, ok := parent.lookup(tok)
		if !ok {
			return nil, missing(p, len(p.tokens), member)
		}
		m := parent.members[j]
		a.size -= len(m.key) + 1 + m.val.size()
		if parent.live > 1 {
			a.size--
		}
		parent.removeMember(j)
		return m.val, nil
	case array:
		n := len(parent.elems)
		i, ok, in := arrayIndex(tok, n)
		if !ok {
			return nil, notIndex(p, len(p.tokens)-1, member)
		}
		if !in {
			return nil, missing(p, len(p.tokens), member)
		}
		v := parent.elems[i]
		a.size -= v.size()
		if n > 1 {
			a.size--
		}
		parent.elems = append(parent.elems[:i], parent.elems[i+1:]...)
		return v, nil
	}
	return nil, conflict(member + " " + strconv.Quote(p.text) + ": " + strconv.Quote(p.prefix(len(p.tokens)-1)) + " is neither an object nor an array")
}

func insertAt(s []*node, i int, v *node) []*node {
	s = append(s, nil)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}
