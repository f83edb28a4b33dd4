package lambdahost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/lambdahost"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// lambdaPayloadLimit is the most a function may return to API Gateway.
const lambdaPayloadLimit = 6 * 1024 * 1024

// listFunction is the list function's handler as main builds it, over
// fresh tables in the test engine, and those tables.
func listFunction(t *testing.T) (lambdahost.HandlerFunc, store.Tables) {
	t.Helper()
	return function(t, httpapi.GroupList)
}

// function is the handler of a function that serves groups, as main
// builds it, over fresh tables in the test engine, and those tables.
func function(t *testing.T, groups httpapi.Group) (lambdahost.HandlerFunc, store.Tables) {
	t.Helper()
	cfg := config.Config{
		Tables:       storetest.NewTables(t),
		Endpoint:     os.Getenv(config.EnvDynamoDBEndpoint),
		SubjectClaim: "sub", CursorSecret: []byte("function"), LimitsCacheTTL: time.Second,
		RequestBudget: apitest.Budget,
	}
	h, err := lambdahost.New(context.Background(), cfg, groups, slog.New(slog.DiscardHandler), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h, cfg.Tables
}

// Whatever the values hold, a list page read through the Lambda handler
// fits Lambda's response payload as the runtime encodes it (the body
// escaped inside a JSON string), and the pages together hold every item.
func TestListPagesFitTheLambdaPayload(t *testing.T) {
	const app = "d53065bd-f932-4841-83fb-849717d8df0f"
	ctx := context.Background()
	h, tables := listFunction(t)
	st := store.New(storetest.Client(t), tables)
	for _, tc := range []struct {
		name, element string
	}{
		{"quotes", `"ab"`},
		{"backslashes", `"\\\\\\\\"`},
		{"line separators", "\"\u2028\u2029\""},
		{"plain", `1234567`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// About 900 KB of JSON per value, 8 values: about 7 MB of body
			// before escaping.
			value := "[" + strings.Repeat(tc.element+",", 900_000/(len(tc.element)+1)) + "0]"
			const n = 8
			for i := range n {
				k, err := uds.NewKey(app, "payload", tc.name)
				if err == nil {
					k, err = k.WithSortKey(fmt.Sprintf("%02d", i))
				}
				if err == nil {
					_, err = st.Create(ctx, uds.Write{Key: k, Data: []byte(value), Subject: "anonymous"})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			seen, cursor, pages := 0, "", 0
			for {
				query := ""
				if cursor != "" {
					query = "cursor=" + url.QueryEscape(cursor)
				}
				path := "/rest/api/v1/data/" + app + "/payload/" + url.PathEscape(tc.name) + "/list"
				res, err := h(ctx, events.APIGatewayV2HTTPRequest{
					RawPath: path, RawQueryString: query,
					RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path}},
				})
				if err != nil || res.StatusCode != 200 {
					t.Fatalf("page %d: status %d, %v: %.200s", pages, res.StatusCode, err, res.Body)
				}
				// The runtime encodes the response so (aws-lambda-go's
				// default leaves HTML unescaped).
				var payload bytes.Buffer
				enc := json.NewEncoder(&payload)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(res); err != nil {
					t.Fatal(err)
				}
				if payload.Len() > lambdaPayloadLimit {
					t.Fatalf("page %d: a payload of %d bytes (body %d), over Lambda's %d", pages, payload.Len(), len(res.Body), lambdaPayloadLimit)
				}
				var page struct {
					Items  []json.RawMessage `json:"list"`
					Cursor string            `json:"cursor"`
				}
				if err := json.Unmarshal([]byte(res.Body), &page); err != nil {
					t.Fatal(err)
				}
				t.Logf("page %d: %d items, body %d bytes, payload %d bytes", pages, len(page.Items), len(res.Body), payload.Len())
				seen += len(page.Items)
				pages++
				if cursor = page.Cursor; cursor == "" {
					break
				}
			}
			if seen != n {
				t.Errorf("the pages held %d items, want %d", seen, n)
			}
		})
	}
}
