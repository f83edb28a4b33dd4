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

// GetMany reads items by key, strongly consistent, with BatchGetItem
// (100 keys a call): for each key the item, or uds.ErrNotFound.
func (s *Store) GetMany(ctx context.Context, keys []uds.Key) ([]uds.Item, []error) {
	items, errs := make([]uds.Item, len(keys)), make([]error, len(keys))
	found := map[string]map[string]types.AttributeValue{}
	for start := 0; start < len(keys); start += 100 {
		in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{}}
		for _, k := range keys[start:min(start+100, len(keys))] {
			ka := in.RequestItems[s.table(k)]
			ka.Keys, ka.ConsistentRead = append(ka.Keys, keyAV(k)), aws.Bool(true)
			in.RequestItems[s.table(k)] = ka
		}
		for attempt := 0; len(in.RequestItems) > 0; attempt++ {
			out, err := s.client.BatchGetItem(ctx, in)
			if err == nil && len(out.UnprocessedKeys) > 0 {
				err = sleep(ctx, backoff(attempt))
			}
			if err != nil {
				err = failed("read items", err)
				for i := range errs {
					errs[i] = err
				}
				return items, errs
			}
			for _, got := range out.Responses {
				for _, it := range got {
					found[str(it, schema.AttrDataKey)+"\x00"+str(it, schema.AttrSortKey)] = it
				}
			}
			in.RequestItems = out.UnprocessedKeys
		}
	}
	now := time.Now()
	for i, k := range keys {
		av := found[k.DataKey()+"\x00"+k.SortKey]
		switch {
		case av == nil:
			errs[i] = uds.ErrNotFound
		case expired(av, now):
			s.reclaim(ctx, k.App, []listEntry{{key: k, state: av}})
			errs[i] = uds.ErrNotFound
		default:
			items[i], errs[i] = decodeItem(k, av)
		}
	}
	return items, errs
}
