package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Export reads an app's data owner by owner, in owner order: each owner's
// key-value items, then their list items, through the owner index of each
// table. The index gives the keys; the items themselves are read strongly
// consistent (BatchGetItem), so a record is never older than its index
// entry. Items that expired, or were deleted since the index was read, are
// left out. Items written before UDS and not yet migrated carry no owner
// and are not in the index: migration comes first (docs/export-and-migration.md).

// ExportPosition is where an export page ended: the last record's owner,
// table and key. The zero position is the start of the app's data.
type ExportPosition struct {
	Owner   string `json:"o,omitempty"`
	List    bool   `json:"l,omitempty"`
	DataKey string `json:"k,omitempty"`
	SortKey string `json:"s,omitempty"`
	// History, HistoryKey and Version place the position among the
	// owner's kept versions, which follow their list items.
	History    bool   `json:"h,omitempty"`
	HistoryKey string `json:"hk,omitempty"`
	Version    int64  `json:"v,omitempty"`
	// Done says the owner was exported whole.
	Done bool `json:"d,omitempty"`
}

// ExportQuery selects one page of an app's records.
type ExportQuery struct {
	App   string
	After ExportPosition
	Limit int
	// MaxBytes bounds the page as RecordBytes (required) measures it:
	// the page ends, after at least one record, before a record that
	// would pass it.
	MaxBytes    int
	RecordBytes func(*uds.Record) int
	// Deadline, when set, ends the page at the next owner once passed
	// (if the page has got anywhere), so that an app of many small owners
	// is answered in time: each owner costs its own index queries.
	Deadline time.Time
	// History adds each owner's kept versions and delete markers after
	// their items.
	History bool
	// Namespace, when set, keeps only that namespace's records. The
	// owner indexes of the data tables carry the items' keys, so their
	// entries are filtered by the key's prefix as DynamoDB reads them and
	// no other item is read; the history table's index carries only a
	// digest of the key, so kept versions are read and then filtered. Every
	// owner's index entries are still read: the filter saves the items'
	// reads and the answer's bytes, not the index queries.
	Namespace string
}

// ExportPage is one page of records; Next is nil on the last page.
type ExportPage struct {
	Records []uds.Record
	Next    *ExportPosition
}

// exportOwnersPerRead is how many owners one read of the app's users
// index brings; most pages need few.
const exportOwnersPerRead = 100

// Export reads one page of the app's records after q.After.
func (s *Store) Export(ctx context.Context, q ExportQuery) (ExportPage, error) {
	page := exportPager{s: s, q: q}
	pos := q.After
	if pos.Owner != "" && !pos.Done {
		// Finish the owner the previous page stopped in.
		if err := page.owner(ctx, pos); err != nil || page.full {
			return page.result(), err
		}
	}
	err := s.eachOwner(ctx, q.App, pos.Owner, exportOwnersPerRead, func(owner string) (bool, error) {
		if !q.Deadline.IsZero() && time.Now().After(q.Deadline) && page.last.Owner != "" {
			page.full = true
			return false, nil
		}
		err := page.owner(ctx, ExportPosition{Owner: owner})
		return err == nil && !page.full, err
	})
	if err != nil {
		return ExportPage{}, err
	}
	return page.result(), nil
}

// eachOwner walks an app's owners after the one named, in owner order,
// reading the usage table's byAppShard index perRead owners at a time,
// until fn reports it takes no more. An export and a namespace's keys
// (keys.go) walk an app's data so: owner by owner, each through the owner
// index of the data tables.
func (s *Store) eachOwner(ctx context.Context, app, after string, perRead int, fn func(owner string) (bool, error)) error {
	for {
		owners, more, err := s.appUsers(ctx, app, after, perRead)
		if err != nil {
			return err
		}
		for _, o := range owners {
			if next, err := fn(o.User); err != nil || !next {
				return err
			}
			after = o.User
		}
		if !more {
			return nil
		}
	}
}

// ownerIndexQuery queries one table's owner index for an owner's entries
// after pos's key (from the start when it has none); with a namespace, it
// keeps the entries of that namespace's keys as DynamoDB reads them.
func (s *Store) ownerIndexQuery(app, namespace string, pos ExportPosition) *dynamodb.QueryInput {
	name := s.tables.Data
	switch {
	case pos.History:
		name = s.tables.History
	case pos.List:
		name = s.tables.List
	}
	owner := ownerKey(app, pos.Owner)
	in := &dynamodb.QueryInput{
		TableName:                aws.String(name),
		IndexName:                aws.String(schema.IndexByOwner),
		KeyConditionExpression:   aws.String("#o = :o"),
		ExpressionAttributeNames: map[string]string{"#o": schema.AttrOwnerKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":o": &types.AttributeValueMemberS{Value: owner},
		},
	}
	if namespace != "" && !pos.History {
		// Namespaces hold no delimiter, so the prefix matches the
		// namespace's shared and private keys and no other namespace's.
		in.FilterExpression = aws.String("begins_with(#k, :prefix)")
		in.ExpressionAttributeNames["#k"] = schema.AttrDataKey
		in.ExpressionAttributeValues[":prefix"] = &types.AttributeValueMemberS{Value: app + uds.KeyDelimiter + namespace + uds.KeyDelimiter}
	}
	switch {
	case pos.HistoryKey != "":
		_, digest, _ := strings.Cut(pos.HistoryKey, uds.KeyDelimiter)
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			schema.AttrOwnerKey:   &types.AttributeValueMemberS{Value: owner},
			schema.AttrKeptOrder:  &types.AttributeValueMemberS{Value: keptOrder(digest, pos.Version)},
			schema.AttrHistoryKey: &types.AttributeValueMemberS{Value: pos.HistoryKey},
			schema.AttrVersion:    &types.AttributeValueMemberN{Value: strconv.FormatInt(pos.Version, 10)},
		}
	case pos.DataKey != "":
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			schema.AttrOwnerKey: &types.AttributeValueMemberS{Value: owner},
			schema.AttrDataKey:  &types.AttributeValueMemberS{Value: pos.DataKey},
		}
		if pos.List {
			in.ExclusiveStartKey[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: pos.SortKey}
		}
	}
	return in
}

// exportPager collects one page of records.
type exportPager struct {
	s       *Store
	q       ExportQuery
	records []uds.Record
	bytes   int
	// last is the position of the last record taken; full is set once the
	// page holds all it may.
	last ExportPosition
	full bool
}

func (p *exportPager) result() ExportPage {
	out := ExportPage{Records: p.records}
	if p.full {
		out.Next = &p.last
	}
	return out
}

// owner adds the owner's records from pos on: the rest of the table pos
// is in, then the list table if pos is in the key-value table, then the
// history table if the export carries history.
func (p *exportPager) owner(ctx context.Context, pos ExportPosition) error {
	if !pos.List && !pos.History {
		if err := p.table(ctx, pos); err != nil || p.full {
			return err
		}
		pos = ExportPosition{Owner: pos.Owner, List: true}
	}
	if !pos.History {
		if err := p.table(ctx, pos); err != nil || p.full {
			return err
		}
		pos = ExportPosition{Owner: pos.Owner, History: true}
	}
	if p.q.History {
		if err := p.table(ctx, pos); err != nil || p.full {
			return err
		}
	}
	p.last = ExportPosition{Owner: pos.Owner, Done: true}
	return nil
}

// table adds the owner's records of one table after pos's key (from the
// start when it has none), reading the index page by page, until the page is
// full or the owner has no more items there.
func (p *exportPager) table(ctx context.Context, pos ExportPosition) error {
	s := p.s
	in := s.ownerIndexQuery(p.q.App, p.q.Namespace, pos)
	// Index entries wait until a full BatchGetItem's worth is pending,
	// the page could end with them, or the owner has no more.
	var pending []map[string]types.AttributeValue
	// most is how many pending entries one read takes: no more than the
	// page still takes, since each entry is a record unless its item went
	// since; but a kept version under a namespace filter is a record only
	// if its namespace is the one, which its read tells, so a whole batch.
	most := func() int { return p.q.Limit - len(p.records) }
	if pos.History && p.q.Namespace != "" {
		most = func() int { return maxBatchGet }
	}
	scanned := 0
	for {
		// A query's Limit counts the index entries it reads, before any
		// filter. Unfiltered, that is what the page still takes. Under a
		// namespace filter some, or most, entries are not records, so a
		// query reads twice as many as the one before it if that is more:
		// few round trips for an owner of many other items, and at most
		// about three times the entries the page needed. A query stops at
		// 1 MB whatever its Limit, which bounds the doubling.
		limit := p.q.Limit - len(p.records) - len(pending)
		if p.q.Namespace != "" {
			limit = max(limit, 2*scanned)
		}
		in.Limit = aws.Int32(int32(limit))
		out, err := s.client.Query(ctx, in)
		if err != nil {
			if indexNotReady(err) {
				return errIndexNotReady
			}
			return failed("export "+p.q.App, err)
		}
		scanned = int(out.ScannedCount)
		pending = append(pending, out.Items...)
		last := out.LastEvaluatedKey == nil
		for len(pending) >= maxBatchGet || len(p.records)+len(pending) >= p.q.Limit || (last && len(pending) > 0) {
			n := p.chunk(pending, most())
			if err := p.read(ctx, pos, pending[:n]); err != nil || p.full {
				return err
			}
			pending = pending[n:]
		}
		if last {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// chunk is how many of the pending index entries to read at once: what
// one BatchGetItem reads, at most most, and no more than the page can still
// hold by their stored sizes (the index carries them), so that a page of
// large items does not read far past its end.
func (p *exportPager) chunk(entries []map[string]types.AttributeValue, most int) int {
	n, stored := 0, int64(0)
	for n < len(entries) && n < min(maxBatchGet, most) {
		size := num(entries[n], schema.AttrItemSize)
		if n > 0 && stored+size > int64(p.q.MaxBytes-p.bytes) {
			break
		}
		stored += size
		n++
	}
	return n
}

// read adds the live items (or kept versions) of the given index entries.
func (p *exportPager) read(ctx context.Context, pos ExportPosition, entries []map[string]types.AttributeValue) error {
	if pos.History {
		return p.readKept(ctx, pos, entries)
	}
	keys := make([]uds.Key, 0, len(entries))
	for _, e := range entries {
		// An upload's reservation is no item: its upload either commits,
		// or lapses and gives its bytes back.
		if k, ok := keyOf(e); ok && k.Namespace != uploadNamespace {
			keys = append(keys, k)
		}
	}
	found, err := p.s.batchGet(ctx, keys, nil)
	if err != nil {
		return err
	}
	now := p.s.now()
	for _, k := range keys {
		av := found[itemID(k)]
		if av == nil || expired(av, now) {
			continue // deleted or expired since the index was read
		}
		it, err := decodeItem(k, av)
		if err != nil {
			return failed("export "+p.q.App, err)
		}
		if !p.take(uds.Record{Item: it, Owner: pos.Owner}, ExportPosition{Owner: pos.Owner, List: pos.List, DataKey: k.DataKey(), SortKey: k.SortKey}) {
			return nil
		}
	}
	return nil
}

// take adds a record that ends at pos, unless the page is full; it
// reports whether the page takes more.
func (p *exportPager) take(rec uds.Record, pos ExportPosition) bool {
	n := p.q.RecordBytes(&rec)
	if len(p.records) > 0 && p.bytes+n > p.q.MaxBytes {
		p.full = true
		return false
	}
	p.records, p.bytes = append(p.records, rec), p.bytes+n
	p.last = pos
	if len(p.records) >= p.q.Limit {
		p.full = true
		return false
	}
	return true
}
