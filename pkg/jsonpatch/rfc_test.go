package jsonpatch

import (
	"errors"
	"testing"
)

// TestRFC6902AppendixA runs the examples of RFC 6902, Appendix A.
func TestRFC6902AppendixA(t *testing.T) {
	tests := []struct {
		name, doc, patch, want string
		conflict, invalid      bool
	}{
		{name: "A.1 Adding an Object Member",
			doc:   `{"foo": "bar"}`,
			patch: `[{"op": "add", "path": "/baz", "value": "qux"}]`,
			want:  `{"baz": "qux", "foo": "bar"}`},
		{name: "A.2 Adding an Array Element",
			doc:   `{"foo": ["bar", "baz"]}`,
			patch: `[{"op": "add", "path": "/foo/1", "value": "qux"}]`,
			want:  `{"foo": ["bar", "qux", "baz"]}`},
		{name: "A.3 Removing an Object Member",
			doc:   `{"baz": "qux", "foo": "bar"}`,
			patch: `[{"op": "remove", "path": "/baz"}]`,
			want:  `{"foo": "bar"}`},
		{name: "A.4 Removing an Array Element",
			doc:   `{"foo": ["bar", "qux", "baz"]}`,
			patch: `[{"op": "remove", "path": "/foo/1"}]`,
			want:  `{"foo": ["bar", "baz"]}`},
		{name: "A.5 Replacing a Value",
			doc:   `{"baz": "qux", "foo": "bar"}`,
			patch: `[{"op": "replace", "path": "/baz", "value": "boo"}]`,
			want:  `{"baz": "boo", "foo": "bar"}`},
		{name: "A.6 Moving a Value",
			doc:   `{"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}`,
			patch: `[{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]`,
			want:  `{"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}`},
		{name: "A.7 Moving an Array Element",
			doc:   `{"foo": ["all", "grass", "cows", "eat"]}`,
			patch: `[{"op": "move", "from": "/foo/1", "path": "/foo/3"}]`,
			want:  `{"foo": ["all", "cows", "eat", "grass"]}`},
		{name: "A.8 Testing a Value: Success",
			doc:   `{"baz": "qux", "foo": ["a", 2, "c"]}`,
			patch: `[{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}]`,
			want:  `{"baz": "qux", "foo": ["a", 2, "c"]}`},
		{name: "A.9 Testing a Value: Error",
			doc:      `{"baz": "qux"}`,
			patch:    `[{"op": "test", "path": "/baz", "value": "bar"}]`,
			conflict: true},
		{name: "A.10 Adding a Nested Member Object",
			doc:   `{"foo": "bar"}`,
			patch: `[{"op": "add", "path": "/child", "value": {"grandchild": {}}}]`,
			want:  `{"foo": "bar", "child": {"grandchild": {}}}`},
		{name: "A.11 Ignoring Unrecognized Elements",
			doc:   `{"foo": "bar"}`,
			patch: `[{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}]`,
			want:  `{"foo": "bar", "baz": "qux"}`},
		{name: "A.12 Adding to a Nonexistent Target",
			doc:      `{"foo": "bar"}`,
			patch:    `[{"op": "add", "path": "/baz/bat", "value": "qux"}]`,
			conflict: true},
		{name: "A.13 Invalid JSON Patch Document",
			doc:     `{"foo": "bar"}`,
			patch:   `[{"op": "add", "path": "/baz", "value": "qux", "op": "remove"}]`,
			invalid: true},
		{name: "A.14 ~ Escape Ordering",
			doc:   `{"/": 9, "~1": 10}`,
			patch: `[{"op": "test", "path": "/~01", "value": 10}]`,
			want:  `{"/": 9, "~1": 10}`},
		{name: "A.15 Comparing Strings and Numbers",
			doc:      `{"/": 9, "~1": 10}`,
			patch:    `[{"op": "test", "path": "/~01", "value": "10"}]`,
			conflict: true},
		{name: "A.16 Adding an Array Value",
			doc:   `{"foo": ["bar"]}`,
			patch: `[{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]`,
			want:  `{"foo": ["bar", ["abc", "def"]]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.patch))
			if tt.invalid {
				var inv *InvalidError
				if !errors.As(err, &inv) {
					t.Fatalf("Parse: got %v, want an *InvalidError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := p.Apply([]byte(tt.doc))
			if tt.conflict {
				var c *ConflictError
				if !errors.As(err, &c) {
					t.Fatalf("Apply: got %s, %v, want a *ConflictError", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if !equalJSON(got, []byte(tt.want)) {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
			checkValid(t, got)
		})
	}
}

// TestRFC7396 runs the examples of RFC 7396: section 1's, whose result
// the RFC writes in the order this package keeps (so the bytes are
// compared), and the table of section 3 (compared as JSON values).
func TestRFC7396(t *testing.T) {
	t.Run("section 1", func(t *testing.T) {
		doc := `{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"}`
		patch := `{"title":"Hello!","phoneNumber":"+01-123-456-7890","author":{"familyName":null},"tags":["example"]}`
		want := `{"title":"Hello!","author":{"givenName":"John"},"tags":["example"],"content":"This will be unchanged","phoneNumber":"+01-123-456-7890"}`
		got, err := MergePatch([]byte(doc), []byte(patch))
		if err != nil || string(got) != want {
			t.Fatalf("got %s, %v, want %s", got, err, want)
		}
	})
	tests := []struct{ name, doc, patch, want string }{
		{"3.1 replace a member", `{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{"3.2 add a member", `{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{"3.3 remove the only member", `{"a":"b"}`, `{"a":null}`, `{}`},
		{"3.4 remove a member", `{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{"3.5 array replaced by string", `{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{"3.6 string replaced by array", `{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{"3.7 nested object", `{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{"3.8 arrays are replaced whole", `{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{"3.9 array document", `["a","b"]`, `["c","d"]`, `["c","d"]`},
		{"3.10 object replaced by array", `{"a":"b"}`, `["c"]`, `["c"]`},
		{"3.11 null patch", `{"a":"foo"}`, `null`, `null`},
		{"3.12 string patch", `{"a":"foo"}`, `"bar"`, `"bar"`},
		{"3.13 null member kept", `{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{"3.14 array target becomes an object", `[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{"3.15 nulls dropped from a new object", `{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergePatch([]byte(tt.doc), []byte(tt.patch))
			if err != nil {
				t.Fatalf("MergePatch: %v", err)
			}
			if !equalJSON(got, []byte(tt.want)) {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
			checkValid(t, got)
		})
	}
}
