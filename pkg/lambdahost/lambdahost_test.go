package lambdahost

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
)

func TestSubject(t *testing.T) {
	for _, tc := range []struct {
		name    string
		auth    *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
		header  string
		want    string
		wantErr bool
	}{
		{"no authorizer is anonymous, whatever the headers say", nil, "mallory", "anonymous", false},
		{"JWT claim", &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "user-1"}}}, "mallory", "user-1", false},
		{"JWT without the claim", &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"email": "x"}}}, "", "", true},
		{"IAM caller", &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::1:user/ops"}}, "", "arn:aws:iam::1:user/ops", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			var gotErr error
			h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, gotErr = Subject("sub")(r)
				w.WriteHeader(http.StatusNoContent)
			}))
			ev := events.APIGatewayV2HTTPRequest{
				RawPath:        "/x",
				Headers:        map[string]string{httpapi.SubjectHeader: tc.header},
				RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: tc.auth, HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/x"}},
			}
			if _, err := h(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			if got != tc.want || (gotErr != nil) != tc.wantErr {
				t.Fatalf("subject %q, %v; want %q (error %v)", got, gotErr, tc.want, tc.wantErr)
			}
		})
	}
	// Outside a Lambda request there is no gateway context at all.
	r, _ := http.NewRequest("GET", "/", nil)
	if _, ok := core.GetAPIGatewayV2ContextFromContext(r.Context()); ok {
		t.Fatal("unexpected gateway context")
	}
}

// TestSubjectHeaderRefused: a deployed function answers a request that
// names its caller in X-Uds-Subject with a 400 saying that the authorizer
// names callers, whatever the authorizer is, before the store is reached
// (the configured endpoint answers nothing).
func TestSubjectHeaderRefused(t *testing.T) {
	cfg := config.Config{Endpoint: "http://127.0.0.1:1", SubjectClaim: "sub", CursorSecret: []byte("k")}
	for _, tc := range []struct {
		name, method, path string
		auth               *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
		group              httpapi.Group
	}{
		{"no authorizer", "GET", "/rest/api/v1/data/d53065bd-f932-4841-83fb-849717d8df0f/prefs/alice", nil, httpapi.GroupKV},
		{"JWT authorizer", "POST", "/rest/api/v1/data/d53065bd-f932-4841-83fb-849717d8df0f/prefs/alice", &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "user-1"}}}, httpapi.GroupKV},
		{"IAM on an admin route", "GET", "/rest/api/v1/admin/apps/d53065bd-f932-4841-83fb-849717d8df0f/users", &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::1:user/ops"}}, httpapi.GroupAdmin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := New(context.Background(), cfg, tc.group, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := h(context.Background(), events.APIGatewayV2HTTPRequest{
				RawPath: tc.path, Body: `{"data":1}`,
				Headers: map[string]string{"x-uds-subject": "mallory"},
				RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: tc.auth,
					HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: tc.method, Path: tc.path}},
			})
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Error, Details string }
			_ = json.Unmarshal([]byte(res.Body), &body)
			if res.StatusCode != 400 || body.Error != "Subject header not trusted" || body.Details != AuthorizerOnly {
				t.Fatalf("status %d, body %s; want 400 with the authorizer's rule", res.StatusCode, res.Body)
			}
		})
	}
}

func TestMalformedPathIsA400(t *testing.T) {
	called := false
	h := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	for _, path := range []string{"/rest/api/v1/data/a/b/%zz", "/rest/api/v1/data/a/b/c%", "/x/%4"} {
		res, err := h(context.Background(), events.APIGatewayV2HTTPRequest{RawPath: path})
		if err != nil || res.StatusCode != 400 || called {
			t.Fatalf("%s: status %d, err %v, handler called %v", path, res.StatusCode, err, called)
		}
	}
}
