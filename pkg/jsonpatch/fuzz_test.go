package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzMergePatch checks, for any document and merge patch: no panic; the
// package's reading of JSON agrees with json.Valid; a result is valid,
// compact JSON, equal as a value to a reference merge over decoded values;
// applying the patch again changes nothing (RFC 7396 is idempotent); and
// the members of an object document the patch does not name keep their
// bytes.
func FuzzMergePatch(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":"b"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`},
		{`{"a":["b"]}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`},
		{`{"a":"foo"}`, `null`},
		{`{"a":"foo"}`, `"bar"`},
		{`{"e":null}`, `{"a":1}`},
		{`[1,2]`, `{"a":"b","c":null}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`},
		{`{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"}`,
			`{"title":"Hello!","phoneNumber":"+01-123-456-7890","author":{"familyName":null},"tags":["example"]}`},
		{`{"n":1.0,"m":1e2,"s":"\u00e9","o":{ "x" : [ 1 , 2 ] }}`, `{"n":2,"o":{"y":-0.0}}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		checkScanner(t, doc)
		checkScanner(t, patch)
		out, err := MergePatch(doc, patch)
		if err != nil {
			var inv *InvalidError
			var d *DocumentError
			switch {
			case errors.As(err, &inv):
				if json.Valid(patch) && !strings.Contains(inv.Reason, "twice") {
					t.Fatalf("valid patch refused: %v", err)
				}
			case errors.As(err, &d):
				if json.Valid(doc) && !strings.Contains(d.Reason, "twice") {
					t.Fatalf("valid document refused: %v", err)
				}
			default:
				t.Fatalf("error of no exported type: %T %v", err, err)
			}
			return
		}
		checkValid(t, out)
		if !json.Valid(doc) || !json.Valid(patch) {
			t.Fatalf("invalid input accepted: %q, %q", doc, patch)
		}

		// The reference: RFC 7396's algorithm over encoding/json values.
		dv, err1 := decodeValue(doc)
		pv, err2 := decodeValue(patch)
		if err1 == nil && err2 == nil && !valuesEqual(mergeReference(dv, pv), mustDecode(t, out)) {
			t.Fatalf("MergePatch(%s, %s) = %s, not the reference's value", doc, patch, out)
		}

		again, err := MergePatch(out, patch)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("applied twice: %s, %v; once: %s", again, err, out)
		}

		// Members the patch does not name keep their bytes.
		if !utf8.Valid(doc) || !utf8.Valid(patch) {
			return // encoding/json would change the names it reads.
		}
		var dm, pm, om map[string]json.RawMessage
		if json.Unmarshal(doc, &dm) != nil || json.Unmarshal(patch, &pm) != nil || json.Unmarshal(out, &om) != nil || pm == nil || om == nil {
			return // Not all three are objects (null reads as a nil map).
		}
		for name, v := range dm {
			if _, named := pm[name]; named {
				continue
			}
			if want := compact(t, v); !bytes.Equal(om[name], want) {
				t.Fatalf("untouched member %q: %s became %s", name, want, om[name])
			}
		}
	})
}

// mergeReference is RFC 7396, section 2, over decoded values.
func mergeReference(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for name, v := range p {
		if v == nil {
			delete(t, name)
		} else {
			t[name] = mergeReference(t[name], v)
		}
	}
	return t
}

// fuzzMaxBytes is the result limit FuzzJSONPatch applies patches with.
const fuzzMaxBytes = 1 << 16

// FuzzJSONPatch checks, for any document and JSON Patch: no panic; the
// package's reading of JSON agrees with json.Valid; it agrees with a
// reference JSON Patch over decoded values (reference_test.go) on whether
// the patch applies and on the result; a result is valid, compact JSON of
// the size the applier kept; a test of a value just added
// or replaced succeeds; and the members of an object document that no
// operation's path or from goes into keep their bytes.
func FuzzJSONPatch(f *testing.F) {
	for _, file := range []string{"spec_tests.json", "tests.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "json-patch-tests", file))
		if err != nil {
			f.Fatal(err)
		}
		var cases []suiteCase
		if err := json.Unmarshal(data, &cases); err != nil {
			f.Fatal(err)
		}
		for _, c := range cases {
			if c.Doc != nil && c.Patch != nil {
				f.Add([]byte(c.Doc), []byte(c.Patch))
			}
		}
	}
	f.Add([]byte(`{"a":1.0,"b":1e2,"c":{"d":[1,2,3]}}`), []byte(`[{"op":"add","path":"/c/d/1","value":{"x":-0.0}},{"op":"copy","from":"/c","path":"/e"},{"op":"move","from":"/e/d/0","path":"/f"}]`))
	// Each copy doubles the document: the limit, not memory, stops it.
	f.Add([]byte(`[1]`), []byte(`[`+strings.TrimSuffix(strings.Repeat(`{"op":"copy","from":"","path":"/-"},`, 40), ",")+`]`))
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		checkScanner(t, doc)
		checkScanner(t, patch)
		p, err := Parse(patch)
		if err != nil {
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("Parse: error of no exported type: %T %v", err, err)
			}
			return
		}
		if !json.Valid(patch) {
			t.Fatalf("invalid patch parsed: %q", patch)
		}
		// A small limit keeps each input quick: copies double the
		// document, and the reference copies values as it goes.
		out, size, err := p.apply(doc, fuzzMaxBytes)
		compareWithReference(t, doc, p, out, err)
		if err != nil {
			var c *ConflictError
			var d *DocumentError
			var big *TooLargeError
			if !errors.As(err, &c) && !errors.As(err, &d) && !errors.As(err, &big) {
				t.Fatalf("Apply: error of no exported type: %T %v", err, err)
			}
			if d != nil && json.Valid(doc) && !strings.Contains(d.Reason, "twice") {
				t.Fatalf("valid document refused: %v", err)
			}
			return
		}
		checkValid(t, out)
		if size != len(out) {
			t.Fatalf("size kept %d, result %d bytes", size, len(out))
		}

		// A test of the value an add or replace just set succeeds.
		for i, op := range p.ops {
			if op.op != "add" && op.op != "replace" || len(op.path.tokens) > 0 && op.path.tokens[len(op.path.tokens)-1] == "-" {
				continue
			}
			q := Patch{ops: append(p.ops[:i+1:i+1], operation{op: "test", path: op.path, value: op.value})}
			if _, err := q.ApplyLimit(doc, fuzzMaxBytes); err != nil {
				t.Fatalf("test after operation %d: %v", i, err)
			}
		}

		// Members of an object document that no operation goes into keep
		// their bytes.
		if !utf8.Valid(doc) || !utf8.Valid(patch) {
			return
		}
		var dm, om map[string]json.RawMessage
		if json.Unmarshal(doc, &dm) != nil || json.Unmarshal(out, &om) != nil || om == nil {
			return // Not both objects (null reads as a nil map).
		}
		touched := map[string]bool{}
		for _, op := range p.ops {
			changed := []pointer{op.path}
			switch op.op {
			case "test":
				continue // A test changes nothing.
			case "move":
				changed = append(changed, op.from)
			}
			for _, ptr := range changed {
				if len(ptr.tokens) == 0 {
					if op.op == "move" && op.from.text == op.path.text {
						continue // A move to where it is changes nothing.
					}
					return // The whole document is replaced.
				}
				touched[ptr.tokens[0]] = true
			}
		}
		for name, v := range dm {
			if !touched[name] {
				if want := compact(t, v); !bytes.Equal(om[name], want) {
					t.Fatalf("untouched member %q: %s became %s", name, want, om[name])
				}
			}
		}
	})
}

// checkScanner checks that the package reads as JSON what json.Valid
// does, and compacts it as json.Compact does.
func checkScanner(t *testing.T, data []byte) {
	_, n, err := parseSource(data)
	if (err == nil) != json.Valid(data) {
		t.Fatalf("parseSource(%q): %v, json.Valid: %v", data, err, json.Valid(data))
	}
	if err == nil {
		if got, want := n.appendTo(nil), compact(t, data); !bytes.Equal(got, want) {
			t.Fatalf("written %q, json.Compact %q", got, want)
		}
	}
}

func compact(t *testing.T, v []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func mustEncode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func mustDecode(t *testing.T, b []byte) any {
	v, err := decodeValue(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
