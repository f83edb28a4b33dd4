// Package emftest checks Embedded Metric Format lines against the
// specification, for the tests of packages that write them.
package emftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/policy"
)

// Timestamps CloudWatch accepts: a metric's time may be up to two weeks
// in the past and two hours in the future. A timestamp in seconds or in
// microseconds falls far outside.
const (
	oldestTimestamp = 14 * 24 * time.Hour
	newestTimestamp = 2 * time.Hour
)

// Check validates one EMF line against the specification: its structure
// against emf-spec.schema.json, then the rules a schema cannot
// say (the timestamp is in milliseconds, within the window CloudWatch
// accepts around now; every dimension a directive names is a string
// member of the root of at most 1,024 characters; every metric a number,
// or an array of at most 100 numbers). Tests of packages that write EMF
// use it as they write, so now is the record's time.
func Check(line []byte) error {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "emf-spec.schema.json"))
	if err != nil {
		return err
	}
	spec, err := policy.Compile(raw)
	if err != nil {
		return fmt.Errorf("the specification schema: %w", err)
	}
	if err := spec.Check(line); err != nil {
		return fmt.Errorf("%w: %+v", err, err)
	}
	var doc struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Dimensions [][]string
				Metrics    []struct{ Name string }
			}
		} `json:"_aws"`
	}
	var root map[string]any
	if err := json.Unmarshal(line, &doc); err != nil {
		return err
	}
	if err := json.Unmarshal(line, &root); err != nil {
		return err
	}
	now := time.Now()
	if at := time.UnixMilli(doc.AWS.Timestamp); at.Before(now.Add(-oldestTimestamp)) || at.After(now.Add(newestTimestamp)) {
		return fmt.Errorf("timestamp %d is %s from now: not milliseconds since the epoch of a current record", doc.AWS.Timestamp, at.Sub(now).Round(time.Second))
	}
	for _, d := range doc.AWS.CloudWatchMetrics {
		for _, set := range d.Dimensions {
			for _, name := range set {
				v, ok := root[name].(string)
				if !ok || len(v) > 1024 {
					return fmt.Errorf("dimension %q: the root holds %#v, want a string of at most 1024 characters", name, root[name])
				}
			}
		}
		for _, m := range d.Metrics {
			switch v := root[m.Name].(type) {
			case float64:
			case []any:
				if len(v) > 100 {
					return fmt.Errorf("metric %q holds %d values, at most 100", m.Name, len(v))
				}
				for _, x := range v {
					if _, ok := x.(float64); !ok {
						return fmt.Errorf("metric %q holds %#v, not a number", m.Name, x)
					}
				}
			default:
				return fmt.Errorf("metric %q: the root holds %#v, want a number", m.Name, root[m.Name])
			}
		}
	}
	return nil
}

// Series adds to series the custom metrics that the EMF lines in logs
// publish, as CloudWatch bills them: one per namespace, metric name,
// dimension set and the values of its dimensions, named so that a
// failing test can print them. Lines that are not EMF records (log lines)
// are skipped.
func Series(series map[string]bool, logs []byte) error {
	for _, line := range bytes.Split(logs, []byte("\n")) {
		var doc struct {
			AWS *struct {
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name string }
				}
			} `json:"_aws"`
		}
		var root map[string]any
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &doc) != nil || doc.AWS == nil {
			continue
		}
		if err := json.Unmarshal(line, &root); err != nil {
			return err
		}
		for _, d := range doc.AWS.CloudWatchMetrics {
			for _, set := range d.Dimensions {
				dims := make([]string, len(set))
				for i, name := range set {
					dims[i] = fmt.Sprintf("%s=%v", name, root[name])
				}
				for _, m := range d.Metrics {
					series[d.Namespace+" "+m.Name+" {"+strings.Join(dims, ",")+"}"] = true
				}
			}
		}
	}
	return nil
}
