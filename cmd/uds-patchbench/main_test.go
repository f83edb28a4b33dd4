package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/udsproject/uds/internal/localbench/localbenchtest"
)

// The check after the run finds a member missing, stale or unknown, and
// a version that does not count the patches answered.
func TestVerify(t *testing.T) {
	o := options{clients: 3, patches: 4}
	for _, tc := range []struct {
		name    string
		data    string
		version int64
		want    []string
	}{
		{"every member at its last value", `{"m0":3,"m1":3,"m2":3}`, 13, nil},
		{"a member missing", `{"m0":3,"m2":3}`, 13, []string{"1 of 3 members missing: m1"}},
		{"a member stale", `{"m0":3,"m1":2,"m2":3}`, 13, []string{"1 of 3 members not at their last value 3: m1=2"}},
		{"a member no client set", `{"m0":3,"m1":3,"m2":3,"x":1}`, 13, []string{"1 members no client set"}},
		{"a patch counted twice", `{"m0":3,"m1":3,"m2":3}`, 14, []string{"version 14, want 13"}},
		{"nothing patched", `{}`, 1, []string{"3 of 3 members missing: m0, m1, m2", "version 1, want 13"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var data map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.data), &data); err != nil {
				t.Fatal(err)
			}
			got := verify(data, tc.version, o, 12)
			if len(got) != len(tc.want) {
				t.Fatalf("verify: %q, want %d problems like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d: %q, want it to start %q", i, got[i], w)
				}
			}
		})
	}
}

// The counter counts the item's writes by outcome and its reads, and
// nothing of other items or of the changes feed.
func TestItemCounter(t *testing.T) {
	const key = `"5ca1ab1e|ns|it"`
	item := `{"TableName":"data_store","Key":{"dataKey":{"S":` + key + `}}}`
	for _, tc := range []struct {
		name, target, call string
		status             int
		answer             string
		want               itemCounts
	}{
		{"a write alone", "DynamoDB_20120810.UpdateItem", item, 200, `{}`, itemCounts{Committed: 1}},
		{"a transaction", "DynamoDB_20120810.TransactWriteItems", `{"TransactItems":[{"Update":` + item + `}]}`, 200, `{}`, itemCounts{Committed: 1}},
		{"a write alone that lost its race", "DynamoDB_20120810.UpdateItem", item, 400,
			`{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"}`, itemCounts{Raced: 1}},
		{"a transaction that lost its race", "DynamoDB_20120810.TransactWriteItems", `{"TransactItems":[{"Update":` + item + `}]}`, 400,
			`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","CancellationReasons":[{"Code":"ConditionalCheckFailed"},{"Code":"None"}]}`,
			itemCounts{Raced: 1}},
		{"a transaction in conflict", "DynamoDB_20120810.TransactWriteItems", `{"TransactItems":[{"Update":` + item + `}]}`, 400,
			`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","CancellationReasons":[{"Code":"TransactionConflict"}]}`,
			itemCounts{Failed: 1}},
		{"a read", "DynamoDB_20120810.GetItem", item, 200, `{"Item":{}}`, itemCounts{Reads: 1}},
		{"another item", "DynamoDB_20120810.UpdateItem", strings.Replace(item, "|it", "|it2", 1), 200, `{}`, itemCounts{}},
		{"the changes feed's rows", "DynamoDB_20120810.BatchWriteItem", `{"RequestItems":{"data_changes":[{"PutRequest":{"Item":{"dataKey":{"S":` + key + `}}}}]}}`, 200, `{}`, itemCounts{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newItemCounter("5ca1ab1e|ns|it")
			c.count(tc.target, []byte(tc.call), tc.status, []byte(tc.answer))
			if got := c.snapshot(); got != tc.want {
				t.Errorf("counted %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The whole benchmark, briefly, against the engine of make test: 16
// clients of 10 patches each, every member at its last value at the end
// (run fails otherwise), and the retries counted.
func TestRunBriefly(t *testing.T) {
	endpoint, bin := localbenchtest.Server(t)
	var report bytes.Buffer
	o := options{udsLocal: bin, clients: 16, patches: 10}
	if err := run(context.Background(), o, endpoint, &report); err != nil {
		t.Fatalf("%v\n%s", err, &report)
	}
	for _, want := range []string{
		"| 160 | 160 | ",
		"- met: every member of the 16 clients present at its last value, version 161",
	} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, &report)
		}
	}
}
