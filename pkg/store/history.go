package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Version history (docs/decisions/history.md). In a namespace
// whose policy keeps versions, every update and delete of an item puts the
// version it replaces into the history table, in the same transaction as
// the write and the owner's usage change. Each item's history has a head
// (sort key schema.HeadVersion) that lists what is kept: version number,
// size, owner, audit fields and expiry of every kept version, newest
// first. A write reads the head with the item (one BatchGetItem), so it
// knows without a query which versions to prune and exactly what each
// holds, and writes the head back on its revision: concurrent writers of
// one item serialise on the item and on the head.

// historyKey names an item's history: its app, then a digest of the rest
// of its keys, so that any data key and sort key fit the partition key,
// and the digest is the same in every app (an app's export, imported into
// another, lists the same items in the same order).
func historyKey(key uds.Key) string {
	return key.App + uds.KeyDelimiter + itemDigest(key)
}

func itemDigest(key uds.Key) string {
	sum := sha256.Sum256([]byte(strings.TrimPrefix(key.DataKey(), key.App+uds.KeyDelimiter) + "\x00" + key.SortKey))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func historyEntryKey(key uds.Key, version int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.AttrHistoryKey: &types.AttributeValueMemberS{Value: historyKey(key)},
		schema.AttrVersion:    &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)},
	}
}

// keptRowBytes bounds what a kept version's row holds beyond the item it
// copies: its history key (the app, a delimiter and the 43 characters of
// a digest), its place in the owner index (a digest, a '#' and 16 digits)
// and when it was kept, a number. The item size check
// reserves it for every item (codec.go), so that whatever a namespace's
// history policy becomes, the next write can keep the item as a version.
const keptRowBytes = len(schema.AttrHistoryKey) + 36 + 1 + 43 +
	len(schema.AttrKeptOrder) + 43 + 1 + 16 +
	len(schema.AttrKeptAt) + maxNumberBytes

// maxNumberBytes is the most a number takes of an item as AWS measures
// it: a byte per two of its at most 38 significant digits, and one.
const maxNumberBytes = 21

// keptRow starts a kept entry's attributes: its key, and its place in the
// owner index (schema.AttrKeptOrder).
func keptRow(key uds.Key, version int64) map[string]types.AttributeValue {
	row := historyEntryKey(key, version)
	row[schema.AttrKeptOrder] = &types.AttributeValueMemberS{Value: keptOrder(itemDigest(key), version)}
	return row
}

// putKept writes a kept entry where its number is free: a number is
// never written twice.
func (s *Store) putKept(row map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(s.tables.History),
		Item:                     row,
		ConditionExpression:      aws.String("attribute_not_exists(#hk)"),
		ExpressionAttributeNames: map[string]string{"#hk": schema.AttrHistoryKey},
	}}
}

// keptOrder sorts an owner's kept entries by item, then version: the
// item's digest and the version, zero-padded to the 16 digits of the
// largest version.
func keptOrder(digest string, version int64) string {
	return fmt.Sprintf("%s#%016d", digest, version)
}

// keptVersion is what a head says of one kept version. A delete marker
// records a delete: it has a version number, audit fields and an entry of
// its own, but no value and no size.
type keptVersion struct {
	version     int64
	size        int64
	owner       string // the owner key charged, "" when not counted
	keptAt      int64  // Unix milliseconds
	expiresAt   int64  // Unix milliseconds, 0 for none
	updatedDate string
	updatedBy   string
	deleted     bool
	// object names the bucket's object that holds a large version's
	// value, which no other record names (objects.go): it goes when the
	// version goes.
	object string
	// creator is the subject who created the item the version was kept
	// of (of the item a delete marker deleted), stored only when it is
	// not the owner charged: see createdBy.
	creator string
}

// charged reports whether the version counts in its owner's usage: a
// delete marker holds nothing, and a version of an item no usage counted
// names no owner.
func (k keptVersion) charged() bool { return !k.deleted && k.owner != "" && k.size != 0 }

// rowBytes is about what a kept version's row holds, which a transaction
// that writes or removes it carries: its value's bytes, none when an
// object holds the value or it is a delete marker.
func (k keptVersion) rowBytes() int64 {
	if k.deleted || k.object != "" {
		return 0
	}
	return k.size
}

// createdBy is the subject who created the item the version was kept of,
// to whom it answers in an owner-write namespace: the creator stored, or
// else the owner charged, who is the creator of every item UDS counts.
// An uncounted version listed before heads stored creators names neither:
// its writer stands for its creator, as only the creator writes an item
// of an owner-write namespace.
func (k keptVersion) createdBy() string {
	switch {
	case k.creator != "":
		return k.creator
	case k.owner != "":
		_, who := splitOwnerKey(k.owner)
		return who
	}
	return k.updatedBy
}

// historyHead is an item's history head as read, or the zero head when the
// item has none yet.
type historyHead struct {
	exists   bool
	revision int64
	// last is the highest version number the key's kept versions and
	// delete markers have used: a create after a delete continues from
	// it, so that no two versions share a number.
	last int64
	kept []keptVersion // newest first
	// objectsFrom is the lowest version number from which the head names
	// every kept version's object: versions below it were kept before
	// heads named objects, and their entries say (keptObjects).
	objectsFrom int64
}

// Attribute names inside a head's kept list.
const (
	keptVersionAttr = "v"
	keptSizeAttr    = "sz"
	keptOwnerAttr   = "o"
	keptAtAttr      = "at"
	keptExpiryAttr  = "x"
	keptUpdatedAttr = "ud"
	keptByAttr      = "ub"
	keptDeletedAttr = "d"
	keptObjectAttr  = "ob"
	keptCreatorAttr = "c"
)

func decodeHead(av map[string]types.AttributeValue) historyHead {
	if av == nil {
		return historyHead{}
	}
	h := historyHead{exists: true, revision: num(av, schema.AttrHeadRevision), last: num(av, schema.AttrLastVersion)}
	if _, named := av[schema.AttrObjectsFrom]; named {
		h.objectsFrom = num(av, schema.AttrObjectsFrom)
	} else {
		// Every version this head lists was kept before heads named
		// objects.
		h.objectsFrom = h.last + 1
	}
	list, _ := av[schema.AttrKept].(*types.AttributeValueMemberL)
	if list == nil {
		return h
	}
	for _, e := range list.Value {
		m, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			continue
		}
		d, _ := m.Value[keptDeletedAttr].(*types.AttributeValueMemberBOOL)
		h.kept = append(h.kept, keptVersion{
			version: num(m.Value, keptVersionAttr), size: num(m.Value, keptSizeAttr), owner: str(m.Value, keptOwnerAttr),
			keptAt: num(m.Value, keptAtAttr), expiresAt: num(m.Value, keptExpiryAttr),
			updatedDate: str(m.Value, keptUpdatedAttr), updatedBy: str(m.Value, keptByAttr), deleted: d != nil && d.Value,
			object: str(m.Value, keptObjectAttr), creator: str(m.Value, keptCreatorAttr),
		})
	}
	return h
}

// maxHeadEntriesBytes is what a head's entries may take of its item:
// DynamoDB's 400 KB less 4 KB for the head's own attributes (its keys,
// the item's data key and sort key, its numbers). A hundred versions and
// as many delete markers of subjects near their 1,024 bytes would take
// about 430 KB, and every write of the item would be refused.
const maxHeadEntriesBytes = MaxItemBytes - 4<<10

// headBytes bounds what the entry takes of its head as AWS measures an
// item: a map's 3 bytes, and a byte, a name and a value for each of its
// attributes, a number at most maxNumberBytes.
func (k keptVersion) headBytes() int {
	const number = maxNumberBytes
	return 3 + 10 + len(keptVersionAttr) + number + len(keptAtAttr) + number + len(keptSizeAttr) + number +
		len(keptExpiryAttr) + number + len(keptDeletedAttr) + 1 +
		len(keptUpdatedAttr) + len(k.updatedDate) + len(keptByAttr) + len(k.updatedBy) +
		len(keptOwnerAttr) + len(k.owner) + len(keptObjectAttr) + len(k.object) + len(keptCreatorAttr) + len(k.creator)
}

func (k keptVersion) attributeValue() types.AttributeValue {
	m := map[string]types.AttributeValue{
		keptVersionAttr: &types.AttributeValueMemberN{Value: strconv.FormatInt(k.version, 10)},
		keptAtAttr:      &types.AttributeValueMemberN{Value: strconv.FormatInt(k.keptAt, 10)},
		keptUpdatedAttr: &types.AttributeValueMemberS{Value: k.updatedDate},
		keptByAttr:      &types.AttributeValueMemberS{Value: k.updatedBy},
	}
	if k.deleted {
		m[keptDeletedAttr] = &types.AttributeValueMemberBOOL{Value: true}
	} else {
		m[keptSizeAttr] = &types.AttributeValueMemberN{Value: strconv.FormatInt(k.size, 10)}
	}
	if k.owner != "" {
		m[keptOwnerAttr] = &types.AttributeValueMemberS{Value: k.owner}
	}
	if k.expiresAt != 0 {
		m[keptExpiryAttr] = &types.AttributeValueMemberN{Value: strconv.FormatInt(k.expiresAt, 10)}
	}
	if k.object != "" {
		m[keptObjectAttr] = &types.AttributeValueMemberS{Value: k.object}
	}
	if k.creator != "" {
		m[keptCreatorAttr] = &types.AttributeValueMemberS{Value: k.creator}
	}
	return &types.AttributeValueMemberM{Value: m}
}

// readWithHead reads an item whole (a kept version needs its value) and
// its history head, strongly consistent, in one BatchGetItem. An expired
// item reads as none, and is reclaimed, as readLive does: expiry keeps no
// version.
func (s *Store) readWithHead(ctx context.Context, key uds.Key) (map[string]types.AttributeValue, historyHead, error) {
	got, err := s.readHistory(ctx, key, "", schema.HeadVersion)
	return got.item, got.head, err
}

// historyRead is what readHistory found.
type historyRead struct {
	item  map[string]types.AttributeValue // nil when there is none, or it expired
	head  historyHead
	entry map[string]types.AttributeValue // the version asked for, nil if none
}

// readHistory reads an item (with projection, "" for all of it), its
// history head and, when version is not the head's, that kept version, in
// one strongly consistent BatchGetItem.
func (s *Store) readHistory(ctx context.Context, key uds.Key, projection string, version int64) (historyRead, error) {
	itemKeys := types.KeysAndAttributes{Keys: []map[string]types.AttributeValue{keyAV(key)}, ConsistentRead: aws.Bool(true)}
	if projection != "" {
		itemKeys.ProjectionExpression, itemKeys.ExpressionAttributeNames = aws.String(projection), metaNames
	}
	historyKeys := []map[string]types.AttributeValue{historyEntryKey(key, schema.HeadVersion)}
	if version != schema.HeadVersion {
		historyKeys = append(historyKeys, historyEntryKey(key, version))
	}
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		s.table(key):     itemKeys,
		s.tables.History: {Keys: historyKeys, ConsistentRead: aws.Bool(true)},
	}}
	var got historyRead
	err := s.getAll(ctx, "read "+key.DataKey()+" and its history", in, func(table string, it map[string]types.AttributeValue) {
		switch {
		case table != s.tables.History:
			got.item = it
		case num(it, schema.AttrVersion) == schema.HeadVersion:
			got.head = decodeHead(it)
		default:
			got.entry = it
		}
	})
	if err != nil {
		return historyRead{}, err
	}
	if got.item != nil && expired(got.item, s.now()) {
		s.reclaim(ctx, []listEntry{{key: key, state: got.item}})
		got.item = nil
	}
	return got, nil
}

// readHead reads an item's history head, strongly consistent.
func (s *Store) readHead(ctx context.Context, key uds.Key) (historyHead, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.History),
		Key:            historyEntryKey(key, schema.HeadVersion),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return historyHead{}, failed("read the history of "+key.DataKey(), err)
	}
	return decodeHead(out.Item), nil
}

// readHeads reads the history heads of keys, strongly consistent, by
// history key.
func (s *Store) readHeads(ctx context.Context, keys []uds.Key) (map[string]historyHead, error) {
	_, heads, err := s.readItemsAndHeads(ctx, nil, nil, keys)
	return heads, err
}

// maxPrunes bounds the versions one write removes, so that a lowered
// policy never makes a write's transaction too large; versions beyond it
// stay hidden and go with the next writes. A write of an atomic batch,
// which shares its transaction with up to 49 others, removes one.
const maxPrunes = 25

// expiryMargin leaves a version that expires this close to now to
// DynamoDB's TTL (whose deletion the expiry function releases) rather
// than deleting it in a write that could race the TTL.
const expiryMargin = time.Minute

// historyChange is what a write in a namespace with history adds to its
// transaction: the version it keeps, the versions it prunes and the head
// that lists the result, with the usage each moves, by owner.
type historyChange struct {
	actions []types.TransactWriteItem
	deltas  ownerDeltas
	pruned  []keptVersion
}

// keepVersion plans a write that replaces old, an update or (with a
// deleter) a delete: old becomes a kept version, a delete marker of the
// deleter is listed above it, and what the policy no longer keeps is
// pruned.
//
// A version keeps its number unless the key used it before: an item
// created while the namespace kept no history starts again from 1, and is
// then kept under the number after the key's last.
func (s *Store) keepVersion(key uds.Key, h uds.History, head historyHead, old map[string]types.AttributeValue, deleter *string, now time.Time, prunes int) historyChange {
	ch := historyChange{deltas: ownerDeltas{}}
	kept := keptVersion{
		version: num(old, schema.AttrVersion), size: num(old, schema.AttrItemSize),
		keptAt: now.UnixMilli(), updatedDate: str(old, schema.AttrUpdatedDate), updatedBy: str(old, schema.AttrUpdatedBySubject),
		// The version keeps the item's object: the item's next value
		// names an object of its own.
		object: str(old, schema.AttrDataObject),
	}
	if head.exists && kept.version <= head.last {
		kept.version = head.last + 1
	}
	last := kept.version
	entry := make(map[string]types.AttributeValue, len(old)+3)
	for name, v := range old {
		switch name {
		case schema.AttrWriteToken, schema.AttrExpiresAt, schema.AttrExpiresAtMillis:
			// A kept version answers to no retry and has its own expiry.
		case schema.AttrStreamCounted:
			// A kept version is charged by the write that keeps it, as
			// history bytes, whatever mode wrote the item.
		default:
			entry[name] = v
		}
	}
	entry[schema.AttrKeptAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(kept.keptAt, 10)}
	for name, v := range keptRow(key, kept.version) {
		entry[name] = v
	}
	if h.Days > 0 {
		kept.expiresAt = now.Add(h.Age()).UnixMilli()
		entry[schema.AttrExpiresAt], entry[schema.AttrExpiresAtMillis] = expiryAVs(time.UnixMilli(kept.expiresAt))
	}
	who, counted := owner(key.App, old)
	if counted {
		kept.owner = ownerKey(key.App, who)
		ch.deltas.add(key.App, who, uds.Usage{Bytes: kept.size, History: kept.size})
	}
	if creator := str(old, schema.AttrCreatedBySubject); creator != who || !counted {
		kept.creator = creator
	}
	ch.actions = append(ch.actions, s.putKept(entry))
	list := append([]keptVersion{kept}, head.kept...)
	if deleter != nil {
		last = kept.version + 1
		marker := keptVersion{version: last, deleted: true, owner: kept.owner, creator: kept.creator, keptAt: kept.keptAt, expiresAt: kept.expiresAt,
			updatedDate: FormatTime(now), updatedBy: *deleter}
		ch.actions = append(ch.actions, s.markerPut(key, marker))
		list = append([]keptVersion{marker}, list...)
	}
	return s.finishHistory(key, h, head, list, last, now, prunes, ch)
}

// markerPut writes a delete marker's entry. It names the deleted item's
// owner, with no size, so that an export of that owner's data carries it
// beside the version it stands above.
func (s *Store) markerPut(key uds.Key, m keptVersion) types.TransactWriteItem {
	row := keptRow(key, m.version)
	row[schema.AttrDataKey] = &types.AttributeValueMemberS{Value: key.DataKey()}
	if key.SortKey != "" {
		row[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: key.SortKey}
	}
	row[schema.AttrDeleted] = &types.AttributeValueMemberBOOL{Value: true}
	row[schema.AttrUpdatedDate] = &types.AttributeValueMemberS{Value: m.updatedDate}
	row[schema.AttrUpdatedBySubject] = &types.AttributeValueMemberS{Value: m.updatedBy}
	row[schema.AttrKeptAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(m.keptAt, 10)}
	row[schema.AttrItemSize] = &types.AttributeValueMemberN{Value: "0"}
	if m.owner != "" {
		row[schema.AttrOwnerKey] = &types.AttributeValueMemberS{Value: m.owner}
	}
	if m.expiresAt != 0 {
		row[schema.AttrExpiresAt], row[schema.AttrExpiresAtMillis] = expiryAVs(time.UnixMilli(m.expiresAt))
	}
	return s.putKept(row)
}

// headUnchanged is a create's check that the head it read, and so the
// last version number the key used, still stands: a delete of the key's
// earlier item that commits in between moves it, and the create starts
// over with the new number.
func (s *Store) headUnchanged(key uds.Key, head historyHead) types.TransactWriteItem {
	check := &types.ConditionCheck{TableName: aws.String(s.tables.History), Key: historyEntryKey(key, schema.HeadVersion)}
	check.ConditionExpression, check.ExpressionAttributeNames, check.ExpressionAttributeValues = headAsRead(head)
	return types.TransactWriteItem{ConditionCheck: check}
}

// headAsRead is the condition that an item's head is still as read: at
// its revision, or still absent.
func headAsRead(head historyHead) (*string, map[string]string, map[string]types.AttributeValue) {
	if !head.exists {
		return aws.String("attribute_not_exists(#hk)"), map[string]string{"#hk": schema.AttrHistoryKey}, nil
	}
	return aws.String("#hr = :hr"), map[string]string{"#hr": schema.AttrHeadRevision},
		map[string]types.AttributeValue{":hr": &types.AttributeValueMemberN{Value: strconv.FormatInt(head.revision, 10)}}
}

// historyNeeds: a write with history keeps the value it replaces and
// moves the key's head.
func historyNeeds(w *uds.Write) needs {
	on := w.History.On()
	return needs{whole: on, head: on}
}

// historyRemoves is history's share of the removal of a listed item where
// it keeps versions: the kept version (the item's bytes again), the delete
// marker above it and the head.
func historyRemoves(w *uds.Write) share {
	if !w.History.On() {
		return share{}
	}
	return share{actions: 3, copies: 1}
}

// planHistory adds what history does to a plan's writes in namespaces
// that keep versions: a create takes the version after the last its key
// used (so that it follows the versions kept of the key's earlier items;
// an import's keeps its own, which its verb checked is above them), on
// the condition that the head still says so; a write that replaces or
// removes a live item keeps it as a version (with a delete marker above
// it for a removal), prunes what the policy no longer keeps, and charges
// the kept bytes to the item's owner.
func (s *Store) planHistory(_ context.Context, p *plan) error {
	for i, c := range p.changes {
		switch {
		case c.w == nil || !c.w.History.On():
		case c.kind == createItem:
			if !c.numbered {
				c.result.Version = c.head.last + 1
				c.item.Put.Item[schema.AttrVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.result.Version, 10)}
			}
			p.add(roleHistory, i, s.headUnchanged(c.key, c.head))
		case c.kept():
			var deleter *string // a removal leaves a delete marker of its writer's
			if c.kind == removeItem {
				deleter = &c.w.Subject
			}
			ch := s.keepVersion(c.key, c.w.History, c.head, c.old.av, deleter, p.now, p.prunes)
			for _, a := range ch.actions {
				p.add(roleHistory, i, a)
			}
			c.pruned = ch.pruned
			ch.deltas.each(func(app, who string, d uds.Usage) { p.charge(app, who, d, i) })
			p.bytes += c.old.itemBytes()
		}
	}
	return nil
}

// finishHistory prunes list (newest first) to what h keeps, removing at
// most prunes versions, and writes the head on the revision read.
func (s *Store) finishHistory(key uds.Key, h uds.History, head historyHead, list []keptVersion, last int64, now time.Time, prunes int, ch historyChange) historyChange {
	keep, drop := splitHistory(h, list, now)
	// Oldest first: a write that may prune only some of what the policy
	// no longer keeps leaves the newest of them, so that a history whose
	// policy is raised again lists its newest versions without a gap.
	for _, k := range slices.Backward(drop) {
		switch {
		case k.expiresAt != 0 && k.expiresAt <= now.Add(expiryMargin).UnixMilli():
			// DynamoDB's TTL removes it, and the expiry function
			// releases it then.
		case len(ch.pruned) == prunes:
			keep = append(keep, k)
			continue
		default:
			ch.pruned = append(ch.pruned, k)
			ch.actions = append(ch.actions, s.removeKept(key, k, ch.deltas))
		}
	}
	slices.SortFunc(keep, func(a, b keptVersion) int { return cmp.Compare(b.version, a.version) })
	ch.actions = append(ch.actions, s.headPut(key, head, keep, max(last, head.last)))
	return ch
}

// removeKept removes a kept version's entry, which must still be there,
// and adds the release of what it holds to deltas.
func (s *Store) removeKept(key uds.Key, k keptVersion, deltas ownerDeltas) types.TransactWriteItem {
	if k.charged() {
		deltas.addOwnerKey(k.owner, uds.Usage{Bytes: -k.size, History: -k.size})
	}
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName:                aws.String(s.tables.History),
		Key:                      historyEntryKey(key, k.version),
		ConditionExpression:      aws.String("attribute_exists(#hk)"),
		ExpressionAttributeNames: map[string]string{"#hk": schema.AttrHistoryKey},
	}}
}

// splitHistory divides a history (newest first) into what h keeps at now
// and what it no longer keeps: the newest h.Versions versions that are
// younger than h.Days and not expired, and the delete markers newer than
// the oldest of them, or newest of all (the current state of a deleted
// item), while they are young. The head that lists them is one item, so
// they are also only as many as its entries fit maxHeadEntriesBytes.
func splitHistory(h uds.History, list []keptVersion, now time.Time) (keep, drop []keptVersion) {
	nowMs, age := now.UnixMilli(), h.Age().Milliseconds()
	young := func(k keptVersion) bool {
		return (h.Days == 0 || k.keptAt+age > nowMs) && (k.expiresAt == 0 || k.expiresAt > nowMs)
	}
	kept, oldest, bytes := 0, -1, 0
	for i, k := range list {
		if bytes += k.headBytes(); bytes > maxHeadEntriesBytes {
			break
		}
		if !k.deleted && young(k) && kept < h.Versions {
			kept, oldest = kept+1, i
		}
	}
	for i, k := range list {
		if young(k) && (i <= oldest || k.deleted && i == 0) {
			keep = append(keep, k)
		} else {
			drop = append(drop, k)
		}
	}
	return keep, drop
}

// headDelete removes a key's history head if it is still as read. A head
// that lists nothing only keeps the numbering of the key's versions, which
// a key no item holds can lose: the caller removes the item in the same
// transaction, or found none. A create that comes between reads the head
// again, as it does whenever the head moves.
func (s *Store) headDelete(key uds.Key, head historyHead) types.TransactWriteItem {
	cond, names, values := headAsRead(head)
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(s.tables.History), Key: historyEntryKey(key, schema.HeadVersion),
		ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	}}
}

// headPut writes an item's head listing kept, conditional on the revision
// read, so that two writers of one history never both commit.
func (s *Store) headPut(key uds.Key, head historyHead, kept []keptVersion, last int64) types.TransactWriteItem {
	list := make([]types.AttributeValue, len(kept))
	for i, k := range kept {
		list[i] = k.attributeValue()
	}
	item := historyEntryKey(key, schema.HeadVersion)
	item[schema.AttrDataKey] = &types.AttributeValueMemberS{Value: key.DataKey()}
	if key.SortKey != "" {
		item[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: key.SortKey}
	}
	item[schema.AttrKept] = &types.AttributeValueMemberL{Value: list}
	item[schema.AttrLastVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(last, 10)}
	item[schema.AttrHeadRevision] = &types.AttributeValueMemberN{Value: strconv.FormatInt(head.revision+1, 10)}
	item[schema.AttrObjectsFrom] = &types.AttributeValueMemberN{Value: strconv.FormatInt(head.objectsFrom, 10)}
	put := &types.Put{TableName: aws.String(s.tables.History), Item: item}
	put.ConditionExpression, put.ExpressionAttributeNames, put.ExpressionAttributeValues = headAsRead(head)
	return types.TransactWriteItem{Put: put}
}
