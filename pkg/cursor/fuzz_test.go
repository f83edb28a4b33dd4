package cursor

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// FuzzCursorOpen opens cursors as clients send them back: Open accepts
// only the cursor Seal issued for the binding, spelt as Seal spells it,
// and it opens to the position sealed; a cursor needs no escaping in a
// query string and does not carry its position in the clear; and a cursor
// sealed for one binding opens under no other, however the bytes of the
// binding and the position are split between the two (bindings and
// positions both hold NULs: a list's binding joins its parts with them).
func FuzzCursorOpen(f *testing.F) {
	s := NewSealer([]byte("fuzz"))
	list := "list\x00d53065bd-f932-4841-83fb-849717d8df0f|ns|id\x00A\x00\x00"
	index := "index\x00d53065bd-f932-4841-83fb-849717d8df0f\x00tasks\x00byStatus\x00open\x00DESC"
	for _, c := range []struct{ binding, position, cursor string }{
		{list, "z", s.Seal(list, "z")},
		{list, "z\x00100", s.Seal(list, "z\x00100")},
		{index, `{"v":"secret value","id":"secret-id"}`, s.Seal(index, `{"v":"other","id":"x"}`)},
		{"history\x00app|ns|id", "17c", s.Seal("history\x00app|ns|id", "17c")},
		{"users\x00d53065bd-f932-4841-83fb-849717d8df0f", "auth0|abc", "abc.def"},
		{"export\x00app", `{"owner":"a","key":"b"}`, s.Seal("export\x00app", "{}")},
		{"a", "b\x00c", s.Seal("a\x00b", "c")},
		{"", "", s.Seal("", "")},
		{list, "z\x80\x00", s.Seal(list, "z\x80")},
		// The format before cursors were sealed: position.tag.
		{list, "z", base64.RawURLEncoding.EncodeToString([]byte("z")) + ".AAAAAAAAAAAAAAAAAAAAAA"},
		{list, "z", s.Seal(list, "z") + "\n"},
		{list, "z", strings.Replace(s.Seal(list, "z"), "A", "\r\nA", 1)},
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
		// Eight bytes of ciphertext match a given position's by chance
		// with a probability of about 2^-58.
		if sealed, _ := base64.RawURLEncoding.DecodeString(c); len(position) >= 8 && bytes.Contains(sealed, []byte(position)) {
			t.Fatalf("Seal(%q, %q) = %q carries the position in the clear", binding, position, c)
		}
		if pos, err := s.Open(binding, cursor); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open(%q) error %v, want ErrInvalid", cursor, err)
			}
		} else if s.Seal(binding, pos) != cursor {
			t.Fatalf("Open(%q) = %q, but Seal issues %q for it", cursor, pos, s.Seal(binding, pos))
		}
		joined := binding + "\x00" + position
		for i := range len(joined) {
			if joined[i] != 0 || i == len(binding) {
				continue
			}
			if got, err := s.Open(joined[:i], c); err == nil {
				t.Fatalf("the cursor of (%q, %q) opens under %q as %q", binding, position, joined[:i], got)
			}
		}
	})
}
