package lambdahost_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/internal/emf/emftest"
	"github.com/udsproject/uds/pkg/changes"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/expiry"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// TestEventsReplay replays every API Gateway event under events/, in the
// manifest's order, through the Lambda handler of the function it belongs
// to (the same handler main starts), against an empty store. An entry
// marked afterSettle is sent once what an earlier 202 of the same event
// waited for has settled: a change into or out of private, or the change of
// a namespace's indexes whose build it asked for.
func TestEventsReplay(t *testing.T) {
	cfg := config.Config{
		Tables:          storetest.NewTables(t),
		Endpoint:        os.Getenv(config.EnvDynamoDBEndpoint),
		SubjectClaim:    "sub",
		CursorSecret:    []byte("events"),
		LimitsCacheTTL:  time.Second,
		DeleteAllBudget: 20 * time.Second,
		// A short budget keeps the private change's settle time short.
		RequestBudget: 5 * time.Second,
	}
	// Each event's request line and EMF record are checked too.
	var logs, metrics bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	handlers := map[string]lambdahost.HandlerFunc{}
	for name, group := range map[string]httpapi.Group{"kv": httpapi.GroupKV, "list": httpapi.GroupList, "admin": httpapi.GroupAdmin} {
		h, err := lambdahost.New(context.Background(), cfg, group, logger, nil, emf.NewWriter(&metrics))
		if err != nil {
			t.Fatal(err)
		}
		handlers[name] = h
	}
	raw, err := os.ReadFile("../../events/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var manifest []struct {
		File        string `json:"file"`
		Function    string `json:"function"`
		Status      int    `json:"status"`
		AfterSettle bool   `json:"afterSettle"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, group := range []string{"kv", "list", "admin"} { // events/expiry holds stream events
		g, _ := filepath.Glob("../../events/" + group + "/*.json")
		files = append(files, g...)
	}
	listed := map[string]bool{}
	for _, m := range manifest {
		listed[m.File] = true
	}
	if len(listed) != len(files) {
		t.Errorf("manifest lists %d events, events/ holds %d", len(listed), len(files))
	}
	// series collects the custom metrics the replay's EMF records
	// publish (checkSeries).
	series := map[string]bool{}
	// largest is the longest EMF record the functions wrote, in bytes.
	largest := 0
	// settles holds, per event, when the change it announced settles.
	settles := map[string]time.Time{}
	for _, m := range manifest {
		t.Run(m.File, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("../../events", m.File))
			if err != nil {
				t.Fatal(err)
			}
			var ev events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(body, &ev); err != nil {
				t.Fatal(err)
			}
			h := handlers[m.Function]
			if h == nil {
				t.Fatalf("no function %q", m.Function)
			}
			if m.AfterSettle {
				at, ok := settles[m.File]
				if !ok {
					t.Fatalf("no earlier answer of %s announced a change", m.File)
				}
				time.Sleep(time.Until(at) + 10*time.Millisecond)
			}
			logs.Reset()
			metrics.Reset()
			res, err := h(context.Background(), ev)
			// A refusal by a rate of one request a second needs the event
			// before it to have taken the token less than a second earlier;
			// on a machine so busy that it did not, the event is sent again
			// at once, and then finds the bucket the first sending emptied.
			for range 2 {
				if err != nil || m.Status != http.StatusTooManyRequests || res.StatusCode != http.StatusOK {
					break
				}
				logs.Reset()
				metrics.Reset()
				res, err = h(context.Background(), ev)
			}
			if err != nil {
				t.Fatalf("handler error: %v", err)
			}
			checkObserved(t, m.Function, ev, res.StatusCode, logs.Bytes(), metrics.Bytes())
			if err := emftest.Series(series, metrics.Bytes()); err != nil {
				t.Fatal(err)
			}
			largest = max(largest, len(bytes.TrimSpace(metrics.Bytes())))
			if res.StatusCode != m.Status {
				t.Fatalf("status %d, want %d; body %s", res.StatusCode, m.Status, res.Body)
			}
			if res.StatusCode == 202 {
				// A policy change or an index build, or an erase, that
				// settles before it goes on.
				var announced struct {
					Pending, IndexBuild struct{ SettlesAt time.Time }
					DeletesFrom         time.Time
				}
				err := json.Unmarshal([]byte(res.Body), &announced)
				at := announced.Pending.SettlesAt
				for _, other := range []time.Time{announced.IndexBuild.SettlesAt, announced.DeletesFrom} {
					if at.IsZero() {
						at = other
					}
				}
				if err != nil || at.IsZero() {
					t.Fatalf("202 without the pending change, the index build or the erase's settling: %s", res.Body)
				}
				settles[m.File] = at
			}
			if ev.RequestContext.HTTP.Method == "HEAD" && (res.Body != "" || res.Headers["Etag"] == "") {
				t.Fatalf("HEAD answered a body of %d bytes and headers %v; want no body and the GET's headers", len(res.Body), res.Headers)
			}
			if res.StatusCode >= 400 {
				var e struct{ Error, Timestamp string }
				if err := json.Unmarshal([]byte(res.Body), &e); err != nil || e.Error == "" || e.Timestamp == "" {
					t.Errorf("error body is not the JSON error shape: %s", res.Body)
				}
			}
		})
	}
	checkSeries(t, cfg, series, largest)
	checkChangesReplay(t, cfg)
}

// checkChangesReplay replays the stream events under events/changes (the
// data tables' streams as the changes function's mappings deliver them,
// with no filter) through the changes function's handler, over the store
// as its main builds it, and checks that the feed has a row of each
// record: a removal's marked removed, the others not. The function
// writes no EMF record, so it adds no series to checkSeries' count.
func checkChangesReplay(t *testing.T, cfg config.Config) {
	t.Helper()
	client, err := store.NewClient(context.Background(), cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	h := changes.Handler(store.New(client, cfg.Tables), slog.New(slog.DiscardHandler))
	files, _ := filepath.Glob("../../events/changes/*.json")
	if len(files) == 0 {
		t.Fatal("no stream events under events/changes")
	}
	want := map[string]int{}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.DynamoDBTimeWindowEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		resp, err := h(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%s: %+v, %v", file, resp, err)
		}
		for _, rec := range ev.Records {
			// A removal's row names the version removed, the others the
			// version written.
			removed := rec.EventName == "REMOVE"
			img := rec.Change.NewImage
			if removed {
				img = rec.Change.OldImage
			}
			want[rowOf(img["dataKey"].String(), img["version"].Number(), removed)]++
		}
	}
	out, err := client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(cfg.Tables.Changes), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, row := range out.Items {
		key, _ := row["dataKey"].(*types.AttributeValueMemberS)
		version, _ := row["version"].(*types.AttributeValueMemberN)
		removed, _ := row["removed"].(*types.AttributeValueMemberBOOL)
		if key == nil || version == nil {
			t.Fatalf("a row without its item's key or version: %v", row)
		}
		got[rowOf(key.Value, version.Value, removed != nil && removed.Value)]++
	}
	if !maps.Equal(got, want) {
		t.Errorf("the feed's rows (item, version, removed: count)\n%v\nwant one per record\n%v", got, want)
	}
}

// rowOf names a row of the feed by what it says of its item.
func rowOf(dataKey, version string, removed bool) string {
	return dataKey + " v" + version + map[bool]string{true: " removed"}[removed]
}

// checkSeries replays the stream events under events/expiry through the
// expiry function's handler, adds the series of its EMF records to those
// of the API's, and checks that docs/cost.md states their number: the
// custom metrics a deployment that serves every kind of request pays for
// each month, whatever its routes.
func checkSeries(t *testing.T, cfg config.Config, series map[string]bool, largest int) {
	t.Helper()
	client, err := store.NewClient(context.Background(), cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	h := expiry.Handler(store.New(client, cfg.Tables), slog.New(slog.DiscardHandler), emf.NewWriter(&metrics))
	streams, _ := filepath.Glob("../../events/expiry/*.json")
	if len(streams) == 0 {
		t.Fatal("no stream events under events/expiry")
	}
	for _, file := range streams {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.DynamoDBTimeWindowEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if _, err := h(context.Background(), ev); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if err := emftest.Series(series, metrics.Bytes()); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(series))
	doc, err := os.ReadFile("../../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	stated := regexp.MustCompile(`(?m)^\| custom metric series from the replay \| (\d+) \|`).FindSubmatch(doc)
	if stated == nil || string(stated[1]) != strconv.Itoa(len(names)) {
		t.Errorf("docs/cost.md states %q custom metric series from the replay in \"| custom metric series from the replay | n |\"; the replay publishes %d:\n%s",
			stated, len(names), strings.Join(names, "\n"))
	}
	// The months price the series at $0.30 each, and the logs take the
	// EMF record at its size rounded up to 50 bytes.
	price := "$" + strconv.FormatFloat(0.30*float64(len(names)), 'f', 2, 64)
	for _, want := range []string{
		"\n| custom metrics (" + strconv.Itoa(len(names)) + " series) | $0.00 |" + strings.Repeat(" "+price+" |", 3) + "\n",
		"the EMF record is at most " + strconv.Itoa((largest+49)/50*50) + " bytes",
	} {
		if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("docs/cost.md does not say %q", want)
		}
	}
}

// checkObserved checks the one request line and the one EMF record a
// request left.
func checkObserved(t *testing.T, function string, ev events.APIGatewayV2HTTPRequest, status int, logs, metrics []byte) {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(logs), []byte("\n"))
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want one: %s", len(lines), logs)
	}
	var line struct {
		Level, Msg, Route, Method, Subject, APIRequestID string
		Status, BytesIn, BytesOut                        int
		LatencyMs                                        float64
		Cause                                            string
		DynamoDBCalls                                    *int `json:"dynamodbCalls"`
	}
	if err := json.Unmarshal(lines[0], &line); err != nil {
		t.Fatal(err)
	}
	wantLevel := "INFO"
	if status >= 500 {
		wantLevel = "ERROR"
	}
	if line.Msg != "request" || line.Level != wantLevel || line.Status != status ||
		!(strings.HasPrefix(line.Route, ev.RequestContext.HTTP.Method+" ") || line.Route == "unmatched" && line.Method == ev.RequestContext.HTTP.Method) ||
		line.Route == "" || line.LatencyMs <= 0 || line.DynamoDBCalls == nil || line.APIRequestID != ev.RequestContext.RequestID ||
		line.BytesIn != bodyBytes(t, ev) || (status != 204 && ev.RequestContext.HTTP.Method != "HEAD" && line.BytesOut == 0) {
		t.Errorf("request line %s", lines[0])
	}
	if jwt := ev.RequestContext.Authorizer; jwt != nil && jwt.JWT != nil && line.Subject != jwt.JWT.Claims["sub"] {
		t.Errorf("subject %q, want the token's %q", line.Subject, jwt.JWT.Claims["sub"])
	}
	records := bytes.Split(bytes.TrimSpace(metrics), []byte("\n"))
	if len(records) != 1 {
		t.Fatalf("%d EMF records, want one: %s", len(records), metrics)
	}
	if err := emftest.Check(records[0]); err != nil {
		t.Errorf("EMF record: %v\n%s", err, records[0])
	}
	// By default the record is the function's: no route, no status
	// class, which the request line has.
	var rec struct {
		Function, Route, StatusClass string
		Requests                     float64
		ClientErrors, ServerErrors   float64
		// RateLimited is written by the requests refused 429 only.
		RateLimited *float64
	}
	_ = json.Unmarshal(records[0], &rec)
	if rec.Function != function || rec.Route != "" || rec.StatusClass != "" || rec.Requests != 1 ||
		rec.ClientErrors != oneIf(status/100 == 4) || rec.ServerErrors != oneIf(status >= 500) ||
		(rec.RateLimited != nil) != (status == http.StatusTooManyRequests) {
		t.Errorf("EMF record %s", records[0])
	}
}

// oneIf is 1 when b holds, the value of a count metric that counts it.
func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// bodyBytes is the length of an event's body as the function reads it:
// API Gateway sends a binary body base64 encoded.
func bodyBytes(t *testing.T, ev events.APIGatewayV2HTTPRequest) int {
	t.Helper()
	if !ev.IsBase64Encoded {
		return len(ev.Body)
	}
	b, err := base64.StdEncoding.DecodeString(ev.Body)
	if err != nil {
		t.Fatalf("a body marked base64 that is not: %v", err)
	}
	return len(b)
}
