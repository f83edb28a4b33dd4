package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

// FuzzRange reads Range headers of values of every size: a range taken
// lies within the value (start < end <= size), one refused as
// unsatisfiable starts past its end, and the rest are ignored (the whole
// value answers).
func FuzzRange(f *testing.F) {
	for _, s := range []string{
		"bytes=0-0", "bytes=0-", "bytes=-1", "bytes=-0", "bytes=5-2", "bytes=99-", "bytes=0-99999999999999999999",
		"bytes=1-2,3-4", "BYTES=0-1", " bytes = 0 - 1 ", "items=0-1", "bytes=", "bytes=-", "bytes=a-b", "bytes=+1-2",
		"bytes=-9223372036854775808", "bytes=0x1-2", "bytes=1-1e3", "bytes=\x00-1",
	} {
		for _, size := range []int64{0, 1, 10, 350 << 10} {
			f.Add(s, size)
		}
	}
	f.Fuzz(func(t *testing.T, spec string, size int64) {
		if size < 0 || size > uds.MaxObjectBytes {
			return
		}
		start, end, ok := parseRange(spec, size)
		switch {
		case !ok:
		case start < 0:
			// Unsatisfiable: only a range starting past the end, or an
			// empty suffix, is.
		case start >= end || end > size:
			t.Fatalf("range %q of %d bytes taken as [%d, %d)", spec, size, start, end)
		}
	})
}

// FuzzUploadBody parses declarations of uploads: what it accepts is an
// object of the declaration's members only, whose size is a whole number
// of bytes up to 5 GB written as one and whose content type is a media
// type that is not JSON.
func FuzzUploadBody(f *testing.F) {
	for _, s := range []string{
		`{"size":1,"contentType":"image/png"}`, `{"size":0,"contentType":"a/b"}`, `{"size":5368709120,"contentType":"video/mp4"}`,
		`{"size":5368709121,"contentType":"video/mp4"}`, `{"size":-1,"contentType":"a/b"}`, `{"size":-0,"contentType":"a/b"}`, `{"size":1.0,"contentType":"a/b"}`,
		`{"size":"1","contentType":"a/b"}`, `{"size":01,"contentType":"a/b"}`, `{"size":1e3,"contentType":"a/b"}`, `{"size":1}`,
		`{"contentType":"a/b"}`, `{"size":1,"contentType":"application/json"}`, `{"size":1,"contentType":"image"}`,
		`{"size":1,"contentType":"a/b","className":"Photo","ttl":60}`, `{"size":1,"contentType":"a/b","ttl":60,"expiresAt":"2030-01-01T00:00:00Z"}`,
		`{"size":1,"contentType":"a/b","size":2}`, `{"size":1,"contentType":"a/b","data":1}`, `[]`, `null`, ``, `{"size":null,"contentType":null}`,
		`{"size":9223372036854775808,"contentType":"a/b"}`, `{"Size":1,"contentType":"a/b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var w uds.Write
		err := parseUpload(body, &w, fuzzNow)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "size", "contentType", "className", "ttl", "expiresAt")
			return
		}
		m := objectMembers(t, body, "size", "contentType", "className", "ttl", "expiresAt")
		if strconv.FormatInt(w.Binary.Size, 10) != string(m["size"]) || w.Binary.Size > uds.MaxObjectBytes {
			t.Fatalf("size %s read as %d", m["size"], w.Binary.Size)
		}
		var ct string
		if json.Unmarshal(m["contentType"], &ct) != nil || uds.IsJSONType(w.Binary.ContentType) || uds.MediaType(ct) != uds.MediaType(w.Binary.ContentType) {
			t.Fatalf("contentType %s read as %q", m["contentType"], w.Binary.ContentType)
		}
		checkExpiry(t, m["ttl"], m["expiresAt"], w.ExpiresAt, fuzzNow)
	})
}

// FuzzBinaryWrite reads binary writes as the item routes do: a request
// that sends Content-Type twice (another, when set), or one that lists
// several types (as API Gateway joins two lines), is refused; what is
// taken stores the body's bytes as they came with the media type sent,
// one type and not a range of them, and an expiry and class name from
// headers that hold valid ones.
func FuzzBinaryWrite(f *testing.F) {
	for _, s := range []struct{ contentType, another, className, ttl, expiresAt string }{
		{"image/png", "", "", "", ""}, {"text/plain; charset=utf-8", "", "Note", "60", ""}, {"a/b", "", "", "", "2030-01-01T00:00:00Z"},
		{"image/png", "", "", "0", ""}, {"image/png", "", "", "60", "2030-01-01T00:00:00Z"}, {"image/png", "", "a\tb", "", ""},
		{"application/json", "", "", "", ""}, {"image", "", "", "", ""}, {"image/png; q=\"", "", "", "", ""}, {"x/y\x00", "", "", "", ""},
		{"image/png", "", "", "1e3", ""}, {"image/png", "", "", "", "1700000000"}, {"IMAGE/PNG", "", "C\u00e9", "", ""},
		{"*/*", "", "", "", ""}, {"image/*", "", "", "", ""}, {"*/png", "", "", "", ""}, {"*/*; q=0.8", "", "", "", ""},
		{"image/png", "text/html", "", "", ""}, {"application/json", "text/html", "", "", ""}, {"image/png", "image/png", "", "", ""},
		{"application/json, text/html", "", "", "", ""},
	} {
		f.Add(s.contentType, s.another, s.className, s.ttl, s.expiresAt, []byte{0x89, 'P', 'N', 'G'})
	}
	f.Fuzz(func(t *testing.T, contentType, another, className, ttl, expiresAt string, body []byte) {
		r := httptest.NewRequest(http.MethodPut, "/", bytes.NewReader(body))
		for _, h := range [][2]string{{"Content-Type", contentType}, {"Content-Type", another}, {HeaderClassName, className}, {HeaderTTL, ttl}, {HeaderExpiresAt, expiresAt}} {
			if h[1] != "" {
				r.Header[h[0]] = append(r.Header[h[0]], h[1])
			}
		}
		// Every route checks this first (serve), JSON writes too.
		err := checkRequestHeaders(r)
		if twice := len(r.Header["Content-Type"]) > 1 || listsSeveral(r.Header.Get("Content-Type")); twice != (err != nil) {
			t.Fatalf("Content-Type %q: %v", r.Header["Content-Type"], err)
		} else if twice {
			checkRefusal(t, []byte(contentType+another), err)
			checkInvalidField(t, err, "Content-Type")
			return
		}
		if !isBinaryWrite(r) {
			return // a JSON write: FuzzParseWrite's
		}
		var w uds.Write
		err = readBinaryWrite(r, &w, fuzzNow)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "Content-Type", HeaderClassName, HeaderTTL, HeaderExpiresAt, "body")
			return
		}
		if !bytes.Equal(w.Binary.Bytes, body) || w.Binary.Size != int64(len(body)) || len(body) > uds.MaxInlineBytes {
			t.Fatalf("%d bytes sent, %d stored (size %d)", len(body), len(w.Binary.Bytes), w.Binary.Size)
		}
		sent, stored := r.Header.Get("Content-Type"), uds.MediaType(w.Binary.ContentType)
		if main, sub, _ := strings.Cut(stored, "/"); stored != uds.MediaType(sent) || uds.IsJSONType(w.Binary.ContentType) || main == "*" || sub == "*" {
			t.Fatalf("Content-Type %q stored as %q", sent, w.Binary.ContentType)
		}
		if w.ClassName != className {
			t.Fatalf("class name %q stored as %q", className, w.ClassName)
		}
		var ttlJSON, atJSON json.RawMessage
		if ttl != "" {
			ttlJSON = json.RawMessage(ttl)
		}
		if expiresAt != "" {
			atJSON, _ = json.Marshal(expiresAt)
		}
		checkExpiry(t, ttlJSON, atJSON, w.ExpiresAt, fuzzNow)
	})
}

// FuzzCommitBody parses commits: what it accepts is {"uploadId": id} with
// an ID of the form uploads get.
func FuzzCommitBody(f *testing.F) {
	for _, s := range []string{
		`{"uploadId":"0123456789abcdef0123456789abcdef"}`, `{"uploadId":"0123456789ABCDEF0123456789abcdef"}`, `{"uploadId":"x"}`,
		`{"uploadId":null}`, `{}`, `{"uploadId":"0123456789abcdef0123456789abcdef","x":1}`, `{"UploadId":"0123456789abcdef0123456789abcdef"}`,
		`{"uploadId":"0123456789abcdef0123456789abcde\u0066"}`, `[]`, ``, `{"uploadId":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		id, err := parseCommit(body)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "uploadId")
			return
		}
		m := objectMembers(t, body, "uploadId")
		var sent string
		if json.Unmarshal(m["uploadId"], &sent) != nil || sent != id || !uds.ValidUploadID(id) {
			t.Fatalf("uploadId %s read as %q", m["uploadId"], id)
		}
	})
}
