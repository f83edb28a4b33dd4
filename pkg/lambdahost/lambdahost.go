// Package lambdahost serves the UDS HTTP handler on AWS Lambda behind an
// API Gateway HTTP API (payload format 2.0).
package lambdahost

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/internal/lambdalog"
	"github.com/udsproject/uds/internal/safe"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdamain"
	"github.com/udsproject/uds/pkg/server"
)

// HandlerFunc is a Lambda handler for HTTP API events.
type HandlerFunc func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Handler adapts h to HTTP API events: the adapter turns an event into an
// *http.Request, and responseWriter turns the answer into the response. A
// path with malformed percent-encoding cannot become an *http.Request (the
// adapter would answer with a gateway error), so it is answered 400 here.
//
// A panic anywhere in serving an event is answered 500 and logged with its
// stack at ERROR (the API also recovers its handlers, and counts them in
// its metrics; this covers the adapter around it): aws-lambda-go would
// report it as a failed invocation, a gateway error for the client, and
// end the process, so one hostile request could keep knocking out
// execution environments.
func Handler(h http.Handler) HandlerFunc {
	serve := adapt(h)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (res events.APIGatewayV2HTTPResponse, err error) {
		if perr := safe.Call(func() { res, err = serve(ctx, ev) }); perr != nil {
			p := perr.(*safe.PanicError)
			slog.Default().ErrorContext(ctx, "request", slog.Int("status", http.StatusInternalServerError),
				slog.String("cause", p.Error()), slog.String("stack", string(p.Stack)),
				slog.String("apiRequestId", ev.RequestContext.RequestID))
			w := newResponseWriter()
			httpapi.WriteInternalError(w)
			return w.response(), nil
		}
		return res, err
	}
}

// adapt is Handler without its recovery.
func adapt(h http.Handler) HandlerFunc {
	var adapter core.RequestAccessorV2
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ctx = invocationDeadline{ctx}
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
		// The proxy library reads the path as part of a URL; HTTP APIs
		// deliver it decoded, where a key's # or ? would be read as URL
		// syntax (the rest of the key dropped as a fragment, another item
		// acted on).
		ev.RawPath = pathSyntaxEscaped(path)
		req, err := adapter.EventToRequestWithContext(ctx, ev)
		if err != nil {
			w := newResponseWriter()
			httpapi.WriteBadEvent(w, badEvent(ev))
			return w.response(), nil
		}
		unsplitHeaders(req, ev.Headers)
		// Methods are case-sensitive (RFC 9110); the proxy library
		// upper-cases them, which served a "delete" as the DELETE the
		// local server refuses it as not being.
		if m := ev.RequestContext.HTTP.Method; m != "" {
			req.Method = m
		}
		expandedOnTheWay(req)
		w := newResponseWriter()
		h.ServeHTTP(w, req)
		return w.response(), nil
	}
}

// unsplitHeaders gives a request each header as API Gateway sent it: one
// value, in which it joined a header sent on several lines with commas.
// The proxy library splits every header it does not know as single-valued
// at its commas, which made one Uds-Class-Name holding a comma two
// headers (refused as sent twice) and one multi-range Range two ranges;
// the API reads the list headers (If-Match, If-None-Match, Accept- and
// Content-Encoding) as lists whichever way they come.
func unsplitHeaders(req *http.Request, sent map[string]string) {
	for name, value := range sent {
		if strings.IndexByte(value, ',') >= 0 {
			req.Header[textproto.CanonicalMIMEHeaderKey(name)] = []string{value}
		}
	}
}

// pathSyntaxEscaped is path with # and ? percent-encoded: the only
// characters that may stand in a decoded path and would end it in a URL.
// An encoded path holds neither, and is left as it is.
func pathSyntaxEscaped(path string) string {
	if !strings.ContainsAny(path, "#?") {
		return path
	}
	return strings.NewReplacer("#", "%23", "?", "%3F").Replace(path)
}

// invocationDeadline is an invocation's context as a request gets it: its
// values and its deadline, without the runtime's cancellation.
// aws-lambda-go cancels an invocation's context at its deadline, or once
// the handler has returned (lambda/invoke_loop.go); the API's time budget
// ends a margin before that deadline (httpapi's withBudget), so the
// runtime's cancellation can never reach a request first. Without it, the
// budget need not join the invocation's context on every request, and
// leave it again (docs/performance.md).
type invocationDeadline struct{ context.Context }

func (invocationDeadline) Done() <-chan struct{} { return nil }
func (invocationDeadline) Err() error            { return nil }

// badEvent says why the proxy library could not turn ev into a request: a
// body marked base64 that is not, or else a method, path or query no
// request can hold (a raw control character: the path's percent-encoding
// was checked before). The body is decoded again only on this path.
func badEvent(ev events.APIGatewayV2HTTPRequest) string {
	if ev.IsBase64Encoded {
		if _, err := base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return "the request body is marked base64 and is not"
		}
	}
	return "the request's method, path or query holds a character HTTP does not allow"
}

// expandedOnTheWay reads a body labelled gzip that does not start as a
// gzip stream does as it came: API Gateway decompresses request bodies it
// recognises in some configurations and leaves the header, and such a body
// would otherwise be refused as a broken stream. No JSON text starts with
// gzip's magic bytes, so a real gzip body is never mistaken for one.
func expandedOnTheWay(req *http.Request) {
	switch strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))) {
	case "gzip", "x-gzip":
	default:
		return
	}
	body := bufio.NewReader(req.Body)
	if magic, _ := body.Peek(2); !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		req.Header.Del("Content-Encoding")
	}
	req.Body = struct {
		io.Reader
		io.Closer
	}{body, req.Body}
}

// Subject names the caller from the API Gateway authorizer: the configured
// JWT claim under a JWT authorizer, the IAM caller's ARN under IAM
// authorization, anonymous when the route has no authorizer. Client headers
// are never consulted, and a request that carries httpapi.SubjectHeader is
// refused (AuthorizerOnly).
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

// AuthorizerOnly is why a deployed function refuses httpapi.SubjectHeader:
// a client that sends it expects to be that subject, and would otherwise
// write as whoever the authorizer says without a word.
const AuthorizerOnly = "deployed functions take the caller from API Gateway's authorizer (a JWT's claim, or the IAM caller), never from the " +
	httpapi.SubjectHeader + " header; send the request without it"

// New builds the handler of one function from its configuration. Request
// lines go to lines in Lambda's JSON log format, or through logger if
// lines is nil, at logger's level; EMF records go to metrics (none if
// nil).
func New(ctx context.Context, cfg config.Config, group httpapi.Group, logger *slog.Logger, lines *lambdalog.Writer, metrics *emf.Writer) (HandlerFunc, error) {
	api, _, err := server.Build(ctx, cfg, group, server.Host{
		Subject: Subject(cfg.SubjectClaim), RefuseSubjectHeader: AuthorizerOnly,
		Logger: logger, LambdaLog: lines, Metrics: metrics,
		Function: group.Name(), RequestID: gatewayRequestID,
	})
	if err != nil {
		return nil, err
	}
	return Handler(api), nil
}

// gatewayRequestID names the API Gateway request in the request's log
// line, beside the Lambda request id the log handler adds: it is the id
// of the gateway's access log.
func gatewayRequestID(r *http.Request) (key, id string) {
	id, _ = r.Context().Value(gatewayIDKey{}).(string)
	if rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context()); ok {
		id = rc.RequestID
	}
	return "apiRequestId", id
}

// gatewayIDKey carries the gateway's request id of an event that the
// adapter could not turn into a request (see Handler).
type gatewayIDKey struct{}

// Main is an HTTP API function's whole main: see lambdamain.Start.
func Main(group httpapi.Group) {
	lambdamain.Start(func(ctx context.Context, cfg config.Config, logger *slog.Logger) (any, error) {
		return New(ctx, cfg, group, logger, lambdamain.LambdaLog(), emf.NewWriter(os.Stdout))
	})
}
