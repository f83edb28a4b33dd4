package wsgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/internal/emf"
)

// transport is the deployed endpoint's three parts over one connections
// table, one queue and one stage, with the test engine.
type transport struct {
	conns  *Connections
	queue  *memQueue
	gw     *gateway
	routes *Routes
	deliv  *Deliverer
	pub    *Publisher
	engine *echoEngine
	logs   *bytes.Buffer
	// metrics holds the EMF records written.
	metrics *bytes.Buffer
}

func newTransport(t *testing.T) *transport {
	t.Helper()
	tr := &transport{conns: newConnections(t), queue: &memQueue{failFor: map[string]bool{}}, engine: &echoEngine{fail: map[string]bool{}},
		logs: &bytes.Buffer{}, metrics: &bytes.Buffer{}}
	var mgmt *Management
	tr.gw, mgmt = newGateway(t)
	log := slog.New(slog.NewJSONHandler(tr.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tr.routes = NewRoutes(tr.conns, tr.queue, mgmt, nil, nil, log)
	tr.deliv = NewDeliverer(tr.conns, tr.engine, mgmt, log, emf.NewWriter(tr.metrics))
	tr.pub = NewPublisher(tr.conns, tr.queue, mgmt, log, emf.NewWriter(tr.metrics))
	return tr
}

func (tr *transport) route(t *testing.T, eventType, id, body string) int {
	t.Helper()
	res, err := tr.routes.Handle(context.Background(), events.APIGatewayWebsocketProxyRequest{
		Body: body,
		RequestContext: events.APIGatewayWebsocketProxyRequestContext{
			EventType: eventType, ConnectionID: id, RequestID: fmt.Sprintf("r-%s-%d", id, time.Now().UnixNano()),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode
}

// drain delivers the queue's messages in batches of ten until it is
// empty, and returns the failures of the last batch that had any.
func (tr *transport) drain(t *testing.T) []events.SQSBatchItemFailure {
	t.Helper()
	var failures []events.SQSBatchItemFailure
	for {
		batch := tr.queue.take(10)
		if len(batch.Records) == 0 {
			return failures
		}
		res, err := tr.deliv.Handle(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.BatchItemFailures) > 0 {
			failures = res.BatchItemFailures
		}
	}
}

func subscribe(id, app, ns string) string {
	return fmt.Sprintf(`{"action":"subscribe","id":%q,"applicationUuid":%q,"namespace":%q}`, id, app, ns)
}

func TestDeliverInOrder(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	tr.route(t, "CONNECT", "B", "")
	tr.route(t, "MESSAGE", "A", subscribe("s1", "app", "ns"))
	tr.route(t, "MESSAGE", "B", subscribe("s1", "app", "ns"))
	tr.route(t, "MESSAGE", "B", subscribe("s2", "app", "other"))
	tr.drain(t)

	var rows []Row
	for v := range int64(30) {
		rows = append(rows, Row{App: "app", Namespace: "ns", ID: "item", Seq: fmt.Sprint(v), Version: v + 1})
		if v%3 == 0 {
			rows = append(rows, Row{App: "app", Namespace: "other", ID: "o", Seq: fmt.Sprint(v), Version: v + 1})
		}
	}
	// Three batches of the changes function, delivered in batches of
	// ten events that mix the two connections.
	tr.pub.publish(rows[:10])
	tr.pub.publish(rows[10:25])
	tr.pub.publish(rows[25:])
	if failures := tr.drain(t); len(failures) != 0 {
		t.Fatalf("failures: %v", failures)
	}

	versions := func(id, sub string) []int64 {
		var out []int64
		for _, m := range tr.gw.messages(id) {
			var msg struct {
				Type, ID string
				Version  int64
			}
			if err := json.Unmarshal([]byte(m), &msg); err != nil {
				t.Fatal(err)
			}
			if msg.Type == "change" && msg.ID == sub {
				out = append(out, msg.Version)
			}
		}
		return out
	}
	want := func(step int64) []int64 {
		var out []int64
		for v := int64(0); v < 30; v += step {
			out = append(out, v+1)
		}
		return out
	}
	if got := versions("A", "s1"); !slices.Equal(got, want(1)) {
		t.Errorf("A's changes: %v, want every version in order", got)
	}
	if got := versions("B", "s1"); !slices.Equal(got, want(1)) {
		t.Errorf("B's s1 changes: %v", got)
	}
	if got := versions("B", "s2"); !slices.Equal(got, want(3)) {
		t.Errorf("B's s2 changes: %v", got)
	}
	if first := tr.gw.messages("A")[0]; !strings.Contains(first, `"subscribed"`) || !strings.Contains(first, `"caller":"anonymous"`) {
		t.Errorf("A's first message: %s", first)
	}
	if tr.gw.signed == 0 {
		t.Errorf("no Management API call was signed")
	}
	if !strings.Contains(tr.metrics.String(), `"Deliveries"`) {
		t.Errorf("no EMF record of deliveries: %s", tr.metrics)
	}
}

// TestDeliverGone removes a connection that API Gateway has closed
// without its $disconnect having come.
func TestDeliverGone(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	tr.route(t, "MESSAGE", "A", subscribe("s1", "app", "ns"))
	tr.drain(t)
	tr.gw.setGone("A")
	tr.pub.publish([]Row{{App: "app", Namespace: "ns", ID: "i", Seq: "1", Version: 1}})
	tr.drain(t)
	if conn, _ := tr.conns.Load(context.Background(), "A"); conn != nil {
		t.Fatalf("a gone connection is kept: %+v", conn)
	}
	if subs, _ := tr.conns.Subscribers(context.Background(), feedOf("app", "ns", "")); len(subs) != 0 {
		t.Fatalf("a gone connection still watches: %v", subs)
	}
	// Its later events are dropped.
	if failures := tr.drain(t); len(failures) != 0 {
		t.Fatal(failures)
	}
}

// TestDeliverPostFailure closes a connection one of whose messages could
// not be posted, so that its client resumes from its last cursor.
func TestDeliverPostFailure(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	tr.route(t, "MESSAGE", "A", subscribe("s1", "app", "ns"))
	tr.drain(t)
	tr.gw.answer(400)
	tr.pub.publish([]Row{{App: "app", Namespace: "ns", ID: "i", Seq: "1", Version: 1}})
	if failures := tr.drain(t); len(failures) != 0 {
		t.Fatalf("the event is retried: %v", failures)
	}
	if closed := tr.gw.closedOnes(); !slices.Equal(closed, []string{"A"}) {
		t.Fatalf("closed %v, want A", closed)
	}
	if conn, _ := tr.conns.Load(context.Background(), "A"); conn != nil {
		t.Fatalf("the closed connection is kept: %+v", conn)
	}
	if !strings.Contains(tr.metrics.String(), `"PostFailures":1`) {
		t.Errorf("no EMF record of the post failure: %s", tr.metrics)
	}
}

// TestDeliverRetryAfterSave closes the connection when an event comes
// again after its session was saved: what was posted of its messages is
// not known.
func TestDeliverRetryAfterSave(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	tr.route(t, "MESSAGE", "A", subscribe("s1", "app", "ns"))
	batch := tr.queue.take(1)
	if _, err := tr.deliv.Handle(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if n := len(tr.gw.messages("A")); n != 1 {
		t.Fatalf("%d messages posted, want 1", n)
	}
	// The same message, handed over again (its deletion was lost).
	if _, err := tr.deliv.Handle(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if n := len(tr.gw.messages("A")); n != 1 {
		t.Fatalf("%d messages posted after the retry, want still 1", n)
	}
	if closed := tr.gw.closedOnes(); !slices.Equal(closed, []string{"A"}) {
		t.Fatalf("closed %v, want A", closed)
	}
}

// TestDeliverEngineFailure reports a failed event and every later event
// of its connection failed, in order, and the other connections' events
// delivered.
func TestDeliverEngineFailure(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	tr.route(t, "CONNECT", "B", "")
	tr.route(t, "MESSAGE", "A", subscribe("s1", "app", "ns"))
	tr.route(t, "MESSAGE", "B", subscribe("s1", "app", "ns"))
	tr.route(t, "MESSAGE", "A", subscribe("s2", "app", "ns"))
	tr.engine.fail["A"] = true
	batch := tr.queue.take(10)
	res, err := tr.deliv.Handle(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range res.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if want := []string{batch.Records[0].MessageId, batch.Records[2].MessageId}; !slices.Equal(failed, want) {
		t.Fatalf("failures %v, want A's two events %v", failed, want)
	}
	if n := len(tr.gw.messages("B")); n != 1 {
		t.Fatalf("B received %d messages, want 1", n)
	}
	if !strings.Contains(tr.logs.String(), `"cause":"the engine failed"`) {
		t.Errorf("the batch's line does not say why: %s", tr.logs)
	}
	// Handed over again, in order, once the engine works.
	tr.engine.fail["A"] = false
	if res, _ := tr.deliv.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{batch.Records[0], batch.Records[2]}}); len(res.BatchItemFailures) != 0 {
		t.Fatal(res.BatchItemFailures)
	}
	msgs := tr.gw.messages("A")
	if len(msgs) != 2 || !strings.Contains(msgs[0], `"s1"`) || !strings.Contains(msgs[1], `"s2"`) {
		t.Fatalf("A's messages: %v", msgs)
	}
}

// TestDeliverDropsWhatIsNoEvent drops a queue message that is no event
// rather than have it handed over for ever.
func TestDeliverDropsWhatIsNoEvent(t *testing.T) {
	tr := newTransport(t)
	res, err := tr.deliv.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "x", Body: "not json", Attributes: map[string]string{"MessageGroupId": "A"}},
		{MessageId: "y", Body: `{"c":"A"}`, Attributes: map[string]string{"MessageGroupId": "A"}},
	}})
	if err != nil || len(res.BatchItemFailures) != 0 {
		t.Fatalf("%v, %v", res, err)
	}
}

// TestDeliverGivesUp closes the connection of an event that failed as
// often as giveUp says, rather than fail it for ever.
func TestDeliverGivesUp(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	tr.route(t, "MESSAGE", "A", subscribe("s1", "app", "ns"))
	tr.engine.fail["A"] = true
	batch := tr.queue.take(1)
	for n := 1; n <= giveUp; n++ {
		batch.Records[0].Attributes["ApproximateReceiveCount"] = strconv.Itoa(n)
		res, err := tr.deliv.Handle(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		if failed := len(res.BatchItemFailures) > 0; failed != (n < giveUp) {
			t.Fatalf("receive %d: failures %v", n, res.BatchItemFailures)
		}
	}
	if closed := tr.gw.closedOnes(); !slices.Equal(closed, []string{"A"}) {
		t.Fatalf("closed %v, want A", closed)
	}
}
