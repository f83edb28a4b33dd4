package store

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/uds"
)

// RemoveAsRead removes an item the way delete-all does, from the state it
// was read in: the tests hand it a stale one, as a concurrent writer would
// leave it.
func (s *Store) RemoveAsRead(ctx context.Context, app string, key uds.Key, state map[string]types.AttributeValue) (int, error) {
	return s.removeEntries(ctx, "remove as read", nil, []listEntry{{key: key, state: state}})
}

// RemoveUnnamed removes objects no record names, as the store does after
// a commit outside the commit loop.
func (s *Store) RemoveUnnamed(ctx context.Context, names ...string) { s.removeUnnamed(ctx, names...) }

// MaxReclaim is how many expired items one reclaim removes at most.
const MaxReclaim = maxReclaim

// PutIndexEntry puts the entry an item at key with value data has in ix,
// whatever the item at key holds: the tests make with it the stale entries
// that a build meeting a write leaves.
func (s *Store) PutIndexEntry(ctx context.Context, key uds.Key, ix uds.Index, data json.RawMessage) error {
	var puts []types.WriteRequest
	for _, e := range indexEntries(key, []uds.Index{ix}, data) {
		puts = append(puts, types.WriteRequest{PutRequest: &types.PutRequest{Item: e.item(key)}})
	}
	return s.writeAll(ctx, s.tables.Index, puts)
}

// CheckItemSize is the size check a write of w meets before it reads or
// writes anything.
func CheckItemSize(w *uds.Write) error {
	_, err := encodeValue(w)
	return err
}

// HeadEntry is the entry a history head lists for a kept version with
// these fields and the largest numbers, and what the head's bound on its
// entries counts it as.
func HeadEntry(owner, updatedBy, creator, object string, deleted bool) (types.AttributeValue, int) {
	k := keptVersion{version: math.MaxInt64, size: math.MaxInt64, owner: owner, keptAt: math.MaxInt64, expiresAt: math.MaxInt64,
		updatedDate: FormatTime(time.Now()), updatedBy: updatedBy, deleted: deleted, object: object, creator: creator}
	return k.attributeValue(), k.headBytes()
}
