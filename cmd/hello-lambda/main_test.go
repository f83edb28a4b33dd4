package main

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestHandle(t *testing.T) {
	tests := []struct {
		name string
		req  events.APIGatewayV2HTTPRequest
	}{
		{name: "empty event", req: events.APIGatewayV2HTTPRequest{}},
		{name: "any route", req: events.APIGatewayV2HTTPRequest{RouteKey: "POST /x", RawPath: "/x", Body: `{"a":1}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := handle(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 || resp.Body != Body || resp.Headers["content-type"] != "application/json" {
				t.Errorf("response = %+v", resp)
			}
		})
	}
}
