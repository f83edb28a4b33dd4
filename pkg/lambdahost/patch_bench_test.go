package lambdahost_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/store"
)

// countingTransport is the stub transport counting the calls it answers.
type countingTransport struct {
	stubTransport
	calls *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.calls.Add(1)
	return t.stubTransport.RoundTrip(r)
}

// patchVsPut is one row of BenchmarkPatchVsPut: a PATCH of the 1 KB item
// the stub holds, beside the PUT of what it makes of the item.
// TestBenchmarkRatios runs the same rows.
type patchVsPut struct {
	name, contentType, patch string
}

// The item the stub holds is {"s":"aaa…"}; each patch adds "n": 1, and
// the PUT writes the same data.
var patchVsPutRows = []patchVsPut{
	{"merge-patch", httpapi.MergePatchType, `{"n":1}`},
	{"json-patch", httpapi.JSONPatchType, `[{"op":"add","path":"/n","value":1}]`},
}

var patchedBody = `{"data":{"s":"` + strings.Repeat("a", 980) + `","n":1}}`

// BenchmarkPatchVsPut runs a PATCH of one member of a 1 KB item through
// the Lambda handler beside a PUT of the item it makes, alternating in
// one loop, DynamoDB answered by the stub at the HTTP transport. Both
// read the item (GetItem) and then write it, the value grown by 6 bytes,
// with its owner's usage (TransactWriteItems): the PATCH reads the whole
// item, for the value it patches; the PUT, which only replaces, reads
// the item's metadata, for the revision it writes on. It reports the
// ratio of their times (x-put; goal: at most 1.3) and the DynamoDB calls
// of each (calls/patch, calls/put).
func BenchmarkPatchVsPut(b *testing.B) {
	for _, c := range patchVsPutRows {
		b.Run(c.name, c.bench)
	}
}

func (c patchVsPut) bench(b *testing.B) {
	var calls atomic.Int64
	h := apiHandler(httpapi.StoresOf(store.New(stubClientOf(b, countingTransport{calls: &calls}), benchTables)))
	put := benchEvent("PUT", benchPath, patchedBody)
	patch := benchEvent("PATCH", benchPath, c.patch)
	patch.Headers["content-type"] = c.contentType
	ctx := context.Background()
	serve := func(ev events.APIGatewayV2HTTPRequest) {
		res, err := h(ctx, ev)
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %d, err %v: %s", ev.RequestContext.HTTP.Method, res.StatusCode, err, res.Body)
		}
	}
	// The first request reads the owner's limits and the namespace's
	// policy; later ones find them cached, as a warm function does.
	serve(put)
	serve(patch)
	var putTime, patchTime time.Duration
	var putCalls, patchCalls int64
	b.ReportAllocs()
	for b.Loop() {
		start, before := time.Now(), calls.Load()
		serve(put)
		mid, between := time.Now(), calls.Load()
		serve(patch)
		putTime, patchTime = putTime+mid.Sub(start), patchTime+time.Since(mid)
		putCalls, patchCalls = putCalls+between-before, patchCalls+calls.Load()-between
	}
	b.ReportMetric(float64(patchTime)/float64(putTime), "x-put")
	b.ReportMetric(float64(putCalls)/float64(b.N), "calls/put")
	b.ReportMetric(float64(patchCalls)/float64(b.N), "calls/patch")
}
