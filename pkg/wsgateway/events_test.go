package wsgateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestEventsReplay replays the events under events/realtime (what API
// Gateway and the queue hand the realtime and deliver functions, usable
// with sam local invoke) through the functions' handlers, in order: a
// connect, a refused connect, a subscribe, the queue's batch that
// delivers it and a change, and the disconnect.
func TestEventsReplay(t *testing.T) {
	tr := newTransport(t)
	ctx := context.Background()
	read := func(t *testing.T, name string, into any) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join("../../events/realtime", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	files, _ := filepath.Glob("../../events/realtime/*.json")
	if len(files) != 5 {
		t.Fatalf("events/realtime holds %d events, this test replays 5", len(files))
	}
	route := func(t *testing.T, name string, status int) events.APIGatewayWebsocketProxyRequest {
		t.Helper()
		var req events.APIGatewayWebsocketProxyRequest
		read(t, name, &req)
		res, err := tr.routes.Handle(ctx, req)
		if err != nil || res.StatusCode != status {
			t.Fatalf("%s: status %d, %v; want %d", name, res.StatusCode, err, status)
		}
		return req
	}
	connect := route(t, "01-connect.json", 200)
	id := connect.RequestContext.ConnectionID
	if conn, _ := tr.conns.Load(ctx, id); conn == nil || conn.Subject != "anonymous" {
		t.Fatalf("the connection is recorded as %+v", conn)
	}
	route(t, "02-connect-subject-header.json", 400)

	route(t, "03-subscribe.json", 200)
	var batch events.SQSEvent
	read(t, "04-deliver.json", &batch)
	queued := tr.queue.take(10).Records
	if len(queued) != 1 || queued[0].Body != batch.Records[0].Body {
		t.Fatalf("the subscribe is queued as %v; 04-deliver.json's first record carries %s", queued, batch.Records[0].Body)
	}
	res, err := tr.deliv.Handle(ctx, batch)
	if err != nil || len(res.BatchItemFailures) != 0 {
		t.Fatalf("04-deliver.json: %v, %v", res, err)
	}
	msgs := tr.gw.messages(id)
	if len(msgs) != 2 || !strings.Contains(msgs[0], `"subscribed"`) || !strings.Contains(msgs[1], `"item":"task1"`) {
		t.Fatalf("posted %v; want the subscribed answer and the change", msgs)
	}

	route(t, "05-disconnect.json", 200)
	if conn, _ := tr.conns.Load(ctx, id); conn != nil {
		t.Fatalf("the connection is kept after $disconnect: %+v", conn)
	}
}
