package lambdahost_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/udsproject/uds/internal/dynamotest"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
)

// TestRequestLineThroughLambdaLogHandler runs a request through the logger
// the functions use (aws-lambda-go's slog handler, which writes to stdout
// and adds the invocation's request id) and reads the line it wrote.
func TestRequestLineThroughLambdaLogHandler(t *testing.T) {
	read, write, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = write // the handler takes os.Stdout when it is built
	logger := lambdacontext.NewLogger()
	os.Stdout = stdout

	cfg := config.Config{
		Tables: dynamotest.NewTables(t), Endpoint: os.Getenv(config.EnvDynamoDBEndpoint),
		SubjectClaim: "sub", CursorSecret: []byte("k"), LimitsCacheTTL: time.Second,
	}
	h, err := lambdahost.New(context.Background(), cfg, httpapi.GroupKV, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "8f5e1c2a-lambda-request"})
	ev := benchEvent("GET", "/rest/api/v1/data/d53065bd-f932-4841-83fb-849717d8df0f/logs/missing", "")
	ev.RequestContext.RequestID = "gw-request-1"
	ev.Headers["x-amzn-trace-id"] = "Root=1-65a50929-5fd752fe2505473870faf985"
	if res, err := h(ctx, ev); err != nil || res.StatusCode != 404 {
		t.Fatalf("answer %d, %v", res.StatusCode, err)
	}
	_ = write.Close()
	out, _ := io.ReadAll(read)
	for _, want := range []string{
		"level=INFO", "message=request", "requestId=8f5e1c2a-lambda-request", "apiRequestId=gw-request-1",
		`route="GET /data/{applicationUuid}/{namespace}/{id}"`, "status=404", "namespace=logs", "subject=anonymous",
		`traceId="Root=1-65a50929-5fd752fe2505473870faf985"`, "dynamodbCalls=2", `error="Key not found"`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the line lacks %s: %s", want, out)
		}
	}
}
