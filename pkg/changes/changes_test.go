package changes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/changes"
	"github.com/udsproject/uds/pkg/store"
)

// fakeLogger stands in for the store: it keeps the changes of each call
// and answers rows and err.
type fakeLogger struct {
	calls [][]store.StreamChange
	rows  int
	err   error
}

func (f *fakeLogger) LogChanges(_ context.Context, c []store.StreamChange) (int, error) {
	f.calls = append(f.calls, c)
	return f.rows, f.err
}

// fixture is the stream batch of the data table under events/changes: an
// item created, updated and deleted.
const fixture = "../../events/changes/01-data-table-changes.json"

func readEvent(t *testing.T, file string) events.DynamoDBTimeWindowEvent {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBTimeWindowEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// windowed is the fixture as the local poller sends it: in a tumbling
// window, whose fields the deployed mapping (which has no window) does
// not send.
func windowed(t *testing.T) events.DynamoDBTimeWindowEvent {
	ev := readEvent(t, fixture)
	ev.ShardID = "shardId-00000001705312800000-0a1b2c3d"
	ev.Window = events.Window{Start: events.RFC3339EpochTime{Time: time.Unix(1705312800, 0)}, End: events.RFC3339EpochTime{Time: time.Unix(1705312801, 0)}}
	return ev
}

// TestHandler runs the changes function's handler on stream batches
// against a fake store: every record of a batch reaches the store, in
// order, as the change it is (a removal has no new image); a batch the
// store wrote reports no failure, and one it failed reports its first
// record, so that Lambda hands the whole batch over again; a window's
// empty event (the local poller's, at a window's end) writes nothing.
// Either way the answer carries an empty state, which a windowed mapping
// needs, and each batch leaves one line.
func TestHandler(t *testing.T) {
	const first = "211200000000000000000001"
	for _, tc := range []struct {
		name  string
		event func(t *testing.T) events.DynamoDBTimeWindowEvent
		rows  int
		err   error
		// calls is how many calls the store should see; failed the
		// sequence number reported failed ("" for none); level and
		// cause the batch's line (level "" for no line).
		calls  int
		failed string
		level  string
		cause  string
	}{
		{name: "empty window event", event: func(*testing.T) events.DynamoDBTimeWindowEvent {
			return events.DynamoDBTimeWindowEvent{}
		}},
		{name: "fixture written", event: func(t *testing.T) events.DynamoDBTimeWindowEvent { return readEvent(t, fixture) },
			rows: 3, calls: 1, level: "INFO"},
		{name: "fixture in a window", event: windowed, rows: 3, calls: 1, level: "INFO"},
		{name: "nothing to write", event: func(t *testing.T) events.DynamoDBTimeWindowEvent { return readEvent(t, fixture) },
			rows: 0, calls: 1, level: "DEBUG"},
		{name: "store fails", event: func(t *testing.T) events.DynamoDBTimeWindowEvent { return readEvent(t, fixture) },
			rows: 1, err: errors.New("log changes: throttled"), calls: 1, failed: first, level: "ERROR",
			cause: "batch from record 000000000000178c2a0115264d900001: log changes: throttled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			l := &fakeLogger{rows: tc.rows, err: tc.err}
			h := changes.Handler(l, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			ev := tc.event(t)
			resp, err := h(context.Background(), ev)
			if err != nil {
				t.Fatalf("handler error %v: a batch fails by its report, never by an error", err)
			}
			if resp.State == nil || len(resp.State) != 0 {
				t.Errorf("state %v, want an empty one", resp.State)
			}
			var failed []string
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
			want := []string(nil)
			if tc.failed != "" {
				want = []string{tc.failed}
			}
			if strings.Join(failed, ",") != strings.Join(want, ",") {
				t.Errorf("batch item failures %v, want %v", failed, want)
			}
			if len(l.calls) != tc.calls {
				t.Fatalf("%d calls of the store, want %d", len(l.calls), tc.calls)
			}
			if tc.calls > 0 {
				checkChanges(t, ev, l.calls[0])
			}
			checkLine(t, logs.Bytes(), tc.level, len(ev.Records), tc.rows, tc.cause)
		})
	}
}

// TestFailureReport checks the answer as Lambda reads it: a failed batch
// names its first record's sequence number in batchItemFailures, and a
// batch written names none.
func TestFailureReport(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"written", nil, `{"batchItemFailures":null,"state":{}}`},
		{"failed", errors.New("log changes: unavailable"), `{"batchItemFailures":[{"itemIdentifier":"211200000000000000000001"}],"state":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := changes.Handler(&fakeLogger{rows: 3, err: tc.err}, slog.New(slog.DiscardHandler))
			resp, err := h(context.Background(), readEvent(t, fixture))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(resp)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, got, []byte(tc.want)) {
				t.Errorf("answer %s, want %s", got, tc.want)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// checkChanges compares the changes the store was given with the batch's
// records: one each, in order, with the record's sequence number and
// time, the old image where the record has one and the new image where
// it has one (none for a removal, which is how the store tells one).
func checkChanges(t *testing.T, ev events.DynamoDBTimeWindowEvent, got []store.StreamChange) {
	t.Helper()
	if len(got) != len(ev.Records) {
		t.Fatalf("%d changes, want one per record (%d)", len(got), len(ev.Records))
	}
	for i, rec := range ev.Records {
		c := got[i]
		if c.Sequence != rec.Change.SequenceNumber || !c.At.Equal(rec.Change.ApproximateCreationDateTime.Time) {
			t.Errorf("change %d: sequence %s at %v, want %s at %v", i, c.Sequence, c.At, rec.Change.SequenceNumber, rec.Change.ApproximateCreationDateTime.Time)
		}
		for _, side := range []struct {
			name  string
			image map[string]types.AttributeValue
			want  map[string]events.DynamoDBAttributeValue
		}{{"old", c.Old, rec.Change.OldImage}, {"new", c.New, rec.Change.NewImage}} {
			if len(side.image) != len(side.want) {
				t.Errorf("change %d (%s): %s image of %d attributes, want %d", i, rec.EventName, side.name, len(side.image), len(side.want))
				continue
			}
			if len(side.want) == 0 {
				continue
			}
			key, _ := side.image["dataKey"].(*types.AttributeValueMemberS)
			version, _ := side.image["version"].(*types.AttributeValueMemberN)
			if key == nil || key.Value != side.want["dataKey"].String() || version == nil || version.Value != side.want["version"].Number() {
				t.Errorf("change %d (%s): %s image %v, want the record's", i, rec.EventName, side.name, side.image)
			}
		}
	}
}

// checkLine checks the one line a batch leaves (none for an empty
// event): its level, the records and rows, and the cause of a failure.
func checkLine(t *testing.T, logs []byte, level string, records, rows int, cause string) {
	t.Helper()
	logs = bytes.TrimSpace(logs)
	if level == "" {
		if len(logs) > 0 {
			t.Errorf("lines %s, want none", logs)
		}
		return
	}
	if bytes.Count(logs, []byte("\n")) != 0 {
		t.Fatalf("lines %s, want one", logs)
	}
	var line struct {
		Level, Msg, Cause string
		Records, Rows     int
		LagMs             *float64
		DynamoDBCalls     *int `json:"dynamodbCalls"`
	}
	if err := json.Unmarshal(logs, &line); err != nil {
		t.Fatal(err)
	}
	if line.Msg != "changes batch" || line.Level != level || line.Records != records || line.Rows != rows ||
		line.Cause != cause || line.LagMs == nil || line.DynamoDBCalls == nil {
		t.Errorf("line %s, want %s with %d records, %d rows and cause %q", logs, level, records, rows, cause)
	}
}
