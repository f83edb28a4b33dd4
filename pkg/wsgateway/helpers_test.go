package wsgateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// newConnections makes a fresh connections table on the test engine, as
// the stack defines it, and removes it when the test ends.
func newConnections(t *testing.T) *Connections {
	t.Helper()
	c := storetest.Client(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "t" + hex.EncodeToString(b) + "_" + schema.Connections.DefaultName
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(schema.Connections.Hash.Name), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(schema.Connections.Range.Name), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(schema.Connections.Hash.Name), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(schema.Connections.Range.Name), KeyType: types.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatalf("create the connections table: %v", err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return NewConnections(c, name)
}

// memQueue is a FIFO queue in memory, as SQS's FIFO queue orders a
// message group: its messages in the order sent. failFor makes the
// events of those connections fail to send.
type memQueue struct {
	mu      sync.Mutex
	msgs    []events.SQSMessage
	failFor map[string]bool
	next    int
}

func (q *memQueue) Send(_ context.Context, evs []Event) ([]Event, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var failed []Event
	for _, e := range evs {
		if q.failFor[e.Connection] {
			failed = append(failed, e)
			continue
		}
		b, err := e.encode()
		if err != nil {
			return evs, err
		}
		q.next++
		q.msgs = append(q.msgs, events.SQSMessage{
			MessageId:  fmt.Sprintf("m%d", q.next),
			Body:       string(b),
			Attributes: map[string]string{"MessageGroupId": e.Connection},
		})
	}
	if len(failed) > 0 {
		return failed, fmt.Errorf("%d events not sent", len(failed))
	}
	return nil, nil
}

// take removes and returns up to n messages as one batch of the queue's
// event source.
func (q *memQueue) take(n int) events.SQSEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.msgs))
	ev := events.SQSEvent{Records: append([]events.SQSMessage(nil), q.msgs[:n]...)}
	q.msgs = q.msgs[n:]
	return ev
}

// gateway is a stage's Management API in a test server: it records the
// messages posted to each connection and the connections closed, and
// answers 410 for a connection it was told is gone.
type gateway struct {
	*httptest.Server
	mu     sync.Mutex
	posted map[string][]string
	closed []string
	gone   map[string]bool
	// status, when set, answers every post with it.
	status int
	// signed counts requests that carried a SigV4 signature.
	signed int
}

func newGateway(t *testing.T) (*gateway, *Management) {
	t.Helper()
	g := &gateway{posted: map[string][]string{}, gone: map[string]bool{}}
	g.Server = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.Close)
	m, err := NewManagement(g.URL+"/prod", "eu-west-1", credentials.NewStaticCredentialsProvider("AKID", "secret", ""), g.Client())
	if err != nil {
		t.Fatal(err)
	}
	return g, m
}

func (g *gateway) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKID/") &&
		strings.Contains(r.Header.Get("Authorization"), "/eu-west-1/execute-api/aws4_request") {
		g.signed++
	}
	id, ok := strings.CutPrefix(r.URL.Path, "/prod/@connections/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if g.gone[id] {
		w.WriteHeader(http.StatusGone)
		_, _ = io.WriteString(w, `{"message":"GoneException"}`)
		return
	}
	switch r.Method {
	case http.MethodPost:
		if g.status != 0 {
			w.WriteHeader(g.status)
			return
		}
		b, _ := io.ReadAll(r.Body)
		g.posted[id] = append(g.posted[id], string(b))
	case http.MethodDelete:
		g.closed = append(g.closed, id)
		g.gone[id] = true
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// setGone makes API Gateway answer that id is gone.
func (g *gateway) setGone(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gone[id] = true
}

// answer makes every post answer status.
func (g *gateway) answer(status int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.status = status
}

func (g *gateway) messages(id string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.posted[id]...)
}

func (g *gateway) closedOnes() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.closed...)
}

// echoEngine is a small engine for the transport's tests: a subscribe
// ({"action":"subscribe","id","applicationUuid","namespace"}) watches the
// namespace's shared feed and answers subscribed; an unsubscribe drops
// it; rows answer a change per subscription of their feed, naming the
// row's item and version. Its state is its subscriptions, as JSON.
type echoEngine struct {
	// fail makes Handle fail, for events of those connections.
	fail map[string]bool
}

type echoSub struct{ ID, Feed string }

func (e *echoEngine) Handle(ctx context.Context, s *Session, ev Event) ([][]byte, error) {
	if e.fail[s.Connection] {
		return nil, fmt.Errorf("the engine failed")
	}
	var subs []echoSub
	if s.State != nil {
		if err := json.Unmarshal(s.State, &subs); err != nil {
			return nil, err
		}
	}
	var out [][]byte
	if ev.Message != nil {
		var req struct{ Action, ID, ApplicationUUID, Namespace string }
		if err := json.Unmarshal(ev.Message, &req); err != nil {
			return [][]byte{[]byte(`{"type":"error","status":400}`)}, nil
		}
		switch req.Action {
		case "subscribe":
			feed := feedOf(req.ApplicationUUID, req.Namespace, "")
			if err := s.Watches.Watch(ctx, feed, req.ID); err != nil {
				return nil, err
			}
			subs = append(subs, echoSub{req.ID, feed})
			out = append(out, fmt.Appendf(nil, `{"type":"subscribed","id":%q,"caller":%q}`, req.ID, s.Subject))
		case "unsubscribe":
			for i, sub := range subs {
				if sub.ID == req.ID {
					if err := s.Watches.Unwatch(ctx, sub.Feed, sub.ID); err != nil {
						return nil, err
					}
					subs = append(subs[:i], subs[i+1:]...)
					break
				}
			}
			out = append(out, fmt.Appendf(nil, `{"type":"unsubscribed","id":%q}`, req.ID))
		}
	}
	for _, r := range ev.Rows {
		for _, sub := range subs {
			if sub.Feed == r.Feed() {
				out = append(out, fmt.Appendf(nil, `{"type":"change","id":%q,"item":%q,"version":%d}`, sub.ID, r.ID, r.Version))
			}
		}
	}
	state, err := json.Marshal(subs)
	if err != nil {
		return nil, err
	}
	s.State = state
	return out, nil
}

// discard is a logger that writes nothing.
var discard = slog.New(slog.DiscardHandler)
