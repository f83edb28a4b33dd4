package lambdahost

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// TestEncodeBase64 compares encodeBase64 with the standard encoder on
// every length up to 2,000 bytes (each remainder of the blocks and of
// the 3-byte groups, with and without padding) of random bytes.
func TestEncodeBase64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 2000 {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		want := base64.StdEncoding.EncodeToString(src)
		got := make([]byte, base64.StdEncoding.EncodedLen(n))
		encodeBase64(got, src)
		if !bytes.Equal(got, []byte(want)) {
			t.Fatalf("%d bytes: got %q, want %q", n, got, want)
		}
	}
}

func BenchmarkEncodeBase64(b *testing.B) {
	src := make([]byte, 350_000)
	for i := range src {
		src[i] = byte(i * 7919 >> 3)
	}
	dst := make([]byte, base64.StdEncoding.EncodedLen(len(src)))
	b.Run("std", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			base64.StdEncoding.Encode(dst, src)
		}
	})
	b.Run("ours", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			encodeBase64(dst, src)
		}
	})
}
