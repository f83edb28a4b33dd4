package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/internal/localbench"
	"github.com/udsproject/uds/internal/localbench/localbenchtest"
	"github.com/udsproject/uds/pkg/uds"
)

// The proxy counts the writes to rate buckets, committed and failed on
// their condition, with their units and tokens, and passes every call and
// answer on unchanged.
func TestLeaseCounter(t *testing.T) {
	const ccf = `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`
	for _, tc := range []struct {
		name   string
		target string
		call   string
		status int
		answer string
		want   leaseCounts
	}{
		{"a lease of a drawn bucket", "DynamoDB_20120810.UpdateItem",
			`{"TableName":"apps","Key":{"app":{"S":"rate#caller#a#u"}},"ExpressionAttributeValues":{":cost":{"N":"200000"},":now":{"N":"5"}}}`,
			200, `{"Attributes":{"tat":{"N":"1"}},"ConsumedCapacity":{"TableName":"apps","CapacityUnits":1.0}}`,
			leaseCounts{Writes: 1, Units: 1, Tokens: 20}},
		{"a lease of an idle bucket", "DynamoDB_20120810.UpdateItem",
			`{"TableName":"apps","Key":{"app":{"S":"rate#caller#a#u"}},"ExpressionAttributeValues":{":next":{"N":"1000100000"},":now":{"N":"1000000000"}}}`,
			200, `{"ConsumedCapacity":{"TableName":"apps","CapacityUnits":1.0}}`,
			leaseCounts{Writes: 1, Units: 1, Tokens: 10}},
		{"a failed condition", "DynamoDB_20120810.UpdateItem",
			`{"TableName":"apps","Key":{"app":{"S":"rate#app#a"}},"ExpressionAttributeValues":{":cost":{"N":"200000"}}}`,
			400, ccf, leaseCounts{Failed: 1, Units: 1}},
		{"another failure", "DynamoDB_20120810.UpdateItem",
			`{"TableName":"apps","Key":{"app":{"S":"rate#app#a"}}}`,
			500, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError"}`, leaseCounts{Errors: 1}},
		{"a write of an app's record", "DynamoDB_20120810.UpdateItem",
			`{"TableName":"apps","Key":{"app":{"S":"5ca1ab1e-0000-4000-8000-00000000be4c"}}}`,
			200, `{"ConsumedCapacity":{"TableName":"apps","CapacityUnits":1.0}}`, leaseCounts{}},
		{"a read", "DynamoDB_20120810.GetItem",
			`{"TableName":"apps","Key":{"app":{"S":"rate#app#a"}}}`,
			200, `{"Item":{}}`, leaseCounts{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				call, _ := io.ReadAll(r.Body)
				if string(call) != tc.call || r.Header.Get("X-Amz-Target") != tc.target || r.URL.Path != "/" {
					t.Errorf("the engine got %s %q %s", r.URL.Path, r.Header.Get("X-Amz-Target"), call)
				}
				w.Header().Set("X-Amz-Crc32", "123")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.answer)
			}))
			defer engine.Close()
			p := newLeaseCounter(uds.Rate{PerSecond: 100, Burst: 100})
			front := httptest.NewServer(localbench.NewProxy(engine.URL, p.count))
			defer front.Close()
			req, _ := http.NewRequest(http.MethodPost, front.URL+"/", strings.NewReader(tc.call))
			req.Header.Set("X-Amz-Target", tc.target)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || string(answer) != tc.answer || resp.Header.Get("X-Amz-Crc32") != "123" {
				t.Errorf("the server got %d %s (crc %q), want the engine's %d %s", resp.StatusCode, answer, resp.Header.Get("X-Amz-Crc32"), tc.status, tc.answer)
			}
			if got := p.snapshot(); got != tc.want {
				t.Errorf("counted %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Request lines are filed by caller; a line that is not one is dropped.
func TestServerLogs(t *testing.T) {
	logs := newServerLogs()
	for _, line := range []string{
		`{"level":"INFO","msg":"request","subject":"a","status":200,"latencyMs":1.5,"dynamodbCalls":2,"writeUnits":1}`,
		`{"level":"INFO","msg":"request","subject":"b","status":429,"latencyMs":0.1,"dynamodbCalls":0}`,
		`{"level":"INFO","msg":"request","subject":"a","status":200,"latencyMs":0.5,"dynamodbCalls":1,"rateLimiter":"open"}`,
		`{"level":"INFO","msg":"request","subject":`,
	} {
		logs.OnRequest([]byte(line))
	}
	a, b := logs.of("a"), logs.of("b")
	switch {
	case len(a) != 2 || a[0] != (requestLine{Subject: "a", Status: 200, LatencyMs: 1.5, Calls: 2, WriteUnits: 1}) || a[1].RateLimiter != "open":
		t.Errorf("caller a's lines: %+v", a)
	case len(b) != 1 || b[0].Status != 429:
		t.Errorf("caller b's lines: %+v", b)
	}
}

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		name, rate, steady string
		servers            int
		duration           time.Duration
		wantErr            string
	}{
		{"the defaults", "100/100", "0.9,0.8", 4, 30 * time.Second, ""},
		{"a rate without a burst", "100", "0.9", 4, 30 * time.Second, "-rate"},
		{"a rate of 0", "0/10", "0.9", 4, 30 * time.Second, "-rate"},
		{"a steady caller over its limit", "100/100", "0.9,1.5", 4, 30 * time.Second, "-steady"},
		{"no steady caller", "100/100", "", 4, 30 * time.Second, "-steady"},
		{"no server", "100/100", "0.9", 0, 30 * time.Second, "-servers"},
		{"too short", "100/100", "0.9", 4, time.Millisecond, "-duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options{servers: tc.servers, duration: tc.duration, over: 3}
			err := parseOptions(&o, tc.rate, tc.steady)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one about %s", err, tc.wantErr)
			case tc.wantErr == "" && (o.rate != uds.Rate{PerSecond: 100, Burst: 100} || len(o.steady) != 2):
				t.Errorf("parsed %+v", o)
			}
		})
	}
}

// The latencies of the lines kept, sorted.
func TestLatenciesOf(t *testing.T) {
	l := latenciesOf([]requestLine{{LatencyMs: 3}, {LatencyMs: 1}, {LatencyMs: 2}, {LatencyMs: 4, Status: 429}},
		func(r requestLine) bool { return r.Status == 0 })
	if !slices.Equal(l, latencies{1, 2, 3}) {
		t.Errorf("latencies %v, want 1, 2, 3", l)
	}
}

// The whole benchmark, briefly, against the engine of make test: two
// servers, a second per caller. A caller at half its limit is never
// refused, one at six times it is, the limiter's writes are counted, and
// every server is stopped. The limit holds over the time the requests
// really take to arrive: on a machine busy with the rest of make test
// that is more than the second they are sent in (R × t + B grows with
// it), so the caller over its limit sends six times it, which only a
// machine slowed past five seconds would take in whole.
func TestRunBriefly(t *testing.T) {
	endpoint, bin := localbenchtest.Server(t)
	var report bytes.Buffer
	o := options{udsLocal: bin, servers: 2, rate: uds.Rate{PerSecond: 100, Burst: 100}, duration: time.Second, over: 6, steady: []float64{0.5}}
	if err := run(context.Background(), o, endpoint, &report); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 6× its limit | 600 | ",
		"| 50% of its limit | 50 | 50 | 0 | 0 |",
		"| not limited (override -1), at 50% of the limit | 50 | 50 | 0 | 0 | — |",
		"- met: 50% of its limit: 0 refused",
		"- met: 0 requests let through unchecked",
	} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, &report)
		}
	}
	if strings.Contains(report.String(), "| 6× its limit | 600 | 600 |") {
		t.Errorf("six times the limit, all answered:\n%s", &report)
	}
	if strings.Contains(report.String(), "| 50% of its limit | 0 |") {
		t.Errorf("no lease counted:\n%s", &report)
	}
}
