package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// BenchmarkExportUser measures a person's export through the API, over
// HTTP, against the engine (docs/performance.md, "A person's export"):
// 10,000 records of 1 KB (1,000 with -short) that alice owns in three apps,
// beside as many of bob's, imported first; then every page of alice's
// export, 1000 records a page, until its cursor ends. It reports the time
// of a whole export (ns/op, and the fastest of the iterations,
// fastest-s), its pages and records.
func BenchmarkExportUser(b *testing.B) {
	n := 10_000
	if testing.Short() {
		n = 1_000
	}
	tables := storetest.NewTables(b)
	objects := blob.Objects{Bucket: blobtest.New(b)}
	st := store.New(storetest.Client(b), tables, store.WithObjects(objects))
	srv := httptest.NewServer(httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("k"), DeleteAllBudget: apitest.Budget, RequestBudget: apitest.Budget,
		Logger: apitest.Logger(b), Bucket: objects,
	}))
	defer srv.Close()
	for _, owner := range []string{"alice", "bob"} {
		importOwned(b, srv.URL, owner, owner, n)
	}
	b.ResetTimer()
	fastest := time.Duration(1 << 62)
	var pages, records int
	for range b.N {
		began := time.Now()
		pages, records = 0, 0
		for cursor := ""; ; pages++ {
			u := srv.URL + admin + "/users/alice/export?limit=1000"
			if cursor != "" {
				u += "&cursor=" + cursor
			}
			var page struct {
				Records []json.RawMessage
				Cursor  string
			}
			if err := getJSON(u, &page); err != nil {
				b.Fatal(err)
			}
			records += len(page.Records)
			if cursor = page.Cursor; cursor == "" {
				pages++
				break
			}
		}
		if records != n {
			b.Fatalf("alice's export held %d records, want %d", records, n)
		}
		fastest = min(fastest, time.Since(began))
	}
	b.ReportMetric(fastest.Seconds(), "fastest-s")
	b.ReportMetric(float64(pages), "pages/op")
	b.ReportMetric(float64(records), "records/op")
}

// post sends a JSON body and wants a 200.
// importOwned imports n records of 1 KB that owner owns, ids from prefix,
// into three apps in turn, 1000 to an import.
func importOwned(b *testing.B, server, owner, prefix string, n int) {
	b.Helper()
	apps := []string{app, otherApp, thirdApp}
	value := strings.Repeat("a", 1000)
	for i := 0; i < n; i += 1000 {
		var records []string
		for j := i; j < min(i+1000, n); j++ {
			records = append(records, fmt.Sprintf(`{"namespace":"progress","id":"%s-%06d","owner":%q,"data":%q,"createdBySubject":%q,"updatedBySubject":%q,"version":1}`,
				prefix, j, owner, value, owner, owner))
		}
		if err := post(server+admin+"/apps/"+apps[i/1000%len(apps)]+"/import", `{"records":[`+strings.Join(records, ",")+`]}`); err != nil {
			b.Fatal(err)
		}
	}
}

func post(url, body string) error {
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("POST %s: %d %s", url, res.StatusCode, b)
	}
	return nil
}

// getJSON reads a 200's JSON body into v.
func getJSON(url string, v any) error {
	res, err := http.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("GET %s: %d %s", url, res.StatusCode, b)
	}
	return json.NewDecoder(res.Body).Decode(v)
}
