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
	t.Parallel()
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
	t.Parallel()
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

// decodeWriteBody is the decoder's reading of a write body, which the one-
// pass reading must match.
func decodeWriteBody(body []byte) (writeBody, json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var b writeBody
	if dec.Decode(&b) != nil || dec.More() {
		return b, nil, false
	}
	var data bytes.Buffer
	if len(b.Data) == 0 || string(b.Data) == "null" {
		return b, nil, true
	}
	err := json.Compact(&data, b.Data)
	return b, data.Bytes(), err == nil && data.Len() <= uds.MaxDataBytes
}

// TestSplitWriteBodyMatchesTheDecoder checks the one-pass reading of write
// bodies against encoding/json's on bodies of every shape it takes or
// hands on: whatever it accepts, it reads as the decoder does.
func TestSplitWriteBodyMatchesTheDecoder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	values := []string{`1`, `-2.5e10`, `"s"`, `"a,b}c]\"{"`, `{"x":[1,{"y":"}"}],"z":null}`, `[]`, `{}`, `null`, `true`, `"\u00e9\\n"`, `[[[]]]`}
	names := []string{`"data"`, `"className"`, `"ttl"`, `"expiresAt"`, `"Data"`, `"d\u0061ta"`, `"other"`}
	ws := []string{"", " ", "\n\t"}
	read := 0
	for range 20000 {
		var b strings.Builder
		b.WriteString(ws[rng.IntN(3)] + "{")
		for m := range rng.IntN(4) {
			if m > 0 {
				b.WriteString(",")
			}
			b.WriteString(ws[rng.IntN(3)] + names[rng.IntN(len(names))] + ws[rng.IntN(3)] + ":" + ws[rng.IntN(3)] + values[rng.IntN(len(values))])
		}
		b.WriteString("}" + ws[rng.IntN(3)])
		body := []byte(b.String())
		var fast writeBody
		data, ok := splitWriteBody(body, &fast)
		if !ok {
			continue // the decoder reads it
		}
		read++
		slow, want, valid := decodeWriteBody(body)
		if !valid {
			t.Fatalf("%s: read in one pass, refused by the decoder", body)
		}
		if absent := len(slow.Data) == 0 || string(slow.Data) == "null"; absent {
			if len(data) != 0 && string(data) != "null" {
				t.Fatalf("%s: one pass read data %s, the decoder none", body, data)
			}
			data = want
		}
		if string(data) != string(want) || string(fast.TTL) != string(slow.TTL) || string(fast.ExpiresAt) != string(slow.ExpiresAt) ||
			(fast.ClassName == nil) != (slow.ClassName == nil) || (fast.ClassName != nil && *fast.ClassName != *slow.ClassName) {
			t.Fatalf("%s: one pass read data %s ttl %s expiresAt %s className %v; the decoder %s %s %s %v",
				body, data, fast.TTL, fast.ExpiresAt, fast.ClassName, want, slow.TTL, slow.ExpiresAt, slow.ClassName)
		}
	}
	if read < 2000 {
		t.Errorf("only %d of 20000 bodies were read in one pass", read)
	}
}
