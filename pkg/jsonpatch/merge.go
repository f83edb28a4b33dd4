package jsonpatch

// MergePatch applies a JSON Merge Patch (RFC 7396) to doc and returns the
// result, compact. A patch that is not an object replaces the document; an
// object sets each of its members in the document, recursively for object
// values, and removes the members it sets to null.
//
// The errors are an *InvalidError for a patch that is not valid JSON or
// names a member twice in an object, and a *DocumentError for a doc that
// is not valid JSON. A merge patch cannot conflict with a document, and
// its result is at most as large as doc and patch together and nests no
// deeper than the deeper of them.
func MergePatch(doc, patch []byte) ([]byte, error) {
	_, p, err := parseSource(patch)
	if err != nil {
		return nil, &InvalidError{Index: -1, Reason: "not valid JSON: " + err.Error()}
	}
	root, err := parseDocument(doc)
	if err != nil {
		return nil, err
	}
	res, err := merge(root, p, nil)
	if err != nil {
		return nil, err
	}
	return res.appendTo(make([]byte, 0, len(doc)+len(patch))), nil
}

// parseDocument reads the document to patch.
func parseDocument(doc []byte) (*node, error) {
	_, root, err := parseSource(doc)
	if err != nil {
		return nil, &DocumentError{Reason: err.Error()}
	}
	return root, nil
}

// location is where merge is in the patch, built into a JSON Pointer
// only for an error: building it at each level would cost time quadratic
// in the patch's depth.
type location struct {
	parent *location
	name   string
}

func (l *location) String() string {
	if l == nil {
		return ""
	}
	return l.parent.String() + "/" + escapeToken(l.name)
}

// merge is RFC 7396's MergePatch(Target, Patch), section 2, with a nil
// target for a member the document does not have. Members the patch does
// not name keep their place and their bytes; members it adds go at the
// end of their object.
func merge(target, p *node, at *location) (*node, error) {
	if !p.isObject() {
		// The patch's node is the patch's alone, so it can go in as it
		// is.
		return p, nil
	}
	if err := p.expand(); err != nil {
		return nil, &InvalidError{Index: -1, Field: at.String(), Reason: err.Error()}
	}
	if target == nil || !target.isObject() {
		target = &node{kind: object}
	} else if err := target.expand(); err != nil {
		return nil, &DocumentError{Reason: err.Error()}
	}
	for i := range p.members {
		m := &p.members[i]
		j, ok := target.lookup(m.name)
		if m.val.isNull() {
			if ok {
				target.removeMember(j)
			}
			continue
		}
		var cur *node
		if ok {
			cur = target.members[j].val
		}
		v, err := merge(cur, m.val, &location{at, m.name})
		if err != nil {
			return nil, err
		}
		if ok {
			target.members[j].val = v
		} else {
			target.appendMember(member{name: m.name, key: m.key, val: v})
		}
	}
	return target, nil
}
