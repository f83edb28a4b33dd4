package store

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/safe"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// A read of the feed starts (the zero position) with the namespace's
// current items, walked as an operator's listing walks them (keys.go), and
// then goes on with the log of rows from a little before the walk began:
// changesSnapshotMargin covers the owner indexes' lag, so that an item
// written before the walk but not yet in the index it read has its row
// after where the log begins. Every later page reads the log.

// changesSnapshotMargin is how far before a walk began its log begins:
// far more than the owner indexes' lag, which is a second or less.
const changesSnapshotMargin = time.Minute

// ChangesPosition is where a read of the feed stands. It is sealed into
// the read's cursor.
type ChangesPosition struct {
	// KeySpace is the key space the read was made in: the caller's in a
	// private namespace, "" otherwise. A namespace that changed its access
	// mode since has another, and the read must start again.
	KeySpace string `json:"ks,omitempty"`
	// Walk is set while the read walks the namespace's current items,
	// Next where the walk stands.
	Walk bool           `json:"w,omitempty"`
	Next ExportPosition `json:"n"`
	// Began is when the walk began, in epoch milliseconds: its log
	// begins changesSnapshotMargin before.
	Began int64 `json:"b,omitempty"`
	// Since is the log's position: the last sequence read, or the horizon
	// the last read reached.
	Since string `json:"s,omitempty"`
}

// ChangesQuery selects one page of a namespace's feed.
type ChangesQuery struct {
	App, Namespace string
	// KeySpace is the caller's key space (uds.Key.Owner of its items).
	KeySpace string
	// After is where the previous page ended; nil starts from the
	// beginning.
	After *ChangesPosition
	// Limit is how many log rows, or walked index entries, the page
	// takes at most.
	Limit int
	// MaxBytes bounds what a page's entries count, ItemBytes counts each
	// (an answer's size of it).
	MaxBytes  int
	ItemBytes func(*uds.Item) int
}

// Change is one entry of the feed: an item as it is now, or, when Removed,
// the key and version of an item that is gone (Item holds the key, the
// version and when it went).
type Change struct {
	Item    uds.Item
	Removed bool
}

// ChangesPage is one page of the feed.
type ChangesPage struct {
	Changes []Change
	Next    ChangesPosition
	// UpToDate says no more pages follow now.
	UpToDate bool
}

// Changes reads one page of a namespace's changes feed in a key space.
// A position older than ChangesRetention, or made in another key space, is
// uds.ErrCursorExpired: its client starts again from the beginning. A
// deployment whose data tables' streams nothing reads (WithoutStreams)
// answers uds.ErrNoChangesFeed.
func (s *Store) Changes(ctx context.Context, q ChangesQuery) (ChangesPage, error) {
	if s.noStreams {
		return ChangesPage{}, uds.ErrNoChangesFeed
	}
	now := s.now()
	pos := ChangesPosition{KeySpace: q.KeySpace, Walk: true, Began: now.UnixMilli()}
	if q.After != nil {
		pos = *q.After
	}
	if pos.KeySpace != q.KeySpace {
		return ChangesPage{}, uds.ErrCursorExpired
	}
	if pos.Walk {
		if now.Sub(time.UnixMilli(pos.Began)) > ChangesRetention {
			return ChangesPage{}, uds.ErrCursorExpired
		}
		return s.walkChanges(ctx, q, pos)
	}
	if t, ok := seqTime(pos.Since); !ok || now.Sub(t) > ChangesRetention {
		return ChangesPage{}, uds.ErrCursorExpired
	}
	return s.logChanges(ctx, q, pos, now)
}

// walkChanges reads a page of the namespace's current items in the key
// space. The walk's last page hands over to the log.
func (s *Store) walkChanges(ctx context.Context, q ChangesQuery, pos ChangesPosition) (ChangesPage, error) {
	w, err := s.walkKeys(ctx, KeysQuery{App: q.App, Namespace: q.Namespace, User: q.KeySpace, After: pos.Next, Limit: q.Limit})
	if err != nil {
		return ChangesPage{}, err
	}
	var keys []uds.Key
	for _, e := range w.entries {
		if e.key.Owner == q.KeySpace {
			keys = append(keys, e.key)
		}
	}
	items, errs := s.GetMany(ctx, keys)
	page := ChangesPage{Next: pos}
	total, i := 0, 0
	for j, e := range w.entries {
		if e.key.Owner != q.KeySpace {
			continue
		}
		it, err := items[i], errs[i]
		i++
		switch {
		case errors.Is(err, uds.ErrNotFound):
			// Gone since the index was read: the log shows its removal.
			continue
		case err != nil:
			return ChangesPage{}, err
		}
		size := q.ItemBytes(&it)
		if len(page.Changes) > 0 && total+size > q.MaxBytes {
			// The page is full: the next one starts with this entry.
			page.Next.Next = w.entries[j-1].after()
			return page, nil
		}
		total += size
		page.Changes = append(page.Changes, Change{Item: it})
	}
	if w.next != nil {
		page.Next.Next = *w.next
		return page, nil
	}
	began := time.UnixMilli(pos.Began).Add(-changesSnapshotMargin)
	page.Next = ChangesPosition{KeySpace: q.KeySpace, Since: seqUpTo(began)}
	return page, nil
}

// logChanges reads a page of the log after pos.Since, up to the horizon:
// each bucket's rows in order, merged, and the items they name read
// (strongly consistent) and shown as they are now, each once per page.
func (s *Store) logChanges(ctx context.Context, q ChangesQuery, pos ChangesPosition, now time.Time) (ChangesPage, error) {
	horizon := seqUpTo(now.Add(-ChangesSettle))
	page := ChangesPage{Next: pos}
	if pos.Since >= horizon {
		page.UpToDate = true
		return page, nil
	}
	// The buckets are read at once, each for twice its share of the
	// page: items spread over the buckets by hash, so that is about the
	// page, and a bucket that holds more (one busy item) makes a shorter
	// page rather than one read four times over.
	bucketLimit := min(q.Limit, (2*q.Limit+changesBuckets-1)/changesBuckets)
	outs := make([]*dynamodb.QueryOutput, changesBuckets)
	errs := make([]error, changesBuckets)
	var wg sync.WaitGroup
	for b := range changesBuckets {
		wg.Go(func() {
			if err := safe.Call(func() {
				outs[b], errs[b] = s.client.Query(ctx, &dynamodb.QueryInput{
					TableName:              aws.String(s.tables.Changes),
					KeyConditionExpression: aws.String("#p = :p AND #s BETWEEN :from AND :to"),
					ExpressionAttributeNames: map[string]string{
						"#p": schema.AttrChangesKey, "#s": schema.AttrChangeSeq},
					ExpressionAttributeValues: map[string]types.AttributeValue{
						":p":    &types.AttributeValueMemberS{Value: changesKey(q.App, q.Namespace, q.KeySpace, b)},
						":from": &types.AttributeValueMemberS{Value: pos.Since + "\x00"},
						":to":   &types.AttributeValueMemberS{Value: horizon},
					},
					ConsistentRead: aws.Bool(true),
					Limit:          aws.Int32(int32(bucketLimit)),
				})
			}); err != nil {
				errs[b] = err
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return ChangesPage{}, failed("read the changes of "+q.App+"/"+q.Namespace, err)
	}
	var rows []FeedRow
	// cut is the lowest of the last sequences of the buckets that hold
	// more rows than their query returned: rows past it are left for the
	// next page, since a bucket's unread rows may come before them.
	cut, more := "", false
	for _, out := range outs {
		if out.LastEvaluatedKey != nil && len(out.Items) > 0 {
			last := str(out.Items[len(out.Items)-1], schema.AttrChangeSeq)
			if !more || last < cut {
				cut = last
			}
			more = true
		}
		for _, av := range out.Items {
			k, ok := keyOf(av)
			if !ok {
				continue
			}
			rows = append(rows, FeedRow{Seq: str(av, schema.AttrChangeSeq), Key: k, Version: num(av, schema.AttrVersion),
				Removed: boolAttr(av, schema.AttrChangeRemoved), At: time.UnixMilli(num(av, schema.AttrChangeAt)).UTC()})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Seq < rows[j].Seq })
	if more {
		rows = rows[:sort.Search(len(rows), func(i int) bool { return rows[i].Seq > cut })]
	}
	if len(rows) > q.Limit {
		rows, more = rows[:q.Limit], true
	}
	shown, err := s.CurrentChanges(ctx, rows)
	if err != nil {
		return ChangesPage{}, err
	}
	seen := make(map[string]bool, len(rows))
	total := 0
	for n, r := range rows {
		id := itemID(r.Key)
		if seen[id] {
			page.Next.Since = r.Seq
			continue
		}
		c := shown[n]
		size := q.ItemBytes(&c.Item)
		if n > 0 && total+size > q.MaxBytes {
			more = true
			break
		}
		total += size
		seen[id] = true
		page.Changes = append(page.Changes, c)
		page.Next.Since = r.Seq
	}
	if !more {
		page.Next.Since, page.UpToDate = horizon, true
	}
	return page, nil
}

// after reports whether row r logs a later change of its item than o: a
// later millisecond, or in one millisecond (the rows of one batch of
// stream records) a higher version, or the removal of the same one.
// Rows of one millisecond sort by their suffix, a hash.
func (r FeedRow) after(o FeedRow) bool {
	rAt, _, _ := strings.Cut(r.Seq, ".")
	oAt, _, _ := strings.Cut(o.Seq, ".")
	switch {
	case rAt != oAt:
		return rAt > oAt
	case r.Version != o.Version:
		return r.Version > o.Version
	}
	return r.Removed && !o.Removed
}

// boolAttr reads a boolean attribute: false when absent.
func boolAttr(av map[string]types.AttributeValue, name string) bool {
	b, ok := av[name].(*types.AttributeValueMemberBOOL)
	return ok && b.Value
}

// CurrentChanges shows each row as a read of the feed shows it: its item
// as it is now, or, when the item is gone, the tombstone of the latest
// change the rows log of it (the removal, when they reach it), not of the
// row's own: a key written and removed within the rows is shown by its
// first row, as it is at the last. The items are read once each, strongly
// consistent, so that rows shown later never show an item older than
// rows shown before.
func (s *Store) CurrentChanges(ctx context.Context, rows []FeedRow) ([]Change, error) {
	index := make(map[string]int, len(rows))
	var keys []uds.Key
	latest := make([]FeedRow, 0, len(rows)) // each key's latest row, by its index
	for _, r := range rows {
		i, ok := index[itemID(r.Key)]
		if !ok {
			i = len(keys)
			index[itemID(r.Key)] = i
			keys, latest = append(keys, r.Key), append(latest, r)
		}
		if r.after(latest[i]) {
			latest[i] = r
		}
	}
	items, errs := s.GetMany(ctx, keys)
	shown := make([]Change, len(rows))
	for n, r := range rows {
		i := index[itemID(r.Key)]
		switch err := errs[i]; {
		case err == nil:
			shown[n] = Change{Item: items[i]}
		case errors.Is(err, uds.ErrNotFound):
			last := latest[i]
			shown[n] = Change{Removed: true, Item: uds.Item{Key: r.Key, Version: last.Version, UpdatedDate: last.At}}
		default:
			return nil, err
		}
	}
	return shown, nil
}

// Instant is the instant a position of the log stands at: every row at
// or before it is behind the position. A walk's position has none.
func (p ChangesPosition) Instant() (time.Time, bool) {
	if p.Walk {
		return time.Time{}, false
	}
	return seqTime(p.Since)
}
