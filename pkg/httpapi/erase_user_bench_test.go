package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// BenchmarkEraseUser measures a person's erase through the API, over HTTP,
// against the engine (docs/performance.md, "A person's erase"): 100,000
// records of 1 KB (1,000 with -short) that alice owns in three apps, beside
// a tenth as many of bob's, imported before each iteration; then the
// erase's steps, sent as their answers say until the receipt comes (the
// settling cut to a millisecond: it is a wait, not work). It reports the
// time of a whole erase (ns/op, and the fastest, fastest-s), its steps,
// and the DynamoDB calls and read and write units per record erased.
func BenchmarkEraseUser(b *testing.B) {
	n := 100_000
	if testing.Short() {
		n = 1_000
	}
	tables := storetest.NewTables(b)
	counter := storetest.NewCounter(storetest.Client(b))
	st := store.New(counter, tables, store.WithPolicySettle(time.Millisecond))
	srv := httptest.NewServer(httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("k"), DeleteAllBudget: apitest.Budget, RequestBudget: apitest.Budget,
		Logger: apitest.Logger(b),
	}))
	defer srv.Close()
	fastest := time.Duration(1 << 62)
	var steps int
	var usage storetest.Usage
	for iteration := range b.N {
		b.StopTimer()
		importOwned(b, srv.URL, "alice", fmt.Sprintf("alice-%d", iteration), n)
		importOwned(b, srv.URL, "bob", fmt.Sprintf("bob-%d", iteration), n/10)
		// A done erase keeps its receipt and erases nothing more, so a
		// second iteration would measure nothing.
		user := "alice"
		if iteration > 0 {
			b.Fatal("a second iteration would find alice's erase done: run it with -benchtime=1x")
		}
		counter.Take()
		b.StartTimer()
		began := time.Now()
		for steps = 1; ; steps++ {
			res, err := http.Post(srv.URL+admin+"/users/"+user+"/erase", "application/json", nil)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				var receipt struct{ Erased map[string]map[string]int64 }
				if err := json.Unmarshal(body, &receipt); err != nil {
					b.Fatal(err)
				}
				items := int64(0)
				for _, kinds := range receipt.Erased {
					items += kinds["items"]
				}
				if items != int64(n) {
					b.Fatalf("the receipt counts %d items, want %d: %s", items, n, body)
				}
				break
			}
			if res.StatusCode != http.StatusAccepted {
				b.Fatalf("erase answered %d %s", res.StatusCode, body)
			}
		}
		fastest = min(fastest, time.Since(began))
		usage = counter.Take()
	}
	calls := 0
	for _, c := range usage.Calls {
		calls += c
	}
	b.ReportMetric(fastest.Seconds(), "fastest-s")
	b.ReportMetric(float64(steps), "steps/op")
	b.ReportMetric(float64(calls)/float64(n), "calls/record")
	b.ReportMetric(usage.Read/float64(n), "RCU/record")
	b.ReportMetric(usage.Write/float64(n), "WCU/record")
	b.Logf("%d records: DynamoDB calls %v, %.0f RCU, %.0f WCU", n, usage.Calls, usage.Read, usage.Write)
}
