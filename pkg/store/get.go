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
	return s.liveItem(ctx, key, out.Item, s.now())
}

// liveItem decodes an item read at now: uds.ErrNotFound when there is none
// or when it has expired (it is reclaimed then).
func (s *Store) liveItem(ctx context.Context, key uds.Key, av map[string]types.AttributeValue, now time.Time) (uds.Item, error) {
	switch {
	case av == nil:
		return uds.Item{}, uds.ErrNotFound
	case expired(av, now):
		s.reclaim(ctx, []listEntry{{key: key, state: av}})
		return uds.Item{}, uds.ErrNotFound
	}
	return decodeItem(key, av)
}

// metaProjection is what a write needs to know of the item it replaces or
// removes: its revision, owner and size and how it is counted, and the token of its last update
// (with its audit fields, for the answer to a retried update), and its
// expiry.
const metaProjection = "#k, #s, #v, #cd, #cb, #ud, #ub, #o, #z, #wt, #xm, #do, #po, #sc"

var metaNames = map[string]string{
	"#k": schema.AttrDataKey, "#s": schema.AttrSortKey, "#v": schema.AttrVersion, "#cd": schema.AttrCreatedDate,
	"#cb": schema.AttrCreatedBySubject, "#ud": schema.AttrUpdatedDate, "#ub": schema.AttrUpdatedBySubject, "#o": schema.AttrOwnerKey, "#z": schema.AttrItemSize,
	"#wt": schema.AttrWriteToken, "#xm": schema.AttrExpiresAtMillis,
	// How the item is counted decides what its removal releases (usage.go).
	"#sc": schema.AttrStreamCounted,
	// A large value's object goes when its item does, and an upload's
	// object when its reservation does (objects.go).
	"#do": schema.AttrDataObject, "#po": schema.AttrPendingObject,
}

// projection is what a read takes of its items, and the names its
// expression refers to (DynamoDB refuses a name the expression does not
// use, so each projection brings its own). A read is strongly consistent
// unless eventual is set: for a view that a second's staleness does not
// mislead, at half the read units.
type projection struct {
	expr     string
	names    map[string]string
	eventual bool
}

// metaRead reads what metaProjection names.
var metaRead = &projection{expr: metaProjection, names: metaNames}

// readMeta reads the state of an item that a write is about to change,
// strongly consistent and, unless whole is set, without its value: nil
// when there is none. The read costs what reading the whole item costs,
// but transfers little.
func (s *Store) readMeta(ctx context.Context, key uds.Key, whole bool) (map[string]types.AttributeValue, error) {
	in := &dynamodb.GetItemInput{
		TableName:      aws.String(s.table(key)),
		Key:            keyAV(key),
		ConsistentRead: aws.Bool(true),
	}
	if !whole {
		in.ProjectionExpression, in.ExpressionAttributeNames = aws.String(metaProjection), metaNames
	}
	out, err := s.client.GetItem(ctx, in)
	if err != nil {
		return nil, failed("read "+key.DataKey(), err)
	}
	return out.Item, nil
}

// GetMany reads items by key, strongly consistent, in BatchGetItem calls:
// for each key the item, or uds.ErrNotFound.
func (s *Store) GetMany(ctx context.Context, keys []uds.Key) ([]uds.Item, []error) {
	items, errs := make([]uds.Item, len(keys)), make([]error, len(keys))
	found, err := s.batchGet(ctx, keys, nil)
	now := s.now()
	for i, k := range keys {
		if err != nil {
			errs[i] = err
			continue
		}
		items[i], errs[i] = s.liveItem(ctx, k, found[itemID(k)], now)
	}
	return items, errs
}

// batchGet reads items by key, strongly consistent, with BatchGetItem
// (100 keys a call, unprocessed keys sent again): the items found, by
// itemID. A projection, when given, names what is read (nil: the whole
// items).
// A key given more than once is read once: BatchGetItem refuses a call
// that names one key twice, and a batch of reads, or the entries of an
// index page (an item's entry and a stale one of its earlier value), may.
func (s *Store) batchGet(ctx context.Context, keys []uds.Key, projection *projection) (map[string]map[string]types.AttributeValue, error) {
	found, _, err := s.readItemsAndHeads(ctx, keys, projection, nil)
	return found, err
}

// readItemsAndHeads is batchGet of keys that also reads the history heads
// of the items heads names, in the same calls: a write that needs both
// reads them in one BatchGetItem (up to 100 keys in all). The heads are
// by history key.
func (s *Store) readItemsAndHeads(ctx context.Context, keys []uds.Key, projection *projection, heads []uds.Key) (map[string]map[string]types.AttributeValue, map[string]historyHead, error) {
	type read struct {
		table string
		key   map[string]types.AttributeValue
	}
	keys, heads = distinctKeys(keys), distinctKeys(heads)
	reads := make([]read, 0, len(keys)+len(heads))
	for _, k := range keys {
		reads = append(reads, read{s.table(k), keyAV(k)})
	}
	for _, k := range heads {
		reads = append(reads, read{s.tables.History, historyEntryKey(k, schema.HeadVersion)})
	}
	found, foundHeads := map[string]map[string]types.AttributeValue{}, map[string]historyHead{}
	for start := 0; start < len(reads); start += maxBatchGet {
		in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{}}
		for _, r := range reads[start:min(start+maxBatchGet, len(reads))] {
			ka := in.RequestItems[r.table]
			ka.Keys, ka.ConsistentRead = append(ka.Keys, r.key), aws.Bool(true)
			if projection != nil && r.table != s.tables.History {
				ka.ProjectionExpression, ka.ExpressionAttributeNames = aws.String(projection.expr), projection.names
				ka.ConsistentRead = aws.Bool(!projection.eventual)
			}
			in.RequestItems[r.table] = ka
		}
		err := s.getAll(ctx, "read items", in, func(table string, it map[string]types.AttributeValue) {
			if table == s.tables.History {
				foundHeads[str(it, schema.AttrHistoryKey)] = decodeHead(it)
				return
			}
			found[str(it, schema.AttrDataKey)+"\x00"+str(it, schema.AttrSortKey)] = it
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return found, foundHeads, nil
}

// distinctKeys is keys without repeats, in their order.
func distinctKeys(keys []uds.Key) []uds.Key {
	seen := make(map[string]bool, len(keys))
	out := make([]uds.Key, 0, len(keys))
	for _, k := range keys {
		if id := itemID(k); !seen[id] {
			seen[id] = true
			out = append(out, k)
		}
	}
	return out
}

// getAll sends a BatchGetItem until DynamoDB has read every key, backing
// off while it leaves keys unprocessed, and hands take each item read with
// its table. op names the read in an error.
func (s *Store) getAll(ctx context.Context, op string, in *dynamodb.BatchGetItemInput, take func(table string, item map[string]types.AttributeValue)) error {
	for attempt := 0; len(in.RequestItems) > 0; attempt++ {
		out, err := s.client.BatchGetItem(ctx, in)
		if err == nil && len(out.UnprocessedKeys) > 0 {
			err = sleep(ctx, backoff(attempt))
		}
		if err != nil {
			return failed(op, err)
		}
		for table, items := range out.Responses {
			for _, it := range items {
				take(table, it)
			}
		}
		in.RequestItems = out.UnprocessedKeys
	}
	return nil
}

// maxBatchGet is how many keys one BatchGetItem reads.
const maxBatchGet = 100

// itemID names an item among the items of both data tables.
func itemID(k uds.Key) string { return k.DataKey() + "\x00" + k.SortKey }
