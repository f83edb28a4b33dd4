package wsgateway

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/pkg/uds"
)

// Authenticator names the caller a token stands for (*Verifier). A token
// it refuses gives an error wrapping errUnauthenticated.
type Authenticator interface {
	Subject(ctx context.Context, token string) (string, error)
}

// Closer closes a connection (*Management).
type Closer interface {
	Close(ctx context.Context, id string) error
}

// Routes is the function behind the WebSocket API's three routes:
// $connect names the caller and records the connection, $disconnect
// removes it, and $default (every client message: the API selects routes
// on the message's action, and no other route is defined) puts the
// message on the queue under its connection, for the deliverer to take
// in order.
type Routes struct {
	conns *Connections
	queue Queue
	close Closer
	// auth is nil where the HTTP API's data routes are public: every
	// caller is then anonymous, as there.
	auth Authenticator
	// origins are the browser origins allowed to connect (the HTTP
	// API's CORS origins).
	origins []string
	log     *slog.Logger
	now     func() time.Time
}

// NewRoutes serves the routes over conns and queue. auth is nil for a
// deployment whose data routes are public.
func NewRoutes(conns *Connections, queue Queue, closer Closer, auth Authenticator, origins []string, log *slog.Logger) *Routes {
	return &Routes{conns: conns, queue: queue, close: closer, auth: auth, origins: origins, log: log, now: time.Now}
}

// TokenParameter is the query parameter of the upgrade request that
// carries the caller's token: browsers set no header on a WebSocket's
// upgrade (RFC 6750 §2.3 names the parameter).
const TokenParameter = "access_token"

// subjectHeader and subjectParameter name the caller to the local
// server only; here they are refused, as the HTTP API's functions refuse
// the header, rather than ignored.
const (
	subjectHeader    = "X-Uds-Subject"
	subjectParameter = "subject"
)

// Handle serves one route's event. An answer other than 200 to $connect
// refuses the upgrade with that status; the other routes' answers go
// nowhere (the API defines no route responses).
func (r *Routes) Handle(ctx context.Context, req events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error) {
	id := req.RequestContext.ConnectionID
	switch req.RequestContext.EventType {
	case "CONNECT":
		return r.connect(ctx, id, req), nil
	case "DISCONNECT":
		if err := r.conns.Close(ctx, id); err != nil {
			// The TTL removes what is left.
			r.log.WarnContext(ctx, "realtime disconnect", slog.String("connection", id), slog.String("cause", err.Error()))
		}
		return answer(http.StatusOK), nil
	case "MESSAGE":
		r.message(ctx, id, req)
		return answer(http.StatusOK), nil
	}
	r.log.ErrorContext(ctx, "realtime route", slog.String("eventType", req.RequestContext.EventType))
	return answer(http.StatusBadRequest), nil
}

func answer(status int) events.APIGatewayProxyResponse {
	return events.APIGatewayProxyResponse{StatusCode: status}
}

// connect authenticates the upgrade and records the connection.
func (r *Routes) connect(ctx context.Context, id string, req events.APIGatewayWebsocketProxyRequest) events.APIGatewayProxyResponse {
	refuse := func(status int, why string) events.APIGatewayProxyResponse {
		r.log.InfoContext(ctx, "realtime connect refused", slog.String("connection", id), slog.Int("status", status), slog.String("why", why))
		return answer(status)
	}
	if o := header(req, "Origin"); o != "" && !slices.Contains(r.origins, o) {
		return refuse(http.StatusForbidden, "a browser page of origin "+uds.Truncate(o, 64)+", which may not call the API")
	}
	if header(req, subjectHeader) != "" || req.QueryStringParameters[subjectParameter] != "" {
		return refuse(http.StatusBadRequest, "the caller is named by a token, never by "+subjectHeader+" or ?"+subjectParameter)
	}
	subject := uds.Anonymous
	if r.auth != nil {
		token := req.QueryStringParameters[TokenParameter]
		if token == "" {
			token, _ = strings.CutPrefix(header(req, "Authorization"), "Bearer ")
		}
		if token == "" {
			return refuse(http.StatusUnauthorized, "no token: the "+TokenParameter+" query parameter or an Authorization: Bearer header")
		}
		s, err := r.auth.Subject(ctx, token)
		switch {
		case errors.Is(err, errUnauthenticated):
			return refuse(http.StatusUnauthorized, err.Error())
		case err != nil:
			r.log.ErrorContext(ctx, "realtime connect failed", slog.String("connection", id), slog.String("cause", err.Error()))
			return answer(http.StatusInternalServerError)
		case !uds.ValidSubject(s):
			return refuse(http.StatusUnauthorized, "the caller's identity is longer than 1024 bytes, is not valid UTF-8 or holds control characters")
		}
		subject = s
	}
	if err := r.conns.Open(ctx, id, subject, r.now()); err != nil {
		r.log.ErrorContext(ctx, "realtime connect failed", slog.String("connection", id), slog.String("cause", err.Error()))
		return answer(http.StatusInternalServerError)
	}
	r.log.InfoContext(ctx, "realtime connect", slog.String("connection", id))
	return answer(http.StatusOK)
}

// message queues a client's message. One that cannot be queued closes
// the connection: its client reconnects and sends it again, where
// dropping it would leave the client waiting for an answer, and
// answering here would answer out of the connection's order.
func (r *Routes) message(ctx context.Context, id string, req events.APIGatewayWebsocketProxyRequest) {
	msg := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			r.log.ErrorContext(ctx, "realtime message", slog.String("connection", id), slog.String("cause", "a body that is not base64"))
			return
		}
		msg = b
	}
	// API Gateway names each message; the same message handed to the
	// function twice is then queued once.
	dedup, _ := req.RequestContext.MessageID.(string)
	if dedup == "" {
		dedup = req.RequestContext.RequestID
	}
	ev := Event{Connection: id, Message: msg, Dedup: dedup}
	if _, err := r.queue.Send(ctx, []Event{ev}); err != nil {
		r.log.ErrorContext(ctx, "realtime message not queued", slog.String("connection", id), slog.String("cause", err.Error()))
		if err := r.close.Close(ctx, id); err != nil {
			r.log.ErrorContext(ctx, "realtime connection not closed", slog.String("connection", id), slog.String("cause", err.Error()))
		}
	}
}

// header reads a header of the upgrade request whatever its case: API
// Gateway hands them over as the client wrote them.
func header(req events.APIGatewayWebsocketProxyRequest, name string) string {
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}
