package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
	"github.com/udsproject/uds/pkg/uds"
)

// Removing a namespace's strays under DynamoDB faults (lost answers after
// commit, throttling, 500s, resets), while their owner deletes some of
// them and the namespace's items in the key space in use change, releases
// every stray exactly once and leaves the rest alone.
func TestRemoveStraysUnderFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFaultyStore(t, 12)
	const n = 150
	for i := range n {
		owner := []string{"alice", "bob", "carol"}[i%3]
		k := key(t, "notes", fmt.Sprintf("s%03d", i))
		if i%2 == 1 {
			k = listKey(t, "notes-list", fmt.Sprintf("s%03d", i))
			k.Namespace = "notes"
		}
		if _, err := f.Create(ctx, writeAs(owner, k, `{"v":"`+fmt.Sprint(i)+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	// The namespace turns private behind the store's back: every item
	// above is a stray. Items written in the private key space now stay.
	_, err := f.plain.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(f.tables.Namespaces),
		Item: map[string]types.AttributeValue{
			"app": &types.AttributeValueMemberS{Value: app}, "namespace": &types.AttributeValueMemberS{Value: "notes"},
			"access": &types.AttributeValueMemberS{Value: "private"}, "policyVersion": &types.AttributeValueMemberN{Value: "1"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := key(t, "notes", "mine").InSpaceOf("alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create(ctx, writeAs("alice", kept, `{"kept":true}`)); err != nil {
		t.Fatal(err)
	}
	f.faults.Set(
		faults.Rule{Kind: faults.LostAfterCommit, Ops: []string{"TransactWriteItems"}, Rate: 0.2},
		faults.Rule{Kind: faults.ResetAfterCommit, Ops: []string{"TransactWriteItems"}, Rate: 0.1},
		faults.Rule{Kind: faults.Throttle, Rate: 0.1},
		faults.Rule{Kind: faults.ServerError, Rate: 0.05},
		faults.Rule{Kind: faults.Reset, Ops: []string{"Scan"}, Rate: 0.1},
	)
	var wg sync.WaitGroup
	removed := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			n, err := f.RemoveStrays(ctx, app, "notes", true)
			removed += n
			var incomplete *uds.IncompleteError
			switch {
			case err == nil:
				return
			case errors.As(err, &incomplete) || errors.Is(err, uds.ErrUnavailable):
				continue // a round cut short or given up on: repeat, as an operator would
			default:
				t.Error(err)
				return
			}
		}
	}()
	// The owner's own deletes of some strays race the removal, through
	// the shared key space they were written in.
	for i := 0; i < n; i += 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := key(t, "notes", fmt.Sprintf("s%03d", i))
			for {
				err := f.Delete(ctx, uds.Write{Key: k})
				if !errors.Is(err, uds.ErrUnavailable) {
					if err != nil {
						t.Error(err)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	injected, calls := f.faults.Injected()
	f.faults.Set()
	if injected[faults.LostAfterCommit]+injected[faults.ResetAfterCommit] == 0 {
		t.Errorf("no answer was lost in %d calls (%v): the test did not test what it says", calls, injected)
	}
	page, err := f.Strays(ctx, store.StrayQuery{App: app, Namespace: "notes", Private: true, Limit: 1000,
		MaxBytes: 1 << 30, RecordBytes: func(*uds.Record) int { return 1 }})
	if err != nil || len(page.Records) != 0 {
		t.Fatalf("strays left: %d, %v", len(page.Records), err)
	}
	if _, err := f.Get(ctx, kept); err != nil {
		t.Errorf("the item in the key space in use: %v", err)
	}
	for _, owner := range []string{"alice", "bob", "carol"} {
		f.exact(t, owner)
	}
	if u := f.recorded(t, "alice"); u.Items != 1 {
		t.Errorf("alice's usage %+v, want her one item in the private key space", u)
	}
	t.Logf("the removal reported %d of %d strays (the owner deleted some, lost answers hide others); faults %v in %d calls", removed, n, injected, calls)
}
