package emf_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

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
	// The route's value has characters JSON must escape, so the slow
	// path of the string encoder is checked too.
	err := w.Write(layout,
		[]emf.Dimension{{Name: "function", Value: "kv"}, {Name: "route", Value: "GET /data/{applicationUuid}/\"ünïcode\"\n"}},
		[]float64{1, 12.5, 0.5},
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
	for _, want := range []string{`"Namespace":"UDS"`, `"route":"GET /data/{applicationUuid}/\"ünïcode\"\n"`, `"Requests":1,`, `"Latency":12.5`,
		`"ReadCapacityUnits":0.5}`, `"Unit":"Milliseconds"`} {
		if !strings.Contains(string(line), want) {
			t.Errorf("line lacks %s: %s", want, line)
		}
	}
}

// The checker refuses what the specification forbids, so that a test
// relying on it can fail. Every record but the timestamps' has a current
// timestamp, so that it is refused for the reason its case names.
func TestCheckRefusesBrokenRecords(t *testing.T) {
	now := time.Now()
	at := func(when time.Time) string {
		return `{"_aws":{"Timestamp":` + strconv.FormatInt(when.UnixMilli(), 10) + `,"CloudWatchMetrics":`
	}
	current := at(now)
	for name, line := range map[string]string{
		"no metadata":            `{"Requests":1}`,
		"no timestamp":           `{"_aws":{"CloudWatchMetrics":[]}}`,
		"timestamp in seconds":   `{"_aws":{"Timestamp":` + strconv.FormatInt(now.Unix(), 10) + `,"CloudWatchMetrics":[]}}`,
		"timestamp in µs":        `{"_aws":{"Timestamp":` + strconv.FormatInt(now.UnixMicro(), 10) + `,"CloudWatchMetrics":[]}}`,
		"timestamp a month ago":  at(now.AddDate(0, -1, 0)) + `[]}}`,
		"timestamp a day ahead":  at(now.AddDate(0, 0, 1)) + `[]}}`,
		"unknown unit":           current + `[{"Namespace":"UDS","Dimensions":[],"Metrics":[{"Name":"R","Unit":"Requests"}]}]},"R":1}`,
		"missing metric value":   current + `[{"Namespace":"UDS","Dimensions":[],"Metrics":[{"Name":"R"}]}]}}`,
		"metric not a number":    current + `[{"Namespace":"UDS","Dimensions":[],"Metrics":[{"Name":"R"}]}]},"R":"1"}`,
		"missing dimension":      current + `[{"Namespace":"UDS","Dimensions":[["route"]],"Metrics":[{"Name":"R"}]}]},"R":1}`,
		"dimension not a string": current + `[{"Namespace":"UDS","Dimensions":[["route"]],"Metrics":[]}]},"route":3}`,
		"31 dimensions": current + `[{"Namespace":"UDS","Dimensions":[["` +
			strings.Repeat(`d","`, 30) + `d"]],"Metrics":[]}]},"d":"x"}`,
	} {
		t.Run(name, func(t *testing.T) {
			if err := emftest.Check([]byte(line)); err == nil {
				t.Errorf("accepted %s", line)
			}
		})
	}
	// The timestamp cases' record with a current timestamp passes, so they
	// are refused for their timestamps alone.
	if line := current + `[]}}`; emftest.Check([]byte(line)) != nil {
		t.Errorf("refused %s: %v", line, emftest.Check([]byte(line)))
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
