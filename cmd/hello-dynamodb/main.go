// Command hello-dynamodb is hello-lambda plus what every UDS function must
// do at init whatever it serves: build its DynamoDB client (store.NewClient:
// the default credential chain, the region, the endpoint). Its cold start
// is the floor of a function that talks to DynamoDB, the second floor of
// make invoke-floor.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/store"
)

func main() {
	client, err := store.NewClient(context.Background(), os.Getenv(config.EnvDynamoDBEndpoint))
	if err != nil {
		log.Fatalf("init: %v", err)
	}
	lambda.Start(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		_ = client // built at init, as the functions build theirs
		return events.APIGatewayV2HTTPResponse{
			StatusCode: 200,
			Headers:    map[string]string{"content-type": "application/json"},
			Body:       `{"message":"hello"}`,
		}, nil
	})
}
