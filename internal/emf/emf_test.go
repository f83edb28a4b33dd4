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
	layout := emf.NewLayout(
		emf.Directive{DimensionSets: [][]string{{"function", "route"}, {"function"}}, Metrics: []emf.Metric{
			{Name: "Requests", Unit: emf.Count}, {Name: "Latency", Unit: emf.Milliseconds},
		}},
		emf.Directive{DimensionSets: [][]string{{}}, Metrics: []emf.Metric{{Name: "ReadCapacityUnits", Unit: emf.None}}},
	)
	err := w.Write(layout,
		[]emf.Dimension{{Name: "function", Value: "kv"}, {Name: "route", Value: "GET /data/{applicationUuid}/{namespace}/{id}"}},
		[]float64{1, 12.5, 0.5},
		emf.Property{Name: "applicationUuid", Value: "d53065bd-f932-4841-83fb-849717d8df0f"}, emf.Property{Name: "subject", Value: "auth0|abc"},
		emf.Property{Name: "note", Value: "a \"quoted\" ünïcode\n line"}, emf.Property{Name: "count", Value: 3},
		emf.Property{Name: "list", Value: []int{1, 2}},
	)
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
	if err := w.Write(emf.NewLayout(), nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestValuesMustMatchTheLayout(t *testing.T) {
	w := emf.NewWriter(new(bytes.Buffer))
	layout := emf.NewLayout(emf.Directive{Metrics: []emf.Metric{{Name: "Requests"}}})
	if err := w.Write(layout, nil, []float64{1, 2}); err == nil {
		t.Error("two values for one metric were written")
	}
}
