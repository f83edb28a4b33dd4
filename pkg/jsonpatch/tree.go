package jsonpatch

import (
	"slices"
	"strconv"
)

// node is a JSON value in a document being patched. A node starts raw: a
// span of a source's bytes, which is what it is written back as. Only the
// objects and arrays that a patch goes into are expanded into members or
// elements, each again a raw node until a patch goes into it too. So a
// patch's work is proportional to what it touches and the bytes of what it
// does not touch are never decoded.
type node struct {
	kind nodeKind

	// A raw node's value is src.data[start:end].
	src        *source
	start, end int

	// An object's members, in order. A removed member stays as a gap
	// (gone), so that removing one from a large object does not move the
	// others; live counts those that are not gone.
	members []member
	live    int
	// index maps names to members once the object has more than
	// indexAfter of them, so that looking names up in a large object is
	// not linear each time.
	index map[string]int

	// An array's elements.
	elems []*node
}

type nodeKind uint8

const (
	raw nodeKind = iota
	object
	array
)

type member struct {
	name string
	key  []byte // the name as a JSON string, spelt as it came
	val  *node
	gone bool
}

const indexAfter = 8

// bytes returns a raw node's value.
func (n *node) bytes() []byte { return n.src.data[n.start:n.end] }

// first returns the first byte of the value, which says what it is:
// '{', '[', '"', 't', 'f', 'n' or a number's first byte.
func (n *node) first() byte {
	switch n.kind {
	case object:
		return '{'
	case array:
		return '['
	}
	return n.src.data[n.start]
}

func (n *node) isObject() bool { return n.first() == '{' }
func (n *node) isArray() bool  { return n.first() == '[' }
func (n *node) isNull() bool   { return n.first() == 'n' }

// dupError is an object that names a member twice.
type dupError struct{ name string }

func (e *dupError) Error() string {
	return "an object names member " + strconv.Quote(e.name) + " twice"
}

// expand turns a raw object or array into its members or elements, each
// a raw node. An object that names a member twice is refused: a pointer
// to that name would mean two values (I-JSON, RFC 7493, forbids it).
func (n *node) expand() error {
	if n.kind != raw {
		return nil
	}
	s, data := n.src, n.src.data
	c := data[n.start]
	if c != '{' && c != '[' {
		return nil
	}
	i := n.start + 1
	ws := func() {
		for isSpace(data[i]) {
			i++
		}
	}
	ws()
	// The spans of the members or elements are found first, so that
	// their nodes can be allocated together: one allocation for the
	// container rather than one for each value.
	type span struct{ key, start, end int }
	var stack [32]span
	spans := stack[:0]
	last := byte(']')
	if c == '{' {
		last = '}'
	}
	for data[i] != last {
		key := -1
		if c == '{' {
			key = i
			i = skipString(data, i)
			ws()
			i++ // the colon
			ws()
		}
		end := s.skip(i)
		spans = append(spans, span{key, i, end})
		i = end
		ws()
		if data[i] == ',' {
			i++
			ws()
		}
	}
	nodes := make([]node, len(spans))
	for k, sp := range spans {
		nodes[k] = node{src: s, start: sp.start, end: sp.end}
	}
	if c == '[' {
		elems := make([]*node, len(spans))
		for k := range nodes {
			elems[k] = &nodes[k]
		}
		*n = node{kind: array, elems: elems}
		return nil
	}
	obj := node{kind: object, members: make([]member, 0, len(spans))}
	for k, sp := range spans {
		key := data[sp.key:skipString(data, sp.key)]
		m := member{name: decodeString(key), key: key, val: &nodes[k]}
		if _, dup := obj.lookup(m.name); dup {
			return &dupError{m.name}
		}
		obj.appendMember(m)
	}
	*n = obj
	return nil
}

// lookup returns the index of an object's live member of that name.
func (n *node) lookup(name string) (int, bool) {
	if n.index != nil {
		i, ok := n.index[name]
		return i, ok
	}
	for i := range n.members {
		if m := &n.members[i]; !m.gone && m.name == name {
			return i, true
		}
	}
	return 0, false
}

// appendMember adds a member whose name the object does not have.
func (n *node) appendMember(m member) {
	n.members = append(n.members, m)
	n.live++
	switch {
	case n.index != nil:
		n.index[m.name] = len(n.members) - 1
	case len(n.members) > indexAfter:
		n.index = make(map[string]int, len(n.members))
		for i := range n.members {
			if !n.members[i].gone {
				n.index[n.members[i].name] = i
			}
		}
	}
}

// removeMember removes the live member at i.
func (n *node) removeMember(i int) {
	m := &n.members[i]
	if n.index != nil {
		delete(n.index, m.name)
	}
	*m = member{gone: true}
	n.live--
	// Gaps are dropped once they are most of the object, so that adding
	// and removing members forever does not grow it.
	if len(n.members) > 2*indexAfter && n.live < len(n.members)/2 {
		n.members = slices.DeleteFunc(n.members, func(m member) bool { return m.gone })
		if n.index != nil {
			clear(n.index)
			for i := range n.members {
				n.index[n.members[i].name] = i
			}
		}
	}
}

// appendTo appends the value, compact, to dst.
func (n *node) appendTo(dst []byte) []byte {
	switch n.kind {
	case object:
		dst = append(dst, '{')
		first := true
		for i := range n.members {
			m := &n.members[i]
			if m.gone {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, m.key...)
			dst = append(dst, ':')
			dst = m.val.appendTo(dst)
		}
		return append(dst, '}')
	case array:
		dst = append(dst, '[')
		for i, e := range n.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.appendTo(dst)
		}
		return append(dst, ']')
	}
	if !n.src.spaced {
		return append(dst, n.bytes()...)
	}
	return appendCompact(dst, n.bytes())
}

// size is the length appendTo appends.
func (n *node) size() int {
	switch n.kind {
	case object:
		total := 2 + max(n.live-1, 0)
		for i := range n.members {
			if m := &n.members[i]; !m.gone {
				total += len(m.key) + 1 + m.val.size()
			}
		}
		return total
	case array:
		total := 2 + max(len(n.elems)-1, 0)
		for _, e := range n.elems {
			total += e.size()
		}
		return total
	}
	if !n.src.spaced {
		return n.end - n.start
	}
	return compactLen(n.bytes())
}

// depthAtMost reports whether the value nests at most limit deep. A raw
// value needs at least two bytes a level, so a short one is not read.
func (n *node) depthAtMost(limit int) bool {
	switch n.kind {
	case object:
		if limit < 1 {
			return false
		}
		for i := range n.members {
			if m := &n.members[i]; !m.gone && !m.val.depthAtMost(limit-1) {
				return false
			}
		}
		return true
	case array:
		if limit < 1 {
			return false
		}
		for _, e := range n.elems {
			if !e.depthAtMost(limit - 1) {
				return false
			}
		}
		return true
	}
	if (n.end-n.start)/2 <= limit {
		return true
	}
	return rawDepth(n.bytes()) <= limit
}

// clone returns a copy of the value that shares nothing a patch can
// change. An expanded value is written out into a source of its own:
// copying it as a tree could double the nodes with each copy operation.
// The value itself becomes raw in that source too, so that copying it
// again costs nothing more.
func (n *node) clone() *node {
	if n.kind != raw {
		*n = *n.written()
	}
	c := *n
	return &c
}

// written returns the value written out, as a raw node of a source of
// its own.
func (n *node) written() *node {
	// Reading it again records where its large containers end (see
	// bigContainer); what appendTo writes is valid, so this cannot fail.
	_, c, err := parseSource(n.appendTo(make([]byte, 0, n.size())))
	if err != nil {
		panic("jsonpatch: a value written out does not read back: " + err.Error())
	}
	return c
}
