package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
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
func (s *Store) reclaim(ctx context.Context, items []listEntry) int {
	for i := range items {
		items[i].expiredOnly = true
	}
	n, _ := s.removeEntries(ctx, "reclaim expired items", nil, items)
	return n
}

// readLive reads an item's state for a write, with its value when whole
// is set: nil when there is none or when it has expired (it is reclaimed
// then).
func (s *Store) readLive(ctx context.Context, key uds.Key, whole bool) (map[string]types.AttributeValue, error) {
	old, err := s.readMeta(ctx, key, whole)
	if err != nil || old == nil || !expired(old, s.now()) {
		return old, err
	}
	s.reclaim(ctx, []listEntry{{key: key, state: old}})
	return nil, nil
}

// reclaimOwner removes an owner's expired items, found through the owner
// index, so that they never cause a quota refusal. It reports whether a
// write that usage refusedBy refused may find room when tried again: the
// index showed expired items, which this call or a request that met them
// first releases, or it shows the owner holding less than refusedBy
// counts, because such a release committed since the refusal.
func (s *Store) reclaimOwner(ctx context.Context, app, owner string, refusedBy uds.Usage) bool {
	held, gone, err := s.ownedItems(ctx, app, owner)
	switch {
	case err != nil:
		return false
	case len(gone) > 0:
		s.reclaimFound(ctx, gone)
		return true
	}
	return held.Items < refusedBy.Items || held.Bytes < refusedBy.Bytes
}

// reclaimFound removes expired items found through the owner index. The
// index projects the expiry, the owner and the size, which is not enough
// to remove an item whole: its index entries are named by its value and
// its large value's object by the item. So the items are read again as
// they stand (readExpired), and the removal's plan takes their entries in
// its transaction and their objects after it, as any removal's does.
func (s *Store) reclaimFound(ctx context.Context, found []listEntry) int {
	gone, err := s.readExpired(ctx, found)
	if err != nil || len(gone) == 0 {
		return 0
	}
	return s.reclaim(ctx, gone)
}

// readExpired reads the items found expired, strongly consistent, in
// BatchGetItem calls: whole in namespaces that declare indexes (the
// entries to remove are named by the value), else what a removal needs
// (metaProjection: the owner, size, stream mark and object name), which
// costs the same capacity and transfers little. It keeps those that are
// still there and still expired.
func (s *Store) readExpired(ctx context.Context, found []listEntry) ([]listEntry, error) {
	var whole, meta []uds.Key
	indexed := map[string]bool{}
	for _, e := range found {
		ns := e.key.App + uds.KeyDelimiter + e.key.Namespace
		has, seen := indexed[ns]
		if !seen {
			ix, err := s.namespaceIndexes(ctx, e.key.App, e.key.Namespace)
			if err != nil {
				return nil, err
			}
			has = len(ix) > 0
			indexed[ns] = has
		}
		if has {
			whole = append(whole, e.key)
		} else {
			meta = append(meta, e.key)
		}
	}
	read := map[string]map[string]types.AttributeValue{}
	for _, group := range []struct {
		keys       []uds.Key
		projection *projection
	}{{whole, nil}, {meta, metaRead}} {
		if len(group.keys) == 0 {
			continue
		}
		got, err := s.batchGet(ctx, group.keys, group.projection)
		if err != nil {
			return nil, err
		}
		maps.Copy(read, got)
	}
	now := s.now()
	var gone []listEntry
	for _, e := range found {
		if av := read[itemID(e.key)]; av != nil && expired(av, now) {
			gone = append(gone, listEntry{key: e.key, state: av})
		}
	}
	return gone, nil
}

// keyOf parses a stored item's key; false for a dataKey UDS could not
// have written (the seed's service may have).
func keyOf(av map[string]types.AttributeValue) (uds.Key, bool) {
	parts := strings.SplitN(str(av, schema.AttrDataKey), uds.KeyDelimiter, 4)
	if len(parts) < 3 {
		return uds.Key{}, false
	}
	k := uds.Key{App: parts[0], Namespace: parts[1], ID: parts[2], SortKey: str(av, schema.AttrSortKey)}
	if len(parts) == 4 {
		k.Owner = parts[3]
	}
	return k, true
}

// markerLife is how long a release marker is kept: far longer than a
// stream record can be delivered again (streams keep records 24 hours).
const markerLife = 7 * 24 * time.Hour

// ReleaseRemoved releases the usage of an item, or a kept version, that
// DynamoDB's TTL deleted at removedAt, given the item as the stream's old image shows it,
// and removes the item's index entries (releaseEntries).
// The release is a transaction with a marker named after the item's
// incarnation (key and creation instant): a repeated stream record finds
// the marker and releases nothing. Items that were never counted release
// nothing, and neither does an item deleted before a recompute corrected
// its owner's total (schema.AttrRecomputedAt): that total already left it
// out. The release holds only while the owner's usage is at least the
// item: an item this store counted always is (usage is never under the
// data), so a record that fails it describes an item the store never held
// (an event replayed against another store, or made up) and releases
// nothing, rather than driving usage below zero.
func (s *Store) ReleaseRemoved(ctx context.Context, old map[string]types.AttributeValue, removedAt time.Time) (released bool, err error) {
	dataKey := str(old, schema.AttrDataKey)
	app, _, _ := strings.Cut(dataKey, uds.KeyDelimiter)
	// A kept version (from the history table) is one of possibly many of
	// its incarnation: its version number names it, and it holds bytes
	// but no item.
	_, kept := old[schema.AttrHistoryKey]
	if !kept {
		// An item's index entries go with it, counted or not.
		s.releaseEntries(ctx, old)
	}
	// So does the object of a large value, the item's or the kept
	// version's: no other record names it.
	s.removeUnnamed(ctx, objectsOf(old)...)
	who, counted := owner(app, old)
	if !counted || (!kept && streamCounted(old)) {
		// An item the stream counts is released by the stream's
		// counting of its removal (streamusage.go), as any removal of it.
		return false, nil
	}
	if _, marker := old[schema.AttrDeleted]; marker {
		return false, nil // a delete marker holds nothing
	}
	incarnation := dataKey + "\x00" + str(old, schema.AttrSortKey) + "\x00" + str(old, schema.AttrCreatedDate)
	size := num(old, schema.AttrItemSize)
	change, items := uds.Usage{Bytes: -size, Items: -1}, "1"
	if kept {
		incarnation += "\x00version " + strconv.FormatInt(num(old, schema.AttrVersion), 10)
		change, items = uds.Usage{Bytes: -size, History: -size}, "0"
	}
	id := sha256.Sum256([]byte(incarnation))
	marker := types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(s.tables.Apps),
		Item: map[string]types.AttributeValue{
			schema.AttrApp:       &types.AttributeValueMemberS{Value: "released#" + hex.EncodeToString(id[:])},
			schema.AttrExpiresAt: &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(markerLife).Unix(), 10)},
		},
		ConditionExpression:      aws.String("attribute_not_exists(#a)"),
		ExpressionAttributeNames: map[string]string{"#a": schema.AttrApp},
	}}
	release := s.usageChange(app, who, change)
	up := release.Update
	up.ConditionExpression = aws.String("(attribute_not_exists(#ra) OR #ra <= :removed) AND #ub >= :size AND #ui >= :items")
	// The usage change's names are shared by every write: a copy takes
	// this condition's.
	up.ExpressionAttributeNames = maps.Clone(up.ExpressionAttributeNames)
	up.ExpressionAttributeNames["#ra"] = schema.AttrRecomputedAt
	up.ExpressionAttributeValues[":removed"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(removedAt.UnixMilli(), 10)}
	up.ExpressionAttributeValues[":size"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(size, 10)}
	up.ExpressionAttributeValues[":items"] = &types.AttributeValueMemberN{Value: items}
	if kept {
		up.ConditionExpression = aws.String(*up.ConditionExpression + " AND #hb >= :size")
	}
	refused, err := s.transact(ctx, "release expired "+dataKey, marker, release)
	switch {
	case err != nil:
		return false, err
	case refused.conditionFailed(0):
		return false, nil // released already, by an earlier delivery
	case refused.conditionFailed(1):
		return false, nil // left out of the total by a later recompute, or never counted
	case refused != nil:
		return false, failed("release expired "+dataKey, errUnexpectedCancel(refused))
	}
	return true, nil
}

// SweepExpired removes every expired item and kept version still stored,
// releasing their sizes, as meeting them would: the local server runs it
// on a timer, since DynamoDB Local's tables have no TTL deletion. It
// returns how many items and versions it removed.
func (s *Store) SweepExpired(ctx context.Context) (int, error) {
	removed := 0
	for _, table := range []string{s.tables.Data, s.tables.List, s.tables.History} {
		err := s.scanExpired(ctx, table, func(found []map[string]types.AttributeValue) {
			if table == s.tables.History {
				for _, it := range found {
					removed += s.removeExpiredVersion(ctx, it)
				}
				return
			}
			var items []listEntry
			for _, it := range found {
				if key, ok := keyOf(it); ok {
					items = append(items, listEntry{key: key, state: it})
				}
			}
			removed += s.reclaim(ctx, items)
		})
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// scanExpired calls fn with each page of a table's expired entries.
func (s *Store) scanExpired(ctx context.Context, table string, fn func([]map[string]types.AttributeValue)) error {
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		FilterExpression:          aws.String("#xm <= :now"),
		ExpressionAttributeNames:  map[string]string{"#xm": schema.AttrExpiresAtMillis},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(s.now().UnixMilli(), 10)}},
	}
	for {
		out, err := s.client.Scan(ctx, in)
		if err != nil {
			return failed("sweep "+table, err)
		}
		fn(out.Items)
		if out.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// removeExpiredVersion removes a kept version past its age limit and
// releases what it held, in one transaction conditional on the entry
// still being there, then the object of its large value: it returns 1,
// or 0 when another sweep got it first (or the removal failed: the next
// sweep tries again). Its head still lists it; every reader and writer
// skips expired versions.
func (s *Store) removeExpiredVersion(ctx context.Context, entry map[string]types.AttributeValue) int {
	actions := []types.TransactWriteItem{{Delete: &types.Delete{
		TableName: aws.String(s.tables.History),
		Key: map[string]types.AttributeValue{
			schema.AttrHistoryKey: entry[schema.AttrHistoryKey], schema.AttrVersion: entry[schema.AttrVersion],
		},
		ConditionExpression:      aws.String("attribute_exists(#hk)"),
		ExpressionAttributeNames: map[string]string{"#hk": schema.AttrHistoryKey},
	}}}
	app, _, _ := strings.Cut(str(entry, schema.AttrDataKey), uds.KeyDelimiter)
	if who, counted := owner(app, entry); counted && num(entry, schema.AttrItemSize) > 0 {
		size := num(entry, schema.AttrItemSize)
		actions = append(actions, s.usageChange(app, who, uds.Usage{Bytes: -size, History: -size}))
	}
	refused, err := s.transact(ctx, "sweep expired version", actions...)
	if err != nil || refused != nil {
		return 0
	}
	s.removeUnnamed(ctx, objectsOf(entry)...)
	return 1
}
