package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkCompact compares compactJSON with json.Compact on one input, and
// its refusals of repeated member names with repeatsName's. The last holds
// for valid UTF-8 only: encoding/json reads each invalid byte of a name as
// U+FFFD, so "\xb2" and "\x94" are one name to it and two to compactJSON,
// whose callers refuse invalid UTF-8 before it reads a body.
func checkCompact(t *testing.T, src []byte) {
	t.Helper()
	var want bytes.Buffer
	wantErr := json.Compact(&want, src)
	got, err := compactJSON(nil, src)
	var dup *duplicateNameError
	if errors.As(err, &dup) {
		// A repeated name found before a syntax error further on is
		// refused as such: either way the input is refused.
		if wantErr == nil && !repeatsName(src) {
			t.Fatalf("%q: compactJSON refused a repeated name (%v) where there is none", src, err)
		}
		return
	}
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%q: compactJSON error %v, json.Compact error %v", src, err, wantErr)
	case err == nil && utf8.Valid(src) && repeatsName(src):
		t.Fatalf("%q: compactJSON took an object with a repeated member name", src)
	case err == nil && !bytes.Equal(got, want.Bytes()):
		t.Fatalf("%q: compactJSON gives %q, json.Compact %q", src, got, want.Bytes())
	}
}

// repeatsName reports whether valid JSON has an object that names a member
// twice, by encoding/json's tokens: a reference for compactJSON's check.
func repeatsName(src []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(src))
	type level struct {
		names   map[string]bool // nil for an array
		wantKey bool
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := len(stack) - 1
		isKey := top >= 0 && stack[top].names != nil && stack[top].wantKey
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, level{names: map[string]bool{}, wantKey: true})
			case '[':
				stack = append(stack, level{})
			default:
				stack = stack[:top]
				if top > 0 && stack[top-1].names != nil {
					stack[top-1].wantKey = true
				}
			}
			continue
		case string:
			if isKey {
				if stack[top].names[v] {
					return true
				}
				stack[top].names[v] = true
				stack[top].wantKey = false
				continue
			}
		}
		if top >= 0 && stack[top].names != nil {
			stack[top].wantKey = true
		}
	}
}

// TestCompactJSONRefusesRepeatedNames checks the refusal and the pointer
// it names, at several depths and through escapes.
func TestCompactJSONRefusesRepeatedNames(t *testing.T) {
	for _, tc := range []struct {
		name, src, pointer string
	}{
		{"top level", `{"n":99,"n":1}`, "/n"},
		{"nested object", `{"a":{"b":1,"c":2,"b":3}}`, "/a/b"},
		{"inside an array", `[0,{"x":1},{"y":1,"y":2}]`, "/2/y"},
		{"escaped spelling", `{"a":1,"\u0061":2}`, "/a"},
		{"escaped slash in the pointer", `{"a/b":{"~":1,"~":2}}`, "/a~1b/~0"},
		{"many members, then a repeat", `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k3":3}`, "/k3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compactJSON(nil, []byte(tc.src))
			var dup *duplicateNameError
			if !errors.As(err, &dup) {
				t.Fatalf("got %v, want a repeated-name error", err)
			}
			if dup.pointer != tc.pointer {
				t.Errorf("pointer %q, want %q", dup.pointer, tc.pointer)
			}
		})
	}
	for _, src := range []string{`{"a":{"a":{"a":1}}}`, `[{"a":1},{"a":2}]`, `{"a":1,"A":2}`, `{"":1,"a":{"":2}}`} {
		if _, err := compactJSON(nil, []byte(src)); err != nil {
			t.Errorf("%s: %v; names repeated only in other objects, or differing in case, are distinct", src, err)
		}
	}
}

// randomJSON writes a random JSON value, with random white space.
func randomJSON(rng *rand.Rand, b *strings.Builder, depth int) {
	ws := func() {
		b.WriteString([]string{"", "", " ", "\n", "\t", "\r\n  "}[rng.IntN(6)])
	}
	ws()
	switch k := rng.IntN(10); {
	case k < 2 && depth < 6:
		b.WriteByte('{')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			b.WriteString(randomJSONString(rng))
			ws()
			b.WriteByte(':')
			randomJSON(rng, b, depth+1)
		}
		ws()
		b.WriteByte('}')
	case k < 4 && depth < 6:
		b.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			randomJSON(rng, b, depth+1)
		}
		ws()
		b.WriteByte(']')
	case k < 6:
		b.WriteString(randomJSONString(rng))
	case k < 8:
		b.WriteString([]string{"0", "-0", "12", "-3.25", "1e5", "2E-7", "6.02e+23", "123456789012345678901234567890"}[rng.IntN(8)])
	default:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	}
	ws()
}

func randomJSONString(rng *rand.Rand) string {
	pieces := []string{"a", "Z", " ", "é", "日本", "\\\"", "\\\\", "\\/", "\\n", "\\t", "\\u00e9", "\\uD83D\\uDE00", "{", "}", "[", "]", ",", ":", "\u2028", "<&>"}
	var b strings.Builder
	b.WriteByte('"')
	for range rng.IntN(8) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	b.WriteByte('"')
	return b.String()
}

// TestCompactJSONMatchesEncodingJSON compares the two on random documents
// and on mutations of them: bytes deleted, inserted or replaced with the
// characters JSON's grammar turns on.
func TestCompactJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	significant := []byte("{}[],:\"\\ \t\n\r0123456789-+.eEtrufalsn\x00\x01\x1f/u")
	for range 20000 {
		var b strings.Builder
		randomJSON(rng, &b, 0)
		doc := []byte(b.String())
		checkCompact(t, doc)
		for range 3 {
			m := bytes.Clone(doc)
			if len(m) == 0 {
				break
			}
			i := rng.IntN(len(m))
			switch rng.IntN(3) {
			case 0:
				m = append(m[:i], m[i+1:]...)
			case 1:
				m = append(m[:i], append([]byte{significant[rng.IntN(len(significant))]}, m[i:]...)...)
			default:
				m[i] = significant[rng.IntN(len(significant))]
			}
			checkCompact(t, m)
		}
	}
	for _, src := range []string{
		"", " ", "{", "}", "[1,]", "[,1]", `{"a":1,}`, `{"a" 1}`, `{1:2}`, "01", "-", "1.", ".5", "1e", "1e+", "+1", "tru", "truex", "nul",
		`"\u12"`, `"\x"`, "\"a\x01b\"", `"unterminated`, "[1] [2]", "\ufeff{}",
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	} {
		checkCompact(t, []byte(src))
	}
}

// FuzzCompactJSON runs the comparison on what the fuzzer finds
// (go test -fuzz FuzzCompactJSON ./pkg/httpapi).
func FuzzCompactJSON(f *testing.F) {
	for _, s := range []string{`{"data":{"a":[1,2.5e3,"x\n"]},"className":"C"}`, `[true,false,null]`, `"\u00e9"`, ` 0 `, "{\"\xb2\":{},\"\x94\":\"\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) { checkCompact(t, src) })
}

// TestPlainRun checks the word-at-a-time scan against a byte-at-a-time
// one: every byte value at every position of runs of every length up to
// three words, among plain bytes and among bytes one off the special ones.
func TestPlainRun(t *testing.T) {
	naive := func(b []byte) int {
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				return i
			}
		}
		return len(b)
	}
	for _, fill := range []byte{'a', '"' + 1, '\\' - 1, '\\' + 1, 0x20, 0x7f, 0x80, 0xff} {
		for n := 0; n <= 24; n++ {
			for at := 0; at < n; at++ {
				for v := 0; v < 256; v++ {
					b := bytes.Repeat([]byte{fill}, n)
					b[at] = byte(v)
					if got, want := plainRun(b), naive(b); got != want {
						t.Fatalf("plainRun(%q) = %d, want %d", b, got, want)
					}
				}
			}
		}
	}
}
