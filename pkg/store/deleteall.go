package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/safe"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

const (
	// maxTxActions is TransactWriteItems' limit of actions per call.
	maxTxActions = 100
	// maxTxBytes bounds the size of the items one transaction deletes,
	// under DynamoDB's 4 MB per transaction, with room for the attributes
	// the quota measure leaves out.
	maxTxBytes = 3_500_000
	// deleteWorkers is how many transactions are in flight at once. They
	// all move the same owners' usage records, which DynamoDB lets only one
	// transaction hold at a time, so more would mostly wait.
	deleteWorkers = 4
)

// listEntry is an item to remove as it was read: its key and the state its
// removal must match. A delete-all removes it at the revision read; a
// reclaim of an expired item (expiredOnly) while it is still the expired
// item read, with the same expiry, owner and size.
type listEntry struct {
	key         uds.Key
	state       map[string]types.AttributeValue
	expiredOnly bool
	// creator, when set, keeps the removal to items that subject created
	// (an owner-write namespace).
	creator string
}

// DeleteList removes every item of a list. Keys are read page by page
// (strongly consistent) while transactions of up to 100 actions delete
// them: each deletes its items at the revision that was read and releases
// exactly their sizes from their owners' usage. An item that changed or
// went meanwhile (a concurrent delete-all, DELETE or PUT) fails its
// condition; DynamoDB returns its current state, and the transaction is
// sent again without the items that are gone. Nothing is released twice.
// When ctx ends first, the result is a *uds.IncompleteError that says how
// many items were deleted: the caller answers so, never silently.
//
// w names the list (w.Key) and the caller. With w.IfMatch.Creator set (an
// owner-write namespace), a list that holds an item another subject
// created is refused with uds.ErrForbidden before anything is deleted,
// and only that creator's items are ever removed: one that another subject
// puts in the list meanwhile stays. In a namespace with history
// (w.History) each item is deleted as Delete deletes it, keeping its last
// version under a delete marker of w.Subject's.
func (s *Store) DeleteList(ctx context.Context, w uds.Write) (int, error) {
	list, creator := w.Key, w.IfMatch.Creator
	if creator != "" {
		foreign, err := s.holdsOthers(ctx, list, creator)
		if err != nil {
			return 0, err
		}
		if foreign {
			return 0, &uds.ForbiddenError{Reason: "the list holds items other callers created; in an owner-write namespace a caller can delete all of a list only when every item in it is their own"}
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan []listEntry, deleteWorkers)
	var (
		wg      sync.WaitGroup
		deleted atomic.Int64
	)
	for range deleteWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A panic fails the delete-all like an error (the reader stops
			// when the context is cancelled), not the process.
			err := safe.Call(func() {
				for batch := range batches {
					n, err := s.removeEntries(ctx, "delete list "+list.DataKey(), &w, batch)
					deleted.Add(int64(n))
					if err != nil {
						cancel(err)
						return
					}
				}
			})
			if err != nil {
				cancel(err)
			}
		}()
	}
	readErr := s.readEntries(ctx, &w, batches)
	close(batches)
	wg.Wait()
	n := int(deleted.Load())
	// A failed batch cancels the context with its error as the cause;
	// report that rather than the cancellation it caused.
	err := readErr
	if cause := context.Cause(ctx); cause != nil && (err == nil || errors.Is(err, context.Canceled)) {
		err = cause
	}
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return n, &uds.IncompleteError{Deleted: n}
	default:
		return n, fmt.Errorf("delete list %s after %d items: %w", list.DataKey(), n, err)
	}
}

// readEntries queries the keys, revisions, creators, owners and sizes of
// the list w names (whole items, where history keeps them or indexes name
// their values) and sends them in batches that fit one transaction with
// what their removal adds: their owners' usage changes, and per item a
// kept version, a delete marker and a head, and its index entries. With
// w.IfMatch.Creator set, it leaves other creators' items out.
func (s *Store) readEntries(ctx context.Context, w *uds.Write, batches chan<- []listEntry) error {
	list, creator := w.Key, w.IfMatch.Creator
	per := removalShare(w)
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.List),
		KeyConditionExpression: aws.String("#k = :k"),
		ProjectionExpression:   aws.String("#k, #s, #o, #z, #v, #cd, #cb, #do, #sc"),
		ExpressionAttributeNames: map[string]string{
			"#k": schema.AttrDataKey, "#s": schema.AttrSortKey, "#o": schema.AttrOwnerKey, "#z": schema.AttrItemSize,
			"#v": schema.AttrVersion, "#cd": schema.AttrCreatedDate, "#cb": schema.AttrCreatedBySubject,
			"#do": schema.AttrDataObject, "#sc": schema.AttrStreamCounted,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: list.DataKey()}},
		ConsistentRead:            aws.Bool(true),
	}
	if needsOf(w).whole {
		in.ProjectionExpression, in.ExpressionAttributeNames = nil, map[string]string{"#k": schema.AttrDataKey}
	}
	var (
		batch  []listEntry
		owners = map[string]bool{}
		bytes  int64
	)
	send := func() error {
		select {
		case batches <- batch:
			batch, owners, bytes = nil, map[string]bool{}, 0
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return failed("read list "+list.DataKey(), err)
		}
		for _, it := range out.Items {
			if creator != "" && str(it, schema.AttrCreatedBySubject) != creator {
				continue
			}
			who, _ := owner(list.App, it)
			size := num(it, schema.AttrItemSize) * per.copies
			actions := (len(batch)+1)*per.actions + len(owners)
			if !owners[who] {
				actions++
			}
			fits := actions < maxTxActions
			if len(batch) > 0 && (!fits || bytes+size > maxTxBytes) {
				if err := send(); err != nil {
					return err
				}
			}
			key := list
			key.SortKey = str(it, schema.AttrSortKey)
			batch = append(batch, listEntry{key: key, state: it, creator: creator})
			owners[who] = true
			bytes += size
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if len(batch) > 0 {
		return send()
	}
	return nil
}

// removeEntries removes a batch of items in one plan, which releases
// their owners' usage and removes their index entries in the same
// transaction, dropping and refreshing entries that changed until it
// commits. A delete-all's removals are the writes of w (its key aside):
// they keep versions and move index entries as a delete of w does. A
// removal as read (w nil: a reclaim, strays, an upload discarded) removes
// the entries of the indexes the item's namespace declares. It returns
// how many items it removed.
func (s *Store) removeEntries(ctx context.Context, op string, w *uds.Write, pending []listEntry) (int, error) {
	return s.remove(ctx, op, &removeVerb{s: s, w: w, pending: pending})
}

// remove runs a removal of listed items, split in halves while it needs
// more than one transaction: refreshed items brought new owners, or index
// entries.
func (s *Store) remove(ctx context.Context, op string, rv *removeVerb) (int, error) {
	return inHalves(rv.pending, func(pending []listEntry) (int, []listEntry, error) {
		v := *rv
		v.pending = pending
		if _, err := s.run(ctx, op, &v); err != nil {
			return 0, v.pending, err
		}
		return len(v.pending), nil, nil
	})
}

// removeVerb is a removal of listed items as the commit loop runs it.
type removeVerb struct {
	s       *Store
	w       *uds.Write
	pending []listEntry
	// erasing, when set, is the erase whose removals these are: its tally
	// counts them (erase.go, planEraseTally).
	erasing *erasure
}

func (rv *removeVerb) plan(ctx context.Context, uncertain bool) (*plan, error) {
	if uncertain && len(rv.pending) == 0 {
		// Every item went since an attempt that was not answered: that
		// attempt committed, and what waits for its commit (the objects
		// of the values it removed) runs now.
		return nil, nil
	}
	heads := map[string]historyHead{}
	if rv.w != nil && needsOf(rv.w).head {
		keys := make([]uds.Key, len(rv.pending))
		for i, e := range rv.pending {
			keys[i] = e.key
		}
		var err error
		if heads, err = rv.s.readHeads(ctx, keys); err != nil {
			return nil, err
		}
	}
	changes := make([]*change, len(rv.pending))
	for i, e := range rv.pending {
		old := stateOf(e.key, e.state)
		if rv.w == nil {
			changes[i] = &change{kind: removeItem, key: e.key, old: old, item: rv.s.removeAction(e), owner: old.owner, expiredOnly: e.expiredOnly}
			continue
		}
		one := *rv.w
		one.Key = e.key
		c, err := rv.s.removeChange(&one, old)
		if err != nil {
			return nil, err
		}
		c.head = heads[historyKey(e.key)]
		changes[i] = c
	}
	p := newPlan(rv.s.writeTime(), 1, changes...)
	p.erasing = rv.erasing
	return p, nil
}

// refused keeps the items that changed since they were read while they
// are still there (and, for a reclaim, still expired) at their current
// state, and drops the others.
func (rv *removeVerb) refused(_ context.Context, r *refusal, _ bool) (bool, error) {
	var next []listEntry
	changed := false
	now := rv.s.now()
	for i, e := range rv.pending {
		refused, current := r.item(i)
		if !refused {
			next = append(next, e)
			continue
		}
		changed = true
		keep := current != nil && (!e.expiredOnly || expired(current, now)) &&
			(e.creator == "" || str(current, schema.AttrCreatedBySubject) == e.creator) &&
			rv.erasing.stillOwns(e.key.App, current)
		if keep {
			next = append(next, listEntry{key: e.key, state: current, expiredOnly: e.expiredOnly, creator: e.creator})
		}
	}
	rv.pending = next
	return changed, nil
}

// removeAction deletes an entry's item if it is still as the entry says.
func (s *Store) removeAction(e listEntry) types.TransactWriteItem {
	if !e.expiredOnly {
		return s.deleteAction(e.key, e.state)
	}
	names := map[string]string{"#xm": schema.AttrExpiresAtMillis, "#o": schema.AttrOwnerKey, "#z": schema.AttrItemSize}
	values := map[string]types.AttributeValue{":xm": e.state[schema.AttrExpiresAtMillis]}
	cond := "#xm = :xm AND "
	if o, ok := e.state[schema.AttrOwnerKey]; ok {
		// The way the item is counted decides what its removal releases
		// (usage.go, charged), so it is part of the condition.
		cond += "#o = :o AND #z = :z AND "
		values[":o"], values[":z"] = o, e.state[schema.AttrItemSize]
		names["#sc"] = schema.AttrStreamCounted
		if streamCounted(e.state) {
			cond += "#sc = :sc"
			values[":sc"] = &types.AttributeValueMemberBOOL{Value: true}
		} else {
			cond += "attribute_not_exists(#sc)"
		}
	} else {
		cond += "attribute_not_exists(#o)"
		delete(names, "#z")
	}
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName:                           aws.String(s.table(e.key)),
		Key:                                 keyAV(e.key),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// holdsOthers reports whether a list holds an item that another subject
// than creator created and that has not expired: a strongly consistent
// query that returns only such items and stops at the first.
func (s *Store) holdsOthers(ctx context.Context, list uds.Key, creator string) (bool, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.tables.List),
		KeyConditionExpression:   aws.String("#k = :k"),
		FilterExpression:         aws.String("(attribute_not_exists(#cb) OR #cb <> :me) AND (attribute_not_exists(#xm) OR #xm > :now)"),
		ProjectionExpression:     aws.String("#k"),
		ExpressionAttributeNames: map[string]string{"#k": schema.AttrDataKey, "#cb": schema.AttrCreatedBySubject, "#xm": schema.AttrExpiresAtMillis},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":k":   &types.AttributeValueMemberS{Value: list.DataKey()},
			":me":  &types.AttributeValueMemberS{Value: creator},
			":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(s.now().UnixMilli(), 10)},
		},
		ConsistentRead: aws.Bool(true),
	}
	for {
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return false, failed("read list "+list.DataKey(), err)
		}
		if len(out.Items) > 0 {
			return true, nil
		}
		if out.LastEvaluatedKey == nil {
			return false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
