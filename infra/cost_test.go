package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// stackCounts counts what docs/cost.md's fixed costs depend on, in a
// synthesized template: the rows of cost.md's table of counts, by name.
func stackCounts(s *synthesized) map[string]int {
	counts := map[string]int{
		"functions":  len(s.ofType("AWS::Lambda::Function")),
		"tables":     len(s.ofType("AWS::DynamoDB::Table")),
		"alarms":     len(s.ofType("AWS::CloudWatch::Alarm")),
		"dashboards": len(s.ofType("AWS::CloudWatch::Dashboard")),
	}
	for _, id := range s.ofType("AWS::DynamoDB::Table") {
		counts["global secondary indexes"] += len(asList(s.resources[id].Properties["GlobalSecondaryIndexes"]))
	}
	// CloudWatch bills an alarm per metric it reads: one for an alarm on
	// a metric, each metric (not each expression) for an alarm on metric
	// math.
	for _, id := range s.ofType("AWS::CloudWatch::Alarm") {
		p := s.resources[id].Properties
		if _, ok := p["MetricName"]; ok {
			counts["alarm metrics"]++
			continue
		}
		for _, m := range asList(p["Metrics"]) {
			if _, ok := m.(map[string]any)["MetricStat"]; ok {
				counts["alarm metrics"]++
			}
		}
	}
	return counts
}

// costCountRow is a row of cost.md's table of counts: | name | count |.
var costCountRow = regexp.MustCompile(`(?m)^\| ([a-z ]+) \| (\d+) \|`)

// checkCostCounts checks that docs/cost.md states the counts of the
// default stack's template, every one and nothing else, in its table of
// counts (the rows between the markers), and that its alarm prices are
// those counts at $0.10 each.
func checkCostCounts(t *testing.T, s *synthesized) {
	counts := stackCounts(s)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "cost.md"))
	if err != nil {
		t.Fatal(err)
	}
	table := regexp.MustCompile(`(?s)<!-- counts from the template -->\n(.*?)<!-- end of counts -->`).FindSubmatch(doc)
	if table == nil {
		t.Fatalf("docs/cost.md has no table of counts (the template's: %v) between <!-- counts from the template --> and <!-- end of counts -->", counts)
	}
	stated := map[string]int{}
	for _, m := range costCountRow.FindAllSubmatch(table[1], -1) {
		n, _ := strconv.Atoi(string(m[2]))
		stated[string(m[1])] = n
	}
	checkEqual(t, "docs/cost.md's counts", stated, counts)
	want := "| alarms | " + strconv.Itoa(counts["alarms"]) + " alarms, " + strconv.Itoa(counts["alarm metrics"]) + " metrics | $" +
		strconv.FormatFloat(float64(counts["alarms"])/10, 'f', 2, 64) + " to $" + strconv.FormatFloat(float64(counts["alarm metrics"])/10, 'f', 2, 64) + " |"
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).Match(doc) {
		t.Errorf("docs/cost.md has no line %q pricing the alarms", want)
	}
	// The months' fixed lines are the same every month; idle, they are
	// all there is.
	alarms, dashboards := float64(counts["alarm metrics"])/10, 3*float64(counts["dashboards"])
	for _, line := range []string{
		"| alarms (" + strconv.Itoa(counts["alarm metrics"]) + " metrics) |" + strings.Repeat(" "+usd(alarms)+" |", 4),
		"| dashboard |" + strings.Repeat(" "+usd(dashboards)+" |", 4),
		"| **total** | **" + usd(alarms+dashboards) + "** |",
	} {
		if !strings.Contains(string(doc), "\n"+line) {
			t.Errorf("docs/cost.md's months have no line starting %q", line)
		}
	}
}

func usd(v float64) string { return "$" + strconv.FormatFloat(v, 'f', 2, 64) }
