// Package cursor makes pagination cursors opaque and tamper-evident: a
// cursor carries the last key a page returned, encrypted and
// authenticated (AES-256-GCM) together with the query it belongs to, so
// that it reveals nothing of the key and a forged cursor, or one taken
// from another list, tenant or range, is refused instead of being
// followed.
package cursor

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
)

// ErrInvalid is returned for a cursor that was not issued for this query.
var ErrInvalid = errors.New("cursor was not issued for this query")

const (
	// saltBytes is the salt that makes each cursor's key its own: 128
	// bits, so that no two positions of a deployment share a key.
	saltBytes = 16
	// keyBytes is a cursor's AES-256 key.
	keyBytes = 32
	// padTo rounds a sealed position's length up, so that a cursor tells
	// little of how long the key it carries is.
	padTo = 32
	// padMark ends a position before its padding of zeros (ISO/IEC
	// 7816-4), so that a position ending in zeros opens whole.
	padMark = 0x80
)

// Sealer seals and opens cursors with one secret key.
type Sealer struct {
	// prk is the pseudorandom key extracted from the secret, from which
	// each cursor's key is expanded with the cursor's salt.
	prk []byte
	// saltKey keys the HMAC that makes a cursor's salt.
	saltKey []byte
}

// NewSealer returns a Sealer keyed with secret.
func NewSealer(secret []byte) *Sealer {
	prk, err := hkdf.Extract(sha256.New, secret, []byte("uds cursor"))
	if err != nil {
		panic("cursor: " + err.Error()) // HKDF-SHA256 extraction takes any secret
	}
	return &Sealer{prk: prk, saltKey: expand(prk, "salt", sha256.Size)}
}

// Seal returns a cursor carrying position, bound to binding (a string that
// names the query: table, partition, order, range): the base64 of a salt
// and of the padded position sealed under the salt's key (AES-256-GCM),
// with binding as the additional data.
//
// The salt is an HMAC of the binding and the position (a synthetic IV, as
// in SIV), so one position of one query has one cursor and the same
// request gets the same answer, and two positions get two keys. Each key
// seals one plaintext, so the nonce may be fixed, and no count of cursors
// wears a key out (a random 96-bit nonce under one key is good for about
// 2^32 cursors only). Equal cursors tell only that they stand at the same
// place of the same query, which their pages show anyway.
func (s *Sealer) Seal(binding, position string) string {
	salt := s.salt(binding, position)
	padded := append([]byte(position), padMark)
	padded = append(padded, make([]byte, (padTo-len(padded)%padTo)%padTo)...)
	return base64.RawURLEncoding.EncodeToString(s.aead(salt).Seal(salt, zeroNonce[:], padded, []byte(binding)))
}

// Open returns the position a cursor carries if Seal issued it for
// binding. A cursor of the format before cursors were encrypted
// (position.tag) is not base64 of one piece and is refused as any other.
func (s *Sealer) Open(binding, cursor string) (string, error) {
	sealed, ok := decode(cursor)
	if !ok || len(sealed) < saltBytes {
		return "", ErrInvalid
	}
	salt, box := sealed[:saltBytes], sealed[saltBytes:]
	padded, err := s.aead(salt).Open(nil, zeroNonce[:], box, []byte(binding))
	if err != nil {
		return "", ErrInvalid
	}
	unpadded := bytes.TrimRight(padded, "\x00")
	if len(unpadded) == 0 || unpadded[len(unpadded)-1] != padMark {
		return "", ErrInvalid
	}
	position := string(unpadded[:len(unpadded)-1])
	// GCM has authenticated the cursor; the salt is checked too so that a
	// cursor has one spelling, Seal's.
	if !hmac.Equal(salt, s.salt(binding, position)) {
		return "", ErrInvalid
	}
	return position, nil
}

// salt is the cursor salt of position under binding. The binding's length
// comes first, so that no other split of the same bytes between a binding
// and a position has the same salt: both may hold any byte (a list's
// binding joins its parts with NULs, and so does a position that carries
// a page size).
func (s *Sealer) salt(binding, position string) []byte {
	h := hmac.New(sha256.New, s.saltKey)
	h.Write(binary.AppendUvarint(nil, uint64(len(binding))))
	h.Write([]byte(binding))
	h.Write([]byte(position))
	return h.Sum(nil)[:saltBytes]
}

// zeroNonce is every cursor's nonce: its key is used for it alone.
var zeroNonce [12]byte

// aead is the AES-256-GCM of the cursor whose salt is salt.
func (s *Sealer) aead(salt []byte) cipher.AEAD {
	block, err := aes.NewCipher(expand(s.prk, "key\x00"+string(salt), keyBytes))
	if err != nil {
		panic("cursor: " + err.Error()) // the key is 32 bytes
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic("cursor: " + err.Error()) // AES has GCM's block size
	}
	return gcm
}

// expand is n bytes of key for info, from the pseudorandom key prk.
func expand(prk []byte, info string, n int) []byte {
	key, err := hkdf.Expand(sha256.New, prk, info, n)
	if err != nil {
		panic("cursor: " + err.Error()) // n is well within HKDF-SHA256's output
	}
	return key
}

// decode reads base64 spelt as Seal spells it. The decoder also takes line
// breaks anywhere and stray bits in the last character, so that other
// strings would open as the same cursor; a cursor has one spelling.
func decode(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return b, err == nil && base64.RawURLEncoding.EncodeToString(b) == s
}
