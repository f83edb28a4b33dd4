package store_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
	"github.com/udsproject/uds/pkg/uds"
)

// A read of the changes feed takes the rows up to its horizon, 2 s
// behind now, and is gap-free because every row lands before a read's
// horizon can pass the instant it names: a write that takes longer than
// 1 s is made again under a new instant. The row that stands at an
// item's expiry names the expiry instead, and must be made again under
// an instant no read has passed too. Here the item's row goes in a first
// BatchWriteItem call (the 25th row) and its expiry row, 2.5 s later, in
// a second call that takes 6 s: a read 2.1 s in shows the item (its row
// is behind the horizon, the item not expired yet), a read 4.6 s in
// passes the expiry, and if the row written again still named the
// expiry, no read would ever show the item gone.
func TestLogChangesLateExpiryRow(t *testing.T) {
	t.Parallel()
	tables := storetest.NewTables(t)
	client, ft := storetest.FaultyClient(t, 1)
	s := store.New(client, tables)
	const app = "d53065bd-f932-4841-83fb-849717d8df0f"
	image := func(id string, expires time.Time) map[string]types.AttributeValue {
		av := map[string]types.AttributeValue{
			schema.AttrDataKey: &types.AttributeValueMemberS{Value: app + uds.KeyDelimiter + "ns" + uds.KeyDelimiter + id},
			schema.AttrVersion: &types.AttributeValueMemberN{Value: "1"},
		}
		if !expires.IsZero() {
			av[schema.AttrExpiresAtMillis] = &types.AttributeValueMemberN{Value: strconv.FormatInt(expires.UnixMilli(), 10)}
		}
		return av
	}
	start := time.Now()
	expires := start.Add(2500 * time.Millisecond)
	var changes []store.StreamChange
	for i := range 24 {
		changes = append(changes, store.StreamChange{Sequence: strconv.Itoa(i), At: start, New: image("f"+strconv.Itoa(i), time.Time{})})
	}
	// The 25th change's row ends the first call; its expiry row is the
	// second call's, which is held back.
	changes = append(changes, store.StreamChange{Sequence: "24", At: start, New: image("x", expires)})
	ft.Set(faults.Rule{Kind: faults.Delay, Ops: []string{"BatchWriteItem"}, Nth: 2, Delay: 6 * time.Second})
	if _, err := s.LogChanges(context.Background(), changes); err != nil {
		t.Fatal(err)
	}
	done := time.Now()
	out, err := storetest.Client(t).Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(tables.Changes), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var latest time.Time
	var seqs []string
	for _, av := range out.Items {
		seq := av[schema.AttrChangeSeq].(*types.AttributeValueMemberS).Value
		if !strings.HasSuffix(av[schema.AttrDataKey].(*types.AttributeValueMemberS).Value, uds.KeyDelimiter+"x") || !strings.HasSuffix(seq, "x") {
			continue
		}
		seqs = append(seqs, seq)
		ms, _ := strconv.ParseInt(seq[:14], 10, 64)
		if at := time.UnixMilli(ms); at.After(latest) {
			latest = at
		}
	}
	// A read made when LogChanges returned has its horizon 2 s before:
	// the expiry row must stand after it, or the reads made since the
	// horizon passed the expiry missed it.
	if horizon := done.Add(-2 * time.Second); !latest.After(horizon) {
		t.Fatalf("the expiry row's latest instant is %s (rows %v), %s before the write ended: a read since %s passed it before it was written",
			latest.Format(time.StampMilli), seqs, done.Sub(latest), horizon.Format(time.StampMilli))
	}
}
