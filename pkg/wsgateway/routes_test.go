package wsgateway

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestConnect(t *testing.T) {
	iss := newIssuer(t)
	tr := newTransport(t)
	jwt := NewRoutes(tr.conns, tr.queue, nil, NewVerifier(iss.URL, []string{"uds-api"}, "sub", iss.Client()),
		[]string{"https://app.example"}, discard)
	public := NewRoutes(tr.conns, tr.queue, nil, nil, nil, discard)
	good := iss.sign(t, "RS256", "r1", iss.claims(nil))
	expired := iss.sign(t, "RS256", "r1", iss.claims(map[string]any{"exp": 1}))
	for _, tc := range []struct {
		name    string
		routes  *Routes
		query   map[string]string
		headers map[string]string
		status  int
		subject string
	}{
		{name: "a token in the query", routes: jwt, query: map[string]string{TokenParameter: good}, status: 200, subject: "alice"},
		{name: "a bearer header", routes: jwt, headers: map[string]string{"authorization": "Bearer " + good}, status: 200, subject: "alice"},
		{name: "an allowed origin", routes: jwt, query: map[string]string{TokenParameter: good}, headers: map[string]string{"Origin": "https://app.example"}, status: 200, subject: "alice"},
		{name: "no token where the data routes take JWTs", routes: jwt, status: http.StatusUnauthorized},
		{name: "an expired token", routes: jwt, query: map[string]string{TokenParameter: expired}, status: http.StatusUnauthorized},
		{name: "a page of another origin", routes: jwt, query: map[string]string{TokenParameter: good}, headers: map[string]string{"origin": "https://evil.example"}, status: http.StatusForbidden},
		{name: "the local server's subject header", routes: jwt, query: map[string]string{TokenParameter: good}, headers: map[string]string{"X-Uds-Subject": "bob"}, status: http.StatusBadRequest},
		{name: "the local server's subject parameter", routes: public, query: map[string]string{"subject": "bob"}, status: http.StatusBadRequest},
		{name: "public data routes: anonymous", routes: public, status: 200, subject: "anonymous"},
		{name: "public data routes: a token names nobody", routes: public, query: map[string]string{TokenParameter: good}, status: 200, subject: "anonymous"},
		{name: "public data routes: pages of every origin refused without CORS origins", routes: public, headers: map[string]string{"Origin": "https://app.example"}, status: http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "c-" + tc.name
			res, err := tc.routes.Handle(context.Background(), events.APIGatewayWebsocketProxyRequest{
				QueryStringParameters: tc.query, Headers: tc.headers,
				RequestContext: events.APIGatewayWebsocketProxyRequestContext{EventType: "CONNECT", ConnectionID: id},
			})
			if err != nil || res.StatusCode != tc.status {
				t.Fatalf("status %d, %v; want %d", res.StatusCode, err, tc.status)
			}
			conn, err := tr.conns.Load(context.Background(), id)
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.subject == "" && conn != nil:
				t.Fatalf("a refused connection is recorded: %+v", conn)
			case tc.subject != "" && (conn == nil || conn.Subject != tc.subject):
				t.Fatalf("recorded %+v, want subject %q", conn, tc.subject)
			}
		})
	}
}

func TestDisconnect(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	tr.route(t, "MESSAGE", "A", subscribe("s1", "app", "ns"))
	tr.drain(t)
	if status := tr.route(t, "DISCONNECT", "A", ""); status != 200 {
		t.Fatalf("status %d", status)
	}
	if conn, _ := tr.conns.Load(context.Background(), "A"); conn != nil {
		t.Fatalf("kept: %+v", conn)
	}
	if subs, _ := tr.conns.Subscribers(context.Background(), feedOf("app", "ns", "")); len(subs) != 0 {
		t.Fatalf("a disconnected connection watches: %v", subs)
	}
}

// TestMessageNotQueued closes the connection of a message that could not
// be queued, rather than answer it out of order or drop it.
func TestMessageNotQueued(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	tr.queue.failFor["A"] = true
	if status := tr.route(t, "MESSAGE", "A", subscribe("s1", "app", "ns")); status != 200 {
		t.Fatalf("status %d", status)
	}
	if closed := tr.gw.closedOnes(); !slices.Equal(closed, []string{"A"}) {
		t.Fatalf("closed %v, want A", closed)
	}
}

// TestMessageBase64 takes a binary frame's body, which API Gateway hands
// over in base64, as the message it carries.
func TestMessageBase64(t *testing.T) {
	tr := newTransport(t)
	tr.route(t, "CONNECT", "A", "")
	_, err := tr.routes.Handle(context.Background(), events.APIGatewayWebsocketProxyRequest{
		Body: "eyJhY3Rpb24iOiJ4In0=", IsBase64Encoded: true,
		RequestContext: events.APIGatewayWebsocketProxyRequestContext{EventType: "MESSAGE", ConnectionID: "A", MessageID: "m-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := tr.queue.take(10).Records
	if len(msgs) != 1 {
		t.Fatalf("%d queued", len(msgs))
	}
	ev, err := decodeEvent(msgs[0].Body)
	if err != nil || string(ev.Message) != `{"action":"x"}` {
		t.Fatalf("queued %+v, %v", ev, err)
	}
}
