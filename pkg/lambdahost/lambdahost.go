// Package lambdahost serves the UDS HTTP handler on AWS Lambda behind an
// API Gateway HTTP API (payload format 2.0).
package lambdahost

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/server"
)

// HandlerFunc is a Lambda handler for HTTP API events.
type HandlerFunc func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Handler adapts h to HTTP API events: the adapter turns an event into an
// *http.Request, and responseWriter turns the answer into the response. A
// path with malformed percent-encoding cannot become an *http.Request (the
// adapter would answer with a gateway error), so it is answered 400 here.
func Handler(h http.Handler) HandlerFunc {
	var adapter core.RequestAccessorV2
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		path := ev.RawPath
		if path == "" {
			path = ev.RequestContext.HTTP.Path
		}
		if _, err := url.PathUnescape(path); err != nil {
			w := newResponseWriter()
			if api, ok := h.(*httpapi.API); ok {
				header := http.Header{}
				for k, v := range ev.Headers {
					header.Set(k, v)
				}
				ctx = context.WithValue(ctx, gatewayIDKey{}, ev.RequestContext.RequestID)
				api.ServeBadURL(ctx, w, ev.RequestContext.HTTP.Method, path, header)
			} else {
				httpapi.WriteBadURL(w, path)
			}
			return w.response(), nil
		}
		req, err := adapter.EventToRequestWithContext(ctx, ev)
		if err != nil {
			// Only a body marked base64 that is not base64 gets here.
			w := newResponseWriter()
			httpapi.WriteBadEvent(w)
			return w.response(), nil
		}
		w := newResponseWriter()
		h.ServeHTTP(w, req)
		return w.response(), nil
	}
}

// Subject names the caller from the API Gateway authorizer: the configured
// JWT claim under a JWT authorizer, the IAM caller's ARN under IAM
// authorization, anonymous when the route has no authorizer. Client headers
// are never consulted.
func Subject(claim string) httpapi.SubjectFunc {
	return func(r *http.Request) (string, error) {
		rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
		if !ok || rc.Authorizer == nil {
			return httpapi.Anonymous, nil
		}
		switch a := rc.Authorizer; {
		case a.JWT != nil:
			v := a.JWT.Claims[claim]
			if v == "" {
				return "", httpapi.Unauthenticated("the token has no " + strconv.Quote(claim) + " claim to name the caller")
			}
			return httpapi.CheckSubject(v)
		case a.IAM != nil && a.IAM.UserARN != "":
			return httpapi.CheckSubject(a.IAM.UserARN)
		}
		return httpapi.Anonymous, nil
	}
}

// New builds the handler of one function from its configuration. Request
// lines go to logger, EMF records to metrics (none if nil).
func New(ctx context.Context, cfg config.Config, group httpapi.Group, logger *slog.Logger, metrics *emf.Writer) (HandlerFunc, error) {
	api, _, err := server.Build(ctx, cfg, group, server.Host{
		Subject: Subject(cfg.SubjectClaim), Logger: logger, Metrics: metrics,
		Function: group.Name(), RequestAttrs: gatewayRequestID,
	})
	if err != nil {
		return nil, err
	}
	return Handler(api), nil
}

// gatewayRequestID names the API Gateway request in the request's log
// line, beside the Lambda request id the log handler adds: it is the id
// of the gateway's access log.
func gatewayRequestID(r *http.Request) []slog.Attr {
	id, _ := r.Context().Value(gatewayIDKey{}).(string)
	if rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context()); ok {
		id = rc.RequestID
	}
	if id == "" {
		return nil
	}
	return []slog.Attr{slog.String("apiRequestId", id)}
}

// gatewayIDKey carries the gateway's request id of an event that the
// adapter could not turn into a request (see Handler).
type gatewayIDKey struct{}

// Main is an HTTP API function's whole main: see Start.
func Main(group httpapi.Group) {
	Start(func(ctx context.Context, cfg config.Config, logger *slog.Logger) (any, error) {
		return New(ctx, cfg, group, logger, emf.NewWriter(os.Stdout))
	})
}

// Start is what every function's main does: read the configuration once,
// build the handler (and its clients) at init with build, and serve events
// until the runtime stops the process. Logs go through NewLogger at the
// configured level; a configuration or init failure is logged at ERROR,
// which every level keeps, and ends the process with status 1, which
// Lambda reports as an init error.
func Start(build func(ctx context.Context, cfg config.Config, logger *slog.Logger) (any, error)) {
	cfg, err := config.FromEnv()
	logger := NewLogger(cfg.LogLevel)
	slog.SetDefault(logger)
	if err != nil {
		fatal(logger, fmt.Errorf("configuration: %w", err))
	}
	h, err := build(context.Background(), cfg, logger)
	if err != nil {
		fatal(logger, fmt.Errorf("init: %w", err))
	}
	lambda.Start(h)
}

func fatal(logger *slog.Logger, err error) {
	logger.Error("init failed", slog.String("cause", err.Error()))
	os.Exit(1)
}

// NewLogger returns the functions' logger: aws-lambda-go's handler, which
// follows the function's log format and adds the invocation's request id,
// keeping only the records at level or above. The stack leaves Lambda's
// own level filter at INFO, since Lambda files the EMF records, which
// have no level, as INFO: UDS_LOG_LEVEL applies the configured level
// here instead, to the log lines only.
func NewLogger(level slog.Level) *slog.Logger {
	return slog.New(levelHandler{Handler: lambdacontext.NewLogHandler(), level: level})
}

// levelHandler passes the records at level or above to the handler it
// wraps.
type levelHandler struct {
	slog.Handler
	level slog.Level
}

func (h levelHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.level && h.Handler.Enabled(ctx, level)
}

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{Handler: h.Handler.WithAttrs(attrs), level: h.level}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{Handler: h.Handler.WithGroup(name), level: h.level}
}
