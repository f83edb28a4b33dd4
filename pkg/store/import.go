package store

import (
	"bytes"
	"context"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Import writes exported records back: each item as it was (owner, audit
// fields, version, expiry, so its ETags stay valid) where its key is free,
// and each kept version and delete marker into its item's history
// (history_import.go),
// charged to its owner's usage in the same transaction. Limits are not
// applied: an import is an admin's restore, and an owner may come out over
// their limit (their next growing write is refused until they are under
// it again). A record whose key holds an identical item is skipped, so an
// interrupted import is resumed by running it again; one whose key holds a
// different item is a conflict, reported and left alone. Records that
// expired are skipped.
//
// Records go in transactions of up to maxImportActions writes (puts plus
// one usage change per owner), each all or none with a client request
// token: a write whose answer was lost is recognised when it is retried,
// and a process that dies leaves whole transactions behind, which the next
// run skips.
func (s *Store) Import(ctx context.Context, app string, records []uds.Record) (uds.ImportResult, error) {
	var res uds.ImportResult
	if err := s.refuseErasingNamed(ctx, app, records); err != nil {
		return res, err
	}
	now := s.now()
	pending := make([]importEntry, 0, len(records))
	var kept []importEntry
	seen := make(map[string]int, len(records))
	// Each namespace's policy is read once an import: its records mostly
	// share a few namespaces.
	policyOf := map[string]uds.Policy{}
	for i := range records {
		rec := &records[i]
		// One transaction cannot write an item twice, and one request has
		// no business doing so; an item's kept versions are told apart by
		// their numbers.
		id := itemID(rec.Key)
		if rec.Kept() {
			id += "\x00" + strconv.FormatInt(rec.Version, 10)
		}
		if j, dup := seen[id]; dup {
			return uds.ImportResult{}, &uds.BatchError{Index: i, Err: uds.Invalid("key", "repeats the key of record %d", j)}
		}
		seen[id] = i
		if importExpired(rec, now) {
			res.Expired++
			continue
		}
		if rec.Deleted {
			kept = append(kept, importEntry{index: i, rec: rec})
			continue
		}
		v, err := recordValue(rec)
		if err != nil {
			return uds.ImportResult{}, &uds.BatchError{Index: i, Err: err}
		}
		e := importEntry{index: i, rec: rec, value: v}
		if rec.Kept() {
			kept = append(kept, e)
			continue
		}
		// An imported item gets its entries in the indexes its namespace
		// declares, as a create does, and where the namespace keeps
		// history its number must be above those its key used.
		policy, read := policyOf[rec.Key.Namespace]
		if !read {
			if policy, err = s.Policy(ctx, app, rec.Key.Namespace); err != nil {
				return uds.ImportResult{}, err
			}
			policyOf[rec.Key.Namespace] = policy
		}
		e.write = &uds.Write{Key: rec.Key, Data: rec.Data, Indexes: policy.Indexes, History: policy.History}
		e.entries = len(indexEntries(rec.Key, policy.Indexes, rec.Data))
		pending = append(pending, e)
	}
	for len(pending) > 0 {
		n := importGroupSize(pending)
		if err := s.importGroup(ctx, app, pending[:n], &res); err != nil {
			return uds.ImportResult{}, err
		}
		pending = pending[n:]
	}
	if err := s.importKept(ctx, app, kept, &res); err != nil {
		return uds.ImportResult{}, err
	}
	return res, nil
}

// importGroupSize is how many of the pending records the next transaction
// takes: as many as fit its actions (a put each with its index entries,
// and a usage change per owner) and its size.
func importGroupSize(pending []importEntry) int {
	n, size, entries, owners := 0, int64(0), 0, map[string]bool{}
	for ; n < len(pending); n++ {
		e := pending[n]
		// The puts so far with their entries and head checks, this one,
		// the usage changes.
		actions := n + 1 + entries + e.actions() + len(owners)
		if !owners[e.rec.Owner] {
			actions++
		}
		if n > 0 && (actions > maxImportActions || size+e.value.size > maxTxBytes) {
			break
		}
		owners[e.rec.Owner] = true
		size += e.value.size
		entries += e.actions()
	}
	return n
}

// actions counts what the entry's put brings to its transaction beside
// itself: its index entries, and the check of its key's history head.
func (e *importEntry) actions() int {
	if needsOf(e.write).head {
		return e.entries + 1
	}
	return e.entries
}

// maxImportActions bounds the writes of one import transaction, within
// DynamoDB's 100 actions.
const maxImportActions = 100

// importEntry is a record on its way in.
type importEntry struct {
	index int
	rec   *uds.Record
	value encodedValue
	// write is the record as a create of its item: its key, value and
	// the indexes its namespace declares.
	write *uds.Write
	// entries counts the item's index entries.
	entries int
	// expired is an expired item a refusal showed on the record's key,
	// which the import replaces.
	expired *itemState
}

// importGroup writes one group of records in one transaction. Records
// whose key turns out taken are sorted into skipped and conflicts, and the
// rest is sent again without them. A record that replaces an expired item
// adds what importGroupSize could not count (the expired item's index
// entries and its owner's release): a group that then needs more than one
// transaction is sent in halves.
func (s *Store) importGroup(ctx context.Context, app string, group []importEntry, res *uds.ImportResult) error {
	imported, err := inHalves(group, func(group []importEntry) (int, []importEntry, error) {
		iv := &importVerb{s: s, app: app, group: group, res: res}
		p, err := s.run(ctx, "import into "+app, iv)
		switch {
		case err != nil:
			return 0, iv.group, err
		case p == nil:
			// Every record was left out (numbersFree).
			return 0, nil, nil
		}
		return len(p.changes), nil, nil
	})
	res.Imported += imported
	return err
}

// importVerb is a group of imported records as the commit loop runs it.
type importVerb struct {
	s     *Store
	app   string
	group []importEntry
	res   *uds.ImportResult
}

// noLimits holds an import to no limit: it restores what was stored.
var noLimits uds.Limits

// plan creates each record's item as exported, its owner charged, on a
// free key or over an expired item, which it replaces.
func (iv *importVerb) plan(ctx context.Context, _ bool) (*plan, error) {
	heads, err := iv.s.numbersFree(ctx, iv)
	if err != nil || len(iv.group) == 0 {
		return nil, err
	}
	changes := make([]*change, len(iv.group))
	for i, e := range iv.group {
		put := iv.s.importPut(iv.app, e)
		if e.expired != nil {
			names, values := map[string]string{}, map[string]types.AttributeValue{}
			put.ConditionExpression = aws.String(exactRevision(e.expired.av, names, values))
			put.ExpressionAttributeNames, put.ExpressionAttributeValues = names, values
		}
		changes[i] = &change{kind: createItem, key: e.rec.Key, w: e.write, old: e.expired, value: e.value,
			item: types.TransactWriteItem{Put: put}, owner: e.rec.Owner, limits: &noLimits, head: heads[i], numbered: true}
	}
	return newPlan(iv.s.writeTime(), 0, changes...), nil
}

// refused sorts the records whose keys were taken: over an expired item
// the record is tried again, replacing it; the same item stored already
// is skipped; another is a conflict. The others go again without them.
func (iv *importVerb) refused(_ context.Context, r *refusal, _ bool) (bool, error) {
	rest := iv.group[:0:0]
	now := iv.s.now()
	refusedAny := false
	for i, e := range iv.group {
		refused, stored := r.item(i)
		if refused {
			refusedAny = true
		}
		switch {
		case !refused:
			rest = append(rest, e)
		case stored == nil:
			e.expired = nil // the expired item went meanwhile
			rest = append(rest, e)
		case expired(stored, now):
			e.expired = stateOf(e.rec.Key, stored)
			rest = append(rest, e)
		default:
			same, err := sameItem(iv.app, e.rec, stored)
			if err != nil {
				return false, failed("import into "+iv.app, err)
			}
			if same {
				iv.res.Skipped++
			} else {
				iv.res.Conflicts = append(iv.res.Conflicts, uds.ImportConflict{Index: e.index, Key: e.rec.Key, Version: num(stored, schema.AttrVersion)})
			}
		}
	}
	iv.group = rest
	return refusedAny, nil
}

// importPut writes a record's item where its key is free, as it was
// exported: owner key from the record, not from its creator.
func (s *Store) importPut(app string, e importEntry) *types.Put {
	item := encodeItem(&e.rec.Item, e.value)
	item[schema.AttrOwnerKey] = &types.AttributeValueMemberS{Value: ownerKey(app, e.rec.Owner)}
	return &types.Put{
		TableName:                           aws.String(s.table(e.rec.Key)),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames:            map[string]string{"#k": schema.AttrDataKey},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// sameItem reports whether a stored item is the record: same value, class
// name, audit fields, version, expiry and owner.
func sameItem(app string, rec *uds.Record, stored map[string]types.AttributeValue) (bool, error) {
	it, err := decodeItem(rec.Key, stored)
	if err != nil {
		return false, err
	}
	who, counted := owner(app, stored)
	return counted && who == rec.Owner && sameContent(&it, &rec.Item) && it.ClassName == rec.ClassName &&
		it.CreatedDate.Equal(rec.CreatedDate) && it.CreatedBy == rec.CreatedBy &&
		it.UpdatedDate.Equal(rec.UpdatedDate) && it.UpdatedBy == rec.UpdatedBy &&
		it.Version == rec.Version && it.ExpiresAt.Equal(rec.ExpiresAt), nil
}

// sameContent reports whether two items hold the same value: the same
// JSON, or the same bytes of the same content type (or large object).
func sameContent(a, b *uds.Item) bool {
	switch {
	case a.Binary == nil && b.Binary == nil:
		return bytes.Equal(a.Data, b.Data)
	case a.Binary == nil || b.Binary == nil:
		return false
	}
	return a.Binary.ContentType == b.Binary.ContentType && a.Binary.Object == b.Binary.Object &&
		a.Binary.Size == b.Binary.Size && bytes.Equal(a.Binary.Bytes, b.Binary.Bytes)
}
