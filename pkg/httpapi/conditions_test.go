package httpapi_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestConditionsKeptOrRefused: every condition a request carries is kept
// or refused with a 400 that names it, never ignored. A POST that creates
// (and ?upload, ?commit) takes no If-Match; a GET of an item keeps it
// (412); pages, which carry no ETag, take no condition; Content-Range,
// which names a part of a value, is refused on every request (RFC 9110
// says a PUT with it must be). Before, each of these was ignored: the POST
// created the item, the PUT stored the two bytes as the whole value, the
// GET answered 200.
func TestConditionsKeptOrRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const item = base + "/cond/a"
	etag := e.do("POST", item, `{"data":{"n":1}}`).expect(t, 201).header.Get("ETag")
	e.do("POST", base+"/cond/l/k1", `{"data":1}`).expect(t, 201)
	for _, c := range []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		field                    string
	}{
		{"POST with If-Match *", "POST", base + "/cond/new", `{"data":1}`, []string{"If-Match", "*"}, 400, "If-Match"},
		{"POST with a malformed If-Match", "POST", base + "/cond/new", `{"data":1}`, []string{"If-Match", "garbage"}, 400, "If-Match"},
		{"POST with If-None-Match *", "POST", base + "/cond/new", `{"data":1}`, []string{"If-None-Match", "*"}, 400, "If-None-Match"},
		{"POST ?upload with If-Match", "POST", base + "/cond/new?upload", `{"size":10,"contentType":"video/mp4"}`, []string{"If-Match", etag}, 400, "If-Match"},
		{"POST ?commit with If-Match", "POST", base + "/cond/new?commit", `{"uploadId":"x"}`, []string{"If-Match", etag}, 400, "If-Match"},
		{"PUT with Content-Range", "PUT", item, `{"data":{"n":2}}`, []string{"Content-Range", "bytes 0-1/20"}, 400, "Content-Range"},
		{"PATCH with Content-Range", "PATCH", item, `{"n":2}`, []string{"Content-Range", "bytes 0-1/20"}, 400, "Content-Range"},
		{"POST with Content-Range", "POST", base + "/cond/new", `{"data":1}`, []string{"Content-Range", "bytes 0-1/20"}, 400, "Content-Range"},
		{"GET with a stale If-Match", "GET", item, "", []string{"If-Match", `"9-abc"`}, 412, ""},
		{"GET with If-Match of its ETag", "GET", item, "", []string{"If-Match", etag}, 200, ""},
		{"GET with If-Match * ", "GET", item, "", []string{"If-Match", "*"}, 200, ""},
		{"GET of nothing with If-Match *", "GET", base + "/cond/none", "", []string{"If-Match", "*"}, 404, ""},
		{"GET with a malformed If-Match", "GET", item, "", []string{"If-Match", "garbage"}, 400, "If-Match"},
		{"GET with If-Unmodified-Since", "GET", item, "", []string{"If-Unmodified-Since", "Sat, 01 Jan 2000 00:00:00 GMT"}, 400, "If-Unmodified-Since"},
		{"HEAD with a stale If-Match", "HEAD", item, "", []string{"If-Match", `"9-abc"`}, 412, ""},
		{"a list page with If-None-Match *", "GET", base + "/cond/l/list", "", []string{"If-None-Match", "*"}, 400, "If-None-Match"},
		{"a changes page with If-Match", "GET", base + "/cond?changes", "", []string{"If-Match", "*"}, 400, "If-Match"},
		{"a history page with If-None-Match", "GET", item + "?history", "", []string{"If-None-Match", etag}, 400, "If-None-Match"},
		{"GET with Range twice", "GET", item, "", []string{"Range", "bytes=0-1", "Range", "bytes=2-3"}, 400, "Range"},
		{"a comma inside a tag", "GET", item, "", []string{"If-None-Match", `"a,b", ` + etag}, 304, ""},
		{"a tag list on two lines", "GET", item, "", []string{"If-Match", `"a,b"`, "If-Match", etag}, 200, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r response
			if c.method == "HEAD" {
				r = e.on(t).send(c.method, c.path, nil, c.headers...)
			} else {
				r = e.on(t).do(c.method, c.path, c.body, c.headers...)
			}
			r.expect(t, c.status)
			if c.field != "" && r.body["error"] != "Invalid "+c.field {
				t.Errorf("error %v, want Invalid %s; body %s", r.body["error"], c.field, r.raw)
			}
		})
	}
	// Nothing the refusals above named was written.
	e.do("GET", base+"/cond/new", "").expect(t, 404)
	if got := e.do("GET", item, "").expect(t, 200); got.header.Get("ETag") != etag {
		t.Errorf("the item is at %s, want %s unchanged", got.header.Get("ETag"), etag)
	}
}

// TestHeadersSentTwice: a header HTTP makes a list is read whole whether
// it comes on one line or several (Content-Encoding: identity, then gzip),
// and a caller named twice is refused rather than taken as the first, as
// is an empty Uds-Ttl.
// Before, the second Content-Encoding line was dropped and the gzip bytes
// stored as they came, and the write was stored as alice's.
func TestHeadersSentTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write([]byte("hello"))
	_ = zw.Close()
	e.send("POST", base+"/enc/g", z.Bytes(), "Content-Type", "text/plain", "Content-Encoding", "identity", "Content-Encoding", "gzip").expect(t, 201)
	if got := e.send("GET", base+"/enc/g", nil).expect(t, 200); string(got.raw) != "hello" {
		t.Errorf("stored %q, want hello", got.raw)
	}
	e.send("POST", base+"/enc/twice", z.Bytes(), "Content-Type", "text/plain", "Content-Encoding", "gzip, gzip").expect(t, 415)
	if r := e.do("POST", base+"/enc/h", "not gzip", "Content-Encoding", "gzip").expect(t, 400); !strings.Contains(r.body["details"].(string), "not a whole gzip stream") {
		t.Errorf("details %q do not say the body is not gzip", r.body["details"])
	}
	// An empty Uds-Ttl meant to set an expiry; before, it set none.
	e.send("POST", base+"/enc/ttl", []byte("x"), "Content-Type", "text/plain", "Uds-Ttl", "").expect(t, 400)
	e.do("POST", base+"/who/a", `{"data":1}`, "X-Uds-Subject", "alice", "X-Uds-Subject", "bob").expect(t, 401)
	e.do("GET", base+"/who/a", "").expect(t, 404)
}

// TestClassNameHeaderRoundTrip: a class name a read answers in
// Uds-Class-Name (percent-encoded, since it holds % and more than ASCII)
// names the same class when a write sends it back, and a header whose %
// begins no escape is refused. Before, the write stored the encoded text.
func TestClassNameHeaderRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const name = " café 100% "
	body, _ := json.Marshal(map[string]string{"dataBase64": "eA==", "contentType": "text/plain", "className": name})
	e.do("POST", base+"/cn/a", string(body)).expect(t, 201)
	sent := e.send("GET", base+"/cn/a", nil).expect(t, 200).header.Get("Uds-Class-Name")
	if sent != "%20caf%C3%A9%20100%25%20" {
		t.Fatalf("Uds-Class-Name %q", sent)
	}
	e.send("PUT", base+"/cn/a", []byte("y"), "Content-Type", "text/plain", "Uds-Class-Name", sent).expect(t, 200)
	var got struct {
		Results []struct {
			Body struct {
				ClassName string `json:"className"`
			} `json:"body"`
		} `json:"results"`
	}
	r := e.send("POST", base+"/batch", []byte(`{"operations":[{"method":"GET","path":"cn/a"}]}`), "Content-Type", "application/json").expect(t, 200)
	if err := json.Unmarshal(r.raw, &got); err != nil || len(got.Results) != 1 || got.Results[0].Body.ClassName != name {
		t.Errorf("className after the round trip: %s", r.raw)
	}
	e.send("PUT", base+"/cn/a", []byte("y"), "Content-Type", "text/plain", "Uds-Class-Name", "100%").expect(t, 400)
}

// TestQueryValuesAndMessages: a parameter that takes a value is refused
// empty (before, limit= and endKey= were taken as their defaults), and
// malformed input is refused in words of UDS's own: a query separated by
// ;, a media type's malformed parameter, JSON nested too deep. A key part
// echoed in an error is cut at the longest a valid key has.
func TestQueryValuesAndMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, q := range []string{"limit=", "endKey=", "sortOrder=", "cursor="} {
		r := e.do("GET", base+"/q/l/list?"+q, "").expect(t, 400)
		if want := "Invalid " + strings.TrimSuffix(q, "="); r.body["error"] != want {
			t.Errorf("?%s: error %v, want %s", q, r.body["error"], want)
		}
	}
	e.do("GET", base+"/q?changes=", "").expect(t, 200)
	for _, c := range []struct {
		name, path, body string
		headers          []string
		details          string
	}{
		{"a query separated by ;", base + "/q/l/list?limit=2;sortOrder=DESC", "", nil, "separates parameters with ;"},
		{"a repeated media type parameter", base + "/q/b", "x", []string{"Content-Type", "image/png; a=b; a=c"}, "malformed parameter after image/png"},
		{"JSON nested too deep", base + "/q/d", `{"data":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "}", nil, "more than 10000 deep"},
	} {
		t.Run(c.name, func(t *testing.T) {
			method := "GET"
			if c.body != "" {
				method = "POST"
			}
			var r response
			if len(c.headers) > 0 {
				r = e.on(t).send(method, c.path, []byte(c.body), c.headers...)
				_ = json.Unmarshal(r.raw, &r.body)
			} else {
				r = e.on(t).do(method, c.path, c.body)
			}
			r.expect(t, 400)
			if d, _ := r.body["details"].(string); !strings.Contains(d, c.details) {
				t.Errorf("details %q do not say %q", d, c.details)
			}
		})
	}
	long := strings.Repeat("x", 100_000)
	r := e.do("GET", base+"/q/"+long, "").expect(t, 400)
	if len(r.raw) > 8<<10 || !strings.HasSuffix(r.body["id"].(string), "…") {
		t.Errorf("a refused id of %d bytes answered %d bytes, id %d bytes", len(long), len(r.raw), len(r.body["id"].(string)))
	}
}

// TestHeadAnswersAsGet: a HEAD of a page the GET sends gzip encoded says
// so, with the encoded length, and says Vary: Accept-Encoding as the GET
// does. Before, HEAD answered the plain length without the encoding. A
// gzip the client weighs at zero is not sent, wherever * stands.
func TestHeadAnswersAsGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 20 {
		e.do("POST", base+"/h/l/k"+strconv.Itoa(100+i), `{"data":"`+strings.Repeat("v", 300)+`"}`).expect(t, 201)
	}
	for _, accept := range []string{"gzip", "identity", "gzip;q=0, *", "*, gzip;q=0"} {
		get := e.send("GET", base+"/h/l/list", nil, "Accept-Encoding", accept).expect(t, 200)
		head := e.send("HEAD", base+"/h/l/list", nil, "Accept-Encoding", accept).expect(t, 200)
		for _, h := range []string{"Content-Encoding", "Content-Length", "Vary"} {
			if get.header.Get(h) != head.header.Get(h) {
				t.Errorf("Accept-Encoding %s: GET says %s %q, HEAD %q", accept, h, get.header.Get(h), head.header.Get(h))
			}
		}
		if gz := get.header.Get("Content-Encoding") == "gzip"; gz != (accept == "gzip") {
			t.Errorf("Accept-Encoding %s: Content-Encoding %q", accept, get.header.Get("Content-Encoding"))
		}
		if get.header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %s: Vary %q", accept, get.header.Get("Vary"))
		}
	}
}

// TestNamespacesNamedLikeRoutes: the namespace quota, which takes writes,
// has a changes feed like any other; GET .../quota without a query is
// still the caller's quota. Before, ?changes there was refused. The path
// /data/{app}/batch is the batch route's (POST) and the namespace batch's
// (GET, HEAD): a 405 there names them all (before, POST alone). Both
// namespaces declare indexes and are queried by them.
func TestNamespacesNamedLikeRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("POST", base+"/quota/k1", `{"data":1}`).expect(t, 201)
	feed := e.do("GET", base+"/quota?changes", "").expect(t, 200)
	if !strings.Contains(string(feed.raw), `"k1"`) {
		t.Errorf("the feed of quota: %s", feed.raw)
	}
	if q := e.do("GET", base+"/quota", "").expect(t, 200); q.body["usedItems"] == nil {
		t.Errorf("GET quota: %s", q.raw)
	}
	e.do("GET", base+"/quota?limit=", "").expect(t, 400)
	// Both declare indexes and are queried as any namespace (before, a
	// declaration was refused).
	for _, ns := range []string{"quota", "batch"} {
		e.setPolicy(t, ns, `{"access":"shared","indexes":[{"name":"byTag","path":"/tag","type":"string"}]}`)
		e.buildIndexes(t, ns)
		e.do("POST", base+"/"+ns+"/tagged", `{"data":{"tag":"x"}}`).expect(t, 201)
		if got := e.queryAll(t, ns, "index=byTag&eq=x"); got != "tagged" {
			t.Errorf("namespace %s: the query found %q", ns, got)
		}
	}
	if r := e.do("DELETE", base+"/batch", "").expect(t, 405); r.header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("DELETE .../batch: Allow %q", r.header.Get("Allow"))
	}
	if r := e.do("PATCH", base+"/ns/id/list", "").expect(t, 400); r.body["error"] != "Invalid sortKey" {
		t.Errorf("PATCH of .../list: %s", r.raw)
	}
}

// TestRefusedUnread: a body declared longer than its route takes is
// refused (413) before any of it is read, so a client that waits for 100
// Continue sends none of it; and a request refused before its handler
// reads its body is answered without waiting for it. Before, the server
// said 100 Continue and read the whole body first, and net/http waited for
// 256 KB of a body the API had refused without reading, since the API
// had swapped the server's own request's body for its counting one.
func TestRefusedUnread(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct{ name, headers, status string }{
		{"declared too large, expecting 100 Continue", "Expect: 100-continue\r\n", "413"},
		{"refused before its body is read", "If-Match: garbage\r\n", "400"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(conn, "POST %s/big/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n", base, 3<<20, c.headers)
			status, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil || !strings.HasPrefix(status, "HTTP/1.1 "+c.status) {
				t.Errorf("answered %q (%v), want %s before the body", status, err, c.status)
			}
		})
	}
}
