package cursor

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	s := NewSealer([]byte("secret"))
	c := s.Seal("list|a|b", "2024-01-15T10:30:00Z/x")
	pos, err := s.Open("list|a|b", c)
	if err != nil || pos != "2024-01-15T10:30:00Z/x" {
		t.Fatalf("Open = %q, %v", pos, err)
	}

	other := NewSealer([]byte("other secret"))
	// A position swapped under a genuine tag must not verify.
	forgedPos := "b3RoZXI" + c[strings.Index(c, "."):]
	// The tag of ("list|a|b\x00x", "y") under the position "x\x00y":
	// the same bytes split another way between binding and position.
	moved := s.Seal("list|a|b\x00x", "y")
	movedAcross := base64.RawURLEncoding.EncodeToString([]byte("x\x00y")) + moved[strings.Index(moved, "."):]
	for name, tc := range map[string]struct {
		sealer  *Sealer
		binding string
		cursor  string
	}{
		"other binding":      {s, "list|a|c", c},
		"bytes moved across": {s, "list|a|b", movedAcross},
		"other secret":       {other, "list|a|b", c},
		"no separator":       {s, "list|a|b", "abc"},
		"bad base64":         {s, "list|a|b", "!!.!!"},
		"empty":              {s, "list|a|b", ""},
		"forged position":    {s, "list|a|b", forgedPos},
		"truncated mac":      {s, "list|a|b", c[:len(c)-2]},
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
