package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// The changes feed (docs/changes.md) is a log of small rows, one per
// change of an item of the data tables, that the changes function writes
// from their streams (LogChanges) and a read of the feed pages through
// (changes_read.go). A row names its item and the version written or
// removed, not the value: a read shows each item as it is when read, so
// the feed costs about one write unit per change whatever the value's
// size, an item appears at its latest version, and never at an older one
// after a newer.
//
// Rows are partitioned by namespace and key space (the caller's, in a
// private namespace), each in changesBuckets partitions chosen by the
// item's key, so that one busy namespace spreads its writes; a read
// queries every bucket of its key space and merges them. A row's sort
// key starts with the millisecond it was written, and a read takes only
// rows of at most its horizon, ChangesSettle before now. That is what
// makes the feed gap-free: a row is written within ChangesSettle/2 of
// the instant it names (LogChanges writes it again, under a new instant,
// when its write took longer), so by the time a read's horizon passes
// that instant the row is there for its strongly consistent query. A
// row's suffix, a hash of its stream record and its item, makes it
// unique, so a record delivered twice writes a second row, which a read
// shows as one more appearance of the item, never as a gap.

// changesBuckets is how many partitions a namespace's key space spreads
// its rows over: each takes about 1,000 writes a second.
const changesBuckets = 4

// ChangesSettle is how far behind now a read of the feed stops (its
// horizon), and twice the longest a row's write may take.
const ChangesSettle = 2 * time.Second

// ChangesRetention is how long the feed keeps a row: a cursor older than
// that answers 410 and its client starts again from the beginning.
const ChangesRetention = 30 * 24 * time.Hour

// changesRowLife is how long a row lives in the table before DynamoDB's
// TTL removes it: the retention and a day, since a cursor is refused
// from the retention on and TTL deletions may come late.
const changesRowLife = ChangesRetention + 24*time.Hour

// changesKey is the partition of a key space's bucket.
func changesKey(app, namespace, keySpace string, bucket int) string {
	return app + uds.KeyDelimiter + namespace + uds.KeyDelimiter + keySpace + uds.KeyDelimiter + strconv.Itoa(bucket)
}

// changesBucket is the bucket of an item's rows: every row of one item is
// in one partition.
func changesBucket(k uds.Key) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(itemID(k)))
	return int(h.Sum32() % changesBuckets)
}

// seqWidth is the width of a sequence's millisecond prefix.
const seqWidth = 14

// seqAt is the prefix of the sequences of rows written at t.
func seqAt(t time.Time) string {
	ms := strconv.FormatInt(t.UnixMilli(), 10)
	return strings.Repeat("0", max(0, seqWidth-len(ms))) + ms
}

// seqUpTo is a bound above every sequence whose instant is at most t:
// the suffixes are hex, which sort before it.
func seqUpTo(t time.Time) string { return seqAt(t) + "~" }

// seqTime is the instant a sequence names.
func seqTime(seq string) (time.Time, bool) {
	if len(seq) < seqWidth {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(seq[:seqWidth], 10, 64)
	if err != nil || ms < 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

// FeedRow is a row of the feed as a read takes it, and as LogChanges
// hands it to WithLanded's function once written.
type FeedRow struct {
	// Key is the item's, in its key space (Key.Owner).
	Key uds.Key
	// Seq is the row's sequence: the instant it was written at (or, for
	// a row written in advance, the item's expiry), then a unique suffix.
	Seq string
	// Version is the version written or removed, Removed whether the
	// change removed the item, At when the change was made.
	Version int64
	Removed bool
	At      time.Time
}

// Instant is the instant the row stands at in the feed.
func (r FeedRow) Instant() time.Time {
	t, _ := seqTime(r.Seq)
	return t
}

// ChangesAt is the position of a feed in keySpace at instant t: a read
// from it takes the rows of later instants.
func ChangesAt(keySpace string, t time.Time) ChangesPosition {
	return ChangesPosition{KeySpace: keySpace, Since: seqUpTo(t)}
}

// changeRow is one row of the feed, before its instant is chosen.
type changeRow struct {
	key     uds.Key
	version int64
	removed bool
	// at is when the change was made.
	at time.Time
	// expiry is set for a row that stands at an item's expiry, written in
	// advance: its instant is the expiry's, not the write's.
	expiry bool
	// suffix makes the row's sequence unique.
	suffix string
}

// item returns the row's attributes, under the sequence of instant t.
func (r *changeRow) item(t time.Time) map[string]types.AttributeValue {
	if r.expiry && r.at.After(t) {
		// An expiry row stands at the expiry while that is still ahead
		// of the write: it lands long before a read's horizon reaches
		// it. A write made after the expiry (the row's first call was
		// slow or throttled, and it is written again) puts it at the
		// write's instant, as any row: under the expiry, already behind
		// the horizon of reads made meanwhile, it would be missed by
		// them for good, and their replicas would keep the expired item
		// (TestLogChangesLateExpiryRow). Read, it shows the item gone.
		t = r.at
	}
	av := map[string]types.AttributeValue{
		schema.AttrChangesKey: &types.AttributeValueMemberS{Value: changesKey(r.key.App, r.key.Namespace, r.key.Owner, changesBucket(r.key))},
		schema.AttrChangeSeq:  &types.AttributeValueMemberS{Value: seqAt(t) + "." + r.suffix},
		schema.AttrDataKey:    &types.AttributeValueMemberS{Value: r.key.DataKey()},
		schema.AttrVersion:    &types.AttributeValueMemberN{Value: strconv.FormatInt(r.version, 10)},
		schema.AttrChangeAt:   &types.AttributeValueMemberN{Value: strconv.FormatInt(r.at.UnixMilli(), 10)},
		schema.AttrExpiresAt:  &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Add(changesRowLife).Unix(), 10)},
	}
	if r.key.SortKey != "" {
		av[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: r.key.SortKey}
	}
	if r.removed {
		av[schema.AttrChangeRemoved] = &types.AttributeValueMemberBOOL{Value: true}
	}
	return av
}

// changeRows are the rows of one stream record of the data tables: one
// for the change, and one more at the item's expiry when the change left
// it expiring later, so that the item leaves the feed's replicas when it
// expires, not when DynamoDB's TTL gets to it. A record of anything but
// an item (an upload's reservation) has none. A record without a new
// image is a removal: the stream's events give it an empty image, not
// none.
func changeRows(c StreamChange, now time.Time) []changeRow {
	img, removed := c.New, len(c.New) == 0
	if removed {
		img = c.Old
	}
	k, ok := keyOf(img)
	if !ok || k.Namespace == uploadNamespace {
		return nil
	}
	at := c.At
	if at.IsZero() {
		at = now
	}
	id := sha256.Sum256([]byte(c.Sequence + "\x00" + itemID(k)))
	suffix := hex.EncodeToString(id[:8])
	rows := []changeRow{{key: k, version: num(img, schema.AttrVersion), removed: removed, at: at, suffix: suffix}}
	if ms := num(img, schema.AttrExpiresAtMillis); !removed && ms > now.UnixMilli() {
		rows = append(rows, changeRow{key: k, version: rows[0].version, at: time.UnixMilli(ms).UTC(), expiry: true, suffix: suffix + "x"})
	}
	return rows
}

// changesWriteAttempts bounds how often LogChanges writes a row again
// because its write took too long, before it reports the batch failed
// (and the stream hands it over again).
const changesWriteAttempts = 8

// LogChanges writes the feed's rows of a batch of stream records of the
// data tables. Each call of BatchWriteItem writes its rows under the
// instant it was made at; rows it did not process, and all of its rows
// when it answered later than ChangesSettle/2 after that instant, are
// written again under a new one. It is idempotent in effect: a record
// handed over again writes rows again, which a read shows as the item
// once more. It returns the number of rows written.
func (s *Store) LogChanges(ctx context.Context, changes []StreamChange) (int, error) {
	now := s.now()
	var pending []changeRow
	for _, c := range changes {
		pending = append(pending, changeRows(c, now)...)
	}
	written := 0
	for attempt := 0; len(pending) > 0; attempt++ {
		switch {
		case attempt == changesWriteAttempts:
			return written, fmt.Errorf("log changes: %d rows not written in time after %d attempts", len(pending), attempt)
		case attempt > 0:
			// Rows come back when the table throttled or the engine was
			// slow: wait a little longer each time, as the SDK does.
			if err := sleep(ctx, min(50*time.Millisecond<<attempt, time.Second)); err != nil {
				return written, err
			}
		}
		var again []changeRow
		for start := 0; start < len(pending); start += maxBatchWrite {
			batch := pending[start:min(start+maxBatchWrite, len(pending))]
			left, err := s.writeRows(ctx, batch)
			if err != nil {
				return written, err
			}
			written += len(batch) - len(left)
			again = append(again, left...)
		}
		pending = again
	}
	return written, nil
}

// writeRows writes rows in one BatchWriteItem call under the instant it
// is made at, and returns those to write again: the unprocessed ones, or
// all when the call took too long for the instant to stand.
func (s *Store) writeRows(ctx context.Context, rows []changeRow) ([]changeRow, error) {
	at := s.now()
	reqs := make([]types.WriteRequest, len(rows))
	for i := range rows {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: rows[i].item(at)}}
	}
	out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
		RequestItems: map[string][]types.WriteRequest{s.tables.Changes: reqs}})
	switch {
	case err != nil && isTransient(err):
		// A throttled or failed call is sent again under a new instant:
		// whether it wrote anything does not matter, a row twice is the
		// item shown twice.
		return rows, nil
	case err != nil:
		return nil, failed("log changes", err)
	case s.now().Sub(at) > ChangesSettle/2:
		return rows, nil
	}
	left := make([]changeRow, 0, len(out.UnprocessedItems[s.tables.Changes]))
	unprocessed := map[string]bool{}
	for _, u := range out.UnprocessedItems[s.tables.Changes] {
		_, suffix, _ := strings.Cut(str(u.PutRequest.Item, schema.AttrChangeSeq), ".")
		unprocessed[suffix] = true
	}
	landed := make([]FeedRow, 0, len(rows))
	for i, r := range rows {
		if unprocessed[r.suffix] {
			left = append(left, r)
			continue
		}
		seq := str(reqs[i].PutRequest.Item, schema.AttrChangeSeq)
		landed = append(landed, FeedRow{Key: r.key, Seq: seq, Version: r.version, Removed: r.removed, At: r.at})
	}
	if s.landed != nil && len(landed) > 0 {
		// Handed over at once, within ChangesSettle/2 of their instant,
		// so that a reader of what landed is never further behind than
		// a read of the feed (realtime's cursors rest on it).
		s.landed(landed)
	}
	return left, nil
}
