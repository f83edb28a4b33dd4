package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/udsproject/uds/pkg/httpapi"
)

// realtimePath is the realtime endpoint under the API's base URL.
const realtimePath = "/realtime"

// realtimeURL turns the API's base URL (http://host:port/rest/api/v1) into
// its realtime endpoint's (ws://host:port/rest/api/v1/realtime).
func realtimeURL(base string) string {
	return "ws" + strings.TrimPrefix(base, "http") + realtimePath
}

// receipt is one change a subscription received: which item at which
// version, and when its message was read.
type receipt struct {
	sub         string
	namespace   string
	id, sortKey string
	version     int64
	at          time.Time
}

// key names the delivery the receipt is, on connection c.
func (r receipt) key(c int) deliveryKey {
	return deliveryKey{conn: c, sub: r.sub, namespace: r.namespace, id: r.id, sortKey: r.sortKey, version: r.version}
}

// message is what the benchmark reads of a server message.
type message struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status int    `json:"status"`
	Error  string `json:"error"`
	Detail string `json:"details"`
	Change *struct {
		Namespace string `json:"namespace"`
		ID        string `json:"id"`
		SortKey   string `json:"sortKey"`
		Version   int64  `json:"version"`
	} `json:"change"`
}

// client is one WebSocket connection and its subscriptions.
type client struct {
	n    int
	conn *websocket.Conn
	subs []subscription

	// subscribed takes the answer to each subscribe: nil for
	// "subscribed", the refusal otherwise.
	subscribed chan error

	mu sync.Mutex
	// answers counts the answers to subscribes received.
	answers int
	// receipts are the changes received, in the order they were read;
	// seen holds each once.
	receipts []receipt
	seen     map[deliveryKey]bool
	// others are the messages that were neither a change nor an answer
	// to a subscribe (resync, error after subscribing).
	others []string
	// closed is why the read loop ended, once it has.
	closed error
	done   chan struct{}
}

// maxMessage bounds a server message the client reads (the library's
// default is 32 KB; a change of a large item may pass it).
const maxMessage = 1 << 20

// dial opens connection n as its subject and starts reading it.
func dial(ctx context.Context, wsURL string, n int) (*client, error) {
	h := http.Header{}
	h.Set(httpapi.SubjectHeader, subject(n))
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, fmt.Errorf("connection %d: %w", n, err)
	}
	conn.SetReadLimit(maxMessage)
	c := &client{n: n, conn: conn, subs: subscriptionsOf(n), subscribed: make(chan error, subscriptionsEach),
		seen: map[deliveryKey]bool{}, done: make(chan struct{})}
	go c.read(context.WithoutCancel(ctx))
	return c, nil
}

// subscribe sends the connection's subscribe messages and waits for their
// answers: an error names the first refusal.
func (c *client) subscribe(ctx context.Context, app string) error {
	for _, s := range c.subs {
		msg := map[string]string{"action": "subscribe", "id": s.id, "applicationUuid": app, "namespace": s.namespace}
		if s.key != "" {
			msg["key"] = s.key
		}
		b, err := json.Marshal(msg)
		if err != nil {
			return err
		}
		if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
			return fmt.Errorf("connection %d: subscribe %s: %w", c.n, s.id, err)
		}
	}
	for range c.subs {
		select {
		case err := <-c.subscribed:
			if err != nil {
				return fmt.Errorf("connection %d: %w", c.n, err)
			}
		case <-c.done:
			return fmt.Errorf("connection %d closed while subscribing: %w", c.n, c.closed)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// read takes the server's messages until the connection closes, noting
// the instant each was read before anything else is done with it.
func (c *client) read(ctx context.Context) {
	defer close(c.done)
	for {
		_, b, err := c.conn.Read(ctx)
		at := time.Now()
		if err != nil {
			c.mu.Lock()
			c.closed = err
			c.mu.Unlock()
			return
		}
		var m message
		if err := json.Unmarshal(b, &m); err != nil {
			c.other(fmt.Sprintf("not JSON: %.200s", b))
			continue
		}
		switch {
		case m.Type == "change" && m.Change != nil:
			r := receipt{sub: m.ID, namespace: m.Change.Namespace, id: m.Change.ID, sortKey: m.Change.SortKey, version: m.Change.Version, at: at}
			c.mu.Lock()
			c.receipts = append(c.receipts, r)
			c.seen[r.key(c.n)] = true
			c.mu.Unlock()
		case m.Type == "subscribed":
			c.answer(nil)
		case m.Type == "error":
			err := fmt.Errorf("subscription %s: %d %s: %s", m.ID, m.Status, m.Error, m.Detail)
			if !c.answer(err) {
				c.other(err.Error())
			}
		default:
			c.other(fmt.Sprintf("%.200s", b))
		}
	}
}

// answer hands an answer to a subscribe over, unless every subscribe has
// had one already (an error then is a message of its own), and says
// whether it did.
func (c *client) answer(err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answers == len(c.subs) {
		return false
	}
	c.answers++
	c.subscribed <- err
	return true
}

func (c *client) other(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.others = append(c.others, what)
}

// received returns the changes received so far and the other messages.
func (c *client) received() ([]receipt, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.receipts, c.others
}

// count returns how many of the deliveries of want the connection has
// received, and how many distinct changes in all.
func (c *client) count(want map[deliveryKey]bool) (wanted, all int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.seen {
		if want[k] {
			wanted++
		}
	}
	return wanted, len(c.seen)
}

// close ends the connection as a client leaving does (status 1000) and
// waits until its read loop is done; it says why the connection ended if
// that was before.
func (c *client) close() error {
	c.mu.Lock()
	early := c.closed
	c.mu.Unlock()
	_ = c.conn.Close(websocket.StatusNormalClosure, "")
	<-c.done
	if early != nil {
		return fmt.Errorf("connection %d closed before the end: %w", c.n, early)
	}
	return nil
}
