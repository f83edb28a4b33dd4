package lambdahost_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/store"
)

const benchListPath = "/rest/api/v1/data/d53065bd-f932-4841-83fb-849717d8df0f/bench/feed"

// listValue is a JSON value of about n bytes shaped like application data:
// objects of words and numbers, so that it compresses as such data does
// (about 4 to 6 times), not as a run of one letter would.
func listValue(n, seed int) string {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett"}
	var b strings.Builder
	b.WriteString(`{"entries":[`)
	for i := 0; b.Len() < n-80; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		x := (seed*7919 + i*104729) % 1000003
		fmt.Fprintf(&b, `{"id":%d,"name":"%s %s","score":%d.%02d,"tags":["%s","%s"],"ok":%t}`,
			x, words[x%10], words[(x/10)%10], x%977, x%100, words[(x/100)%10], words[(x/7)%10], x%3 == 0)
	}
	b.WriteString(`]}`)
	return b.String()
}

// queryAnswer is DynamoDB's Query answer holding n list items whose values
// are about size bytes, stored as UDS stores them (compressed above 4 KB).
func queryAnswer(n, size int) stubBody {
	items := make([]map[string]any, n)
	returned := 0
	for i := range items {
		v := listValue(size, i)
		it := map[string]any{
			"dataKey":          map[string]string{"S": "d53065bd-f932-4841-83fb-849717d8df0f|bench|feed"},
			"sortKey":          map[string]string{"S": fmt.Sprintf("2024-01-15T10:30:00.000Z#%06d", i)},
			"createdDate":      map[string]string{"S": "2024-01-15T10:30:00.000Z"},
			"createdBySubject": map[string]string{"S": "user-1234567890"},
			"updatedDate":      map[string]string{"S": "2024-01-15T10:31:00.000Z"},
			"updatedBySubject": map[string]string{"S": "user-1234567890"},
			"version":          map[string]string{"N": "3"},
			"itemSize":         map[string]string{"N": strconv.Itoa(len(v) + 200)},
			"ownerKey":         map[string]string{"S": "d53065bd-f932-4841-83fb-849717d8df0f|user-1234567890"},
			"schemaVersion":    map[string]string{"N": "1"},
		}
		if len(v) > 4096 {
			var z bytes.Buffer
			w, _ := gzip.NewWriterLevel(&z, store.ValueCompression)
			_, _ = w.Write([]byte(v))
			_ = w.Close()
			it["dataValueGz"] = map[string]string{"B": base64.StdEncoding.EncodeToString(z.Bytes())}
		} else {
			it["dataValue"] = map[string]string{"S": v}
		}
		items[i] = it
		returned += len(v) + 200
	}
	body, err := json.Marshal(map[string]any{"Items": items, "Count": n, "ScannedCount": n})
	if err != nil {
		panic(err)
	}
	// A strongly consistent Query reads a unit for each 4 KB it returns.
	units := strconv.Itoa((returned + 4095) / 4096)
	return newStubBody(string(body), `{"TableName":"data_store_list","CapacityUnits":`+units+`,"ReadCapacityUnits":`+units+`}`)
}

// listPage is one row of BenchmarkListPage: a page of n items of about
// size bytes through the Lambda handler beside the SDK's Query of the
// same answer. TestBenchmarkRatios runs some of the same rows.
type listPage struct {
	name string
	n    int
	size int
	// gzip asks for a compressed answer: the row reports how much smaller
	// it is (x-smaller) and, against the plain row, its CPU.
	gzip bool
}

var listPageRows = []listPage{
	{"100x1KB", 100, 1000, false},
	{"1000x1KB", 1000, 1000, false},
	{"1000x1KB-gzip", 1000, 1000, true},
	{"100x20KB-compressed", 100, 20000, false},
	{"100x20KB-compressed-gzip", 100, 20000, true},
}

// BenchmarkListPage runs a list page through the Lambda handler beside the
// SDK's bare Query on the same stubbed answer, alternating the two in one
// loop, each under its own invocation's context, and reports the ratio of
// their times (x-sdk): what UDS adds to the floor the SDK sets (goal: at
// most 1.3).
func BenchmarkListPage(b *testing.B) {
	for _, c := range listPageRows {
		b.Run(c.name, c.bench)
	}
}

func (c listPage) bench(b *testing.B) {
	answer := queryAnswer(c.n, c.size)
	t := stubTransport{query: &answer}
	client := stubClientOf(b, t)
	h := apiHandler(httpapi.StoresOf(store.New(client, benchTables)))
	ev := benchEvent("GET", benchListPath+"/list?limit="+strconv.Itoa(c.n), "")
	if c.gzip {
		ev.Headers["accept-encoding"] = "gzip"
	}
	plain, err := h(context.Background(), benchEvent("GET", benchListPath+"/list?limit="+strconv.Itoa(c.n), ""))
	if err != nil || !strings.HasPrefix(plain.Body, `{"list":[`) {
		// What is timed must be the list page, not another answer.
		b.Fatalf("not a list page (%v): %.300s", err, plain.Body)
	}
	var sent int
	in := &dynamodb.QueryInput{
		TableName:                aws.String(benchTables.List),
		KeyConditionExpression:   aws.String("#k = :k"),
		ExpressionAttributeNames: map[string]string{"#k": "dataKey"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":k": &types.AttributeValueMemberS{Value: "d53065bd-f932-4841-83fb-849717d8df0f|bench|feed"},
		},
		Limit:                  aws.Int32(int32(c.n + 1)),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	ctx := context.Background()
	var sdk, ours time.Duration
	b.ReportAllocs()
	for b.Loop() {
		sdkCtx, endSDK := invocationContext(ctx)
		oursCtx, endOurs := invocationContext(ctx)
		start := time.Now()
		out, err := client.Query(sdkCtx, in)
		if err != nil || len(out.Items) != c.n {
			b.Fatalf("query: %v", err)
		}
		mid := time.Now()
		res, err := h(oursCtx, ev)
		end := time.Now()
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("status %d, err %v: %.300s", res.StatusCode, err, res.Body)
		}
		sdk, ours = sdk+mid.Sub(start), ours+end.Sub(mid)
		sent = len(res.Body)
		endSDK()
		endOurs()
	}
	b.ReportMetric(float64(ours)/float64(sdk), "x-sdk")
	if c.gzip {
		// The gzip body travels base64 encoded to API Gateway, which
		// sends the client the bytes themselves.
		b.ReportMetric(float64(len(plain.Body))/float64(base64.StdEncoding.DecodedLen(sent)), "x-smaller")
	}
	b.ReportMetric(float64(sdk.Nanoseconds())/float64(b.N), "sdk-ns/op")
}
