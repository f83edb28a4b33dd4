package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Expiry. An item whose instant has passed is gone everywhere UDS answers,
// to the millisecond, whatever DynamoDB's TTL has deleted yet. When UDS
// meets one, it removes it with a conditional delete that holds only while
// the item is still that expired item (same expiry, owner and size), and
// releases exactly its size in the same transaction. If DynamoDB's TTL (or
// another request) removed it first, the condition fails and nothing is
// released here: the TTL deletion is released by the expiry function from
// the table's stream, so each expired item is released once.

// maxReclaim bounds how many expired items a refused write reclaims before
// it tries again.
const maxReclaim = 200

// reclaim removes expired items UDS met, releasing their sizes. It is best
// effort: an item left behind is still treated as gone, and DynamoDB's TTL
// removes it in the end.
func (s *Store) reclaim(ctx context.Context, app string, items []listEntry) int {
	for i := range items {
		items[i].expiredOnly = true
	}
	n, _ := s.removeEntries(ctx, "reclaim expired items", app, items)
	return n
}

// readLive reads an item's state for a write: nil when there is none or
// when it has expired (it is reclaimed then).
func (s *Store) readLive(ctx context.Context, key uds.Key) (map[string]types.AttributeValue, error) {
	old, err := s.readMeta(ctx, key)
	if err != nil || old == nil || !expired(old, time.Now()) {
		return old, err
	}
	s.reclaim(ctx, key.App, []listEntry{{key: key, state: old}})
	return nil, nil
}

// reclaimOwner removes an owner's expired items, found through the owner
// index (which projects the expiry, the size and the keys), so that they
// never cause a quota refusal. It returns how many it removed.
func (s *Store) reclaimOwner(ctx context.Context, app, owner string) int {
	var found []listEntry
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for _, table := range []string{s.tables.Data, s.tables.List} {
		in := &dynamodb.QueryInput{
			TableName:                aws.String(table),
			IndexName:                aws.String(schema.IndexByOwner),
			KeyConditionExpression:   aws.String("#o = :o"),
			FilterExpression:         aws.String("#xm <= :now"),
			ExpressionAttributeNames: map[string]string{"#o": schema.AttrOwnerKey, "#xm": schema.AttrExpiresAtMillis},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":o": &types.AttributeValueMemberS{Value: ownerKey(app, owner)}, ":now": &types.AttributeValueMemberN{Value: now},
			},
		}
		err := s.queryAll(ctx, in, maxReclaim-len(found), func(it map[string]types.AttributeValue) {
			key, ok := keyOf(it)
			if ok {
				found = append(found, listEntry{key: key, state: it})
			}
		})
		if err != nil || len(found) >= maxReclaim {
			break
		}
	}
	if len(found) == 0 {
		return 0
	}
	return s.reclaim(ctx, app, found)
}

// keyOf parses a stored item's key; false for a dataKey UDS could not
// have written (the seed's service may have).
func keyOf(av map[string]types.AttributeValue) (uds.Key, bool) {
	parts := strings.Split(str(av, schema.AttrDataKey), uds.KeyDelimiter)
	if len(parts) != 3 {
		return uds.Key{}, false
	}
	return uds.Key{App: parts[0], Namespace: parts[1], ID: parts[2], SortKey: str(av, schema.AttrSortKey)}, true
}
