package httpapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/internal/gzsplice"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// A page whose values are still compressed goes out as one gzip member
// that inflates to exactly the page written from the values themselves:
// mixed with plain values, at the start, the end and side by side, with
// every kind of key, class name and date around them.
func TestSplicedPagesInflateToThePlainPage(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 200 {
		items := make([]uds.Item, rng.IntN(12)+1)
		packed := make([]uds.Item, len(items))
		for i := range items {
			it := uds.Item{
				Key:       uds.Key{App: "d53065bd-f932-4841-83fb-849717d8df0f", Namespace: randomString(rng), ID: "feed", SortKey: randomString(rng) + "x"},
				ClassName: randomString(rng), CreatedBy: randomString(rng), UpdatedBy: randomString(rng), Version: rng.Int64N(1 << 20),
				CreatedDate: time.UnixMilli(rng.Int64N(1 << 42)).UTC(),
			}
			if rng.IntN(3) == 0 {
				it.ExpiresAt = time.UnixMilli(rng.Int64N(1 << 42)).UTC()
			}
			// Long runs of plain items between compressed ones are
			// compressed, short ones stored: both kinds occur.
			n := rng.IntN(3000)
			if rng.IntN(3) == 0 {
				n = 6000 + rng.IntN(30000)
			}
			it.Data = json.RawMessage(`{"v":"` + strings.Repeat(fmt.Sprint(rng.IntN(1000)), n/3) + `"}`)
			items[i], packed[i] = it, it
			if rng.IntN(2) == 0 {
				m, ok := gzsplice.Parse(gzipOf(t, it.Data))
				if !ok {
					t.Fatal("a value compress/gzip wrote does not parse")
				}
				packed[i].Data, packed[i].Compressed = nil, &m
			}
		}
		cursor := ""
		if rng.IntN(2) == 0 {
			cursor = "cursor-" + randomString(rng)
		}
		plain := httptest.NewRecorder()
		writeItemsPage(plain, "list", items, cursor)
		spliced := httptest.NewRecorder()
		writeItemsPage(spliced, "list", packed, cursor)

		anyPacked := false
		for _, it := range packed {
			anyPacked = anyPacked || it.Compressed != nil
		}
		if !anyPacked {
			if !bytes.Equal(spliced.Body.Bytes(), plain.Body.Bytes()) {
				t.Fatalf("round %d: a page without compressed values differs", round)
			}
			continue
		}
		if spliced.Header().Get("Content-Encoding") != "gzip" || spliced.Header().Get("Vary") != "Accept-Encoding" ||
			spliced.Header().Get("Content-Length") != fmt.Sprint(spliced.Body.Len()) {
			t.Fatalf("round %d: headers %v", round, spliced.Header())
		}
		zr, err := gzip.NewReader(spliced.Body)
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("round %d: inflating the page: %v", round, err)
		}
		if !bytes.Equal(got, plain.Body.Bytes()) {
			t.Fatalf("round %d: the gzip page inflates to %d bytes, not the %d-byte plain page", round, len(got), plain.Body.Len())
		}
	}
}

func gzipOf(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, store.ValueCompression)
	_, _ = w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
