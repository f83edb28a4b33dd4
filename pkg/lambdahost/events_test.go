package lambdahost_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/internal/dynamotest"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
)

// TestEventsReplay replays every API Gateway event under events/, in the
// manifest's order, through the Lambda handler of the function it belongs
// to (the same handler main starts), against an empty store.
func TestEventsReplay(t *testing.T) {
	cfg := config.Config{
		Tables:          dynamotest.NewTables(t),
		Endpoint:        os.Getenv(config.EnvDynamoDBEndpoint),
		SubjectClaim:    "sub",
		CursorSecret:    []byte("events"),
		LimitsCacheTTL:  time.Second,
		DeleteAllBudget: 20 * time.Second,
	}
	handlers := map[string]lambdahost.HandlerFunc{}
	for name, group := range map[string]httpapi.Group{"kv": httpapi.GroupKV, "list": httpapi.GroupList, "admin": httpapi.GroupAdmin} {
		h, err := lambdahost.New(context.Background(), cfg, group)
		if err != nil {
			t.Fatal(err)
		}
		handlers[name] = h
	}
	raw, err := os.ReadFile("../../events/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var manifest []struct {
		File     string `json:"file"`
		Function string `json:"function"`
		Status   int    `json:"status"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, group := range []string{"kv", "list", "admin"} { // events/expiry holds stream events
		g, _ := filepath.Glob("../../events/" + group + "/*.json")
		files = append(files, g...)
	}
	if len(manifest) != len(files) {
		t.Errorf("manifest lists %d events, events/ holds %d", len(manifest), len(files))
	}
	for _, m := range manifest {
		t.Run(m.File, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("../../events", m.File))
			if err != nil {
				t.Fatal(err)
			}
			var ev events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(body, &ev); err != nil {
				t.Fatal(err)
			}
			h := handlers[m.Function]
			if h == nil {
				t.Fatalf("no function %q", m.Function)
			}
			res, err := h(context.Background(), ev)
			if err != nil {
				t.Fatalf("handler error: %v", err)
			}
			if res.StatusCode != m.Status {
				t.Fatalf("status %d, want %d; body %s", res.StatusCode, m.Status, res.Body)
			}
			if ev.RequestContext.HTTP.Method == "HEAD" && (res.Body != "" || res.Headers["Etag"] == "") {
				t.Fatalf("HEAD answered a body of %d bytes and headers %v; want no body and the GET's headers", len(res.Body), res.Headers)
			}
			if res.StatusCode >= 400 {
				var e struct{ Error, Timestamp string }
				if err := json.Unmarshal([]byte(res.Body), &e); err != nil || e.Error == "" || e.Timestamp == "" {
					t.Errorf("error body is not the JSON error shape: %s", res.Body)
				}
			}
		})
	}
}
