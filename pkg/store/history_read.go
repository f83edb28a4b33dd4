package store

import (
	"context"
	"time"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// shown is the history policy a read applies: the namespace's, or, in a
// namespace that no longer keeps versions, one that shows every version
// kept before (they stay until they age out or are dropped).
func shown(h uds.History) uds.History {
	if !h.On() {
		return uds.History{Versions: uds.MaxHistoryVersions}
	}
	return h
}

// Versions lists an item's history, newest first: the item as it stands
// (or the delete marker when it was deleted), then the versions kept under
// h at now. It is uds.ErrNotFound when there is neither item nor history.
// It costs one BatchGetItem: the item's metadata and its history head.
func (s *Store) Versions(ctx context.Context, key uds.Key, h uds.History) ([]uds.Version, error) {
	got, err := s.readHistory(ctx, key, metaProjection, schema.HeadVersion)
	if err != nil {
		return nil, err
	}
	keep, _ := splitHistory(shown(h), got.head.kept, s.now())
	var out []uds.Version
	if got.item != nil {
		it := decodeMeta(key, got.item)
		out = append(out, uds.Version{Version: it.Version, UpdatedDate: it.UpdatedDate, UpdatedBy: it.UpdatedBy,
			Size: num(got.item, schema.AttrItemSize), Current: true})
	}
	for i, k := range keep {
		out = append(out, uds.Version{Version: k.version, UpdatedDate: parseTime(k.updatedDate), UpdatedBy: k.updatedBy,
			Size: k.size, Deleted: k.deleted, Current: got.item == nil && i == 0 && k.deleted})
	}
	if len(out) == 0 {
		return nil, uds.ErrNotFound
	}
	return out, nil
}

// Version reads one version of an item: the item itself when it is at
// that version, else the version kept under h at now, as a read of the
// item shows it (without an expiry: a kept version's own is the history's
// age limit). It is uds.ErrNotFound when the version is not kept (never
// was, pruned, expired, or a delete marker). One BatchGetItem reads the
// item, its head and the version.
func (s *Store) Version(ctx context.Context, key uds.Key, h uds.History, version int64) (uds.Item, error) {
	if version < 0 {
		return uds.Item{}, uds.ErrNotFound
	}
	got, err := s.readHistory(ctx, key, "", version)
	if err != nil {
		return uds.Item{}, err
	}
	if got.item != nil && num(got.item, schema.AttrVersion) == version {
		return decodeItem(key, got.item)
	}
	keep, _ := splitHistory(shown(h), got.head.kept, s.now())
	for _, k := range keep {
		if k.version == version && !k.deleted && got.entry != nil {
			it, err := decodeItem(key, got.entry)
			it.ExpiresAt = time.Time{}
			return it, err
		}
	}
	return uds.Item{}, uds.ErrNotFound
}
