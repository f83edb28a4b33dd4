package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/internal/localbench"
	"github.com/udsproject/uds/internal/localbench/localbenchtest"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
)

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		name, targets string
		clients       int
		duration      time.Duration
		firstRelease  string
		resultFile    string
		want          []target
		wantErr       string
	}{
		{"the defaults", "first,strict,streamed,streamed-unread", 16, 20 * time.Second, "121a5de", "", []target{first, strict, streamed, streamedUnread}, ""},
		{"another order, with spaces", "streamed, first", 16, 20 * time.Second, "121a5de", "", []target{streamed, first}, ""},
		{"the current tree only, no release named", "strict", 16, 20 * time.Second, "", "", []target{strict}, ""},
		{"one target into a result file", "streamed-unread", 16, 20 * time.Second, "121a5de", "r.json", []target{streamedUnread}, ""},
		{"an unknown target", "first,lax", 16, 20 * time.Second, "121a5de", "", nil, "-targets: want names among first, strict, streamed, streamed-unread"},
		{"no target", "", 16, 20 * time.Second, "121a5de", "", nil, "-targets"},
		{"a target twice", "strict,strict", 16, 20 * time.Second, "121a5de", "", nil, "-targets: strict named twice"},
		{"too short", "strict", 16, time.Millisecond, "121a5de", "", nil, "-duration"},
		{"no client", "strict", 0, 20 * time.Second, "121a5de", "", nil, "-clients"},
		{"too many clients", "strict", maxClients + 1, 20 * time.Second, "121a5de", "", nil, "-clients"},
		{"the first release without its commit", "first", 16, 20 * time.Second, "", "", nil, "-first-release"},
		{"two targets into a result file", "strict,streamed", 16, 20 * time.Second, "121a5de", "r.json", nil, "-result-file: want one target, got 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options{clients: tc.clients, duration: tc.duration, warmup: 5 * time.Second, firstRelease: tc.firstRelease, resultFile: tc.resultFile}
			err := parseOptions(&o, tc.targets)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one starting %q", err, tc.wantErr)
			case tc.wantErr == "" && !slices.Equal(o.targets, tc.want):
				t.Errorf("targets %v, want %v", o.targets, tc.want)
			}
		})
	}
}

// A result, as the run of one target writes it, reads back as it was,
// its target by name.
func TestResultJSON(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    *result
		wantErr string
	}{
		{"a result", "", &result{Target: streamedUnread, Elapsed: 1500 * time.Millisecond, Gets: outcomes(200, 503), Posts: outcomes(201),
			Lines:     []requestLine{{Time: time.Date(2026, 11, 28, 10, 0, 0, 5, time.UTC), Route: "POST /x", Status: 201, Calls: 3, Retries: 1, WriteUnits: 4.5}},
			LoadAfter: "1.00, 0.50, 0.25", Problems: []string{`{"level":"WARN"}`},
			Feed: &feedResult{Writes: 3, WriteErrors: 1, LagsMs: []float64{2100, 2300}, Missing: 1, ToRowMs: []float64{100}, FromRowMs: []float64{2000}, Reads: 9, ReadErrors: 1, ReadMs: []float64{5, 7}}}, ""},
		{"an unknown target", `{"target": "lax"}`, nil, `no target "lax"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			if tc.want != nil {
				var err error
				if in, err = json.Marshal(tc.want); err != nil {
					t.Fatal(err)
				}
			}
			var got result
			err := json.Unmarshal(in, &got)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one saying %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case !reflect.DeepEqual(&got, tc.want):
				t.Errorf("read back %+v from %s, want %+v", got, in, tc.want)
			}
		})
	}
}

// An item's data is 1 KB of JSON as the server stores it, and the body a
// POST sends is what the API takes.
func TestItemBody(t *testing.T) {
	var body struct {
		Data json.RawMessage `json:"data"`
	}
	dec := json.NewDecoder(strings.NewReader(itemBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("the body %.40s… is not {\"data\": …}: %v", itemBody, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body.Data); err != nil || compact.Len() != 1024 {
		t.Errorf("the data takes %d bytes of compact JSON (%v), want 1024", compact.Len(), err)
	}
}

// Each owner's ids start with its subject, so that no two owners write one
// key, and differ from one another.
func TestOwners(t *testing.T) {
	owners := newOwners(12)
	seen := map[string]bool{}
	for _, ow := range owners {
		for _, path := range []string{ow.seedPath(0), ow.seedPath(seedItems - 1), ow.postPath(0), ow.postPath(1)} {
			if seen[path] || !strings.HasPrefix(path, itemsPath+ow.subject+"-") {
				t.Errorf("path %s: seen before, or not under %s%s-", path, itemsPath, ow.subject)
			}
			seen[path] = true
		}
	}
	if owners[0].subject != "owner-01" || owners[11].subject != "owner-12" {
		t.Errorf("subjects %q … %q", owners[0].subject, owners[11].subject)
	}
}

// prepare sets the app's quota, its mode for a target other than strict
// (and fails saying so when the server has no such route), and writes the
// seed items as their owners.
func TestPrepare(t *testing.T) {
	for _, tc := range []struct {
		name       string
		target     target
		modeRoute  bool
		wantMode   bool
		wantErr    string
		wantWrites int
	}{
		{"strict: the mode left as it is", strict, true, false, "", 2 * seedItems},
		{"the first release: no mode", first, false, false, "", 2 * seedItems},
		{"streamed", streamed, true, true, "", 2 * seedItems},
		{"streamed, its streams unread", streamedUnread, true, true, "", 2 * seedItems},
		{"streamed without the route", streamed, false, true, "setting the quota mode streamed: PUT", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var calls []string
			seeds := map[string]int{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api"+itemsPath) && string(body) == itemBody:
					seeds[r.Header.Get(httpapi.SubjectHeader)]++
					w.WriteHeader(http.StatusCreated)
				case r.Method == http.MethodPut && r.URL.Path == "/api/admin/apps/"+benchApp+"/quota-mode" && !tc.modeRoute:
					http.NotFound(w, r)
				case r.Method == http.MethodPut:
					calls = append(calls, r.URL.Path+" "+string(body))
				default:
					http.Error(w, "unexpected", http.StatusTeapot)
				}
			}))
			defer srv.Close()
			err := prepare(context.Background(), srv.Client(), srv.URL+"/api", tc.target, newOwners(2))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "404") {
					t.Fatalf("error %v, want one saying %q and 404", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			want := []string{"/api/admin/apps/" + benchApp + `/quota {"limitBytes": 1000000000000, "limitItems": 1000000000}`}
			if tc.wantMode && tc.modeRoute {
				want = append(want, "/api/admin/apps/"+benchApp+`/quota-mode {"mode": "streamed"}`)
			}
			if !slices.Equal(calls, want) {
				t.Errorf("admin calls %q, want %q", calls, want)
			}
			if n := seeds["owner-01"] + seeds["owner-02"]; n != tc.wantWrites || (n > 0 && seeds["owner-01"] != seedItems) {
				t.Errorf("seed items written %v, want %d in all, %d each", seeds, tc.wantWrites, seedItems)
			}
		})
	}
}

// outcomes makes outcomes of the given statuses, the i-th taking i+1 ms.
func outcomes(statuses ...int) []localbench.Outcome {
	out := make([]localbench.Outcome, len(statuses))
	for i, s := range statuses {
		out[i] = localbench.Outcome{Status: s, Latency: time.Duration(i+1) * time.Millisecond, Problem: "problem " + strings.Repeat("!", i)}
		if ok(s) {
			out[i].Problem = ""
		}
	}
	return out
}

func TestLatencyOf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outcomes []localbench.Outcome
		want     latency
	}{
		{"none", nil, latency{}},
		{"only 2xx counted", outcomes(200, 503, 200, 0, 201), latency{p50: 3, p99: 5}},
		{"a hundred", outcomes(slices.Repeat([]int{200}, 100)...), latency{p50: 51, p99: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := latencyOf(tc.outcomes); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name       string
		outcomes   [][]localbench.Outcome
		want       string
		wantFirsts map[int]string
	}{
		{"none", [][]localbench.Outcome{outcomes(200, 201), nil}, "0", map[int]string{}},
		{"by status, the first of each kept", [][]localbench.Outcome{outcomes(503, 200, 0), outcomes(201, 503, 409)},
			"4 (no answer × 1, 409 × 1, 503 × 2)", map[int]string{0: "problem !!", 409: "problem !!", 503: "problem "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := failuresOf(tc.outcomes...)
			if f.String() != tc.want {
				t.Errorf("%q, want %q", f.String(), tc.want)
			}
			for s, want := range tc.wantFirsts {
				if f.first[s] != want {
					t.Errorf("the first %d said %q, want %q", s, f.first[s], want)
				}
			}
		})
	}
}

// Request lines are parsed, kept by time, and summed by method.
func TestRequestLines(t *testing.T) {
	start := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	line := func(at time.Duration, route string, calls, retries int, units float64) []byte {
		b, _ := json.Marshal(map[string]any{"time": start.Add(at), "level": "INFO", "msg": "request", "route": route, "status": 200,
			"dynamodbCalls": calls, "dynamodbRetries": retries, "writeUnits": units})
		return b
	}
	var l requestLines
	for _, b := range [][]byte{
		line(-time.Millisecond, "POST /data/{applicationUuid}/{namespace}/{id}", 9, 9, 9), // before the load
		line(0, "GET /data/{applicationUuid}/{namespace}/{id}", 1, 0, 0),
		line(time.Second, "POST /data/{applicationUuid}/{namespace}/{id}", 2, 1, 3),
		line(2*time.Second, "POST /data/{applicationUuid}/{namespace}/{id}", 4, 0, 5),
		[]byte(`{"msg":"request","route":`),
		line(3*time.Second, "GET /data/{applicationUuid}/{namespace}/{id}", 2, 0, 0),
		line(3*time.Second+time.Millisecond, "GET /data/{applicationUuid}/{namespace}/{id}", 9, 9, 0), // after it
	} {
		l.add(b)
	}
	in := l.within(start, start.Add(3*time.Second))
	if len(in) != 4 {
		t.Fatalf("%d lines within the load, want 4: %+v", len(in), in)
	}
	for _, tc := range []struct {
		method string
		want   calls
	}{
		{"GET", calls{lines: 2, perRequest: 1.5}},
		{"POST", calls{lines: 2, perRequest: 3, units: 4, retries: 1}},
		{"PUT", calls{}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			if got := callsOf(in, tc.method); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The report sets the targets side by side and says which engine they
// ran over; the first release, with no request lines, has none of their
// figures; answers that were not 2xx are counted and quoted, and the
// servers' warnings are quoted.
func TestReport(t *testing.T) {
	results := []*result{
		{Target: first, Elapsed: 2 * time.Second, Gets: outcomes(200, 200, 200), Posts: outcomes(201, 201, 201), LoadAfter: "1.00, 0.50, 0.25"},
		{Target: strict, Elapsed: time.Second, Gets: outcomes(200, 200), Posts: outcomes(201, 0, 503, 201),
			Lines: []requestLine{{Route: "GET /x", Calls: 1}, {Route: "POST /x", Calls: 2, WriteUnits: 7, Retries: 1},
				{Route: "POST /x", Namespace: probeNamespace, Calls: 9, WriteUnits: 90}, {Route: "GET /x", Namespace: probeNamespace, Calls: 9}},
			LoadAfter: "2.00, 1.00, 0.50", Problems: []string{`{"level":"ERROR","msg":"request","status":503}`},
			Feed: &feedResult{Writes: 4, LagsMs: []float64{2100, 2200, 2300, 2900}, ToRowMs: []float64{50, 60, 70, 800}, FromRowMs: []float64{2010, 2020, 2030, 2100},
				Batches: []localbench.Batch{{Records: 3, LatencyMs: 10}, {Records: 5, LatencyMs: 30}}, Reads: 50, ReadMs: []float64{4, 5, 6}}},
		{Target: streamedUnread, Elapsed: time.Second, Gets: outcomes(200), Posts: outcomes(201),
			Lines: []requestLine{{Route: "GET /x", Calls: 1}, {Route: "POST /x", Calls: 3, WriteUnits: 4}}, LoadAfter: "2.00, 1.00, 0.50"},
	}
	for _, tc := range []struct {
		name, sharedEngine, wantEngine string
	}{
		{"an engine per target", "", "one uds-local process per target over a fresh in-memory DynamoDB Local engine of its own, targets one after another."},
		{"a shared engine", "http://127.0.0.1:8000",
			"one uds-local process per target over the one DynamoDB engine at http://127.0.0.1:8000, tables of its own per target, targets one after another."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options{firstRelease: "121a5de", clients: 16, warmup: 5 * time.Second, duration: 20 * time.Second, sharedEngine: tc.sharedEngine}
			var out bytes.Buffer
			report(&out, o, "0.10, 0.20, 0.30", results)
			got := out.String()
			for _, want := range []string{
				tc.wantEngine,
				"16 clients, one per owner",
				"limits and namespace policies cached for " + localbench.LimitsCacheTTL() + " (UDS_LIMITS_CACHE_TTL). 5s of warm-up, then 20s measured per target",
				"Load average before the run: 0.10, 0.20, 0.30.",
				"| | first release (121a5de) | strict | streamed, streams not read here |\n|---|---:|---:|---:|\n",
				"| requests/s | 3 | 6 | 2 |\n",
				"| requests: GET / POST | 3 / 3 | 2 / 4 | 1 / 1 |\n",
				"| GET p50 / p99 ms | 2.0 / 3.0 | 2.0 / 2.0 | 1.0 / 1.0 |\n",
				"| POST p50 / p99 ms | 2.0 / 3.0 | 4.0 / 4.0 | 1.0 / 1.0 |\n",
				"| errors (not 2xx) | 0 | 2 (no answer × 1, 503 × 1) | 0 |\n",
				"| DynamoDB calls per GET / POST | — | 1.00 / 2.00 | 1.00 / 3.00 |\n",
				"| write units per POST | — | 7.00 | 4.00 |\n",
				"| DynamoDB retries (GET + POST) | — | 1 | 0 |\n",
				"| feed lag p50 / p99 ms (probe) | — | 2300 / 2900 | — |\n",
				"| of which to the row's instant p50 / p99 ms | — | 70 / 800 | — |\n",
				"| of which from the row's instant p50 / p99 ms | — | 2030 / 2100 | — |\n",
				"| feed lag min / max ms (probe) | — | 2100 / 2900 | — |\n",
				"| feed probe: writes / not in the feed / write errors | — | 4 / 0 / 0 | — |\n",
				"| feed's writer: batches / records a batch / p50 / p99 ms | — | 2 / 4.0 / 30 / 30 | — |\n",
				"| feed follower: reads / errors / p50 / p99 ms | — | 50 / 0 / 5.0 / 6.0 | — |\n",
				"| load average after (1, 5, 15 min) | 1.00, 0.50, 0.25 | 2.00, 1.00, 0.50 | 2.00, 1.00, 0.50 |\n",
				"\nstrict, the first request without an answer: problem !\n",
				"\nstrict, the first 503 answer: problem !!\n",
				"\nstrict: the server logged 1 lines at WARN or ERROR; the first:\n{\"level\":\"ERROR\"",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("the report has no %q:\n%s", want, got)
				}
			}
		})
	}
}

// The whole benchmark, briefly, as make bench-load runs it: this command
// built, running itself once per target under scripts/with-dynamodb.sh,
// which starts an engine for each (UDS_DYNAMODB_ENDPOINT unset); the
// current server in strict mode, then streamed with its streams unread,
// two clients for a second each. Every request is answered 2xx, the
// servers' request lines give their DynamoDB calls, and the
// streamed-unread server's word at start that it counts no streamed usage
// is no warning of the load. The strict server keeps the changes feed:
// the feed probe's every write appears in it. The first release is left out: building it
// takes longer than the rest of the test.
func TestRunBriefly(t *testing.T) {
	_, bin := localbenchtest.Server(t)
	self := filepath.Join(t.TempDir(), "uds-loadbench")
	if out, err := exec.Command("go", "build", "-o", self, ".").CombinedOutput(); err != nil {
		t.Fatalf("building uds-loadbench: %v\n%s", err, out)
	}
	t.Setenv(config.EnvDynamoDBEndpoint, "")
	var report, progress bytes.Buffer
	o := options{udsLocal: bin, firstRelease: "121a5de", targets: []target{strict, streamedUnread}, clients: 2, duration: time.Second,
		withDynamoDB: "../../scripts/with-dynamodb.sh", self: self, progress: &progress}
	if err := run(context.Background(), o, &report); err != nil {
		t.Fatalf("%v\n%s", err, &progress)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`over a fresh in-memory DynamoDB Local engine of its own`),
		regexp.MustCompile(`\| \| strict \| streamed, streams not read here \|\n`),
		regexp.MustCompile(`\| requests/s \| [1-9][0-9]* \| [1-9][0-9]* \|\n`),
		regexp.MustCompile(`\| errors \(not 2xx\) \| 0 \| 0 \|\n`),
		regexp.MustCompile(`\| DynamoDB calls per GET / POST \| [1-9][0-9.]* / [1-9][0-9.]* \| [1-9][0-9.]* / [1-9][0-9.]* \|\n`),
		// Strict's server keeps the feed, and every probe write appeared
		// in it; streamed-unread's reads no stream.
		regexp.MustCompile(`\| feed lag p50 / p99 ms \(probe\) \| [1-9][0-9]* / [1-9][0-9]* \| — \|\n`),
		regexp.MustCompile(`\| feed probe: writes / not in the feed / write errors \| [1-9][0-9]* / 0 / 0 \| — \|\n`),
		// Every row is at least the settle (2 s) old when it appears.
		regexp.MustCompile(`\| of which from the row's instant p50 / p99 ms \| ([2-9][0-9]{3}|[1-9][0-9]{4,}) / ([2-9][0-9]{3}|[1-9][0-9]{4,}) \| — \|\n`),
	} {
		if !want.MatchString(report.String()) {
			t.Errorf("the report does not match %s:\n%s", want, &report)
		}
	}
	if strings.Contains(report.String(), "WARN or ERROR") {
		t.Errorf("the report quotes a server's warning:\n%s", &report)
	}
	engines := regexp.MustCompile(`DynamoDB Local on (http://\S+)`).FindAllStringSubmatch(progress.String(), -1)
	if len(engines) != 2 || engines[0][1] == engines[1][1] {
		t.Errorf("engines started %q, want two on different ports:\n%s", engines, &progress)
	}
}
