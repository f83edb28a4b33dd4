package lambdahost_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// sdkGet and sdkPost are the DynamoDB calls a GET and a POST of a 1 KB item
// make, as UDS makes them: a strongly consistent GetItem, and one
// TransactWriteItems of the item's put and its owner's usage change, each
// asking for the capacity it consumes.
func sdkGet(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:              aws.String(benchTables.Data),
		Key:                    map[string]types.AttributeValue{"dataKey": &types.AttributeValueMemberS{Value: "d53065bd-f932-4841-83fb-849717d8df0f|bench|item"}},
		ConsistentRead:         aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	return err
}

func sdkPost(ctx context.Context, c *dynamodb.Client) error {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		ClientRequestToken:     aws.String("0123456789abcdef0123456789abcdef"),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{
				TableName: aws.String(benchTables.Data),
				Item: map[string]types.AttributeValue{
					"dataKey": s("d53065bd-f932-4841-83fb-849717d8df0f|bench|item"), "dataValue": s(`{"s":"` + strings.Repeat("a", 980) + `"}`),
					"createdDate": s("2024-01-15T10:30:00.000Z"), "createdBySubject": s("anonymous"),
					"updatedDate": s("2024-01-15T10:30:00.000Z"), "updatedBySubject": s("anonymous"),
					"version": n("1"), "itemSize": n("1150"), "ownerKey": s("d53065bd-f932-4841-83fb-849717d8df0f|anonymous"), "schemaVersion": n("1"),
				},
				ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
				ExpressionAttributeNames:            map[string]string{"#k": "dataKey"},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}},
			{Update: &types.Update{
				TableName:        aws.String(benchTables.Usage),
				Key:              map[string]types.AttributeValue{"user": s("anonymous"), "app": s("d53065bd-f932-4841-83fb-849717d8df0f")},
				UpdateExpression: aws.String("ADD #ub :b, #ui :i SET #s = :s, #lw = :lw"),
				ExpressionAttributeNames: map[string]string{
					"#ub": "usedBytes", "#ui": "usedItems", "#s": "appShard", "#lw": "lastWrite",
				},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":b": n("1150"), ":i": n("1"), ":s": s("d53065bd-f932-4841-83fb-849717d8df0f#3"), ":lw": n("1705314600000"),
				},
			}},
		},
	})
	return err
}

// itemVsFloor is one row of BenchmarkItemVsFloor: a request of a 1 KB
// item through the Lambda handler beside its floor. TestBenchmarkRatios
// runs the same rows.
type itemVsFloor struct {
	name, method, body string
	status             int
	sdk                func(context.Context, *dynamodb.Client) error
	// quiet leaves out the request line and EMF record, to show their
	// share of the ratio.
	quiet bool
}

var itemVsFloorRows = []itemVsFloor{
	{"GET", "GET", "", 200, sdkGet, false},
	{"POST", "POST", benchBody, 201, sdkPost, false},
	{"GET-quiet", "GET", "", 200, sdkGet, true},
	{"POST-quiet", "POST", benchBody, 201, sdkPost, true},
}

// BenchmarkItemVsFloor runs a GET and a POST of a 1 KB item through the
// Lambda handler beside their floor, alternating in one loop: the SDK
// calls the request makes plus the adapter serving a constant answer.
// Each side runs under its own invocation's context, as Lambda gives a
// handler. It reports the ratio (x-floor; goal: at most 1.15).
func BenchmarkItemVsFloor(b *testing.B) {
	for _, c := range itemVsFloorRows {
		b.Run(c.name, c.bench)
	}
}

func (c itemVsFloor) bench(b *testing.B) {
	client := stubClient(b)
	h, floor := benchHandler(b), floorHandler()
	if c.quiet {
		h = quietHandler(b)
	}
	ev := benchEvent(c.method, benchPath, c.body)
	ctx := context.Background()
	// The first POST reads the owner's limits; later ones find them
	// cached, as a warm function does.
	if _, err := h(ctx, ev); err != nil {
		b.Fatal(err)
	}
	var base, ours time.Duration
	b.ReportAllocs()
	for b.Loop() {
		floorCtx, endFloor := invocationContext(ctx)
		oursCtx, endOurs := invocationContext(ctx)
		start := time.Now()
		if err := c.sdk(floorCtx, client); err != nil {
			b.Fatal(err)
		}
		if _, err := floor(floorCtx, ev); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		res, err := h(oursCtx, ev)
		end := time.Now()
		if err != nil || res.StatusCode != c.status {
			b.Fatalf("status %d, err %v: %s", res.StatusCode, err, res.Body)
		}
		base, ours = base+mid.Sub(start), ours+end.Sub(mid)
		endFloor()
		endOurs()
	}
	b.ReportMetric(float64(ours)/float64(base), "x-floor")
}
