package store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Get reads one item, strongly consistent so a client reads its own writes.
func (s *Store) Get(ctx context.Context, key uds.Key) (uds.Item, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table(key)),
		Key:            keyAV(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return uds.Item{}, failed("get "+key.DataKey(), err)
	}
	if out.Item == nil {
		return uds.Item{}, uds.ErrNotFound
	}
	if expired(out.Item, time.Now()) {
		s.reclaim(ctx, key.App, []listEntry{{key: key, state: out.Item}})
		return uds.Item{}, uds.ErrNotFound
	}
	return decodeItem(key, out.Item)
}

// metaProjection is what a write needs to know of the item it replaces or
// removes: its revision, owner and size, and the token of its last update
// (with its audit fields, for the answer to a retried update), and its
// expiry.
const metaProjection = "#k, #v, #cd, #cb, #ud, #ub, #o, #z, #wt, #xm"

var metaNames = map[string]string{
	"#k": schema.AttrDataKey, "#v": schema.AttrVersion, "#cd": schema.AttrCreatedDate,
	"#cb": schema.AttrCreatedBySubject, "#ud": schema.AttrUpdatedDate, "#ub": schema.AttrUpdatedBySubject, "#o": schema.AttrOwnerKey, "#z": schema.AttrItemSize,
	"#wt": schema.AttrWriteToken, "#xm": schema.AttrExpiresAtMillis,
}

// readMeta reads the state of an item that a write is about to change,
// strongly consistent and without its value: nil when there is none. The
// read costs what reading the whole item costs, but transfers little.
func (s *Store) readMeta(ctx context.Context, key uds.Key) (map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.table(key)),
		Key:                      keyAV(key),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String(metaProjection),
		ExpressionAttributeNames: metaNames,
	})
	if err != nil {
		return nil, failed("read "+key.DataKey(), err)
	}
	return out.Item, nil
}
