package uds

import "time"

// MaxImportRecords bounds the records of one import request.
const MaxImportRecords = 1000

// Record is one item of an app as export writes it and import reads it
// back: the item whole (key, value, audit fields, version, expiry) and the
// owner whose usage it counts toward. The owner is the item's creator,
// except for an item written before UDS, which is charged to whoever first
// updated it; Key.Owner is set when the item sits in its owner's private
// key space.
type Record struct {
	Item
	Owner string
	// KeptAt is set on a kept version of an item (from a namespace with
	// history): when a write replaced it. Its ExpiresAt is then the end
	// of the history's age limit, and Deleted marks a delete marker,
	// which has no value.
	KeptAt  time.Time
	Deleted bool
}

// Kept reports whether the record is a kept version rather than an item.
func (r *Record) Kept() bool { return !r.KeptAt.IsZero() }

// ImportResult says what an import did with each record: written,
// already present and identical (skipped), expired before it could be
// written, refused because a different item holds its key, or left out
// for a reason it gives.
type ImportResult struct {
	Imported, Skipped, Expired int
	Conflicts                  []ImportConflict
	Left                       []ImportLeft
}

// ImportLeft is a record that import left out, and why.
type ImportLeft struct {
	Index  int
	Key    Key
	Reason string
}

// ImportConflict is a record that import did not write because another
// item, at the given version, holds its key.
type ImportConflict struct {
	Index   int
	Key     Key
	Version int64
}

// ParseInstant reads an RFC 3339 instant of a record, kept to the
// millisecond, the precision UDS stores (and ETags carry). UDS stores and
// exports instants in UTC, where RFC 3339 has four-digit years: an offset
// that takes 0000-01-01 or 9999-12-31 past them is refused, since the
// record could be imported but its export never imported again.
func ParseInstant(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, Invalid(field, "must be an RFC 3339 instant such as 2030-01-15T10:30:00.000Z, got %q", Truncate(s, 64))
	}
	t = t.UTC().Truncate(time.Millisecond)
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, Invalid(field, "must be an instant from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z in UTC, got %q", Truncate(s, 64))
	}
	return t, nil
}
