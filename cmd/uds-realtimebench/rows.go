package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// A write's row in the changes table splits its deliveries' time in two:
// up to the row's instant (the millisecond its sequence starts with, when
// the changes handler wrote it) is the stream's delivery to the server's
// poller and the row's write; after it, the hub's read of the item and
// the messages to the subscriptions.

// seqMillis is the width of the millisecond a row's sequence starts with
// (store's seqWidth).
const seqMillis = 14

// rowInstants reads the changes table of the run and returns the instant
// of each write's row, by the write's number: the item a write creates is
// named w<number>, its id or, in a list, its sort key.
func rowInstants(ctx context.Context, endpoint, table string) (map[int]time.Time, error) {
	client, err := store.NewClient(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	instants := map[int]time.Time{}
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, row := range page.Items {
			n, at, ok := rowOf(row)
			if !ok {
				continue
			}
			if first, seen := instants[n]; !seen || at.Before(first) {
				instants[n] = at
			}
		}
	}
	return instants, nil
}

// rowOf returns the write a row of the changes table is of, and the row's
// instant.
func rowOf(row map[string]types.AttributeValue) (int, time.Time, bool) {
	str := func(name string) string {
		v, _ := row[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	item := str(schema.AttrSortKey)
	if item == "" {
		// A key-value item: app|namespace|id, then |owner when private.
		parts := strings.Split(str(schema.AttrDataKey), uds.KeyDelimiter)
		if len(parts) < 3 {
			return 0, time.Time{}, false
		}
		item = parts[2]
	}
	name, ok := strings.CutPrefix(item, "w")
	if !ok {
		return 0, time.Time{}, false
	}
	n, err := strconv.Atoi(name)
	seq := str(schema.AttrChangeSeq)
	if err != nil || len(seq) < seqMillis {
		return 0, time.Time{}, false
	}
	ms, err := strconv.ParseInt(seq[:seqMillis], 10, 64)
	if err != nil {
		return 0, time.Time{}, false
	}
	return n, time.UnixMilli(ms), true
}
