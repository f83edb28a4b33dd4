package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// IndexQuery selects a namespace's items by one of its indexes: those
// whose value is Eq, starts with Prefix, or lies in [From, To) (either
// bound optional; none of them: every item the index holds), ordered by
// the value and then the key.
type IndexQuery struct {
	App, Namespace string
	Index          uds.Index
	// Owner, in a private namespace, is the caller, whose items alone the
	// query sees.
	Owner      string
	Eq, Prefix *uds.IndexValue
	From, To   *uds.IndexValue
	Descending bool
	Limit      int
	Cursor     string
	MaxBytes   int
	ItemBytes  func(*uds.Item) int
}

// IndexPage is one page of a query. Cursor, when set, is where the next
// page starts.
type IndexPage struct {
	Items  []uds.Item
	Cursor string
}

// maxCleanups bounds how many stale entries one page removes.
const maxCleanups = 10

// QueryIndex reads one page of a query: the index's partitions (every
// write shard, or the owner's) are queried strongly consistent and merged
// in order, one entry beyond the page is read to know whether another
// page exists, and the page's items are read with BatchGetItem, strongly
// consistent. An item is in the page only if it is stored, has not
// expired, and its value yields the entry that led to it; an entry that
// does not (its item expired, or a build put it for a value a write then
// replaced) is left out and removed, if its item is still as read.
func (s *Store) QueryIndex(ctx context.Context, q IndexQuery) (IndexPage, error) {
	cond, err := indexCondition(q)
	if err != nil || cond.empty {
		return IndexPage{}, err
	}
	var after []byte
	if q.Cursor != "" {
		after, err = base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || len(after) == 0 || len(after) > maxIndexSortBytes || !cond.holds(after) {
			return IndexPage{}, uds.Invalid("cursor", "does not belong to this query")
		}
	}
	m := merger{s: s, cond: cond, desc: q.Descending, after: after}
	for _, hash := range indexPartitions(q.App, q.Namespace, q.Index.ID, q.Owner) {
		m.parts = append(m.parts, &partition{hash: hash})
	}
	pg := queryPage{s: s, q: q, itemBytes: q.ItemBytes, now: s.now()}
	if pg.itemBytes == nil {
		pg.itemBytes = plainBytes
	}
	defer func() { s.removeStale(ctx, pg.stale) }()
	// Entries whose items turn out stale leave the page short; a page
	// that only met stale ones reads on, a few times, rather than answer
	// empty with a cursor.
	for range maxStaleRounds {
		entries, more, err := m.take(ctx, q.Limit-len(pg.page.Items))
		if err != nil {
			return IndexPage{}, err
		}
		full, err := pg.add(ctx, entries)
		switch {
		case err != nil:
			return IndexPage{}, err
		case full:
			return pg.page, nil
		case more && len(entries) > 0:
			pg.page.Cursor = base64.RawURLEncoding.EncodeToString(entrySort(entries[len(entries)-1]))
		default:
			pg.page.Cursor = ""
		}
		if len(pg.page.Items) > 0 || !more {
			break
		}
	}
	return pg.page, nil
}

// maxStaleRounds bounds how often a query page reads on past stale
// entries before it answers empty, with a cursor.
const maxStaleRounds = 4

// queryPage is a query's page as its items are read.
type queryPage struct {
	s         *Store
	q         IndexQuery
	itemBytes func(*uds.Item) int
	now       time.Time
	page      IndexPage
	size      int
	stale     []staleEntry
}

// add reads the items of entries, in chunks that the page's remaining
// byte budget is expected to take (so a page of large items reads few
// more than it keeps), and adds those that still have their entries. It
// reports whether the byte budget ended the page; the cursor then points
// after the last entry kept or skipped.
func (pg *queryPage) add(ctx context.Context, entries []map[string]types.AttributeValue) (bool, error) {
	for start := 0; start < len(entries); {
		n := min(len(entries)-start, maxBatchGet)
		if pg.q.MaxBytes > 0 && len(pg.page.Items) > 0 {
			avg := max(1, pg.size/len(pg.page.Items))
			n = min(n, max(1, (pg.q.MaxBytes-pg.size)/avg+1))
		}
		chunk := entries[start : start+n]
		keys := make([]uds.Key, len(chunk))
		for i, e := range chunk {
			keys[i], _ = keyOf(e)
		}
		found, err := pg.s.batchGet(ctx, keys, nil)
		if err != nil {
			return false, err
		}
		for i, e := range chunk {
			av := found[itemID(keys[i])]
			sort := entrySort(e)
			it, live := pg.s.matching(keys[i], av, pg.q.Index, sort, pg.now)
			if !live {
				pg.stale = append(pg.stale, staleEntry{key: keys[i], entry: indexEntry{hash: str(e, schema.AttrIndexKey), sort: sort}, item: av})
				continue
			}
			size := pg.itemBytes(&it)
			if pg.q.MaxBytes > 0 && len(pg.page.Items) > 0 && pg.size+size > pg.q.MaxBytes {
				// The page is full: the next one starts at this item.
				pg.page.Cursor = base64.RawURLEncoding.EncodeToString(entrySort(entries[start+i-1]))
				return true, nil
			}
			pg.size += size
			pg.page.Items = append(pg.page.Items, it)
		}
		start += n
	}
	return false, nil
}

func entrySort(e map[string]types.AttributeValue) []byte {
	return e[schema.AttrIndexSort].(*types.AttributeValueMemberB).Value
}

// matching decodes the item an entry with sort key sort led to, and
// reports whether it is live and still has that entry.
func (s *Store) matching(key uds.Key, av map[string]types.AttributeValue, ix uds.Index, sort []byte, now time.Time) (uds.Item, bool) {
	if av == nil || expired(av, now) {
		return uds.Item{}, false
	}
	it, err := decodeItem(key, av)
	if err != nil {
		return uds.Item{}, false
	}
	v, ok := ix.ValueOf(it.Data)
	return it, ok && bytes.Equal(indexSort(ix.Type, v, key), sort)
}

// staleEntry is an entry that leads to no item with its value, and the
// item as the query read it (nil: none).
type staleEntry struct {
	key   uds.Key
	entry indexEntry
	item  map[string]types.AttributeValue
}

// removeStale deletes stale entries, each in a transaction that checks its
// item is still as read: absent, or with the value and expiry read, which
// are what made the entry stale. An item written since may have the entry
// again, and keeps it. The revision is not enough to tell: an import
// writes an item at the revision (version, creation, size, owner, creator)
// it was exported with, so an expired item and the same item imported
// again without its expiry, or with another value of its size, share one.
// It is best effort: an entry left is skipped again by the next query.
func (s *Store) removeStale(ctx context.Context, stale []staleEntry) {
	for _, e := range stale[:min(len(stale), maxCleanups)] {
		names := map[string]string{"#k": schema.AttrDataKey}
		values := map[string]types.AttributeValue{}
		cond := "attribute_not_exists(#k)"
		if e.item != nil {
			cond = "attribute_exists(#k) AND " + sameValue(e.item, names, values)
		}
		check := &types.ConditionCheck{TableName: aws.String(s.table(e.key)), Key: keyAV(e.key),
			ConditionExpression: aws.String(cond), ExpressionAttributeNames: names}
		if len(values) > 0 {
			check.ExpressionAttributeValues = values
		}
		_, _ = s.transact(ctx, "remove a stale index entry",
			types.TransactWriteItem{ConditionCheck: check},
			types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.tables.Index), Key: e.entry.key()}})
	}
}

// sameValue is a condition that holds only while the item has the value
// (as stored: plain or compressed) and the expiry of old.
func sameValue(old map[string]types.AttributeValue, names map[string]string, values map[string]types.AttributeValue) string {
	return asRead(old, names, values, []attrRef{
		{schema.AttrDataValue, "#dv", ":dv"},
		{schema.AttrDataValueGzip, "#dz", ":dz"},
		{schema.AttrExpiresAtMillis, "#xm", ":xm"},
	})
}

// sortCondition is a query's condition on entries' sort keys.
type sortCondition struct {
	expr   string // a key condition on #is, with :lo and :hi
	lo, hi []byte
	prefix bool // begins_with(#is, :lo)
	empty  bool // no entry can match
}

// holds reports whether an entry's sort key meets the condition.
func (c sortCondition) holds(sort []byte) bool {
	switch {
	case c.prefix:
		return bytes.HasPrefix(sort, c.lo)
	case c.lo != nil && bytes.Compare(sort, c.lo) < 0:
		return false
	case c.hi != nil && bytes.Compare(sort, c.hi) >= 0:
		return false
	}
	return true
}

// indexCondition turns a query's selection into a key condition. A
// value's encoding (appendIndexValue) is its order, and an entry holds
// more than its value: so an entry whose value is v begins with v's
// encoding, one whose value is at least A sorts at or after A's encoding
// without its end mark, and one whose value is below B sorts before B's.
func indexCondition(q IndexQuery) (sortCondition, error) {
	t := q.Index.Type
	bound := func(v *uds.IndexValue) []byte {
		if v == nil {
			return nil
		}
		b := appendIndexValue(nil, t, *v)
		if t == uds.IndexString {
			b = b[:len(b)-1] // without the end mark
		}
		return b
	}
	switch {
	case q.Eq != nil:
		return sortCondition{expr: "begins_with(#is, :lo)", lo: appendIndexValue(nil, t, *q.Eq), prefix: true}, nil
	case q.Prefix != nil && t != uds.IndexString:
		return sortCondition{}, uds.Invalid("prefix", "index %s holds numbers; prefix selects strings", q.Index.Name)
	case q.Prefix != nil && q.Prefix.Str != "":
		return sortCondition{expr: "begins_with(#is, :lo)", lo: appendShifted(nil, q.Prefix.Str), prefix: true}, nil
	case q.Prefix != nil:
		return sortCondition{}, nil // every string begins with ""
	}
	lo, hi := bound(q.From), bound(q.To)
	switch {
	case hi != nil && len(hi) == 0:
		return sortCondition{empty: true}, nil // no string is below ""
	case lo != nil && len(lo) == 0:
		lo = nil // every string is at least ""
	}
	switch {
	case lo != nil && hi != nil && bytes.Compare(lo, hi) >= 0:
		return sortCondition{empty: true}, nil // [from, to) is empty
	case lo != nil && hi != nil:
		// No entry equals hi (entries are longer), so BETWEEN's
		// inclusive bound leaves out the values at to.
		return sortCondition{expr: "#is BETWEEN :lo AND :hi", lo: lo, hi: hi}, nil
	case lo != nil:
		return sortCondition{expr: "#is >= :lo", lo: lo}, nil
	case hi != nil:
		return sortCondition{expr: "#is < :hi", hi: hi}, nil
	}
	return sortCondition{}, nil
}

// partition is one partition of a query's index as the merge reads it.
type partition struct {
	hash string
	buf  []map[string]types.AttributeValue
	// next is where the partition's next read starts; done is set once
	// it has nothing more.
	next          map[string]types.AttributeValue
	started, done bool
}

// minShare is the fewest entries the first read of a partition asks for.
const minShare = 32

// merger merges a query's partitions in entry order.
type merger struct {
	s     *Store
	cond  sortCondition
	desc  bool
	after []byte
	parts []*partition
}

// take returns the query's next n entries, in order, and whether more
// follow. The first read of every partition runs in parallel and asks each
// for twice its share of n and one more, and at least minShare: entries
// are small, so a strongly consistent read of that many costs the one read
// unit any read costs, and a partition holding more than its share is
// rarely read twice. A partition whose entries the merge then uses up is
// read again for what is still missing.
func (m *merger) take(ctx context.Context, n int) ([]map[string]types.AttributeValue, bool, error) {
	share := int32(min(n+1, max(2*(n+1)/len(m.parts)+2, minShare)))
	var wg sync.WaitGroup
	errs := make([]error, len(m.parts))
	for i, p := range m.parts {
		if p.started {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.read(ctx, p, share)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, false, err
		}
	}
	var out []map[string]types.AttributeValue
	for len(out) <= n {
		var best *partition
		for _, p := range m.parts {
			for len(p.buf) == 0 && !p.done {
				if err := m.read(ctx, p, int32(n+1-len(out))); err != nil {
					return nil, false, err
				}
			}
			if len(p.buf) > 0 && (best == nil || m.before(entrySort(p.buf[0]), entrySort(best.buf[0]))) {
				best = p
			}
		}
		if best == nil {
			return out, false, nil
		}
		if len(out) == n {
			return out, true, nil
		}
		out = append(out, best.buf[0])
		best.buf = best.buf[1:]
	}
	return out, true, nil
}

func (m *merger) before(a, b []byte) bool {
	if m.desc {
		return bytes.Compare(a, b) > 0
	}
	return bytes.Compare(a, b) < 0
}

// read queries up to limit more entries of p.
func (m *merger) read(ctx context.Context, p *partition, limit int32) error {
	expr := "#ik = :ik"
	values := map[string]types.AttributeValue{":ik": &types.AttributeValueMemberS{Value: p.hash}}
	if m.cond.expr != "" {
		expr += " AND " + m.cond.expr
	}
	if m.cond.lo != nil {
		values[":lo"] = &types.AttributeValueMemberB{Value: m.cond.lo}
	}
	if m.cond.hi != nil {
		values[":hi"] = &types.AttributeValueMemberB{Value: m.cond.hi}
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(m.s.tables.Index),
		KeyConditionExpression:    aws.String(expr),
		ExpressionAttributeNames:  map[string]string{"#ik": schema.AttrIndexKey},
		ExpressionAttributeValues: values,
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(!m.desc),
		Limit:                     aws.Int32(max(limit, 1)),
		ExclusiveStartKey:         p.next,
	}
	if m.cond.expr != "" {
		in.ExpressionAttributeNames["#is"] = schema.AttrIndexSort
	}
	if !p.started && m.after != nil {
		in.ExclusiveStartKey = indexEntry{hash: p.hash, sort: m.after}.key()
	}
	out, err := m.s.client.Query(ctx, in)
	if err != nil {
		return failed("query index partition "+p.hash, err)
	}
	p.buf = append(p.buf, out.Items...)
	p.started, p.next, p.done = true, out.LastEvaluatedKey, out.LastEvaluatedKey == nil
	return nil
}
