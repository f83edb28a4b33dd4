package store

import (
	"context"
	"time"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// A migration from another data model checks records before it imports
// them, and a dry run of it says what an import would do without doing
// it. These calls give it the store's own answers: the item limit Import
// applies, what Import would find at each key, and whether a namespace
// holds data (what decides whether its access mode may change).

// CheckRecord reports whether Import can store a record's value: a
// *uds.TooLargeError when the value, with its key and attributes, does not
// fit a DynamoDB item. Import refuses a whole request for one such record,
// so a migration checks each one first and reports it alone.
func CheckRecord(rec *uds.Record) error {
	_, err := recordValue(rec)
	return err
}

// recordValue is a record's value as Import stores it. encodeValue bounds
// the stored size with the writer's subject and an allowance for two
// more (creatorAllowance): an imported item's creator and owner, which a
// write's item has as its creator twice. So a record is held to the
// bound its item was written under, and every item a write stored can be
// imported again.
func recordValue(rec *uds.Record) (encodedValue, error) {
	return encodeValue(&uds.Write{Key: rec.Key, Data: rec.Data, Binary: rec.Binary, ClassName: rec.ClassName,
		Subject: rec.UpdatedBy})
}

// importExpired reports whether an import counts a record as expired and
// leaves it out: it expired by now, or it is a kept version that expires
// within expiryMargin. A drop or a prune leaves such a version to
// DynamoDB's TTL and takes it off its head, so its row may still be there
// with nothing listing it, and a put of it would be refused until the TTL
// removed it.
func importExpired(rec *uds.Record, now time.Time) bool {
	if rec.Kept() {
		now = now.Add(expiryMargin)
	}
	return rec.ExpiredAt(now)
}

// PlanImport says what Import would do with records of items (not kept
// versions), and writes nothing: Imported counts the records whose key is
// free (or holds an expired item), Skipped those whose key holds the same
// item, Expired those that expired, and Conflicts those whose key holds a
// different item. The keys are read strongly consistent, 100 a call.
func (s *Store) PlanImport(ctx context.Context, app string, records []uds.Record) (uds.ImportResult, error) {
	var res uds.ImportResult
	keys := make([]uds.Key, len(records))
	for i := range records {
		keys[i] = records[i].Key
	}
	found, err := s.batchGet(ctx, keys, nil)
	if err != nil {
		return res, err
	}
	now := s.now()
	for i := range records {
		rec := &records[i]
		stored, held := found[itemID(rec.Key)]
		switch {
		case importExpired(rec, now):
			res.Expired++
			continue
		case !held || expired(stored, now):
			res.Imported++
			continue
		}
		same, err := sameItem(app, rec, stored)
		switch {
		case err != nil:
			return res, failed("read "+rec.Key.DataKey(), err)
		case same:
			res.Skipped++
		default:
			res.Conflicts = append(res.Conflicts, uds.ImportConflict{Index: i, Key: rec.Key, Version: num(stored, schema.AttrVersion)})
		}
	}
	return res, nil
}

// NamespaceHoldsData reports whether a namespace holds a live item or a
// kept version in any key space: while it does, its access mode cannot
// change into or out of private (SetPolicy answers uds.ErrInUse).
func (s *Store) NamespaceHoldsData(ctx context.Context, app, namespace string) (bool, error) {
	return s.holdsData(ctx, app, namespace)
}
