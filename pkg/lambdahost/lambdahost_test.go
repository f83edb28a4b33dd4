package lambdahost

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

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
