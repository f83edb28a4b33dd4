package wsgateway

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/udsproject/uds/internal/emf"
)

// TestPublishSplits splits one connection's rows over several events
// when they do not fit one queue message, in order.
func TestPublishSplits(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	tr.route(t, "MESSAGE", "A", subscribe("s1", "app", "ns"))
	tr.drain(t)
	var rows []Row
	long := strings.Repeat("k", 1000)
	for v := range int64(500) {
		rows = append(rows, Row{App: "app", Namespace: "ns", ID: long, Seq: "s", Version: v})
	}
	tr.pub.publish(rows)
	if n := len(tr.queue.msgs); n < 3 {
		t.Fatalf("%d events for 500 KB of rows, want them split", n)
	}
	for _, m := range tr.queue.msgs {
		if len(m.Body) > maxEventBytes*4/3+1024 {
			t.Fatalf("an event of %d bytes", len(m.Body))
		}
	}
	tr.drain(t)
	var got []int64
	for _, m := range tr.gw.messages("A")[1:] {
		var v int64
		i := strings.Index(m, `"version":`)
		for _, c := range m[i+len(`"version":`) : len(m)-1] {
			v = v*10 + int64(c-'0')
		}
		got = append(got, v)
	}
	if len(got) != 500 || !slices.IsSorted(got) {
		t.Fatalf("%d changes, sorted %v", len(got), slices.IsSorted(got))
	}
}

// TestPublishNoSubscribers queues nothing for a feed nobody watches,
// and only a connection's own feeds' rows for it.
func TestPublishNoSubscribers(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	tr.route(t, "MESSAGE", "A", subscribe("s1", "app", "ns"))
	tr.drain(t)
	tr.pub.publish([]Row{{App: "app", Namespace: "other", ID: "x"}, {App: "app", Namespace: "ns", ID: "y", KeySpace: "alice"}})
	if n := len(tr.queue.msgs); n != 0 {
		t.Fatalf("%d events for feeds nobody watches", n)
	}
	tr.pub.publish([]Row{{App: "app", Namespace: "other", ID: "x"}, {App: "app", Namespace: "ns", ID: "y"}})
	ev, _ := decodeEvent(tr.queue.msgs[0].Body)
	if len(tr.queue.msgs) != 1 || len(ev.Rows) != 1 || ev.Rows[0].ID != "y" {
		t.Fatalf("queued %+v", ev)
	}
}

// TestPublishFailures closes the connections whose events could not be
// queued, and counts a feed whose subscribers could not be read; the
// changes function's batch goes on either way.
func TestPublishFailures(t *testing.T) {
	tr := newTransport(t)
	for _, id := range []string{"A", "B"} {
		tr.route(t, "CONNECT", id, "")
		tr.route(t, "MESSAGE", id, subscribe("s1", "app", "ns"))
	}
	tr.drain(t)
	tr.queue.failFor["B"] = true
	tr.pub.publish([]Row{{App: "app", Namespace: "ns", ID: "y", Version: 1}})
	if closed := tr.gw.closedOnes(); !slices.Equal(closed, []string{"B"}) {
		t.Fatalf("closed %v, want B", closed)
	}
	if len(tr.queue.msgs) != 1 {
		t.Fatalf("A's event is not queued: %v", tr.queue.msgs)
	}
	if !strings.Contains(tr.metrics.String(), `"PublishFailures":1`) {
		t.Errorf("no EMF record of the closed connection: %s", tr.metrics)
	}
	var metrics bytes.Buffer
	pub := NewPublisher(failingSubscribers{}, tr.queue, nil, discard, emf.NewWriter(&metrics))
	pub.publish([]Row{{App: "app", Namespace: "ns", ID: "y", Version: 2}})
	if !strings.Contains(metrics.String(), `"PublishFailures":1`) {
		t.Errorf("no EMF record of the failure: %s", metrics.String())
	}
}

type failingSubscribers struct{}

func (failingSubscribers) Subscribers(context.Context, string) ([]string, error) {
	return nil, errors.New("DynamoDB is down")
}
