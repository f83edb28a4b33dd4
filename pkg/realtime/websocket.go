package realtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/udsproject/uds/pkg/uds"
)

// Path is where the local server answers WebSocket upgrades.
const Path = "/rest/api/v1/realtime"

// Beside serves upgrades at Path with upgrades and every other request
// with next, each path as it was sent. An http.ServeMux would clean
// paths first and answer 307 to the cleaned one: an item the API names by
// an id of "." or an empty namespace would be out of reach, and a client
// that follows redirects would act on another item (a DELETE of t//x
// deleting t/x). The API answers such paths itself, as behind API
// Gateway.
func Beside(upgrades, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Path {
			upgrades.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler serves the hub's connections: a WebSocket upgrade of a caller
// that caller names from the request (refused with its error's answer
// otherwise), then a session until either side closes. The upgrade checks
// Origin: a page of another site cannot open one (coder/websocket refuses
// an Origin other than the request's host).
func (h *Hub) Handler(caller func(*http.Request) (string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		subject, err := caller(r)
		if err != nil {
			refusal := h.feed.Refusal(Scope{}, err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(refusal.Status)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": refusal.Error, "details": refusal.Details})
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			// Accept has answered the request.
			return
		}
		c.SetReadLimit(MaxRequestBytes)
		conn := &wsConn{c: c}
		s := newSession(context.WithoutCancel(r.Context()), h, subject, conn)
		if !h.open(s) {
			_ = c.Close(closeGoingAway, "the server is stopping")
			return
		}
		start := time.Now()
		go s.read(c)
		s.run()
		status := conn.closeNow()
		// A connection leaves one line when it ends, as a request does.
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "realtime connection", slog.String("subject", subject),
			slog.Int("subscriptions", s.subscribed), slog.Int("messages", s.sent),
			slog.Float64("durationMs", float64(time.Since(start).Microseconds())/1000), slog.Int("closeStatus", status))
	})
}

// read hands the client's messages to the session until the connection
// ends.
func (s *session) read(c *websocket.Conn) {
	defer s.cancel()
	for {
		// Not the session's context: its end would drop the connection
		// before the status it ends with is sent (closeNow sends it, and
		// that ends this read).
		typ, b, err := c.Read(s.base)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			s.enqueue(event{req: &Request{}, reqErr: uds.Invalid("message", "must be a JSON object in a text message")})
			continue
		}
		req, err := ParseRequest(b)
		s.enqueue(event{req: &req, reqErr: err})
	}
}

// wsConn is a session's connection: the status it was ended with, if any,
// is sent when the session stops.
type wsConn struct {
	c *websocket.Conn

	mu     sync.Mutex
	status int
	reason string
}

func (w *wsConn) write(ctx context.Context, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageText, msg)
}

func (w *wsConn) close(status int, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status, w.reason = status, reason
	}
}

// closeNow closes the connection, with the status it was ended with, or
// at once when the client went away, and returns the status (0: none).
func (w *wsConn) closeNow() int {
	w.mu.Lock()
	status, reason := w.status, w.reason
	w.mu.Unlock()
	if status == 0 {
		_ = w.c.CloseNow()
		return 0
	}
	_ = w.c.Close(websocket.StatusCode(status), reason)
	return status
}
