package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestItemEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name, path       string
		notFound, exists string
		sortKey          string
	}{
		{"key-value item", base + "/user-preferences/user123", "Key not found", "Key already exists", ""},
		{"list item", base + "/user-activities/user123/2024-01-15T10:30:00Z", "Item not found", "Item already exists", "2024-01-15T10:30:00Z"},
		{"list item with slashes in its sort key", base + "/menu/main-nav/a/b/c", "Item not found", "Item already exists", "a/b/c"},
		{"list item with an encoded slash", base + "/menu/main-nav/x%2Fy", "Item not found", "Item already exists", "x/y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := e.do("GET", tc.path, "").expect(t, 404); r.body["details"] != nil {
				t.Errorf("GET's 404 says how to create: %s", r.raw)
			}
			// A PUT of a missing item says that POST creates, as many
			// stores upsert on PUT.
			r := e.do("PUT", tc.path, `{"data":{"a":1}}`).expect(t, 404)
			if r.body["code"] != "not_found" || r.body["error"] != tc.notFound || r.body["applicationUuid"] != app || r.body["timestamp"] == nil ||
				!strings.Contains(fmt.Sprint(r.body["details"]), "POST the same URL with the same body to create it (201 Created") {
				t.Errorf("404 body = %s", r.raw)
			}

			created := e.do("POST", tc.path+"/", `{"data":{"theme":"dark"},"className":"com.example.Prefs"}`, "X-Uds-Subject", "alice").expect(t, 201)
			b := created.body
			if b["createdBySubject"] != "alice" || b["updatedBySubject"] != "alice" || b["className"] != "com.example.Prefs" ||
				b["version"] != json.Number("1") || b["applicationUuid"] != app || fmt.Sprint(b["sortKey"]) != fmt.Sprint(orNil(tc.sortKey)) {
				t.Errorf("201 body = %s", created.raw)
			}
			etag := created.header.Get("ETag")
			if etag == "" || created.header.Get("Location") == "" {
				t.Errorf("201 headers = %v", created.header)
			}

			dup := e.do("POST", tc.path, `{"data":1}`).expect(t, 409)
			if dup.body["error"] != tc.exists {
				t.Errorf("409 body = %s", dup.raw)
			}

			got := e.do("GET", tc.path, "").expect(t, 200)
			if !bytes.Equal(mustField(t, got.raw, "data"), []byte(`{"theme":"dark"}`)) || got.header.Get("ETag") != etag {
				t.Errorf("GET = %s, ETag %q", got.raw, got.header.Get("ETag"))
			}
			e.do("GET", tc.path, "", "If-None-Match", etag).expect(t, 304)
			e.do("GET", tc.path, "", "If-None-Match", `"0-0"`).expect(t, 200)

			upd := e.do("PUT", tc.path, `{"data":{"theme":"light"}}`, "X-Uds-Subject", "bob", "If-Match", etag).expect(t, 200)
			if upd.body["createdBySubject"] != "alice" || upd.body["updatedBySubject"] != "bob" || upd.body["version"] != json.Number("2") ||
				upd.body["createdDate"] != b["createdDate"] || upd.body["className"] != nil {
				t.Errorf("PUT body = %s", upd.raw)
			}
			e.do("PUT", tc.path, `{"data":{"theme":"stale"}}`, "If-Match", etag).expect(t, 412)
			e.do("DELETE", tc.path, "", "If-Match", etag).expect(t, 412)
			e.do("DELETE", tc.path, "", "If-Match", upd.header.Get("ETag")).expect(t, 204)
			e.do("DELETE", tc.path, "").expect(t, 204)
			e.do("GET", tc.path, "").expect(t, 404)
		})
	}
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// mustField returns the raw JSON of one top-level field.
func mustField(t *testing.T, raw []byte, name string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m[name]
}

func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i, tc := range []struct{ name, data, stored string }{
		{"big integers", `{"n":123456789012345678901234567890,"m":-9007199254740993}`, ""},
		{"decimals", `[0.1,1e400,1.000000000000000000001,-0.0,2.50]`, ""},
		{"key order", `{"z":1,"a":2,"m":{"y":1,"b":2}}`, ""},
		{"unicode", `{"text":"Grüße 日本 🎉","esc":"\u00e9\n\"<>&"}`, ""},
		{"whitespace is compacted", "{ \"a\" : [ 1 , 2 ] }", `{"a":[1,2]}`},
		{"scalar", `"just a string"`, ""},
		{"false", `false`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := fmt.Sprintf("%s/roundtrip/%d", base, i)
			e.do("POST", path, `{"data":`+tc.data+`}`).expect(t, 201)
			got := mustField(t, e.do("GET", path, "").expect(t, 200).raw, "data")
			want := tc.stored
			if want == "" {
				want = tc.data
			}
			if string(got) != want {
				t.Errorf("data came back as %s, want %s", got, want)
			}
		})
	}
}

func TestConcurrentCreateOfOneKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const writers = 50
	statuses := make(chan int, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- e.do("POST", base+"/race/one", fmt.Sprintf(`{"data":%d}`, i)).status
		}()
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[201] != 1 || count[409] != writers-1 {
		t.Fatalf("statuses %v, want one 201 and %d 409", count, writers-1)
	}
}

func TestConcurrentIfMatchUpdatesLoseNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := base + "/counter/c1"
	e.do("POST", path, `{"data":{"n":0}}`).expect(t, 201)
	const workers, increments = 8, 5
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < increments; {
				got := e.do("GET", path, "")
				var v struct{ Data struct{ N int } }
				_ = json.Unmarshal(got.raw, &v)
				r := e.do("PUT", path, fmt.Sprintf(`{"data":{"n":%d}}`, v.Data.N+1), "If-Match", got.header.Get("ETag"))
				switch r.status {
				case http.StatusOK:
					done++
				case http.StatusPreconditionFailed:
				default:
					t.Errorf("PUT: %d %s", r.status, r.raw)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := e.do("GET", path, "").expect(t, 200)
	if string(mustField(t, got.raw, "data")) != fmt.Sprintf(`{"n":%d}`, workers*increments) || got.body["version"] != json.Number(fmt.Sprint(workers*increments+1)) {
		t.Fatalf("after %d conditional increments: %s", workers*increments, got.raw)
	}
}

// HEAD is GET without a body; 405 answers name the resource's methods once.
func TestHeadAndAllow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	created := e.do("POST", base+"/head/item", `{"data": {"a": 1}}`).expect(t, 201)
	e.do("POST", base+"/head/list/2024", `{"data": 2}`).expect(t, 201)
	for _, tc := range []struct {
		name, path string
		status     int
	}{
		{"key-value item", base + "/head/item", 200},
		{"list item", base + "/head/list/2024", 200},
		{"missing item", base + "/head/none", 404},
		{"list page", base + "/head/list/list", 200},
	} {
		t.Run("HEAD "+tc.name, func(t *testing.T) {
			r := e.do("HEAD", tc.path, "").expect(t, tc.status)
			get := e.do("GET", tc.path, "")
			if len(r.raw) != 0 || r.header.Get("Content-Length") != get.header.Get("Content-Length") || r.header.Get("ETag") != get.header.Get("ETag") {
				t.Errorf("HEAD: %d body bytes, headers %v; GET headers %v", len(r.raw), r.header, get.header)
			}
		})
	}
	if got := e.do("HEAD", base+"/head/item", "").header.Get("ETag"); got != created.header.Get("ETag") {
		t.Errorf("HEAD ETag %s, created %s", got, created.header.Get("ETag"))
	}
	for _, tc := range []struct{ path, allow string }{
		{base + "/head/item", "DELETE, GET, HEAD, PATCH, POST, PUT"},
		{base + "/head/list/list", "DELETE, GET, HEAD"},
		{base + "/head/list/2024", "DELETE, GET, HEAD, PATCH, POST, PUT"},
	} {
		if got := e.do("TRACE", tc.path, "").expect(t, 405).header.Get("Allow"); got != tc.allow {
			t.Errorf("TRACE %s: Allow %q, want %q", tc.path, got, tc.allow)
		}
	}
}

// putSeedItem writes an item the way the seed's service did: its own
// attributes only, no version, size or owner.
func (e *env) putSeedItem(table string, item map[string]string) {
	e.t.Helper()
	av := map[string]types.AttributeValue{}
	for k, v := range item {
		av[k] = &types.AttributeValueMemberS{Value: v}
	}
	if _, err := e.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: av}); err != nil {
		e.t.Fatal(err)
	}
}

// Items written before UDS take part in conditional requests like any
// other: the ETag a GET gives works for DELETE as it does for PUT.
func TestSeedItemsTakeIfMatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		item map[string]string
	}{
		{"with audit fields", map[string]string{"createdDate": "2023-05-01T10:00:00Z", "createdBySubject": "seed-user", "updatedDate": "2023-05-01T10:00:00Z"}},
		{"without audit fields", map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := strings.ReplaceAll(tc.name, " ", "-")
			tc.item["dataKey"] = app + "|seed|" + id
			tc.item["dataValue"] = `{"legacy":true}`
			e.putSeedItem(e.tables.Data, tc.item)
			path := base + "/seed/" + id
			etag := e.do("GET", path, "").expect(t, 200).header.Get("ETag")
			e.do("DELETE", path, "", "If-Match", `"9-zzzz"`).expect(t, 412)
			e.do("DELETE", path, "", "If-Match", etag).expect(t, 204)
			e.do("GET", path, "").expect(t, 404)
		})
	}
}

// TestLocationNamesTheItem checks that a create's Location, resolved as
// a client resolves it (RFC 3986, which removes literal dot-segments),
// names the item created, also one whose parts are "." or "..".
func TestLocationNamesTheItem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{base + "/loc/a%20b", base + "/%2E/%2E%2E", base + "/loc/%2E%2E/%2E", base + "/loc/l/a%2F..%2Fb"} {
		created := e.do("POST", path, `{"data":1}`).expect(t, 201)
		ref, err := url.Parse(created.header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		from, _ := url.Parse("http://uds.example" + path)
		got := e.do("GET", from.ResolveReference(ref).EscapedPath(), "")
		if got.status != 200 || got.header.Get("ETag") != created.header.Get("ETag") {
			t.Errorf("%s: Location %s resolves to %s, which answers %d %s", path, ref, from.ResolveReference(ref).EscapedPath(), got.status, got.raw)
		}
	}
}
