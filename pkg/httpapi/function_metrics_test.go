package httpapi_test

import (
	"testing"

	"github.com/udsproject/uds/pkg/store/storetest/faults"
)

// By default a request's EMF record is the function's alone: its
// requests, latency, 4xx, 5xx and DynamoDB throttles, with no route and no
// status class, so that a deployment's custom metrics are a few per
// function however many routes it serves.
func TestFunctionMetrics(t *testing.T) {
	t.Parallel()
	o := observedAPI(t, false)
	item := base + "/fm/item"
	for _, tc := range []struct {
		name, method, body string
		status             int
		fault              *faults.Rule
		want               map[string]float64
	}{
		{"created", "POST", `{"data":1}`, 201, nil, map[string]float64{"Requests": 1, "ClientErrors": 0, "ServerErrors": 0, "DynamoDBThrottles": 0}},
		{"conflict", "POST", `{"data":1}`, 409, nil, map[string]float64{"Requests": 1, "ClientErrors": 1, "ServerErrors": 0}},
		{"throttled and retried", "GET", "", 200, &faults.Rule{Kind: faults.Throttle, Ops: []string{"GetItem"}, Nth: 1},
			map[string]float64{"ClientErrors": 0, "DynamoDBThrottles": 1}},
		{"unavailable", "GET", "", 503, &faults.Rule{Kind: faults.Unavailable, Ops: []string{"GetItem"}, Rate: 1},
			map[string]float64{"Requests": 1, "ServerErrors": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != nil {
				o.faults.Set(*tc.fault)
				defer o.faults.Set()
			}
			o.as("alice", tc.method, item, tc.body).expect(t, tc.status)
			line, rec := o.one(t)
			for k, v := range tc.want {
				if rec[k] != v {
					t.Errorf("record %s = %v, want %v: %v", k, rec[k], v, rec)
				}
			}
			if rec["function"] != "local" || rec["Latency"] != line["latencyMs"] {
				t.Errorf("record %v, line %v", rec, line)
			}
			for _, detail := range []string{"route", "statusClass", "StatusClassRequests", "DynamoDBCalls", "WriteCapacityUnits", "RateLimited"} {
				if v, ok := rec[detail]; ok {
					t.Errorf("the record carries %s = %v, which only the per-route layout has", detail, v)
				}
			}
		})
	}
}
