package gzsplice

import (
	"bytes"
	"compress/gzip"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

// member gzips data as UDS stores values: compress/gzip at BestSpeed.
func member(t testing.TB, data []byte, level int) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// randomData is text of a random length: repetitive JSON-like words, or
// bytes that do not compress, so that members end their data on every bit
// position and with every kind of block.
func randomData(rng *rand.Rand) []byte {
	n := rng.IntN(40_000)
	if rng.IntN(4) == 0 {
		n = rng.IntN(40)
	}
	b := make([]byte, n)
	words := []string{`{"id":`, `"name":"alpha"`, `,`, `}`, `"tags":["x","y"]`, `12.5`, ` `}
	noise := rng.IntN(3) == 0
	for i := 0; i < n; {
		if noise {
			b[i] = byte(rng.Uint32())
			i++
			continue
		}
		i += copy(b[i:], words[rng.IntN(len(words))])
	}
	return b
}

// Spliced streams inflate to exactly the plain runs and members' data in
// order, as one gzip member with a correct CRC-32 and length, whatever the
// members hold and wherever their data ends within a byte.
func TestSplicedStreamsInflateToTheWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seenBits := map[byte]bool{}
	for round := range 300 {
		var w Writer
		w.Start(nil)
		var want []byte
		parts := rng.IntN(6)
		for range parts {
			plain := randomData(rng)
			data := randomData(rng)
			level := []int{gzip.BestSpeed, gzip.DefaultCompression, gzip.NoCompression, gzip.HuffmanOnly}[rng.IntN(4)]
			m, ok := Parse(member(t, data, level))
			if !ok {
				t.Fatalf("round %d: a member compress/gzip wrote (%d bytes, level %d) does not parse", round, len(data), level)
			}
			if m.Size() != len(data) {
				t.Fatalf("Size %d, want %d", m.Size(), len(data))
			}
			seenBits[m.bit] = true
			w.Splice(plain, m)
			want = append(append(want, plain...), data...)
		}
		last := randomData(rng)
		want = append(want, last...)
		z := w.Close(last)

		r, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		r.Multistream(false) // one member, not several
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("round %d: inflating the spliced stream: %v", round, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: inflated %d bytes, want %d", round, len(got), len(want))
		}
		if _, err := r.Header, r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.Reset(bytes.NewReader(z)); err != nil {
			t.Fatal(err)
		}
	}
	// The final bit sits at every position of its byte in some member.
	for k := range 8 {
		if !seenBits[1<<k] {
			t.Errorf("no member had its final bit at bit %d: the spill cases are untested", k)
		}
	}
}

// Parse refuses what it cannot splice: other writers' headers, truncated
// members, streams that do not end in an empty stored block.
func TestParseRefusesOtherStreams(t *testing.T) {
	data := []byte(`{"a":"` + string(bytes.Repeat([]byte("xyz"), 3000)) + `"}`)
	good := member(t, data, gzip.BestSpeed)
	var named bytes.Buffer
	w := gzip.NewWriter(&named)
	w.Name = "value.json"
	_, _ = w.Write(data)
	_ = w.Close()

	for _, c := range []struct {
		name string
		z    []byte
	}{
		{"empty", nil},
		{"header only", good[:10]},
		{"truncated", good[:len(good)-3]},
		{"not gzip", append([]byte{0x1f, 0x8c}, good[2:]...)},
		{"with a file name", named.Bytes()},
		{"trailer cut off the end", good[:len(good)-8]},
		{"no closing block", append(append([]byte{}, good[:len(good)-13]...), good[len(good)-8:]...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := Parse(c.z); ok {
				t.Error("parsed")
			}
		})
	}
	if _, ok := Parse(good); !ok {
		t.Error("a member compress/gzip wrote does not parse")
	}
}

func TestCRC32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		a, b := randomData(rng), randomData(rng)
		got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
		if want := crc32.ChecksumIEEE(append(append([]byte{}, a...), b...)); got != want {
			t.Fatalf("combine of %d and %d bytes: %08x, want %08x", len(a), len(b), got, want)
		}
	}
}
