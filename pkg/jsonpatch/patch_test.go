package jsonpatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// applyChecked parses and applies a JSON Patch, and checks that the size
// the applier kept up to date is the result's length.
func applyChecked(t testing.TB, doc, patch string) ([]byte, error) {
	t.Helper()
	p, err := Parse([]byte(patch))
	if err != nil {
		return nil, err
	}
	out, size, err := p.apply([]byte(doc), DefaultMaxBytes)
	if err == nil && size != len(out) {
		t.Fatalf("size kept %d, result %d bytes: %s", size, len(out), out)
	}
	return out, err
}

// TestUntouchedBytes checks that what a patch does not reach is written
// as it was: number spellings, escapes and member order, while what it
// brings in is written as the patch spelt it, compact.
func TestUntouchedBytes(t *testing.T) {
	doc := `{"a":1,"b":1.0,"c":1e2,"d":12345678901234567890123,"e":"\u00e9\/","f":{"x":-0.0,"y":[1E+2,2.50]},"g":[3,2,1]}`
	tests := []struct{ name, patch, want string }{
		{"replace a", `[{"op":"replace","path":"/a","value":2}]`,
			`{"a":2,"b":1.0,"c":1e2,"d":12345678901234567890123,"e":"\u00e9\/","f":{"x":-0.0,"y":[1E+2,2.50]},"g":[3,2,1]}`},
		{"inside f", `[{"op":"replace","path":"/f/y/0","value":1.000}]`,
			`{"a":1,"b":1.0,"c":1e2,"d":12345678901234567890123,"e":"\u00e9\/","f":{"x":-0.0,"y":[1.000,2.50]},"g":[3,2,1]}`},
		{"remove b, add z", `[{"op":"remove","path":"/b"},{"op":"add","path":"/z","value": { "k" : 1.10 , "\u006b2": [ ] }}]`,
			`{"a":1,"c":1e2,"d":12345678901234567890123,"e":"\u00e9\/","f":{"x":-0.0,"y":[1E+2,2.50]},"g":[3,2,1],"z":{"k":1.10,"\u006b2":[]}}`},
		{"move g into f", `[{"op":"move","from":"/g","path":"/f/g"}]`,
			`{"a":1,"b":1.0,"c":1e2,"d":12345678901234567890123,"e":"\u00e9\/","f":{"x":-0.0,"y":[1E+2,2.50],"g":[3,2,1]}}`},
		{"copy f", `[{"op":"copy","from":"/f","path":"/g/1"}]`,
			`{"a":1,"b":1.0,"c":1e2,"d":12345678901234567890123,"e":"\u00e9\/","f":{"x":-0.0,"y":[1E+2,2.50]},"g":[3,{"x":-0.0,"y":[1E+2,2.50]},2,1]}`},
		{"test numbers by value", `[{"op":"test","path":"/c","value":100},{"op":"test","path":"/b","value":1},{"op":"test","path":"/f/x","value":0}]`, doc},
		{"new name escaped", `[{"op":"add","path":"/q\"~1~0","value":true}]`,
			`{"a":1,"b":1.0,"c":1e2,"d":12345678901234567890123,"e":"\u00e9\/","f":{"x":-0.0,"y":[1E+2,2.50]},"g":[3,2,1],"q\"/~":true}`},
	}
	for _, tt := range tests {
		t.Run("json patch/"+tt.name, func(t *testing.T) {
			got, err := applyChecked(t, doc, tt.patch)
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, tt.want)
			}
		})
	}
	merges := []struct{ name, patch, want string }{
		{"replace a", `{"a":2}`,
			`{"a":2,"b":1.0,"c":1e2,"d":12345678901234567890123,"e":"\u00e9\/","f":{"x":-0.0,"y":[1E+2,2.50]},"g":[3,2,1]}`},
		{"inside f", `{"f":{"x":null,"w":1.50}}`,
			`{"a":1,"b":1.0,"c":1e2,"d":12345678901234567890123,"e":"\u00e9\/","f":{"y":[1E+2,2.50],"w":1.50},"g":[3,2,1]}`},
		{"name spelt differently", `{"\u0061":3}`,
			`{"a":3,"b":1.0,"c":1e2,"d":12345678901234567890123,"e":"\u00e9\/","f":{"x":-0.0,"y":[1E+2,2.50]},"g":[3,2,1]}`},
	}
	for _, tt := range merges {
		t.Run("merge patch/"+tt.name, func(t *testing.T) {
			got, err := MergePatch([]byte(doc), []byte(tt.patch))
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, tt.want)
			}
		})
	}
	t.Run("white space is left out", func(t *testing.T) {
		got, err := MergePatch([]byte(" {\n \"a\" : [ 1 , \"x y\" ] ,\t\"b\":{ } }\n"), []byte(`{ "c" : 1.0 }`))
		if want := `{"a":[1,"x y"],"b":{},"c":1.0}`; err != nil || string(got) != want {
			t.Fatalf("got %s, %v, want %s", got, err, want)
		}
		got, err = applyChecked(t, " [ 1 ,\n{ \"k\" : \"v w\" } ] ", `[{"op":"add","path":"/-","value":[ 2 ]}]`)
		if want := `[1,{"k":"v w"},[2]]`; err != nil || string(got) != want {
			t.Fatalf("got %s, %v, want %s", got, err, want)
		}
	})
}

// TestErrors checks each error's type and what it names.
func TestErrors(t *testing.T) {
	doc := `{"a":{"b":[1,2]},"s":"x"}`
	tests := []struct {
		name, patch string
		want        error
	}{
		{"not JSON", `[`, &InvalidError{Index: -1}},
		{"not an array", `{"op":"add"}`, &InvalidError{Index: -1}},
		{"not an object", `[{"op":"test","path":"","value":{}},1]`, &InvalidError{Index: 1}},
		{"no op", `[{"path":"/a"}]`, &InvalidError{Index: 0, Field: "op"}},
		{"op not a string", `[{"op":1,"path":"/a"}]`, &InvalidError{Index: 0, Field: "op"}},
		{"unknown op", `[{"op":"spam","path":"/a"}]`, &InvalidError{Index: 0, Field: "op"}},
		{"no path", `[{"op":"remove"}]`, &InvalidError{Index: 0, Field: "path"}},
		{"null path", `[{"op":"remove","path":null}]`, &InvalidError{Index: 0, Field: "path"}},
		{"pointer without slash", `[{"op":"remove","path":"a"}]`, &InvalidError{Index: 0, Field: "path"}},
		{"bad escape", `[{"op":"remove","path":"/a~2"}]`, &InvalidError{Index: 0, Field: "path"}},
		{"escape at end", `[{"op":"remove","path":"/a~"}]`, &InvalidError{Index: 0, Field: "path"}},
		{"no from", `[{"op":"copy","path":"/a"}]`, &InvalidError{Index: 0, Field: "from"}},
		{"no value", `[{"op":"test","path":"/a"},{"op":"add","path":"/a"}]`, &InvalidError{Index: 0, Field: "value"}},
		{"member twice", `[{"op":"remove","path":"/s"},{"op":"remove","path":"/a","path":"/s"}]`, &InvalidError{Index: 1, Field: "path"}},
		{"move into itself", `[{"op":"move","from":"/a","path":"/a/b/0"}]`, &InvalidError{Index: 0, Field: "path"}},
		{"test fails", `[{"op":"test","path":"/s","value":"x"},{"op":"test","path":"/s","value":"y"}]`,
			&ConflictError{Index: 1, Op: "test", Path: "/s"}},
		{"missing member", `[{"op":"remove","path":"/a/c"}]`, &ConflictError{Index: 0, Op: "remove", Path: "/a/c"}},
		{"missing parent", `[{"op":"add","path":"/x/y","value":1}]`, &ConflictError{Index: 0, Op: "add", Path: "/x/y"}},
		{"replace missing", `[{"op":"replace","path":"/z","value":1}]`, &ConflictError{Index: 0, Op: "replace", Path: "/z"}},
		{"index past end", `[{"op":"add","path":"/a/b/3","value":1}]`, &ConflictError{Index: 0, Op: "add", Path: "/a/b/3"}},
		{"leading zero", `[{"op":"replace","path":"/a/b/01","value":1}]`, &ConflictError{Index: 0, Op: "replace", Path: "/a/b/01"}},
		{"negative index", `[{"op":"add","path":"/a/b/-1","value":1}]`, &ConflictError{Index: 0, Op: "add", Path: "/a/b/-1"}},
		{"huge index", `[{"op":"remove","path":"/a/b/99999999999999999999999"}]`, &ConflictError{Index: 0, Op: "remove", Path: "/a/b/99999999999999999999999"}},
		{"dash is not an element", `[{"op":"remove","path":"/a/b/-"}]`, &ConflictError{Index: 0, Op: "remove", Path: "/a/b/-"}},
		{"into a string", `[{"op":"add","path":"/s/t","value":1}]`, &ConflictError{Index: 0, Op: "add", Path: "/s/t"}},
		{"missing from", `[{"op":"move","from":"/q","path":"/r"}]`, &ConflictError{Index: 0, Op: "move", Path: "/r", From: "/q"}},
		{"remove the document", `[{"op":"remove","path":""}]`, &ConflictError{Index: 0, Op: "remove", Path: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := applyChecked(t, doc, tt.patch)
			switch want := tt.want.(type) {
			case *InvalidError:
				var got *InvalidError
				if !errors.As(err, &got) || got.Index != want.Index || got.Field != want.Field || got.Reason == "" {
					t.Fatalf("got %#v (%v), want %#v", err, err, want)
				}
			case *ConflictError:
				var got *ConflictError
				if !errors.As(err, &got) || got.Index != want.Index || got.Op != want.Op || got.Path != want.Path || got.From != want.From || got.Reason == "" {
					t.Fatalf("got %#v (%v), want %#v", err, err, want)
				}
			}
			t.Log(err)
		})
	}
	t.Run("document not JSON", func(t *testing.T) {
		for _, doc := range []string{``, `{`, `{"a":1}x`, `[1,]`, `01`, `"\x"`, "\"\x01\"", `nul`, `{"a" 1}`, `1.`, `-`, `1e`} {
			var d *DocumentError
			if _, err := applyChecked(t, doc, `[]`); !errors.As(err, &d) {
				t.Errorf("Apply(%q): got %v, want a *DocumentError", doc, err)
			}
			if _, err := MergePatch([]byte(doc), []byte(`{}`)); !errors.As(err, &d) {
				t.Errorf("MergePatch(%q): got %v, want a *DocumentError", doc, err)
			}
		}
	})
	t.Run("merge patch", func(t *testing.T) {
		var inv *InvalidError
		if _, err := MergePatch([]byte(doc), []byte(`{"a":`)); !errors.As(err, &inv) || inv.Index != -1 {
			t.Errorf("invalid JSON: got %v", err)
		}
		_, err := MergePatch([]byte(doc), []byte(`{"a":{"b~":{"c":1,"c":2}}}`))
		if !errors.As(err, &inv) || inv.Field != "/a/b~0" {
			t.Errorf("member twice: got %#v", err)
		}
		t.Log(err)
		var d *DocumentError
		if _, err := MergePatch([]byte(`{"a":{"b":1,"b":2}}`), []byte(`{"a":{"c":1}}`)); !errors.As(err, &d) {
			t.Errorf("document names a member twice: got %v", err)
		}
	})
}

// TestPointers checks RFC 6901's escapes and examples (section 5).
func TestPointers(t *testing.T) {
	doc := `{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}`
	want := map[string]string{
		"":       doc,
		"/foo":   `["bar","baz"]`,
		"/foo/0": `"bar"`,
		"/":      `0`,
		"/a~1b":  `1`,
		"/c%d":   `2`,
		"/e^f":   `3`,
		"/g|h":   `4`,
		"/i\\j":  `5`,
		"/k\"l":  `6`,
		"/ ":     `7`,
		"/m~0n":  `8`,
	}
	for ptr, v := range want {
		patch, _ := json.Marshal([]map[string]any{{"op": "test", "path": ptr, "value": json.RawMessage(v)}})
		if _, err := applyChecked(t, doc, string(patch)); err != nil {
			t.Errorf("test %q = %s: %v", ptr, v, err)
		}
	}
	for _, bad := range []string{"/foo/00", "/foo/01", "/foo/+1", "/foo/1.0", "/foo/ 1", "/foo/2", "/foo/-", "/m~1n", "/a~0b"} {
		patch, _ := json.Marshal([]map[string]any{{"op": "remove", "path": bad}})
		var c *ConflictError
		if _, err := applyChecked(t, doc, string(patch)); !errors.As(err, &c) {
			t.Errorf("remove %q: got %v, want a conflict", bad, err)
		}
	}
}

// TestLimits checks the bounds on operations, depth and size.
func TestLimits(t *testing.T) {
	ops := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"","value":0},`, n), ",") + "]"
	}
	if _, err := Parse([]byte(ops(MaxOperations))); err != nil {
		t.Errorf("%d operations: %v", MaxOperations, err)
	}
	var inv *InvalidError
	if _, err := Parse([]byte(ops(MaxOperations + 1))); !errors.As(err, &inv) || inv.Index != MaxOperations {
		t.Errorf("%d operations: got %v", MaxOperations+1, err)
	}

	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	if _, err := MergePatch([]byte(nest(MaxDepth)), []byte(`{"a":1}`)); err != nil {
		t.Errorf("document %d deep: %v", MaxDepth, err)
	}
	var d *DocumentError
	if _, err := MergePatch([]byte(nest(MaxDepth+1)), []byte(`{}`)); !errors.As(err, &d) {
		t.Errorf("document %d deep: got %v", MaxDepth+1, err)
	}
	if _, err := MergePatch([]byte(`{}`), []byte(nest(MaxDepth+1))); !errors.As(err, &inv) {
		t.Errorf("merge patch %d deep: got %v", MaxDepth+1, err)
	}
	// A value in a JSON Patch nests at most MaxDepth-2 deep (the patch's
	// array and operation are two levels): it fits two levels down, not
	// three.
	value := nest(MaxDepth - 2)
	if _, err := applyChecked(t, `{"a":{}}`, `[{"op":"add","path":"/a/b","value":`+value+`}]`); err != nil {
		t.Errorf("add at depth 2: %v", err)
	}
	var c *ConflictError
	if _, err := applyChecked(t, `{"a":{"b":{}}}`, `[{"op":"add","path":"/a/b/c","value":`+value+`}]`); !errors.As(err, &c) {
		t.Errorf("add at depth 3: got %v", err)
	}
	if _, err := applyChecked(t, `{"a":{},"b":`+nest(MaxDepth-1)+`}`, `[{"op":"copy","from":"/b","path":"/a/b"}]`); !errors.As(err, &c) {
		t.Errorf("copy to depth 2: got %v", err)
	}
	if _, err := applyChecked(t, `{"a":{},"b":`+nest(MaxDepth-1)+`}`, `[{"op":"move","from":"/b","path":"/a/b"}]`); !errors.As(err, &c) {
		t.Errorf("move to depth 2: got %v", err)
	}

	// A path into a deeply nested document reads it in time linear in its
	// size, as where large containers end is noted.
	deep := nest(MaxDepth)
	path := strings.Repeat("/0", MaxDepth-1)
	if _, err := applyChecked(t, deep, `[{"op":"add","path":"`+path+`","value":1}]`); err != nil {
		t.Errorf("add at the deepest level: %v", err)
	}

	// Each copy doubles the document: the limit stops it.
	doubling := `[` + strings.TrimSuffix(strings.Repeat(`{"op":"copy","from":"","path":"/-"},`, 100), ",") + `]`
	p, err := Parse([]byte(doubling))
	if err != nil {
		t.Fatal(err)
	}
	var big *TooLargeError
	if _, err := p.ApplyLimit([]byte(`["0123456789"]`), 1000); !errors.As(err, &big) || big.Index != 6 {
		t.Errorf("doubling: got %v", err)
	}
	if _, err := p.Apply([]byte(`["0123456789"]`)); !errors.As(err, &big) {
		t.Errorf("doubling to DefaultMaxBytes: got %v", err)
	}
	// A document already past the limit can still shrink.
	p, _ = Parse([]byte(`[{"op":"remove","path":"/b"}]`))
	if out, err := p.ApplyLimit([]byte(`{"a":"0123456789","b":1}`), 5); err != nil || string(out) != `{"a":"0123456789"}` {
		t.Errorf("shrink past the limit: got %s, %v", out, err)
	}
}

// TestManyMembers checks a patch of many operations on one large object
// and a large array, and that gaps left by removed members are dropped.
func TestManyMembers(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("{")
	for i := range 5000 {
		if i > 0 {
			doc.WriteString(",")
		}
		fmt.Fprintf(&doc, `"k%d":%d`, i, i)
	}
	doc.WriteString(`,"arr":[` + strings.TrimSuffix(strings.Repeat("0,", 5000), ",") + `]}`)
	var patch strings.Builder
	patch.WriteString("[")
	for i := range MaxOperations / 2 {
		if i > 0 {
			patch.WriteString(",")
		}
		fmt.Fprintf(&patch, `{"op":"remove","path":"/k%d"},{"op":"add","path":"/arr/%d","value":%d}`, i*3, i, i)
	}
	patch.WriteString("]")
	out, err := applyChecked(t, doc.String(), patch.String())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 5001-MaxOperations/2 || len(m["arr"].([]any)) != 5000+MaxOperations/2 {
		t.Fatalf("got %d members, %d elements", len(m), len(m["arr"].([]any)))
	}
	if _, ok := m["k3"]; ok {
		t.Fatal("k3 was not removed")
	}

	// Removing most members of an object, one by one, drops the gaps.
	n := &node{kind: object}
	for i := range 100 {
		n.appendMember(member{name: fmt.Sprint(i), key: quoteString(fmt.Sprint(i)), val: &node{kind: array}})
	}
	for i := range 90 {
		j, ok := n.lookup(fmt.Sprint(i))
		if !ok {
			t.Fatalf("member %d not found", i)
		}
		n.removeMember(j)
	}
	if len(n.members) > 20 || n.live != 10 {
		t.Fatalf("%d members kept for %d live", len(n.members), n.live)
	}
	for i := 90; i < 100; i++ {
		if _, ok := n.lookup(fmt.Sprint(i)); !ok {
			t.Fatalf("member %d lost", i)
		}
	}
}

// TestConcurrentApply applies one parsed patch to documents at once: a
// Patch is read-only, even where an operation goes into a value the patch
// brought (go test -race checks it).
func TestConcurrentApply(t *testing.T) {
	p, err := Parse([]byte(`[{"op":"add","path":"/a","value":{"b":[1]}},{"op":"add","path":"/a/b/-","value":2},{"op":"copy","from":"/a","path":"/c"},{"op":"add","path":"/c/b/0","value":0}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"x":1,"a":{"b":[1,2]},"c":{"b":[0,1,2]}}`
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				out, err := p.Apply([]byte(`{"x":1}`))
				if err != nil || string(out) != want {
					t.Errorf("got %s, %v, want %s", out, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
