package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// TestRemovalOfAnotherIncarnationWithTheSameRevision: import keeps
// versions and creation instants, so a key can hold, one after the other,
// two items at the same revision. A removal prepared from the first must
// not remove the second while releasing the first's size: the usage stays
// exact whichever item the removal meets.
func TestRemovalOfAnotherIncarnationWithTheSameRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := storetest.Client(t)
	tables := storetest.NewTables(t)
	s := store.New(client, tables)
	k, err := key(t, "feed", "list").WithSortKey("item")
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	record := func(data string) []uds.Record {
		return []uds.Record{{Owner: "alice", Item: uds.Item{
			Key: k, Data: json.RawMessage(data), CreatedDate: created, CreatedBy: "alice",
			UpdatedDate: created, UpdatedBy: "alice", Version: 1,
		}}}
	}
	if res, err := s.Import(ctx, k.App, record(`"small"`)); err != nil || res.Imported != 1 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(tables.List), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"dataKey": &types.AttributeValueMemberS{Value: k.DataKey()}, "sortKey": &types.AttributeValueMemberS{Value: k.SortKey},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stale := out.Item
	if err := s.Delete(ctx, uds.Write{Key: k}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Import(ctx, k.App, record(`"`+strings.Repeat("a much larger value ", 20)+`"`)); err != nil || res.Imported != 1 {
		t.Fatalf("second import: %+v, %v", res, err)
	}
	if _, err := s.RemoveAsRead(ctx, k.App, k, stale); err != nil {
		t.Fatal(err)
	}
	recorded := storetest.RecordedUsage(t, client, tables, k.App, "alice")
	stored := storetest.StoredUsage(t, client, tables, k.App, "alice")
	if recorded != stored {
		t.Errorf("usage records %+v, the tables hold %+v", recorded, stored)
	}
}
