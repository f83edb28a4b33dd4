// Command hello-lambda is the smallest useful aws-lambda-go function: it
// answers every API Gateway HTTP API (payload 2.0) event with a constant
// 200 JSON body. It does nothing at init, so its cold start is the floor
// against which the UDS functions' init durations are compared
// (make invoke-floor).
//
// Build it like the real functions:
//
//	CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o bootstrap ./cmd/hello-lambda
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// Body is the constant response body.
const Body = `{"message":"hello"}`

func handle(_ context.Context, _ events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: 200,
		Headers:    map[string]string{"content-type": "application/json"},
		Body:       Body,
	}, nil
}

func main() { lambda.Start(handle) }
