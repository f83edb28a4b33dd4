package jsonpatch

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// This file is a reference JSON Patch over encoding/json's values (maps,
// slices, json.Number), written from RFC 6902 directly and as simply as
// possible, for FuzzJSONPatch to compare the package with: it shares only
// the parsed operations and the comparison of values with it.

// referenceApply applies ops to doc, or reports that an operation does
// not apply.
func referenceApply(doc any, ops []operation) (any, bool) {
	for _, op := range ops {
		var value any
		if op.value != nil {
			v, err := decodeValue(op.value.bytes())
			if err != nil {
				return nil, false
			}
			value = v
		}
		var ok bool
		switch op.op {
		case "add":
			doc, ok = refAdd(doc, op.path.tokens, value, false)
		case "replace":
			doc, ok = refAdd(doc, op.path.tokens, value, true)
		case "remove":
			doc, _, ok = refRemove(doc, op.path.tokens)
		case "move":
			if op.from.text == op.path.text {
				_, ok = refGet(doc, op.from.tokens)
				break
			}
			var v any
			if doc, v, ok = refRemove(doc, op.from.tokens); ok {
				doc, ok = refAdd(doc, op.path.tokens, v, false)
			}
		case "copy":
			var v any
			if v, ok = refGet(doc, op.from.tokens); ok {
				doc, ok = refAdd(doc, op.path.tokens, deepCopy(v), false)
			}
		case "test":
			var v any
			v, ok = refGet(doc, op.path.tokens)
			ok = ok && valuesEqual(v, value)
		}
		if !ok {
			return nil, false
		}
	}
	return doc, true
}

// refIndex reads an array index: "0" or digits without a leading zero.
func refIndex(tok string, n int) (int, bool) {
	if tok == "" || tok != "0" && strings.HasPrefix(tok, "0") || strings.TrimLeft(tok, "0123456789") != "" {
		return 0, false
	}
	i, err := strconv.Atoi(tok)
	return i, err == nil && i < n
}

func refGet(v any, toks []string) (any, bool) {
	for _, tok := range toks {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, ok := refIndex(tok, len(c))
			if !ok {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// refAdd returns v with x added (or replaced) at toks.
func refAdd(v any, toks []string, x any, replace bool) (any, bool) {
	if len(toks) == 0 {
		return x, true
	}
	tok := toks[0]
	switch c := v.(type) {
	case map[string]any:
		if len(toks) == 1 {
			if _, ok := c[tok]; replace && !ok {
				return nil, false
			}
			c[tok] = x
			return c, true
		}
		child, ok := c[tok]
		if !ok {
			return nil, false
		}
		if c[tok], ok = refAdd(child, toks[1:], x, replace); !ok {
			return nil, false
		}
		return c, true
	case []any:
		if len(toks) == 1 {
			if replace {
				i, ok := refIndex(tok, len(c))
				if !ok {
					return nil, false
				}
				c[i] = x
				return c, true
			}
			i, ok := len(c), true
			if tok != "-" {
				i, ok = refIndex(tok, len(c)+1)
			}
			if !ok {
				return nil, false
			}
			out := append(append(append([]any{}, c[:i]...), x), c[i:]...)
			return out, true
		}
		i, ok := refIndex(tok, len(c))
		if !ok {
			return nil, false
		}
		if c[i], ok = refAdd(c[i], toks[1:], x, replace); !ok {
			return nil, false
		}
		return c, true
	}
	return nil, false
}

// refRemove returns v without the value at toks, and that value.
func refRemove(v any, toks []string) (any, any, bool) {
	if len(toks) == 0 {
		return nil, nil, false
	}
	tok := toks[0]
	switch c := v.(type) {
	case map[string]any:
		child, ok := c[tok]
		if !ok {
			return nil, nil, false
		}
		if len(toks) == 1 {
			delete(c, tok)
			return c, child, true
		}
		nc, removed, ok := refRemove(child, toks[1:])
		if !ok {
			return nil, nil, false
		}
		c[tok] = nc
		return c, removed, true
	case []any:
		i, ok := refIndex(tok, len(c))
		if !ok {
			return nil, nil, false
		}
		if len(toks) == 1 {
			removed := c[i]
			return append(append([]any{}, c[:i]...), c[i+1:]...), removed, true
		}
		nc, removed, ok := refRemove(c[i], toks[1:])
		if !ok {
			return nil, nil, false
		}
		c[i] = nc
		return c, removed, true
	}
	return nil, nil, false
}

func deepCopy(v any) any {
	switch c := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(c))
		for k, e := range c {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(c))
		for i, e := range c {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

// compareWithReference fails the test where the package and the
// reference disagree on whether a patch applies or on its result. A limit
// of the package's, or an object that names a member twice (which the
// reference cannot see), is no disagreement.
func compareWithReference(t *testing.T, doc []byte, p Patch, out []byte, err error) {
	var c *ConflictError
	var d *DocumentError
	var big *TooLargeError
	if errors.As(err, &d) || errors.As(err, &big) {
		// The reference has no limit: copies would double its document
		// for as long as the patch asks.
		return
	}
	dv, derr := decodeValue(doc)
	if derr != nil {
		return
	}
	want, ok := referenceApply(dv, p.ops)
	switch {
	case errors.As(err, &c):
		if strings.Contains(c.Reason, "deeper than") {
			return
		}
		if ok {
			t.Fatalf("conflict (%v) where the reference applies the patch: %s", err, mustEncode(want))
		}
	case err != nil:
		t.Fatalf("error of no exported type: %T %v", err, err)
	default:
		if !ok {
			t.Fatalf("applied (%s) where the reference finds a conflict", out)
		}
		if !valuesEqual(want, mustDecode(t, out)) {
			t.Fatalf("result %s, the reference's %s", out, mustEncode(want))
		}
	}
}
