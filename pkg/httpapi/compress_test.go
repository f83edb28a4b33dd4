package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
)

// raw sends a request without the client's transparent decompression and
// returns the status, headers and body as they came.
func (e *env) raw(method, path string, body []byte, headers ...string) (int, http.Header, []byte) {
	e.t.Helper()
	r := e.roundTrip(&http.Transport{DisableCompression: true}, method, path, body, headers...)
	return r.status, r.header, r.raw
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gzipped(b []byte) []byte {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write(b)
	_ = w.Close()
	return z.Bytes()
}

// TestResponseCompression checks which answers go gzip encoded: large
// ones without an ETag, to clients that accept gzip, decoding to exactly
// the plain answer.
func TestResponseCompression(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	list := base + "/gz/feed"
	for i := range 60 {
		e.do("POST", fmt.Sprintf("%s/k%03d", list, i), fmt.Sprintf(`{"data":{"title":"entry %d","tags":["news","sport"],"score":%d.5,"read":false}}`, i, i*37)).expect(t, 201)
	}
	e.do("POST", base+"/gz/big", `{"data":"`+strings.Repeat("large value ", 1000)+`"}`).expect(t, 201)
	_, _, plain := e.raw("GET", list+"/list?limit=100", nil)
	for _, tc := range []struct {
		name, path, accept string
		gzip, vary         bool
	}{
		{"page, gzip accepted", list + "/list?limit=100", "gzip, deflate, br", true, true},
		{"page, gzip with a q-value", list + "/list?limit=100", "br;q=1.0, gzip;q=0.5", true, true},
		{"page, any coding", list + "/list?limit=100", "*", true, true},
		{"page, gzip refused", list + "/list?limit=100", "gzip;q=0, identity", false, true},
		{"page, nothing accepted", list + "/list?limit=100", "", false, true},
		{"small page", list + "/list?limit=2", "gzip", false, false},
		{"item with an ETag", base + "/gz/big", "gzip", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := e.raw("GET", tc.path, nil, "Accept-Encoding", tc.accept)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if got := h.Get("Content-Encoding") == "gzip"; got != tc.gzip {
				t.Fatalf("Content-Encoding %q, want gzip=%v", h.Get("Content-Encoding"), tc.gzip)
			}
			if got := h.Get("Vary") == "Accept-Encoding"; got != tc.vary {
				t.Errorf("Vary %q, want Accept-Encoding=%v", h.Get("Vary"), tc.vary)
			}
			if h.Get("Content-Length") != fmt.Sprint(len(body)) {
				t.Errorf("Content-Length %s for %d bytes", h.Get("Content-Length"), len(body))
			}
			if tc.gzip {
				if got := gunzip(t, body); !bytes.Equal(got, plain) {
					t.Errorf("the gzip body decodes to %d bytes, not the %d-byte plain answer", len(got), len(plain))
				}
				if ratio := float64(len(plain)) / float64(len(body)); ratio < 5 {
					t.Errorf("a page of %d bytes compressed only %.1fx (%d bytes)", len(plain), ratio, len(body))
				}
			}
		})
	}
	t.Run("HEAD", func(t *testing.T) {
		// A HEAD's headers are its GET's, the encoding included.
		status, h, body := e.raw("HEAD", list+"/list?limit=100", nil, "Accept-Encoding", "gzip")
		if status != 200 || len(body) != 0 || h.Get("Content-Encoding") != "gzip" {
			t.Errorf("HEAD answered %d, %q, %d bytes", status, h.Get("Content-Encoding"), len(body))
		}
	})
}

// TestCompressedRequests checks gzip request bodies: read as plain ones,
// bounded by the same limits once expanded, and refused when broken or in
// a coding UDS does not read, with nothing written.
func TestCompressedRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	value := `{"data":{"text":"` + strings.Repeat("compressible ", 500) + `"}}`
	status, _, body := e.raw("POST", base+"/gzreq/ok", gzipped([]byte(value)), "Content-Encoding", "gzip", "Content-Type", "application/json")
	if status != 201 {
		t.Fatalf("a gzip body: %d %s", status, body)
	}
	if got := e.do("GET", base+"/gzreq/ok", "").expect(t, 200); !strings.Contains(string(got.raw), strings.Repeat("compressible ", 500)) {
		t.Errorf("the stored value differs from the one sent")
	}
	bomb := gzipped([]byte(`{"data":"` + strings.Repeat("a", 3<<20) + `"}`))
	for _, tc := range []struct {
		name, coding string
		body         []byte
		status       int
		error        string
	}{
		{"expands past the limit", "gzip", bomb, 413, "Payload too large"},
		{"not gzip", "gzip", []byte(value), 400, "Invalid body"},
		{"truncated", "gzip", gzipped([]byte(value))[:40], 400, "Invalid body"},
		{"brotli", "br", []byte(value), 415, "Unsupported content encoding"},
		{"deflate", "deflate", []byte(value), 415, "Unsupported content encoding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := e.raw("POST", base+"/gzreq/"+strings.ReplaceAll(tc.name, " ", "-"), tc.body, "Content-Encoding", tc.coding)
			if status != tc.status || !strings.Contains(string(body), `"error":"`+tc.error+`"`) {
				t.Errorf("answered %d %s, want %d %q", status, body, tc.status, tc.error)
			}
		})
	}
	if n := e.count(e.tables.Data); n != 1 {
		t.Errorf("refused requests wrote: %d items stored, want 1", n)
	}
}

// TestCompressedValuesAreSplicedIntoGzipPages checks a list page whose
// values are stored compressed, asked for gzip encoded: one gzip member
// that decodes to exactly the plain page, carrying each stored value's
// compressed stream as it is (the stored bytes appear in the answer), with
// small values beside them and a cursor that continues either way.
func TestCompressedValuesAreSplicedIntoGzipPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	list := base + "/gz/mixed"
	for i := range 9 {
		value := fmt.Sprintf(`{"n":%d}`, i)
		if i%3 != 1 {
			value = fmt.Sprintf(`{"n":%d,"text":"%s"}`, i, strings.Repeat(fmt.Sprintf("entry %d of the feed, ", i), 400))
		}
		e.do("POST", fmt.Sprintf("%s/k%d", list, i), `{"data":`+value+`,"className":"Entry"}`).expect(t, 201)
	}
	out, err := e.client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.tables.List)})
	if err != nil {
		t.Fatal(err)
	}
	var stored [][]byte
	for _, it := range out.Items {
		if v, ok := it[schema.AttrDataValueGzip].(*types.AttributeValueMemberB); ok {
			stored = append(stored, v.Value)
		}
	}
	if len(stored) != 6 {
		t.Fatalf("%d values stored compressed, want 6", len(stored))
	}
	for _, path := range []string{list + "/list", list + "/list?limit=4", list + "/list?limit=4&sortOrder=DESC"} {
		t.Run(path[len(list):], func(t *testing.T) {
			_, _, plain := e.raw("GET", path, nil)
			status, h, body := e.raw("GET", path, nil, "Accept-Encoding", "gzip")
			if status != 200 || h.Get("Content-Encoding") != "gzip" || h.Get("Vary") != "Accept-Encoding" {
				t.Fatalf("answered %d, headers %v", status, h)
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			zr.Multistream(false) // one member: every HTTP client reads it
			got, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("the gzip page decodes to %d bytes (%v), not the %d-byte plain page", len(got), err, len(plain))
			}
			carried := 0
			for _, z := range stored {
				// The stored member's deflate data, past its header
				// and short of its closing block and trailer.
				if bytes.Contains(body, z[10:len(z)-16]) {
					carried++
				}
			}
			if want := strings.Count(string(plain), `"text":`); carried != want {
				t.Errorf("%d stored streams carried into the answer, want the page's %d", carried, want)
			}
		})
	}
}
