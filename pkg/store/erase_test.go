package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// An erase removes an item written before UDS that the person created
// (its audit scan finds it: no usage counts it). When another user writes
// it between the scan's read and the removal, the write makes it theirs,
// and the erase leaves it: it removes what is still the person's.
func TestEraseLeavesALegacyItemAnotherWrote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain, tables := storetest.Client(t), storetest.NewTables(t)
	clock := &storetest.Clock{}
	hook := &historyHook{Client: plain, table: tables.Data}
	s := store.New(hook, tables, store.WithClock(clock.Now), store.WithPolicySettle(time.Second))
	k := key(t, "notes", "legacy")
	if _, err := plain.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tables.Data), Item: map[string]types.AttributeValue{
		schema.AttrDataKey:          &types.AttributeValueMemberS{Value: k.DataKey()},
		schema.AttrDataValue:        &types.AttributeValueMemberS{Value: `"alice's"`},
		schema.AttrCreatedBySubject: &types.AttributeValueMemberS{Value: "alice"},
	}}); err != nil {
		t.Fatal(err)
	}
	hook.before = func() {
		if _, err := s.Update(ctx, writeAs("dave", k, `"dave's now"`)); err != nil {
			t.Errorf("dave's write: %v", err)
		}
	}
	e := storetest.Erase(t, s, clock, time.Second, store.EraseQuery{User: "alice"})
	if hook.before != nil {
		t.Fatal("the erase never sent the removal")
	}
	it, err := s.Get(ctx, k)
	if err != nil || string(it.Data) != `"dave's now"` {
		t.Fatalf("the item dave wrote: %s, %v; want it kept", it.Data, err)
	}
	if u := storetest.StoredUsage(t, plain, tables, app, "dave"); u.Items != 1 {
		t.Errorf("dave holds %+v, want the item", u)
	}
	if n := e.Erased[app][uds.ErasedItems]; n != 0 {
		t.Errorf("the receipt counts %d items of alice's, want none", n)
	}
}
