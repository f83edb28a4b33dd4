// Package gzsplice builds one gzip stream out of plain bytes and gzip
// members that Go's compress/gzip wrote, carrying each member's compressed
// data on as it is instead of inflating and compressing it again.
//
// DEFLATE blocks can follow one another across any byte boundary, and a
// block only refers back to bytes that came before it, so the blocks of
// one stream can be placed inside another as long as none of them is
// marked final and the stream they join ends on a byte boundary. Go's
// compress/flate ends every stream it closes the same way: the data's
// blocks, none of them final, and then an empty stored block marked final,
// whose header is the last three bits before the padding and whose length
// fields are the last four bytes (00 00 ff ff). Clearing that one final
// bit turns the closing block into an empty non-final stored block (a sync
// marker), so the member's data ends on a byte boundary and can be spliced.
// The CRC-32 of the whole is combined from the members' own trailers.
package gzsplice

import (
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"math/bits"
	"sync"
)

// Member is a gzip member ready to be spliced.
type Member struct {
	// deflate is the member's deflate stream without header and trailer.
	deflate []byte
	// final is the index in deflate of the byte that holds the closing
	// block's final bit, and bit is that bit.
	final int
	bit   byte
	crc   uint32
	size  uint32
}

// headerLen is the length of a gzip header without optional fields, as
// compress/gzip writes it when Header is left empty.
const headerLen = 10

// Parse recognises a gzip member that Go's compress/gzip wrote with an
// empty Header: a ten-byte header, a deflate stream that ends with an
// empty final stored block, and the trailer. Anything else is not ok.
// Parse does not inflate the member: the stream is taken to be what its
// writer made it, and its CRC-32 (checked by whoever reads the spliced
// stream) is what vouches for its contents.
func Parse(z []byte) (Member, bool) {
	if len(z) < headerLen+5+8 || z[0] != 0x1f || z[1] != 0x8b || z[2] != 8 || z[3] != 0 {
		return Member{}, false
	}
	d := z[headerLen : len(z)-8]
	n := len(d)
	if d[n-4] != 0 || d[n-3] != 0 || d[n-2] != 0xff || d[n-1] != 0xff {
		return Member{}, false
	}
	// The closing block's three header bits (final, then type 00) sit
	// above the last data bits of their byte, followed by zero padding.
	// When they start at bit 6 or 7 the type spills into a byte of its
	// own, which is then zero.
	at := n - 5
	k := bits.Len8(d[at]) - 1
	switch {
	case k >= 0 && k <= 5:
	case k < 0 && at > 0 && bits.Len8(d[at-1]) >= 7:
		at--
		k = bits.Len8(d[at]) - 1
	default:
		return Member{}, false
	}
	return Member{
		deflate: d, final: at, bit: 1 << k,
		crc:  binary.LittleEndian.Uint32(z[len(z)-8:]),
		size: binary.LittleEndian.Uint32(z[len(z)-4:]),
	}, true
}

// Size is the length of the member's uncompressed data (modulo 2^32, as
// its trailer gives it).
func (m Member) Size() int { return int(m.size) }

// CompressedSize is what the member adds to a spliced stream.
func (m Member) CompressedSize() int { return len(m.deflate) }

// storedMax is the longest run of plain bytes sent as a stored block
// rather than compressed: a short run between two members (the JSON around
// a value) compresses to little, and a compressed block pays its Huffman
// tables, so copying it is both cheaper and about as small.
const storedMax = 1024

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// Writer assembles one gzip member from plain runs and spliced members.
// Use it as Start, then Splice any number of times, then Close.
type Writer struct {
	out  []byte
	crc  uint32
	size uint32
	fw   *flate.Writer
}

// Start begins a gzip member in dst's spare capacity (dst is overwritten
// from its start).
func (w *Writer) Start(dst []byte) {
	*w = Writer{out: append(dst[:0], 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff)}
}

// Splice adds the plain bytes p and then member m.
func (w *Writer) Splice(p []byte, m Member) {
	w.plain(p, false)
	w.out = append(w.out, m.deflate[:m.final]...)
	w.out = append(w.out, m.deflate[m.final]&^m.bit)
	w.out = append(w.out, m.deflate[m.final+1:]...)
	w.crc = crc32Combine(w.crc, m.crc, int64(m.size))
	w.size += m.size
}

// Close adds the plain bytes p, ends the stream and returns the member.
func (w *Writer) Close(p []byte) []byte {
	w.plain(p, true)
	if w.fw != nil {
		flateWriters.Put(w.fw)
		w.fw = nil
	}
	w.out = binary.LittleEndian.AppendUint32(w.out, w.crc)
	w.out = binary.LittleEndian.AppendUint32(w.out, w.size)
	return w.out
}

// plain adds p in blocks that end on a byte boundary, the last of them
// final if final is set.
func (w *Writer) plain(p []byte, final bool) {
	w.crc = crc32.Update(w.crc, crc32.IEEETable, p)
	w.size += uint32(len(p))
	if len(p) <= storedMax {
		// One stored block: its three header bits pad to a byte, then
		// the length, its complement and the bytes.
		var header byte
		if final {
			header = 1
		}
		n := uint16(len(p))
		w.out = append(w.out, header, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		w.out = append(w.out, p...)
		return
	}
	// A fresh compressor for every run: its back-references must not
	// reach bytes that were spliced in since its last run.
	sink := (*appender)(&w.out)
	if w.fw == nil {
		w.fw = flateWriters.Get().(*flate.Writer)
	}
	w.fw.Reset(sink)
	_, _ = w.fw.Write(p) // an appender never fails
	if final {
		_ = w.fw.Close()
	} else {
		_ = w.fw.Flush()
	}
}

// appender is an io.Writer that appends to a byte slice.
type appender []byte

func (a *appender) Write(p []byte) (int, error) {
	*a = append(*a, p...)
	return len(p), nil
}

// crc32Combine returns the CRC-32 (IEEE) of A followed by B, given the
// CRC-32 of A, that of B and the length of B, as zlib's crc32_combine
// computes it: crcA is carried past lenB zero bytes by multiplying it by
// x^(8·lenB) modulo the CRC polynomial, then crcB is added.
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	return multModP(x2nModP(lenB, 3), crcA) ^ crcB
}

// crcPoly is the reflected IEEE polynomial.
const crcPoly = 0xedb88320

// multModP multiplies a and b modulo the CRC polynomial, in the reflected
// bit order CRC-32 uses (the x^0 coefficient is the top bit).
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2nTable holds x^(2^k) modulo the polynomial, for k from 0 to 31.
var x2nTable = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// x2nModP returns x^(n·2^k) modulo the polynomial.
func x2nModP(n int64, k uint) uint32 {
	p := uint32(1) << 31 // x^0
	for ; n != 0; n >>= 1 {
		if n&1 != 0 {
			p = multModP(x2nTable[k&31], p)
		}
		k++
	}
	return p
}
