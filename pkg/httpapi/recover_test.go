package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// panickyStore is the real store's items, except that reads and creates of
// the id "boom" panic: a defect anywhere under a handler looks like this.
type panickyStore struct{ *store.Store }

func (p panickyStore) Get(ctx context.Context, k uds.Key) (uds.Item, error) {
	if k.ID == "boom" {
		var m map[string]int
		m["boom"]++ // a nil map write: a runtime panic, as a defect raises
	}
	return p.Store.Get(ctx, k)
}

func (p panickyStore) Create(ctx context.Context, w uds.Write) (uds.Item, error) {
	if w.Key.ID == "boom" {
		panic("create boom")
	}
	return p.Store.Create(ctx, w)
}

// TestPanicsAreAnswered checks that a panic in a handler, or in one
// operation of a batch running in a goroutine of its own, is answered 500
// with the usual JSON body and nothing of the panic, logged at ERROR with
// its stack, counted as a server error, and that the server goes on
// serving.
func TestPanicsAreAnswered(t *testing.T) {
	t.Parallel()
	logs, metrics := &lockedBuffer{}, &lockedBuffer{}
	st := store.New(storetest.Client(t), storetest.NewTables(t))
	stores := httpapi.StoresOf(st)
	stores.Items = panickyStore{st}
	api := httpapi.New(stores, httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("k"), DeleteAllBudget: apitest.Budget, RequestBudget: apitest.Budget,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), Metrics: emf.NewWriter(metrics), Function: "local", RouteMetrics: true,
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	o := &observedEnv{env: &env{t: t, srv: srv}, logs: logs, metrics: metrics}

	t.Run("a handler", func(t *testing.T) {
		r := o.do("GET", base+"/kv/boom", "").expect(t, 500)
		if r.body["error"] != "Internal server error" || strings.Contains(string(r.raw), "nil map") {
			t.Errorf("body %s", r.raw)
		}
		line, rec := o.one(t)
		cause, _ := line["cause"].(string)
		stack, _ := line["stack"].(string)
		if line["level"] != "ERROR" || line["status"] != 500.0 || !strings.Contains(cause, "assignment to entry in nil map") ||
			!strings.Contains(stack, "recover_test.go") {
			t.Errorf("line %v", line)
		}
		if rec["ServerErrors"] != 1.0 || rec["statusClass"] != "5xx" {
			t.Errorf("record %v", rec)
		}
	})
	t.Run("the server goes on serving", func(t *testing.T) {
		o.do("POST", base+"/kv/fine", `{"data":1}`).expect(t, 201)
		o.do("GET", base+"/kv/fine", "").expect(t, 200)
		o.logs.take(t)
		o.metrics.take(t)
	})
	t.Run("one operation of a batch", func(t *testing.T) {
		r := o.do("POST", base+"/batch", `{"operations":[
			{"method":"POST","path":"kv/boom","body":{"data":1}},
			{"method":"POST","path":"kv/fine2","body":{"data":2}},
			{"method":"GET","path":"kv/fine"}]}`).expect(t, 200)
		results, _ := r.body["results"].([]any)
		status := func(i int) any { return results[i].(map[string]any)["status"] }
		if len(results) != 3 || status(0) != json.Number("500") || status(1) != json.Number("201") || status(2) != json.Number("200") {
			t.Fatalf("results %s", r.raw)
		}
		if strings.Contains(string(r.raw), "create boom") {
			t.Errorf("the panic's text reached the client: %s", r.raw)
		}
		line, rec := o.one(t)
		if cause, _ := line["cause"].(string); line["level"] != "ERROR" || cause != "panic: create boom" || line["stack"] == nil {
			t.Errorf("line %v", line)
		}
		if rec["ServerErrors"] != 1.0 {
			t.Errorf("a batch with a panicking operation is not counted as a server error: %v", rec)
		}
		o.do("GET", base+"/kv/fine2", "").expect(t, 200)
	})
}
