package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"math"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Indexes. Each declared index of a namespace keeps one entry per item
// whose value at the index's path it holds, in the index table:
//
//   - partition: the app, namespace and index ID, and a write shard
//     (a hash of the item's key, one of schema.IndexShards) or, in a
//     private namespace, the item's owner (ownerPartition);
//   - sort key (binary): the value, then the item's key, then a digest of
//     the key, in an encoding whose byte order is the value's order, then
//     the key's.
//
// An entry is a function of the item's key and value and of the index's
// declaration, and nothing else, so a write finds the entries to remove in
// the value it replaces. Every write puts and deletes its item's entries
// in the transaction that writes the item, which makes a strongly
// consistent query of the index see every acknowledged write. A query
// still reads each item and keeps it only if its value yields the entry
// found: an entry left by an item that expired, or by a build that met a
// write, is skipped (and removed, index_query.go).

// indexEntry is one entry's key.
type indexEntry struct {
	hash string
	sort []byte
}

// maxIndexSortBytes is DynamoDB's bound on a sort key.
const maxIndexSortBytes = 1024

// digestBytes is how much of the key's digest an entry's sort key ends
// with: it keeps entries of items whose keys share the part that fits
// apart.
const digestBytes = 8

// indexPartition names the partition of index id's entries for key:
// in a private namespace the owner's, else one of the write shards.
func indexPartition(key uds.Key, id string) string {
	p := key.App + uds.KeyDelimiter + key.Namespace + uds.KeyDelimiter + id + uds.KeyDelimiter
	if key.Owner != "" {
		return ownerPartition(p, key.Owner)
	}
	h := fnv.New32a()
	h.Write([]byte(itemID(key)))
	return p + strconv.Itoa(int(h.Sum32()%schema.IndexShards))
}

// indexPartitions lists the partitions a query of index id reads: the
// owner's in a private namespace, else every shard.
func indexPartitions(app, namespace, id, owner string) []string {
	p := app + uds.KeyDelimiter + namespace + uds.KeyDelimiter + id + uds.KeyDelimiter
	if owner != "" {
		return []string{ownerPartition(p, owner)}
	}
	out := make([]string, schema.IndexShards)
	for i := range out {
		out[i] = p + strconv.Itoa(i)
	}
	return out
}

// ownerPartition is the partition of an owner's entries of the index
// whose partitions begin with prefix: "0|" and the owner, or, where that
// is past DynamoDB's 2,048 bytes, "1|" and the hexadecimal SHA-256 of the
// owner. An item's key names its owner too, but with its id where this
// names the index's ID (up to 78 bytes), so a namespace near its 1,024
// bytes and an owner near theirs make an item key that fits and an
// entry's that would not. Both forms keep the prefix that a dropped
// index's entries are found by (index_build.go), and only an owner the
// first form cannot hold gets the second, so no entry ever written moves.
func ownerPartition(prefix, owner string) string {
	if len(prefix)+2+len(owner) <= uds.MaxDataKeyBytes {
		return prefix + "0" + uds.KeyDelimiter + owner
	}
	d := sha256.Sum256([]byte(owner))
	return prefix + "1" + uds.KeyDelimiter + hex.EncodeToString(d[:])
}

// appendIndexValue encodes v so that byte order is value order: a
// number as its IEEE 754 bits with the sign flipped (negatives inverted
// whole), 8 bytes; a string as its UTF-8 bytes each plus one (valid UTF-8
// has no byte 0xff), then a zero that ends it before any longer string
// it begins.
func appendIndexValue(b []byte, t uds.IndexType, v uds.IndexValue) []byte {
	if t == uds.IndexNumber {
		bits := math.Float64bits(v.Num)
		if bits>>63 == 1 {
			bits = ^bits
		} else {
			bits |= 1 << 63
		}
		return binary.BigEndian.AppendUint64(b, bits)
	}
	return append(appendShifted(b, v.Str), 0)
}

func appendShifted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		b = append(b, s[i]+1)
	}
	return b
}

// indexSort is the sort key of key's entry for value v of an index of
// type t: the value, as much of the key (id, then sort key, each ended by
// a zero) as fits, and the key's digest.
func indexSort(t uds.IndexType, v uds.IndexValue, key uds.Key) []byte {
	b := appendIndexValue(make([]byte, 0, 64), t, v)
	room := maxIndexSortBytes - digestBytes - len(b)
	k := append(appendShifted(nil, key.ID), 0)
	k = append(appendShifted(k, key.SortKey), 0)
	b = append(b, k[:min(len(k), room)]...)
	d := sha256.Sum256([]byte(key.DataKey() + "\x00" + key.SortKey))
	return append(b, d[:digestBytes]...)
}

// indexEntries lists the entries the item at key with data has in
// indexes (none for nil data).
func indexEntries(key uds.Key, indexes []uds.Index, data json.RawMessage) []indexEntry {
	if data == nil {
		return nil
	}
	var out []indexEntry
	for _, ix := range indexes {
		if v, ok := ix.ValueOf(data); ok {
			out = append(out, indexEntry{hash: indexPartition(key, ix.ID), sort: indexSort(ix.Type, v, key)})
		}
	}
	return out
}

// indexUpkeep is the actions that take key's entries in indexes from
// those of the value old to those of data (nil for an item removed): a
// delete for each entry that goes, a put for each that comes. An entry
// both values have is left alone, so a write that keeps the indexed
// fields costs no more than it would without indexes, unless renew says
// old's entries may be gone: then it is put again.
func (s *Store) indexUpkeep(key uds.Key, indexes []uds.Index, old, data json.RawMessage, renew bool) []types.TransactWriteItem {
	if len(indexes) == 0 {
		return nil
	}
	before, after := indexEntries(key, indexes, old), indexEntries(key, indexes, data)
	var actions []types.TransactWriteItem
	for _, e := range before {
		if !containsEntry(after, e) {
			actions = append(actions, types.TransactWriteItem{Delete: &types.Delete{
				TableName: aws.String(s.tables.Index), Key: e.key()}})
		}
	}
	for _, e := range after {
		if renew || !containsEntry(before, e) {
			actions = append(actions, types.TransactWriteItem{Put: &types.Put{
				TableName: aws.String(s.tables.Index), Item: e.item(key)}})
		}
	}
	return actions
}

func containsEntry(list []indexEntry, e indexEntry) bool {
	for _, x := range list {
		if x.hash == e.hash && bytes.Equal(x.sort, e.sort) {
			return true
		}
	}
	return false
}

func (e indexEntry) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.AttrIndexKey:  &types.AttributeValueMemberS{Value: e.hash},
		schema.AttrIndexSort: &types.AttributeValueMemberB{Value: e.sort},
	}
}

// item is the entry as stored: its key and the item's.
func (e indexEntry) item(key uds.Key) map[string]types.AttributeValue {
	it := e.key()
	for k, v := range keyAV(key) {
		it[k] = v
	}
	return it
}

// storedData is the value of a stored item (nil for none), for the
// entries it has.
func storedData(key uds.Key, av map[string]types.AttributeValue) json.RawMessage {
	if av == nil {
		return nil
	}
	it, err := decodeItem(key, av)
	if err != nil {
		return nil
	}
	return it.Data
}

// namespaceIndexes is the indexes a namespace declares, from its policy
// in effect, for the write paths that do not come with them (import).
func (s *Store) namespaceIndexes(ctx context.Context, app, namespace string) ([]uds.Index, error) {
	p, err := s.Policy(ctx, app, namespace)
	return p.Indexes, err
}

// removedEntries is the deletes of the entries an item removed as state
// shows it has in its namespace's indexes: none when state does not carry
// the value (an item found through the owner index), whose entries queries
// skip and remove once the item is gone.
func (s *Store) removedEntries(ctx context.Context, key uds.Key, state map[string]types.AttributeValue) []types.TransactWriteItem {
	_, plain := state[schema.AttrDataValue]
	_, packed := state[schema.AttrDataValueGzip]
	if !plain && !packed {
		return nil
	}
	indexes, err := s.namespaceIndexes(ctx, key.App, key.Namespace)
	if err != nil {
		return nil
	}
	return s.indexUpkeep(key, indexes, storedData(key, state), nil, false)
}

// releaseEntries removes the entries of an item DynamoDB's TTL deleted,
// given the stream's old image, in a transaction that holds only while no
// item has taken the key since (it would have entries of its own, perhaps
// the same). It is best effort: an entry left is skipped and removed by
// the queries that meet it.
func (s *Store) releaseEntries(ctx context.Context, old map[string]types.AttributeValue) {
	key, ok := keyOf(old)
	if !ok {
		return
	}
	deletes := s.removedEntries(ctx, key, old)
	if len(deletes) == 0 {
		return
	}
	absent := types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(s.table(key)), Key: keyAV(key),
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": schema.AttrDataKey},
	}}
	_, _ = s.transact(ctx, "remove the index entries of expired "+key.DataKey(), append([]types.TransactWriteItem{absent}, deletes...)...)
}

// indexNeeds: the entries an item has are named by its value, which a
// write that moves them reads.
func indexNeeds(w *uds.Write) needs { return needs{whole: len(w.Indexes) > 0} }

// indexRemoves is the indexes' share of the removal of a listed item: one
// entry removed per index its namespace declares.
func indexRemoves(w *uds.Write) share { return share{actions: len(w.Indexes)} }

// planIndexes adds the index upkeep of a plan's writes in namespaces that
// declare indexes: the entries the old value named and the new one does
// not go, the new value's new ones come, in the write's transaction.
func (s *Store) planIndexes(ctx context.Context, p *plan) error {
	for i, c := range p.changes {
		var upkeep []types.TransactWriteItem
		switch {
		case c.w == nil:
			// A removal of listed items: the namespace's indexes, when the
			// item was read with its value.
			upkeep = s.removedEntries(ctx, c.key, c.old.av)
		case c.kind == removeItem:
			upkeep = s.indexUpkeep(c.key, c.w.Indexes, c.old.data(), nil, false)
		default:
			// An item that expired keeps its entries only until a query
			// meets them and removes them as stale (removeStale), so a
			// write over it puts every entry of its value, those the
			// expired value had too.
			renew := c.old != nil && c.old.entriesMayBeGone(p.now)
			upkeep = s.indexUpkeep(c.key, c.w.Indexes, c.old.data(), c.w.Data, renew)
		}
		for _, a := range upkeep {
			p.add(roleIndex, i, a)
		}
	}
	return nil
}
