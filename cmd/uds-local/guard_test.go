package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// TestOwnPagesOnly runs the local server and calls it as pages and
// programs would: a DNS rebinding page (another Host), another site's
// form-typed POST of a batch of deletes or an admin import, and another
// site's request by Sec-Fetch-Site are refused with 403 and change
// nothing; curl, the console's own page and the allowed origin (with its
// preflight and CORS answers) are served. Before the guard each refused
// request was served: the batch deleted, the import wrote.
func TestOwnPagesOnly(t *testing.T) {
	const devOrigin, evil = "http://localhost:3000", "http://evil.example"
	cfg := config.Config{
		Tables: storetest.NewTables(t), Endpoint: os.Getenv(config.EnvDynamoDBEndpoint),
		ListenAddr: "127.0.0.1:0", S3ListenAddr: "127.0.0.1:0", LogFormat: "text", CursorSecret: []byte("k"),
		AllowedOrigins: []string{devOrigin},
	}
	base, _, stop := serve(t, cfg)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	self := strings.TrimPrefix(strings.Split(base, "/rest")[0], "http://")
	port := strings.Split(self, ":")[1]
	data := base + "/data/d53065bd-f932-4841-83fb-849717d8df0f"
	item := data + "/notes/n1"
	call := func(t *testing.T, method, url, body string, headers ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		req.Host = req.Header.Get("Host")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	if res, body := call(t, "POST", item, `{"data": {"text": "keep me"}}`); res.StatusCode != 201 {
		t.Fatalf("POST: %d %s", res.StatusCode, body)
	}
	_, export := call(t, "GET", base+"/admin/apps/d53065bd-f932-4841-83fb-849717d8df0f/export?limit=10", "")
	batchDelete := `{"operations": [{"method": "DELETE", "path": "notes/n1"}]}`
	for _, tc := range []struct {
		name, method, url, body string
		headers                 []string
		status                  int
		allowOrigin             string // the Access-Control-Allow-Origin answered
	}{
		{"a DNS rebinding page's read", "GET", item, "", []string{"Host", "evil.example:" + port}, 403, ""},
		{"another site's form-typed batch of deletes", "POST", data + "/batch", batchDelete,
			[]string{"Origin", evil, "Content-Type", "text/plain"}, 403, ""},
		{"another site's url-encoded batch of deletes", "POST", data + "/batch", batchDelete,
			[]string{"Origin", evil, "Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "cross-site"}, 403, ""},
		{"another site's delete by Sec-Fetch-Site", "DELETE", item, "", []string{"Sec-Fetch-Site", "cross-site"}, 403, ""},
		{"another site's preflight", "OPTIONS", item, "", []string{"Origin", evil, "Access-Control-Request-Method", "PUT"}, 403, ""},
		{"the page of another port", "GET", item, "", []string{"Origin", "http://127.0.0.1:1", "Sec-Fetch-Site", "same-site"}, 403, ""},
		{"curl", "GET", item, "", nil, 200, ""},
		{"curl at localhost", "GET", item, "", []string{"Host", "localhost:" + port}, 200, ""},
		{"the console's own page", "GET", item, "", []string{"Origin", "http://" + self, "Sec-Fetch-Site", "same-origin"}, 200, ""},
		{"the allowed origin's preflight", "OPTIONS", item, "", []string{"Origin", devOrigin,
			"Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "content-type,x-uds-subject"}, 204, devOrigin},
		{"the allowed origin's read", "GET", item, "", []string{"Origin", devOrigin, "Sec-Fetch-Site", "same-site"}, 200, devOrigin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := call(t, tc.method, tc.url, tc.body, tc.headers...)
			if res.StatusCode != tc.status || res.Header.Get("Access-Control-Allow-Origin") != tc.allowOrigin {
				t.Fatalf("%d %s, Access-Control-Allow-Origin %q; want %d, %q", res.StatusCode, body, res.Header.Get("Access-Control-Allow-Origin"), tc.status, tc.allowOrigin)
			}
			switch {
			case tc.status == 403:
				var e struct{ Error, Details string }
				if json.Unmarshal([]byte(body), &e) != nil || !strings.HasPrefix(e.Error, "Forbidden by the local server: ") || e.Details == "" {
					t.Errorf("refusal %s", body)
				}
			case tc.allowOrigin != "" && tc.method == "OPTIONS":
				h := res.Header
				if !strings.Contains(h.Get("Access-Control-Allow-Methods"), "PUT") || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "X-Uds-Subject") || h.Get("Vary") != "Origin" {
					t.Errorf("preflight answered %v", h)
				}
			case tc.allowOrigin != "":
				if !strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "ETag") {
					t.Errorf("exposes %q", res.Header.Get("Access-Control-Expose-Headers"))
				}
			}
		})
	}
	if res, body := call(t, "GET", item, ""); res.StatusCode != 200 || !strings.Contains(body, "keep me") {
		t.Fatalf("after the refusals the item is %d %s", res.StatusCode, body)
	}
	t.Run("another site's admin import", func(t *testing.T) {
		call(t, "DELETE", item, "")
		res, body := call(t, "POST", base+"/admin/apps/d53065bd-f932-4841-83fb-849717d8df0f/import", export,
			"Origin", evil, "Content-Type", "application/x-www-form-urlencoded")
		if res.StatusCode != 403 {
			t.Fatalf("import answered %d %s", res.StatusCode, body)
		}
		if res, _ := call(t, "GET", item, ""); res.StatusCode != 404 {
			t.Errorf("the refused import wrote the item back: %d", res.StatusCode)
		}
		// The same import from curl writes it: the refusal was the
		// origin's.
		if res, body := call(t, "POST", base+"/admin/apps/d53065bd-f932-4841-83fb-849717d8df0f/import", export); res.StatusCode != 200 {
			t.Fatalf("curl's import answered %d %s", res.StatusCode, body)
		}
		if res, _ := call(t, "GET", item, ""); res.StatusCode != 200 {
			t.Errorf("curl's import did not write the item: %d", res.StatusCode)
		}
	})
}
