// Package cursor makes pagination cursors opaque and tamper-evident: a
// cursor carries the last key a page returned and an HMAC over that key and
// the query it belongs to, so a forged cursor, or one taken from another
// list, tenant or range, is refused instead of being followed.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
)

// macBytes is the length of the truncated HMAC-SHA256 tag; 128 bits is
// beyond guessing.
const macBytes = 16

// ErrInvalid is returned for a cursor that was not issued for this query.
var ErrInvalid = errors.New("cursor was not issued for this query")

// Sealer seals and opens cursors with one secret key.
type Sealer struct {
	key []byte
}

// NewSealer returns a Sealer keyed with secret.
func NewSealer(secret []byte) *Sealer { return &Sealer{key: secret} }

// Seal returns a cursor carrying position, bound to binding (a string that
// names the query: table, partition, order, range).
func (s *Sealer) Seal(binding, position string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(position)) + "." +
		base64.RawURLEncoding.EncodeToString(s.mac(binding, position))
}

// Open returns the position a cursor carries if it was sealed for binding.
func (s *Sealer) Open(binding, cursor string) (string, error) {
	pos64, mac64, ok := strings.Cut(cursor, ".")
	if !ok {
		return "", ErrInvalid
	}
	pos, ok1 := decode(pos64)
	mac, ok2 := decode(mac64)
	if !ok1 || !ok2 || !hmac.Equal(mac, s.mac(binding, string(pos))) {
		return "", ErrInvalid
	}
	return string(pos), nil
}

// decode reads base64 spelt as Seal spells it. The decoder also takes line
// breaks anywhere and stray bits in the last character, so that other
// strings would open as the same cursor; a cursor has one spelling.
func decode(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return b, err == nil && base64.RawURLEncoding.EncodeToString(b) == s
}

// mac is the tag of position under binding. The binding's length comes
// first, so that no other split of the same bytes between a binding and a
// position has the same tag: both may hold any byte (a list's binding
// joins its parts with NULs, and so does a position that carries a page
// size), and with a mere separator between them the tag of ("a\x00b", "c")
// was the tag of ("a", "b\x00c") too.
func (s *Sealer) mac(binding, position string) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write(binary.AppendUvarint(nil, uint64(len(binding))))
	h.Write([]byte(binding))
	h.Write([]byte(position))
	return h.Sum(nil)[:macBytes]
}
