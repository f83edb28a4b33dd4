package cursor

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// FuzzCursorOpen opens cursors as clients send them back: Open accepts
// only the cursor Seal issued for the binding, spelt as Seal spells it,
// and it opens to the position sealed; a cursor needs no escaping in a
// query string; and a tag sealed for one binding and position opens no
// other pair, however their bytes are split between the two (bindings and
// positions both hold NULs: a list's binding joins its parts with them).
func FuzzCursorOpen(f *testing.F) {
	s := NewSealer([]byte("fuzz"))
	list := "list\x00d53065bd-f932-4841-83fb-849717d8df0f|ns|id\x00A\x00\x00"
	for _, c := range []struct{ binding, position, cursor string }{
		{list, "z", s.Seal(list, "z")},
		{list, "z\x00100", s.Seal(list, "z\x00100")},
		{"users\x00d53065bd-f932-4841-83fb-849717d8df0f", "auth0|abc", "abc.def"},
		{"export\x00app", `{"owner":"a","key":"b"}`, s.Seal("export\x00app", "{}")},
		{"a", "b\x00c", s.Seal("a\x00b", "c")},
		{"", "", s.Seal("", "")},
		{list, "z", s.Seal(list, "z") + "\n"},
		{list, "z", strings.Replace(s.Seal(list, "z"), ".", "\r\n.", 1)},
		{list, "z", "eh" + s.Seal(list, "z")[2:]}, // "eg" with a stray bit
		{list, "z", s.Seal(list, "z") + "="},
		{list, "z", s.Seal(list, "z") + ".x"},
		{list, "z", "." + s.Seal(list, "z")},
		{list, "z", ""},
	} {
		f.Add(c.binding, c.position, c.cursor)
	}
	f.Fuzz(func(t *testing.T, binding, position, cursor string) {
		c := s.Seal(binding, position)
		if got, err := s.Open(binding, c); err != nil || got != position {
			t.Fatalf("Seal(%q, %q) = %q opens as %q, %v", binding, position, c, got, err)
		}
		if url.QueryEscape(c) != c {
			t.Fatalf("cursor %q needs escaping in a query string", c)
		}
		if pos, err := s.Open(binding, cursor); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open(%q) error %v, want ErrInvalid", cursor, err)
			}
		} else if s.Seal(binding, pos) != cursor {
			t.Fatalf("Open(%q) = %q, but Seal issues %q for it", cursor, pos, s.Seal(binding, pos))
		}
		tag := c[strings.IndexByte(c, '.'):]
		joined := binding + "\x00" + position
		for i := range len(joined) {
			if joined[i] != 0 || i == len(binding) {
				continue
			}
			b2, p2 := joined[:i], joined[i+1:]
			if got, err := s.Open(b2, base64.RawURLEncoding.EncodeToString([]byte(p2))+tag); err == nil {
				t.Fatalf("the tag of (%q, %q) opens (%q, %q) as %q", binding, position, b2, p2, got)
			}
		}
	})
}
