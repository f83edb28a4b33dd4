package store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// A namespace's keys are listed for an operator as an export walks an
// app's data (export.go): owner by owner, through the owner index of the
// key-value table and then of the list table, keeping the entries of the
// namespace's keys as DynamoDB reads them. Items are keyed by hash alone,
// so no index holds a namespace's keys in order; the owner indexes do
// hold every item of an app, by owner. A page stops once it has
// evaluated its limit of index entries, even if fewer matched, so that
// its cost is bounded whatever the share of the namespace among the
// owners' items: a page reads at most limit index entries, in at most
// limit queries (a query that finds none counts as one entry), plus the
// reads of the app's owners it walks and one eventually consistent
// BatchGetItem per hundred keys found, which reads their display fields.

// KeysQuery selects one page of a namespace's keys.
type KeysQuery struct {
	App, Namespace string
	// User, when set, walks that owner's items only: in a private
	// namespace, the caller's key space.
	User string
	// After is where the previous page ended (the zero position: the
	// start).
	After ExportPosition
	// Limit is how many index entries the page evaluates at most.
	Limit int
}

// KeyEntry is one key of a namespace, with what a listing shows of its
// item.
type KeyEntry struct {
	// Key is the item's key (SortKey set for a list item).
	Key uds.Key
	// List is set for a list item.
	List bool
	// Owner is whom the item is charged to.
	Owner string
	// Size is the item's size in the quota's byte measure.
	Size        int64
	ClassName   string
	UpdatedDate time.Time
	// ContentType is a binary value's, "" for a JSON value.
	ContentType string
	// ExpiresAt is zero for an item that does not expire.
	ExpiresAt time.Time
}

// KeysPage is one page of a namespace's keys, in the order the owner
// indexes hold them; Next is nil on the last page.
type KeysPage struct {
	Keys []KeyEntry
	Next *ExportPosition
}

// keysProjection is what a listing reads of each item it shows. The read
// is eventually consistent: DynamoDB charges it by the items' whole
// size, whatever it projects, and an operator's view of an item a second
// old is no harm (the item itself is read as any other when opened).
var keysProjection = &projection{
	eventual: true,
	expr:     "#k, #s, #o, #z, #cn, #ud, #ct, #xm",
	names: map[string]string{"#k": schema.AttrDataKey, "#s": schema.AttrSortKey, "#o": schema.AttrOwnerKey,
		"#z": schema.AttrItemSize, "#cn": schema.AttrClassName, "#ud": schema.AttrUpdatedDate,
		"#ct": schema.AttrContentType, "#xm": schema.AttrExpiresAtMillis},
}

// NamespaceKeys reads one page of a namespace's keys after q.After.
func (s *Store) NamespaceKeys(ctx context.Context, q KeysQuery) (KeysPage, error) {
	w, err := s.walkKeys(ctx, q)
	if err != nil {
		return KeysPage{}, err
	}
	keys, err := w.read(ctx)
	return KeysPage{Keys: keys, Next: w.next}, err
}

// walkKeys finds the index entries of one page of a namespace's keys
// after q.After (the walker's entries, and where the page stopped).
func (s *Store) walkKeys(ctx context.Context, q KeysQuery) (*keysWalker, error) {
	w := &keysWalker{s: s, q: q, budget: q.Limit}
	pos := q.After
	switch {
	case q.User != "":
		if !pos.Done {
			if pos.Owner == "" {
				pos = ExportPosition{Owner: q.User}
			}
			if err := w.owner(ctx, pos); err != nil {
				return nil, err
			}
		}
	case pos.Owner != "" && !pos.Done:
		// Finish the owner the previous page stopped in.
		if err := w.owner(ctx, pos); err != nil {
			return nil, err
		}
	}
	if q.User == "" && w.next == nil {
		last := pos.Owner
		err := s.eachOwner(ctx, q.App, last, min(q.Limit, exportOwnersPerRead), func(owner string) (bool, error) {
			if w.budget <= 0 {
				// Another owner follows: the next page starts with it.
				w.next = &ExportPosition{Owner: last, Done: true}
				return false, nil
			}
			last = owner
			err := w.owner(ctx, ExportPosition{Owner: owner})
			return err == nil && w.next == nil, err
		})
		if err != nil {
			return nil, err
		}
	}
	return w, nil
}

// keysWalker collects the index entries of one page of keys.
type keysWalker struct {
	s *Store
	q KeysQuery
	// budget is how many index entries the page may still evaluate.
	budget int
	// entries are the namespace's entries found, each with its table.
	entries []keyEntryFound
	// next is where the page stopped, once it did.
	next *ExportPosition
}

type keyEntryFound struct {
	key  uds.Key
	list bool
	// owner is the owner whose index entry it is.
	owner string
}

// after is the position just after the entry.
func (e keyEntryFound) after() ExportPosition {
	return ExportPosition{Owner: e.owner, List: e.list, DataKey: e.key.DataKey(), SortKey: e.key.SortKey}
}

// owner adds the owner's entries from pos on: the rest of the table pos
// is in, then the list table if pos is in the key-value table.
func (w *keysWalker) owner(ctx context.Context, pos ExportPosition) error {
	if !pos.List {
		if err := w.table(ctx, pos); err != nil || w.next != nil {
			return err
		}
		pos = ExportPosition{Owner: pos.Owner, List: true}
	}
	return w.table(ctx, pos)
}

// table adds the owner's entries of one table after pos's key, until the
// page's budget is spent or the owner has no more entries there.
func (w *keysWalker) table(ctx context.Context, pos ExportPosition) error {
	in := w.s.ownerIndexQuery(w.q.App, w.q.Namespace, pos)
	for {
		if w.budget <= 0 {
			w.next = &pos
			return nil
		}
		in.Limit = aws.Int32(int32(w.budget))
		out, err := w.s.client.Query(ctx, in)
		if err != nil {
			if indexNotReady(err) {
				return errIndexNotReady
			}
			return failed("list the keys of "+w.q.App+"/"+w.q.Namespace, err)
		}
		w.budget -= max(1, int(out.ScannedCount))
		for _, e := range out.Items {
			if k, ok := keyOf(e); ok {
				w.entries = append(w.entries, keyEntryFound{key: k, list: pos.List, owner: pos.Owner})
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		pos = ExportPosition{Owner: pos.Owner, List: pos.List, DataKey: str(out.LastEvaluatedKey, schema.AttrDataKey),
			SortKey: str(out.LastEvaluatedKey, schema.AttrSortKey)}
	}
}

// read reads the display fields of the entries found, leaving out items
// deleted or expired since the index was read.
func (w *keysWalker) read(ctx context.Context) ([]KeyEntry, error) {
	keys := make([]uds.Key, len(w.entries))
	for i, e := range w.entries {
		keys[i] = e.key
	}
	found, err := w.s.batchGet(ctx, keys, keysProjection)
	if err != nil {
		return nil, err
	}
	now := w.s.now()
	out := make([]KeyEntry, 0, len(keys))
	for _, e := range w.entries {
		av := found[itemID(e.key)]
		if av == nil || expired(av, now) {
			continue
		}
		owner, _ := owner(w.q.App, av)
		entry := KeyEntry{Key: e.key, List: e.list, Owner: owner, Size: num(av, schema.AttrItemSize),
			ClassName: str(av, schema.AttrClassName), UpdatedDate: parseTime(str(av, schema.AttrUpdatedDate)),
			ContentType: str(av, schema.AttrContentType)}
		if ms := num(av, schema.AttrExpiresAtMillis); ms > 0 {
			entry.ExpiresAt = time.UnixMilli(ms).UTC()
		}
		out = append(out, entry)
	}
	return out, nil
}
