package cursor

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"
)

func TestSealOpen(t *testing.T) {
	s := NewSealer([]byte("secret"))
	c := s.Seal("list|a|b", "2024-01-15T10:30:00Z/x")
	pos, err := s.Open("list|a|b", c)
	if err != nil || pos != "2024-01-15T10:30:00Z/x" {
		t.Fatalf("Open = %q, %v", pos, err)
	}
	if again := s.Seal("list|a|b", "2024-01-15T10:30:00Z/x"); again != c {
		t.Errorf("one position sealed as %q and as %q: the same request should get the same answer", c, again)
	}

	other := NewSealer([]byte("other secret"))
	sealed, _ := base64.RawURLEncoding.DecodeString(c)
	flipped := bytes.Clone(sealed)
	flipped[saltBytes] ^= 1
	othersSalt, _ := base64.RawURLEncoding.DecodeString(s.Seal("list|a|b", "2024-01-15T10:30:00Z/y"))
	resalted := append(othersSalt[:saltBytes], sealed[saltBytes:]...)
	for name, tc := range map[string]struct {
		sealer  *Sealer
		binding string
		cursor  string
	}{
		"other binding":  {s, "list|a|c", c},
		"other secret":   {other, "list|a|b", c},
		"bad base64":     {s, "list|a|b", "!!"},
		"empty":          {s, "list|a|b", ""},
		"salt alone":     {s, "list|a|b", base64.RawURLEncoding.EncodeToString(sealed[:saltBytes])},
		"flipped bit":    {s, "list|a|b", base64.RawURLEncoding.EncodeToString(flipped)},
		"truncated":      {s, "list|a|b", c[:len(c)-2]},
		"extended":       {s, "list|a|b", c + "AA"},
		"another's salt": {s, "list|a|b", base64.RawURLEncoding.EncodeToString(resalted)},
		// The format before cursors were sealed: the position in base64,
		// a dot, its HMAC tag. Such cursors in flight are refused (400):
		// a client starts its listing again.
		"unsealed format": {s, "list|a|b", base64.RawURLEncoding.EncodeToString([]byte("2024-01-15T10:30:00Z/x")) + ".AAAAAAAAAAAAAAAAAAAAAA"},
		// Base64 decoders skip line breaks and stray bits in the last
		// character; a cursor has one spelling.
		"line break": {s, "list|a|b", c[:4] + "\n" + c[4:]},
		"stray bit":  {s, "list|a|b", c[:len(c)-1] + string(c[len(c)-1]+1)},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := tc.sealer.Open(tc.binding, tc.cursor); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open(%q) error = %v, want ErrInvalid", tc.cursor, err)
			}
		})
	}
}

// A cursor reveals neither its position nor its length beyond a multiple
// of padTo; positions ending in the padding's bytes open whole.
func TestSealHides(t *testing.T) {
	s := NewSealer([]byte("secret"))
	for _, position := range []string{"", "a", "a\x00", "a\x80", "\x80\x00\x00", string(bytes.Repeat([]byte("v"), padTo-1)), string(bytes.Repeat([]byte("v"), padTo))} {
		c := s.Seal("b", position)
		if got, err := s.Open("b", c); err != nil || got != position {
			t.Errorf("Seal(%q) opens as %q, %v", position, got, err)
		}
		sealed, _ := base64.RawURLEncoding.DecodeString(c)
		if want := saltBytes + (len(position)/padTo+1)*padTo + 16; len(sealed) != want {
			t.Errorf("Seal(%q) is %d bytes, want %d", position, len(sealed), want)
		}
		if len(position) >= 4 && bytes.Contains(sealed, []byte(position)) {
			t.Errorf("Seal(%q) carries the position in the clear", position)
		}
	}
}
