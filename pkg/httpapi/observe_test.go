package httpapi_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/internal/emf/emftest"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
)

// lockedBuffer is a buffer that a server's goroutines may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// take returns the lines written since the last take, decoded.
func (l *lockedBuffer) take(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(l.b.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("not a JSON line: %s", line)
		}
		if _, isEMF := m["_aws"]; isEMF {
			if err := emftest.Check(line); err != nil {
				t.Errorf("EMF record: %v\n%s", err, line)
			}
		}
		out = append(out, m)
	}
	l.b.Reset()
	return out
}

// observedEnv is an API whose request lines and EMF records are kept.
type observedEnv struct {
	*env
	logs, metrics *lockedBuffer
	faults        *faults.Transport
}

// newObservedEnv writes the per-route layout, whose records carry every
// metric the tests of the request lines compare with their lines.
func newObservedEnv(t *testing.T) *observedEnv { return observedAPI(t, true) }

func observedAPI(t *testing.T, routeMetrics bool) *observedEnv {
	client, ft := storetest.FaultyClient(t, 1)
	tables := storetest.NewTables(t)
	o := &observedEnv{logs: &lockedBuffer{}, metrics: &lockedBuffer{}, faults: ft}
	api := httpapi.New(httpapi.StoresOf(store.New(client, tables)), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("k"), DeleteAllBudget: 20 * time.Second,
		Logger: slog.New(slog.NewJSONHandler(o.logs, nil)), Metrics: emf.NewWriter(o.metrics), Function: "local", RouteMetrics: routeMetrics,
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	o.env = &env{t: t, srv: srv, tables: tables, client: storetest.Client(t)}
	return o
}

// one returns the single request line and EMF record of the last request.
func (o *observedEnv) one(t *testing.T) (line, record map[string]any) {
	t.Helper()
	lines, records := o.logs.take(t), o.metrics.take(t)
	if len(lines) != 1 || len(records) != 1 {
		t.Fatalf("%d lines and %d records, want one each: %v %v", len(lines), len(records), lines, records)
	}
	return lines[0], records[0]
}

func TestRequestLinesAndMetrics(t *testing.T) {
	t.Parallel()
	o := newObservedEnv(t)
	item := base + "/obs/item"
	t.Run("create", func(t *testing.T) {
		o.as("alice", "POST", item, `{"data":{"a":1}}`, "X-Amzn-Trace-Id", "Root=1-abc").expect(t, 201)
		line, rec := o.one(t)
		want := map[string]any{
			"msg": "request", "level": "INFO", "route": "POST /data/{applicationUuid}/{namespace}/{id}", "status": 201.0,
			"app": app, "namespace": "obs", "subject": "alice", "bytesIn": float64(len(`{"data":{"a":1}}`)), "traceId": "Root=1-abc",
		}
		for k, v := range want {
			if line[k] != v {
				t.Errorf("%s = %v, want %v", k, line[k], v)
			}
		}
		if line["latencyMs"].(float64) <= 0 || line["bytesOut"].(float64) == 0 || line["dynamodbCalls"].(float64) < 1 || line["writeUnits"].(float64) <= 0 {
			t.Errorf("line %v", line)
		}
		if rec["function"] != "local" || rec["route"] != want["route"] || rec["statusClass"] != "2xx" || rec["Requests"] != 1.0 ||
			rec["ServerErrors"] != 0.0 || rec["WriteCapacityUnits"].(float64) <= 0 || rec["DynamoDBCalls"] != line["dynamodbCalls"] {
			t.Errorf("record %v", rec)
		}
		// In the streamed quota mode a create is a plain PutItem, whose
		// write units count too.
		const streamedApp = "0b6c1d2e-3f4a-4b5c-8d6e-7f8091a2b3c4"
		o.as("admin", "PUT", admin+"/apps/"+streamedApp+"/quota-mode", `{"mode":"streamed"}`).expect(t, 200)
		o.one(t)
		o.as("alice", "POST", "/rest/api/v1/data/"+streamedApp+"/obs/item", `{"data":{"a":1}}`).expect(t, 201)
		if line, rec := o.one(t); line["writeUnits"].(float64) <= 0 || rec["WriteCapacityUnits"].(float64) <= 0 {
			t.Errorf("a streamed create's line %v, record %v: want its write units", line, rec)
		}
		for _, forbidden := range []string{"app", "subject", "namespace"} {
			if _, ok := rec[forbidden]; ok {
				t.Errorf("the EMF record carries %s", forbidden)
			}
		}
	})
	t.Run("conflict", func(t *testing.T) {
		o.as("alice", "POST", item, `{"data":1}`).expect(t, 409)
		line, rec := o.one(t)
		if line["error"] != "Key already exists" || rec["ConditionalFailures"] != 1.0 || rec["ClientErrors"] != 1.0 || rec["statusClass"] != "4xx" {
			t.Errorf("line %v, record %v", line, rec)
		}
	})
	t.Run("quota refusal", func(t *testing.T) {
		o.do("PUT", "/rest/api/v1/admin/apps/"+app+"/users/bob/quota", `{"limitItems":1}`).expect(t, 200)
		o.logs.take(t)
		o.metrics.take(t)
		o.as("bob", "POST", base+"/obs/b1", `{"data":1}`).expect(t, 201)
		o.one(t)
		o.as("bob", "POST", base+"/obs/b2", `{"data":1}`).expect(t, 403)
		line, rec := o.one(t)
		if line["quota"] != "refused" || line["error"] != "Quota exceeded" || rec["QuotaRefusals"] != 1.0 {
			t.Errorf("line %v, record %v", line, rec)
		}
	})
	t.Run("batch", func(t *testing.T) {
		o.as("bob", "POST", base+"/batch", `{"operations":[{"method":"POST","path":"obs/b3","body":{"data":1}},{"method":"GET","path":"obs/item"}]}`).expect(t, 200)
		line, rec := o.one(t)
		if line["batchOps"] != 2.0 || line["quotaRefusals"] != 1.0 || rec["BatchOperations"] != 2.0 || rec["QuotaRefusals"] != 1.0 {
			t.Errorf("line %v, record %v", line, rec)
		}
	})
	t.Run("delete-all", func(t *testing.T) {
		for _, sk := range []string{"a", "b", "c"} {
			o.as("alice", "POST", base+"/obs/list/"+sk, `{"data":1}`).expect(t, 201)
		}
		o.logs.take(t)
		o.metrics.take(t)
		o.as("alice", "DELETE", base+"/obs/list/list", "").expect(t, 204)
		line, rec := o.one(t)
		if line["deleted"] != 3.0 || rec["DeleteAllItems"] != 3.0 || line["route"] != "DELETE /data/{applicationUuid}/{namespace}/{id}/list" {
			t.Errorf("line %v, record %v", line, rec)
		}
	})
	t.Run("throttled and retried", func(t *testing.T) {
		o.faults.Set(faults.Rule{Kind: faults.Throttle, Ops: []string{"GetItem"}, Nth: 1})
		defer o.faults.Set()
		o.as("alice", "GET", item, "").expect(t, 200)
		line, rec := o.one(t)
		if line["dynamodbRetries"] != 1.0 || line["dynamodbThrottles"] != 1.0 || rec["DynamoDBRetries"] != 1.0 || rec["DynamoDBThrottles"] != 1.0 {
			t.Errorf("line %v, record %v", line, rec)
		}
	})
	t.Run("unavailable is an error line with its cause", func(t *testing.T) {
		o.faults.Set(faults.Rule{Kind: faults.Unavailable, Ops: []string{"GetItem"}, Rate: 1})
		defer o.faults.Set()
		r := o.as("alice", "GET", item, "").expect(t, 503)
		line, rec := o.one(t)
		cause, _ := line["cause"].(string)
		if line["level"] != "ERROR" || !strings.Contains(cause, "GetItem") || rec["ServerErrors"] != 1.0 || rec["statusClass"] != "5xx" {
			t.Errorf("line %v, record %v", line, rec)
		}
		if strings.Contains(string(r.raw), "GetItem") {
			t.Errorf("the internal error reached the client: %s", r.raw)
		}
	})
	t.Run("export and import", func(t *testing.T) {
		other := "/rest/api/v1/data/" + otherApp
		for _, id := range []string{"x1", "x2", "x3"} {
			o.as("alice", "POST", other+"/obs/"+id, `{"data":1}`).expect(t, 201)
		}
		record := func(id, data, expiresAt string) string {
			return `{"namespace":"obs","id":"` + id + `","owner":"alice","data":` + data + `,"createdBySubject":"alice",` +
				`"updatedBySubject":"alice","version":1,"expiresAt":"` + expiresAt + `"}`
		}
		later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		o.do("POST", admin+"/apps/"+app+"/import", `{"records":[`+record("imp1", "1", later)+`]}`).expect(t, 200)
		o.logs.take(t)
		o.metrics.take(t)
		for _, tc := range []struct {
			name, method, path, body string
			// line and record hold the fields the request line and
			// the EMF record must have; absent the fields the line must
			// not have.
			line, record map[string]any
			absent       []string
			// lineUnits and recordUnits name the capacity the request
			// consumed, in the line and in the record.
			lineUnits, recordUnits string
		}{
			{
				name: "export page", method: "GET", path: admin + "/apps/" + otherApp + "/export?limit=2",
				line:      map[string]any{"route": "GET /admin/apps/{applicationUuid}/export", "status": 200.0, "exported": 2.0},
				record:    map[string]any{"ConditionalFailures": 0.0},
				absent:    []string{"imported", "skipped", "expired", "conflicts", "writeUnits"},
				lineUnits: "readUnits", recordUnits: "ReadCapacityUnits",
			},
			{
				// imp1 is there already, imp2 is new, imp3 has expired,
				// and obs/item holds another item.
				name: "import", method: "POST", path: admin + "/apps/" + app + "/import",
				body: `{"records":[` + record("imp1", "1", later) + `,` + record("imp2", "2", later) + `,` +
					record("imp3", "3", "2020-01-01T00:00:00Z") + `,` + record("item", `{"a":2}`, later) + `]}`,
				line: map[string]any{"route": "POST /admin/apps/{applicationUuid}/import", "status": 200.0,
					"imported": 1.0, "skipped": 1.0, "expired": 1.0, "conflicts": 1.0},
				record:    map[string]any{"ConditionalFailures": 1.0, "ClientErrors": 0.0},
				absent:    []string{"exported", "error"},
				lineUnits: "writeUnits", recordUnits: "WriteCapacityUnits",
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				o.do(tc.method, tc.path, tc.body).expect(t, 200)
				line, rec := o.one(t)
				for k, v := range tc.line {
					if line[k] != v {
						t.Errorf("line %s = %v, want %v", k, line[k], v)
					}
				}
				for k, v := range tc.record {
					if rec[k] != v {
						t.Errorf("record %s = %v, want %v", k, rec[k], v)
					}
				}
				for _, k := range tc.absent {
					if v, ok := line[k]; ok {
						t.Errorf("line has %s = %v", k, v)
					}
				}
				if units, _ := line[tc.lineUnits].(float64); units <= 0 || rec[tc.recordUnits] != units {
					t.Errorf("%s %v in the line, %s %v in the record", tc.lineUnits, line[tc.lineUnits], tc.recordUnits, rec[tc.recordUnits])
				}
			})
		}
	})
	t.Run("unmatched", func(t *testing.T) {
		o.do("GET", "/rest/api/v1/nothing", "").expect(t, 404)
		line, rec := o.one(t)
		if line["route"] != "unmatched" || line["error"] != "Route not found" || rec["route"] != "unmatched" {
			t.Errorf("line %v, record %v", line, rec)
		}
	})
}
