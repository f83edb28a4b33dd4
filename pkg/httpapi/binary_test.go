package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

// png is the start of a PNG file: bytes that are not UTF-8.
var png = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{0xff, 0x00, 0x7f}, 100)...)

func TestBinaryRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := base + "/avatars/alice"
	r := e.send("POST", path, png, "Content-Type", "image/png", "X-Uds-Subject", "alice",
		"Uds-Class-Name", "Avatar", "Uds-Ttl", "3600").expect(t, http.StatusCreated)
	created := decodeJSON(t, r.raw)
	if created["contentType"] != "image/png" || num(t, created["size"]) != int64(len(png)) || created["className"] != "Avatar" {
		t.Fatalf("created %s", r.raw)
	}
	if _, ok := created["dataBase64"]; ok {
		t.Fatalf("a write answer echoes the bytes: %s", r.raw)
	}
	if _, ok := created["data"]; ok {
		t.Fatalf("a binary item shows data: %s", r.raw)
	}
	etag := r.header.Get("ETag")

	t.Run("get answers the bytes and the item's fields in headers", func(t *testing.T) {
		g := e.send("GET", path, nil).expect(t, http.StatusOK)
		if !bytes.Equal(g.raw, png) {
			t.Fatalf("body %q, want the bytes written", g.raw)
		}
		for name, want := range map[string]string{
			"Content-Type": "image/png", "Content-Length": strconv.Itoa(len(png)), "ETag": etag,
			"Accept-Ranges": "bytes", "Uds-Version": "1", "Uds-Class-Name": "Avatar",
			"Uds-Created-By-Subject": "alice", "Uds-Updated-By-Subject": "alice",
		} {
			if got := g.header.Get(name); got != want {
				t.Errorf("%s: %q, want %q", name, got, want)
			}
		}
		for _, name := range []string{"Uds-Created-Date", "Uds-Updated-Date", "Uds-Expires-At"} {
			if g.header.Get(name) == "" {
				t.Errorf("%s missing", name)
			}
		}
	})
	t.Run("head answers the headers without the bytes", func(t *testing.T) {
		h := e.send("HEAD", path, nil).expect(t, http.StatusOK)
		if len(h.raw) != 0 || h.header.Get("Content-Length") != strconv.Itoa(len(png)) {
			t.Fatalf("HEAD body %d bytes, Content-Length %q", len(h.raw), h.header.Get("Content-Length"))
		}
	})
	t.Run("if-none-match", func(t *testing.T) {
		e.send("GET", path, nil, "If-None-Match", etag).expect(t, http.StatusNotModified)
	})
	ranges := []struct {
		name, spec   string
		status       int
		body         []byte
		contentRange string
	}{
		{"first bytes", "bytes=0-7", http.StatusPartialContent, png[:8], "bytes 0-7/" + strconv.Itoa(len(png))},
		{"from an offset", "bytes=300-", http.StatusPartialContent, png[300:], "bytes 300-" + strconv.Itoa(len(png)-1) + "/" + strconv.Itoa(len(png))},
		{"suffix", "bytes=-4", http.StatusPartialContent, png[len(png)-4:], "bytes " + strconv.Itoa(len(png)-4) + "-" + strconv.Itoa(len(png)-1) + "/" + strconv.Itoa(len(png))},
		{"end past the value", "bytes=310-9999", http.StatusPartialContent, png[310:], "bytes 310-" + strconv.Itoa(len(png)-1) + "/" + strconv.Itoa(len(png))},
		{"start past the value", "bytes=9999-", http.StatusRequestedRangeNotSatisfiable, nil, "bytes */" + strconv.Itoa(len(png))},
		{"several ranges answer the whole value", "bytes=0-1,4-5", http.StatusOK, png, ""},
		{"another unit answers the whole value", "items=0-1", http.StatusOK, png, ""},
	}
	for _, tc := range ranges {
		t.Run("range "+tc.name, func(t *testing.T) {
			g := e.send("GET", path, nil, "Range", tc.spec).expect(t, tc.status)
			if tc.body != nil && !bytes.Equal(g.raw, tc.body) {
				t.Fatalf("body %d bytes, want %d", len(g.raw), len(tc.body))
			}
			if got := g.header.Get("Content-Range"); got != tc.contentRange {
				t.Fatalf("Content-Range %q, want %q", got, tc.contentRange)
			}
		})
	}
	t.Run("a stale If-Range answers the whole value", func(t *testing.T) {
		g := e.send("GET", path, nil, "Range", "bytes=0-1", "If-Range", `"9-x"`).expect(t, http.StatusOK)
		if !bytes.Equal(g.raw, png) {
			t.Fatal("not the whole value")
		}
	})
	t.Run("the quota counts the bytes as stored", func(t *testing.T) {
		used, items := e.quota(app, "alice")
		key := len(app) + len("|avatars|alice")
		if want := int64(key + len(png) + len("image/png") + len("Avatar") + 100); used != want || items != 1 {
			t.Fatalf("usage %d bytes %d items, want %d and 1", used, items, want)
		}
	})
	t.Run("put replaces bytes with JSON and JSON with bytes", func(t *testing.T) {
		u := e.do("PUT", path, `{"data": {"initials": "A"}}`, "If-Match", etag).expect(t, http.StatusOK)
		if u.body["contentType"] != nil || u.body["data"] == nil {
			t.Fatalf("JSON update answered %s", u.raw)
		}
		g := e.do("GET", path, "").expect(t, http.StatusOK)
		if g.body["data"].(map[string]any)["initials"] != "A" {
			t.Fatalf("get after JSON update: %s", g.raw)
		}
		b := e.send("PUT", path, []byte("hello"), "Content-Type", "text/plain; charset=utf-8").expect(t, http.StatusOK)
		if decodeJSON(t, b.raw)["contentType"] != "text/plain; charset=utf-8" {
			t.Fatalf("binary update answered %s", b.raw)
		}
		g = e.send("GET", path, nil).expect(t, http.StatusOK)
		if string(g.raw) != "hello" || g.header.Get("Content-Type") != "text/plain; charset=utf-8" || g.header.Get("Uds-Class-Name") != "" {
			t.Fatalf("get after binary update: %q %v", g.raw, g.header)
		}
		used, items := e.quota(app, "alice")
		if want := int64(len(app) + len("|avatars|alice") + len("hello") + len("text/plain; charset=utf-8") + 100); used != want || items != 1 {
			t.Fatalf("usage %d bytes %d items, want %d and 1", used, items, want)
		}
	})
	t.Run("curl's default form type is a JSON write", func(t *testing.T) {
		r := e.send("POST", base+"/avatars/form", []byte(`{"data": {"a": 1}}`), "Content-Type", "application/x-www-form-urlencoded").expect(t, http.StatusCreated)
		if body := decodeJSON(t, r.raw); body["data"] == nil || body["contentType"] != nil {
			t.Fatalf("a form-typed JSON write answered %s", r.raw)
		}
		e.send("POST", base+"/avatars/form2", []byte("a=1"), "Content-Type", "application/x-www-form-urlencoded").expect(t, http.StatusBadRequest)
	})
	t.Run("delete releases it", func(t *testing.T) {
		e.do("DELETE", path, "").expect(t, http.StatusNoContent)
		if used, items := e.quota(app, "alice"); used != 0 || items != 0 {
			t.Fatalf("usage %d bytes %d items after the delete", used, items)
		}
	})
}

func TestBinaryListItemsAndPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	list := base + "/clips/c1"
	e.send("POST", list+"/a", png, "Content-Type", "audio/ogg").expect(t, http.StatusCreated)
	e.send("POST", list+"/b", nil, "Content-Type", "application/octet-stream").expect(t, http.StatusCreated)
	e.do("POST", list+"/c", `{"data": 1}`).expect(t, http.StatusCreated)
	page := e.do("GET", list+"/list", "").expect(t, http.StatusOK)
	items := page.body["list"].([]any)
	if len(items) != 3 {
		t.Fatalf("page %s", page.raw)
	}
	a, b, c := items[0].(map[string]any), items[1].(map[string]any), items[2].(map[string]any)
	if a["contentType"] != "audio/ogg" || a["dataBase64"] != base64.StdEncoding.EncodeToString(png) || num(t, a["size"]) != int64(len(png)) {
		t.Fatalf("binary list item %v", a)
	}
	if b["dataBase64"] != "" || num(t, b["size"]) != 0 {
		t.Fatalf("empty binary list item %v", b)
	}
	if _, ok := c["contentType"]; ok || c["data"] == nil {
		t.Fatalf("JSON list item %v", c)
	}
	g := e.send("GET", list+"/b", nil).expect(t, http.StatusOK)
	if len(g.raw) != 0 || g.header.Get("Content-Length") != "0" {
		t.Fatalf("empty value answered %q", g.raw)
	}
	e.do("DELETE", list+"/list", "").expect(t, http.StatusNoContent)
	if used, items := e.quota(app, "anonymous"); used != 0 || items != 0 {
		t.Fatalf("usage %d bytes %d items after delete-all", used, items)
	}
	t.Run("pages of large inline values fit a function's answer", func(t *testing.T) {
		big := bytes.Repeat([]byte{0xfe}, uds.MaxInlineBytes)
		const n = 16 // 5.6 MB of bytes, 7.5 MB in base64: more than one answer holds
		for i := range n {
			e.send("POST", base+"/clips/big/"+strconv.Itoa(100+i), big, "Content-Type", "audio/ogg").expect(t, http.StatusCreated)
		}
		seen, pages := 0, 0
		for cursor := ""; pages == 0 || cursor != ""; pages++ {
			q := ""
			if cursor != "" {
				q = "?cursor=" + cursor
			}
			page := e.do("GET", base+"/clips/big/list"+q, "").expect(t, http.StatusOK)
			if len(page.raw) > 5_000_000 {
				t.Fatalf("a page of %d bytes: past the payload budget", len(page.raw))
			}
			seen += len(page.body["list"].([]any))
			cursor, _ = page.body["cursor"].(string)
		}
		if seen != n || pages < 2 {
			t.Fatalf("%d items in %d pages, want %d in two or more", seen, pages, n)
		}
	})
}

func TestBinaryRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("PUT", admin+"/apps/"+app+"/namespaces/typed", `{"access": "shared", "schema": {"type": "object"}}`).expect(t, http.StatusOK)
	e.do("PUT", admin+"/apps/"+app+"/namespaces/images", `{"access": "shared", "schema": {"type": "object"}, "binary": {"contentTypes": ["image/*", "application/pdf"], "maxBytes": 100}}`).expect(t, http.StatusOK)
	cases := []struct {
		name, path  string
		body        []byte
		contentType string
		headers     []string
		status      int
		inBody      string
	}{
		{"a schema takes JSON only", "/typed/x", png, "image/png", nil, http.StatusUnprocessableEntity, "JSON only"},
		{"a rule's whole type", "/images/x", png[:50], "image/webp", nil, http.StatusCreated, ""},
		{"a rule's exact type", "/images/y", png[:50], "application/pdf", nil, http.StatusCreated, ""},
		{"a type the rule does not name", "/images/z", png[:50], "text/plain", nil, http.StatusUnprocessableEntity, "not one the namespace accepts"},
		{"over the rule's size cap", "/images/z", png, "image/png", nil, http.StatusUnprocessableEntity, "at most 100"},
		{"over the inline limit", "/free/big", make([]byte, uds.MaxInlineBytes+1), "image/png", nil, http.StatusRequestEntityTooLarge, "?upload"},
		{"a malformed content type", "/free/x", png, "image png", nil, http.StatusBadRequest, "type/subtype"},
		{"a bad ttl header", "/free/x", png, "image/png", []string{"Uds-Ttl", "soon"}, http.StatusBadRequest, "Uds-Ttl header"},
		{"a bad expiry header", "/free/x", png, "image/png", []string{"Uds-Expires-At", "1700000000"}, http.StatusBadRequest, "Uds-Expires-At header"},
		{"a class name with a control character", "/free/x", png, "image/png", []string{"Uds-Class-Name", "a\tb"}, http.StatusBadRequest, "Uds-Class-Name header"},
		{"a ttl header twice", "/free/x", png, "image/png", []string{"Uds-Ttl", "10", "Uds-Ttl", "20"}, http.StatusBadRequest, "is sent 2 times"},
		// A JSON body carries its fields: the headers, ignored, would
		// leave the client believing it set them.
		{"a ttl header on a JSON write", "/free/j", []byte(`{"data":1}`), "application/json", []string{"Uds-Ttl", "10"}, http.StatusBadRequest, "a JSON body carries className, ttl and expiresAt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.send("POST", base+tc.path, tc.body, append([]string{"Content-Type", tc.contentType}, tc.headers...)...).expect(t, tc.status)
			if !strings.Contains(string(r.raw), tc.inBody) {
				t.Fatalf("body %s does not say %q", r.raw, tc.inBody)
			}
		})
	}
	t.Run("the policy shows its rule", func(t *testing.T) {
		p := e.do("GET", admin+"/apps/"+app+"/namespaces/images", "").expect(t, http.StatusOK)
		rule := p.body["binary"].(map[string]any)
		if len(rule["contentTypes"].([]any)) != 2 || num(t, rule["maxBytes"]) != 100 {
			t.Fatalf("policy %s", p.raw)
		}
	})
	policies := []struct{ name, body, inBody string }{
		{"no content types", `{"access": "shared", "binary": {"contentTypes": []}}`, "binary.contentTypes"},
		{"a JSON type", `{"access": "shared", "binary": {"contentTypes": ["application/json"]}}`, "binary.contentTypes[0]"},
		{"a wildcard for everything", `{"access": "shared", "binary": {"contentTypes": ["*/*"]}}`, "binary.contentTypes[0]"},
		{"a size cap past 5 GB", `{"access": "shared", "binary": {"contentTypes": ["image/png"], "maxBytes": 5368709121}}`, "binary.maxBytes"},
		{"a fractional size cap", `{"access": "shared", "binary": {"contentTypes": ["image/png"], "maxBytes": 1.5}}`, "binary.maxBytes"},
	}
	for _, tc := range policies {
		t.Run("policy with "+tc.name, func(t *testing.T) {
			r := e.do("PUT", admin+"/apps/"+app+"/namespaces/bad", tc.body).expect(t, http.StatusBadRequest)
			if !strings.Contains(string(r.raw), tc.inBody) {
				t.Fatalf("body %s does not name %q", r.raw, tc.inBody)
			}
		})
	}
}

// decodeJSON decodes a JSON object answer, numbers kept as json.Number.
func decodeJSON(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var out map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("not a JSON object: %q", raw)
	}
	return out
}

func TestBinaryInJSONForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	encoded := base64.StdEncoding.EncodeToString(png)
	t.Run("a JSON body carries bytes in base64", func(t *testing.T) {
		e.do("POST", base+"/files/j", `{"dataBase64": "`+encoded+`", "contentType": "image/png", "className": "Logo"}`).expect(t, http.StatusCreated)
		g := e.send("GET", base+"/files/j", nil).expect(t, http.StatusOK)
		if !bytes.Equal(g.raw, png) || g.header.Get("Uds-Class-Name") != "Logo" {
			t.Fatalf("get: %q %v", g.raw, g.header)
		}
	})
	t.Run("a batch writes and reads bytes", func(t *testing.T) {
		e.do("POST", base+"/batch", `{"operations": [
			{"method": "POST", "path": "files/b", "body": {"dataBase64": "`+encoded+`", "contentType": "image/png"}}]}`).expect(t, http.StatusOK)
		r := e.do("POST", base+"/batch", `{"operations": [{"method": "GET", "path": "files/b"}]}`).expect(t, http.StatusOK)
		read := r.body["results"].([]any)[0].(map[string]any)["body"].(map[string]any)
		if read["dataBase64"] != encoded || read["contentType"] != "image/png" {
			t.Fatalf("batch read %s", r.raw)
		}
	})
	t.Run("export and import carry bytes", func(t *testing.T) {
		records := e.exportAll(t, app, 100)
		other := "0c5c3a56-6c8b-4d7e-9a3e-3c1f6f1f7a10"
		if got := e.importRecords(t, other, records); got.Imported != len(records) {
			t.Fatalf("imported %+v of %d", got, len(records))
		}
		g := e.send("GET", "/rest/api/v1/data/"+other+"/files/b", nil).expect(t, http.StatusOK)
		if !bytes.Equal(g.raw, png) || g.header.Get("Content-Type") != "image/png" {
			t.Fatalf("imported item answered %q", g.raw)
		}
		if again := e.importRecords(t, other, records); again.Skipped != len(records) {
			t.Fatalf("a second import: %+v, want every record skipped", again)
		}
		if a, b := mustQuota(e, app), mustQuota(e, other); a != b {
			t.Fatalf("usage %d in the source, %d after the import", a, b)
		}
	})
	refusals := []struct{ name, body, inBody string }{
		{"data beside dataBase64", `{"data": 1, "dataBase64": "AA==", "contentType": "image/png"}`, "Invalid data"},
		{"dataBase64 without a type", `{"dataBase64": "AA=="}`, "contentType"},
		{"a type without bytes", `{"contentType": "image/png"}`, "dataBase64"},
		{"base64 without padding", `{"dataBase64": "AA", "contentType": "image/png"}`, "standard base64"},
		{"a JSON content type", `{"dataBase64": "AA==", "contentType": "application/json"}`, "contentType"},
	}
	for _, tc := range refusals {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			r := e.do("POST", base+"/files/bad", tc.body).expect(t, http.StatusBadRequest)
			if !strings.Contains(string(r.raw), tc.inBody) {
				t.Fatalf("body %s does not name %s", r.raw, tc.inBody)
			}
		})
	}
	importRefusals := []struct{ name, record, inBody string }{
		{"a size that is not the bytes'", `{"namespace": "f", "id": "x", "owner": "o", "createdBySubject": "o", "updatedBySubject": "o", "version": 1, "contentType": "image/png", "size": 5, "dataBase64": "AA=="}`, "records[0].size"},
	}
	for _, tc := range importRefusals {
		t.Run("import refuses "+tc.name, func(t *testing.T) {
			r := e.do("POST", admin+"/apps/"+app+"/import", `{"records": [`+tc.record+`]}`).expect(t, http.StatusBadRequest)
			if !strings.Contains(string(r.raw), tc.inBody) {
				t.Fatalf("body %s does not name %s", r.raw, tc.inBody)
			}
		})
	}
}

// mustQuota is the anonymous caller's used bytes in an app.
func mustQuota(e *env, appID string) int64 {
	used, _ := e.quota(appID, "anonymous")
	return used
}
