package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// randomString mixes what JSON escaping treats differently: plain ASCII,
// quotes and backslashes, control characters, multi-byte runes, U+2028
// and U+2029, U+FFFD itself and invalid UTF-8.
func randomString(rng *rand.Rand) string {
	pieces := []string{"a", "Z", "0", " ", "~", "\x7f", `"`, `\`, "/", "<", ">", "&", "\b", "\f", "\n", "\r", "\t", "\x00", "\x01", "\x1f",
		"é", "日本", "🎉", "\u2028", "\u2029", "\ufffd", "\xff", "\xe2\x80", "\xc3", "|"}
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// TestAppendItemMatchesEncodingJSON checks the hand-written encoder
// against encoding/json on random items: the same bytes, field for field.
func TestAppendItemMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	values := []string{`1`, `"x"`, `{"a":[1,2,{"b":null}]}`, `1e400`, `"\u2028 <&>"`, "\"\u2028\"", `[]`}
	for i := range 5000 {
		it := uds.Item{
			Key:  uds.Key{App: "d53065bd-f932-4841-83fb-849717d8df0f", Namespace: randomString(rng), ID: randomString(rng)},
			Data: json.RawMessage(values[rng.IntN(len(values))]), ClassName: randomString(rng),
			CreatedBy: randomString(rng), UpdatedBy: randomString(rng), Version: rng.Int64N(1 << 40),
		}
		if rng.IntN(2) == 0 {
			it.SortKey = randomString(rng)
		}
		if rng.IntN(4) > 0 {
			it.CreatedDate = time.UnixMilli(rng.Int64N(1 << 42)).UTC()
			it.UpdatedDate = it.CreatedDate.Add(time.Duration(rng.IntN(1e6)) * time.Millisecond)
		}
		if rng.IntN(3) == 0 {
			it.ExpiresAt = time.UnixMilli(rng.Int64N(1 << 42)).UTC()
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(toJSON(&it)); err != nil {
			t.Fatal(err)
		}
		got := append(appendItem(nil, &it), '\n')
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("item %d:\n got %q\nwant %q", i, got, want.Bytes())
		}
	}
}

// TestRawPayloadBytesCountsEscapes checks the vectorised count against a
// byte-by-byte one on random values.
func TestRawPayloadBytesCountsEscapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(randomString(rng))
		}
		v := []byte(b.String())
		want := len(v)
		for i := 0; i < len(v); i++ {
			switch {
			case v[i] == '"' || v[i] == '\\':
				want++
			case v[i] == 0xE2 && i+2 < len(v) && v[i+1] == 0x80 && (v[i+2] == 0xA8 || v[i+2] == 0xA9):
				want += 4
			}
		}
		if got := rawPayloadBytes(v); got != want {
			t.Fatalf("rawPayloadBytes(%q) = %d, want %d", v, got, want)
		}
	}
}
