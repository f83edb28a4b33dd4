package emf_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/internal/emf/emftest"
)

func TestRecordsMeetTheSpecification(t *testing.T) {
	var out bytes.Buffer
	w := emf.NewWriter(&out)
	err := w.Write(emf.Record{
		Dimensions: map[string]string{"function": "kv", "route": "GET /data/{applicationUuid}/{namespace}/{id}"},
		Directives: []emf.Directive{
			{DimensionSets: [][]string{{"function", "route"}, {"function"}}, Metrics: []emf.Metric{
				{Name: "Requests", Unit: emf.Count, Value: 1}, {Name: "Latency", Unit: emf.Milliseconds, Value: 12.5},
			}},
			{DimensionSets: [][]string{{}}, Metrics: []emf.Metric{{Name: "ReadCapacityUnits", Unit: emf.None, Value: 0.5}}},
		},
		Properties: map[string]any{"applicationUuid": "d53065bd-f932-4841-83fb-849717d8df0f", "subject": "auth0|abc", "note": "a \"quoted\" ünïcode\n line", "count": 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	line := out.Bytes()
	if bytes.Count(line, []byte("\n")) != 1 || !bytes.HasSuffix(line, []byte("\n")) {
		t.Fatalf("not one line: %q", line)
	}
	if err := emftest.Check(line); err != nil {
		t.Errorf("%v\n%s", err, line)
	}
	for _, want := range []string{`"Namespace":"UDS"`, `"subject":"auth0|abc"`, `"Latency":12.5`, `"Unit":"Milliseconds"`} {
		if !strings.Contains(string(line), want) {
			t.Errorf("line lacks %s: %s", want, line)
		}
	}
}

// The checker refuses what the specification forbids, so that a test
// relying on it can fail.
func TestCheckRefusesBrokenRecords(t *testing.T) {
	for name, line := range map[string]string{
		"no metadata":            `{"Requests":1}`,
		"no timestamp":           `{"_aws":{"CloudWatchMetrics":[]}}`,
		"unknown unit":           `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"UDS","Dimensions":[],"Metrics":[{"Name":"R","Unit":"Requests"}]}]},"R":1}`,
		"missing metric value":   `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"UDS","Dimensions":[],"Metrics":[{"Name":"R"}]}]}}`,
		"metric not a number":    `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"UDS","Dimensions":[],"Metrics":[{"Name":"R"}]}]},"R":"1"}`,
		"missing dimension":      `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"UDS","Dimensions":[["route"]],"Metrics":[{"Name":"R"}]}]},"R":1}`,
		"dimension not a string": `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"UDS","Dimensions":[["route"]],"Metrics":[]}]},"route":3}`,
		"31 dimensions": `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"UDS","Dimensions":[["` +
			strings.Repeat(`d","`, 30) + `d"]],"Metrics":[]}]},"d":"x"}`,
	} {
		t.Run(name, func(t *testing.T) {
			if err := emftest.Check([]byte(line)); err == nil {
				t.Errorf("accepted %s", line)
			}
		})
	}
}

func TestNilWriterWritesNothing(t *testing.T) {
	var w *emf.Writer
	if err := w.Write(emf.Record{}); err != nil {
		t.Fatal(err)
	}
}
