package storetest

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// RecordedUsage is an owner's usage record in an app, read strongly
// consistent.
func RecordedUsage(t testing.TB, c *dynamodb.Client, tables store.Tables, app, owner string) uds.Usage {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(tables.Usage), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			schema.AttrUser: &types.AttributeValueMemberS{Value: owner},
			schema.AttrApp:  &types.AttributeValueMemberS{Value: app},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return uds.Usage{Bytes: number(out.Item[schema.AttrUsedBytes]), Items: number(out.Item[schema.AttrUsedItems]), History: number(out.Item[schema.AttrHistoryBytes])}
}

// StoredUsage sums the sizes of an owner's items and kept versions as the
// data and history tables hold them: a strongly consistent scan of each,
// not the owner index that recompute reads. A kept version counts in
// bytes and history, not in items.
func StoredUsage(t testing.TB, c *dynamodb.Client, tables store.Tables, app, owner string) uds.Usage {
	t.Helper()
	var total uds.Usage
	for _, table := range []string{tables.Data, tables.List, tables.History} {
		in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
		for {
			out, err := c.Scan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range out.Items {
				if ok, _ := it[schema.AttrOwnerKey].(*types.AttributeValueMemberS); ok != nil && ok.Value == app+uds.KeyDelimiter+owner {
					size := number(it[schema.AttrItemSize])
					total.Bytes += size
					if _, kept := it[schema.AttrHistoryKey]; kept {
						total.History += size
					} else {
						total.Items++
					}
				}
			}
			if out.LastEvaluatedKey == nil {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	return total
}

func number(av types.AttributeValue) int64 {
	if n, ok := av.(*types.AttributeValueMemberN); ok {
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	return 0
}
