package httpapi_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
)

type result struct {
	Status      int             `json:"status"`
	ETag        string          `json:"etag"`
	Body        json.RawMessage `json:"body"`
	BodyOmitted bool            `json:"bodyOmitted"`
}

func (e *env) batch(t *testing.T, status int, body string, headers ...string) ([]result, response) {
	t.Helper()
	r := e.do("POST", base+"/batch", body, headers...).expect(t, status)
	var out struct{ Results []result }
	if status == 200 {
		if err := json.Unmarshal(r.raw, &out); err != nil {
			t.Fatal(err)
		}
	}
	return out.Results, r
}

func statuses(rs []result) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.Status
	}
	return out
}

func TestBatchOneByOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	etag := e.do("POST", base+"/b/existing", `{"data":1}`).expect(t, 201).header.Get("ETag")
	e.do("POST", base+"/b/doomed", `{"data":1}`).expect(t, 201)
	e.do("POST", base+"/b/guarded", `{"data":1}`).expect(t, 201)
	// Writes run with no order between them (docs/decisions/api.md, "Batch
	// operations"): no slot's answer depends on another's write.
	rs, _ := e.batch(t, 200, `{"operations":[
		{"method":"POST","path":"b/new","body":{"data":{"theme":"dark"}}},
		{"method":"POST","path":"b/existing","body":{"data":2}},
		{"method":"PUT","path":"b/existing","body":{"data":3},"ifMatch":"`+strings.ReplaceAll(etag, `"`, `\"`)+`"},
		{"method":"PUT","path":"b/missing","body":{"data":3}},
		{"method":"PUT","path":"b/guarded","body":{"data":3},"ifMatch":"\"9-zz\""},
		{"method":"DELETE","path":"b/doomed"},
		{"method":"GET","path":"b/missing"},
		{"method":"POST","path":"b/list/2024-01-15T10%3A30%3A00Z","body":{"data":1,"ttl":60}},
		{"method":"GET","path":"b/existing","ifNoneMatch":"\"1-zz\""}
	]}`)
	want := []int{201, 409, 200, 404, 412, 204, 404, 201, 200}
	if fmt.Sprint(statuses(rs)) != fmt.Sprint(want) {
		t.Fatalf("statuses %v, want %v", statuses(rs), want)
	}
	if rs[0].ETag == "" || !strings.Contains(string(rs[0].Body), `"theme":"dark"`) || !strings.Contains(string(rs[1].Body), "Key already exists") {
		t.Errorf("results: %+v", rs[:2])
	}
	if !strings.Contains(string(rs[7].Body), `"sortKey":"2024-01-15T10:30:00Z"`) || !strings.Contains(string(rs[7].Body), "expiresAt") {
		t.Errorf("list item result: %s", rs[7].Body)
	}
	// The answers are true: what they say is stored.
	e.do("GET", base+"/b/new", "").expect(t, 200)
	e.do("GET", base+"/b/doomed", "").expect(t, 404)
	if r := e.do("GET", base+"/b/existing", "").expect(t, 200); r.header.Get("ETag") != rs[2].ETag {
		t.Errorf("GET ETag %s, the batch said %s", r.header.Get("ETag"), rs[2].ETag)
	}
	rs, _ = e.batch(t, 200, `{"operations":[{"method":"GET","path":"b/existing","ifNoneMatch":"`+strings.ReplaceAll(rs[2].ETag, `"`, `\"`)+`"}]}`)
	if rs[0].Status != 304 {
		t.Errorf("If-None-Match of the current ETag: %d", rs[0].Status)
	}
	exactUsage(t, e, "anonymous")
}

func TestBatchInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	many := strings.Repeat(`{"method":"GET","path":"a/b"},`, 100) + `{"method":"GET","path":"a/b"}`
	for _, tc := range []struct{ name, body, want string }{
		{"not an object", `[1]`, "Invalid body"},
		{"no operations", `{"operations":[]}`, "Invalid operations"},
		{"too many", `{"operations":[` + many + `]}`, "Invalid operations"},
		{"bad method", `{"operations":[{"method":"HEAD","path":"a/b"}]}`, "Invalid operations[0].method"},
		{"bad path", `{"operations":[{"method":"GET","path":"a/b"},{"method":"GET","path":"only"}]}`, "Invalid operations[1].path"},
		{"bad id", `{"operations":[{"method":"GET","path":"a/b%7Cc"}]}`, "Invalid operations[0].id"},
		{"missing body", `{"operations":[{"method":"POST","path":"a/b"}]}`, "Invalid operations[0].body"},
		{"body on GET", `{"operations":[{"method":"GET","path":"a/b","body":{"data":1}}]}`, "Invalid operations[0].body"},
		{"null data", `{"operations":[{"method":"POST","path":"a/b","body":{"data":null}}]}`, "Invalid operations[0].data"},
		{"bad ttl", `{"operations":[{"method":"POST","path":"a/b","body":{"data":1,"ttl":0}}]}`, "Invalid operations[0].ttl"},
		{"ifMatch on POST", `{"operations":[{"method":"POST","path":"a/b","body":{"data":1},"ifMatch":"*"}]}`, "Invalid operations[0].ifMatch"},
		{"GET in an atomic batch", `{"atomic":true,"operations":[{"method":"GET","path":"a/b"}]}`, "Invalid operations[0].method"},
		{"an item twice", `{"atomic":true,"operations":[{"method":"DELETE","path":"a/b"},{"method":"POST","path":"a/b","body":{"data":1}}]}`, "Invalid operations[1].path"},
		{"too many atomic", `{"atomic":true,"operations":[` + strings.Repeat(`{"method":"DELETE","path":"a/b"},`, 50) + `{"method":"DELETE","path":"a/c"}]}`, "Invalid operations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r := e.batch(t, 400, tc.body)
			if r.body["error"] != tc.want {
				t.Errorf("error %v, want %q: %s", r.body["error"], tc.want, r.raw)
			}
		})
	}
	if n := e.count(e.tables.Data); n != 0 {
		t.Errorf("refused batches wrote %d items", n)
	}
}

func TestBatchQuotaOneByOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("PUT", admin+"/apps/"+app+"/users/uma/quota", `{"limitItems": 2}`).expect(t, 200)
	rs, _ := e.batch(t, 200, `{"operations":[
		{"method":"POST","path":"q/1","body":{"data":1}},{"method":"POST","path":"q/2","body":{"data":1}},
		{"method":"POST","path":"q/3","body":{"data":1}},{"method":"POST","path":"q/4","body":{"data":1}}]}`, "X-Uds-Subject", "uma")
	count := map[int]int{}
	for _, r := range rs {
		count[r.Status]++
	}
	if count[201] != 2 || count[403] != 2 {
		t.Errorf("statuses %v, want two 201 and two 403", statuses(rs))
	}
	exactUsage(t, e, "uma")
}

func TestBatchAtomic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("POST", base+"/a/old", `{"data":"old"}`, "X-Uds-Subject", "vera").expect(t, 201)
	e.do("POST", base+"/a/gone", `{"data":"gone"}`, "X-Uds-Subject", "vera").expect(t, 201)
	rs, _ := e.batch(t, 200, `{"atomic":true,"operations":[
		{"method":"POST","path":"a/new","body":{"data":1}},
		{"method":"POST","path":"a/list/k1","body":{"data":2}},
		{"method":"PUT","path":"a/old","body":{"data":"`+strings.Repeat("x", 500)+`"}},
		{"method":"DELETE","path":"a/gone"},
		{"method":"DELETE","path":"a/never"}]}`, "X-Uds-Subject", "vera")
	if fmt.Sprint(statuses(rs)) != "[201 201 200 204 204]" || rs[2].ETag == "" {
		t.Fatalf("results %v", rs)
	}
	e.do("GET", base+"/a/list/k1", "").expect(t, 200)
	e.do("GET", base+"/a/gone", "").expect(t, 404)
	exactUsage(t, e, "vera")

	before := storetest.StoredUsage(t, e.client, e.tables, app, "vera")
	for _, tc := range []struct {
		name, body string
		status     int
		failed     int64
		headers    []string
	}{
		{"conflict rolls back", `{"atomic":true,"operations":[{"method":"POST","path":"a/x1","body":{"data":1}},{"method":"POST","path":"a/old","body":{"data":1}}]}`, 409, 1, nil},
		{"missing item rolls back", `{"atomic":true,"operations":[{"method":"POST","path":"a/x2","body":{"data":1}},{"method":"PUT","path":"a/missing","body":{"data":1}}]}`, 404, 1, nil},
		{"stale If-Match rolls back", `{"atomic":true,"operations":[{"method":"DELETE","path":"a/old","ifMatch":"\"7-zz\""},{"method":"POST","path":"a/x3","body":{"data":1}}]}`, 412, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r := e.batch(t, tc.status, tc.body, "X-Uds-Subject", "vera")
			if num(t, r.body["failedIndex"]) != tc.failed {
				t.Errorf("failedIndex %v, want %d: %s", r.body["failedIndex"], tc.failed, r.raw)
			}
			for _, id := range []string{"x1", "x2", "x3"} {
				e.do("GET", base+"/a/"+id, "").expect(t, 404)
			}
			if after := storetest.StoredUsage(t, e.client, e.tables, app, "vera"); after != before {
				t.Errorf("usage moved: %+v, was %+v", after, before)
			}
			exactUsage(t, e, "vera")
		})
	}
	t.Run("quota refuses the whole batch", func(t *testing.T) {
		e.do("PUT", admin+"/apps/"+app+"/users/xena/quota", `{"limitItems": 2}`).expect(t, 200)
		e.do("POST", base+"/a/xena", `{"data":1}`, "X-Uds-Subject", "xena").expect(t, 201)
		_, r := e.batch(t, 403, `{"atomic":true,"operations":[{"method":"DELETE","path":"a/nothing"},{"method":"POST","path":"a/q1","body":{"data":1}},{"method":"POST","path":"a/q2","body":{"data":1}}]}`, "X-Uds-Subject", "xena")
		if num(t, r.body["failedIndex"]) != 1 || r.body["error"] != "Quota exceeded" || num(t, r.body["usedItems"]) != 1 {
			t.Errorf("refusal: %s", r.raw)
		}
		e.do("GET", base+"/a/q1", "").expect(t, 404)
		exactUsage(t, e, "xena")
	})
}

// faultyEnv is an API over fresh tables whose DynamoDB client injects the
// faults the test sets (seeded with seed).
func faultyEnv(t *testing.T, seed uint64) (*env, *faults.Transport) {
	client, ft := storetest.FaultyClient(t, seed)
	tables := storetest.NewTables(t)
	srv := httptest.NewServer(httpapi.New(httpapi.StoresOf(store.New(client, tables)), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("b"), RequestBudget: apitest.Budget, Logger: apitest.Logger(t),
	}))
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, tables: tables, client: storetest.Client(t)}, ft
}

// Batches under lost answers, throttling and resets keep usage exact, and
// an atomic batch is all there or not at all.
func TestBatchesUnderFaults(t *testing.T) {
	t.Parallel()
	e, ft := faultyEnv(t, 21)
	ft.Set(
		faults.Rule{Kind: faults.LostAfterCommit, Ops: writeOps, Rate: 0.1},
		faults.Rule{Kind: faults.ResetAfterCommit, Ops: writeOps, Rate: 0.05},
		faults.Rule{Kind: faults.Throttle, Rate: 0.05},
		faults.Rule{Kind: faults.Reset, Rate: 0.03},
	)
	for round := range 8 {
		var ops []string
		for i := range 6 {
			ops = append(ops, fmt.Sprintf(`{"method":"POST","path":"f/r%d-%d","body":{"data":"%s"}}`, round, i, strings.Repeat("d", 50*i)))
		}
		atomic := round%2 == 0
		rs, _ := e.batch(t, 200, fmt.Sprintf(`{"atomic":%v,"operations":[%s]}`, atomic, strings.Join(ops, ",")), "X-Uds-Subject", "wren")
		for i, res := range rs {
			got := e.do("GET", fmt.Sprintf("%s/f/r%d-%d", base, round, i), "").status
			if res.Status == 201 && got != 200 || res.Status != 201 && res.Status != 503 {
				t.Errorf("round %d op %d answered %d, stored: %d", round, i, res.Status, got)
			}
		}
	}
	injected, _ := ft.Injected()
	ft.Set()
	t.Logf("faults %v", injected)
	exactUsage(t, e, "wren")
}

func TestBatchTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	big := `"` + strings.Repeat("x", 1<<20) + `"`
	_, r := e.batch(t, 413, `{"operations":[{"method":"GET","path":"a/b"},{"method":"POST","path":"a/c","body":{"data":`+big+`}}]}`)
	if !strings.Contains(fmt.Sprint(r.body["details"]), "operations[1].body") {
		t.Errorf("413 does not name the operation: %s", r.raw)
	}
	// Eighteen values of 300 KB of base64 (225 KB stored) pass DynamoDB's 4 MB
	// per transaction: an atomic batch refuses them, naming the one that
	// passes the limit.
	var ops []string
	for i := range 18 {
		ops = append(ops, fmt.Sprintf(`{"method":"POST","path":"big/%d","body":{"data":%q}}`, i, incompressible(300_000)))
	}
	_, r = e.batch(t, 413, `{"atomic":true,"operations":[`+strings.Join(ops, ",")+`]}`)
	if r.body["failedIndex"] == nil {
		t.Errorf("no failedIndex: %.300s", r.raw)
	}
	if n := e.count(e.tables.Data); n != 0 {
		t.Errorf("a refused batch wrote %d items", n)
	}
}

// incompressible is a string of n random base64 characters.
func incompressible(n int) string {
	b := make([]byte, n*3/4)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
