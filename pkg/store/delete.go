package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Delete removes one item. Deleting nothing succeeds (DELETE is
// idempotent) unless w.IfMatch is set: then the item must exist at one of
// the named revisions, else uds.ErrPrecondition; IfMatch.Creator refuses
// another creator's item with uds.ErrForbidden. In a namespace with
// history (w.History) the item becomes a kept version under a delete
// marker of w.Subject's.
//
// It reads the item's revision, owner and size, then deletes exactly that
// revision and releases exactly what a transaction charged for it in the
// same transaction; an item the stream counts (written in streamed mode)
// goes with one conditional DeleteItem and the stream releases it. If
// another writer got in between, it starts over from the new state.
func (s *Store) Delete(ctx context.Context, w uds.Write) error {
	_, err := s.deleteOne(ctx, w)
	return err
}

// deleteOne is Delete, reporting whether it removed an item: a delete-all
// counts only what it removed itself.
func (s *Store) deleteOne(ctx context.Context, w uds.Write) (bool, error) {
	dv := &deleteVerb{s: s, w: &w, op: "delete " + w.Key.DataKey()}
	p, err := s.run(ctx, dv.op, dv)
	if err != nil {
		return false, plainRefusal(err)
	}
	return p != nil && !dv.absent, nil
}

// deleteVerb is a delete as the commit loop runs it.
type deleteVerb struct {
	s  *Store
	w  *uds.Write
	op string
	// sent is the revision the last attempt removed: once an attempt went
	// unanswered, another revision on the key is another item, which may
	// have come after the removal.
	sent uds.Revision
	// absent is set when the key held nothing to delete.
	absent bool
}

func (dv *deleteVerb) plan(ctx context.Context, uncertain bool) (*plan, error) {
	av, head, err := dv.s.readForWrite(ctx, dv.w)
	if err != nil {
		return nil, err
	}
	old := stateOf(dv.w.Key, av)
	dv.absent = old == nil
	switch {
	case old == nil && dv.w.IfMatch.IsSet() && uncertain:
		return nil, unknownOutcome(dv.op, "the item is gone")
	case old == nil:
		// Nothing there: deleting nothing succeeds, unless it was to be
		// at a revision.
		if dv.w.IfMatch.IsSet() {
			return nil, uds.ErrPrecondition
		}
		return newPlan(dv.s.writeTime(), maxPrunes), nil
	case uncertain && old.revision() != dv.sent:
		return nil, unknownOutcome(dv.op, "the key holds another item")
	}
	now := dv.s.writeTime()
	c, err := dv.s.removeChange(dv.w, old)
	if err != nil {
		return nil, err
	}
	c.head, dv.sent = head, old.revision()
	return newPlan(now, maxPrunes, c), nil
}

func (dv *deleteVerb) refused(_ context.Context, r *refusal, _ bool) (bool, error) {
	refused, _ := r.item(0)
	// The item changed since it was read.
	return refused, nil
}

// removeChange decides a delete of w of the item old (live): its checks,
// then the removal of exactly the revision read. In a namespace with
// history the item becomes a kept version under a delete marker of the
// writer's.
func (s *Store) removeChange(w *uds.Write, old *itemState) (*change, error) {
	switch {
	case refusesWriter(w.IfMatch, old):
		return nil, uds.ErrForbidden
	case !w.IfMatch.Matches(old.revision()):
		return nil, uds.ErrPrecondition
	}
	return &change{kind: removeItem, key: w.Key, w: w, old: old, item: s.deleteAction(w.Key, old.av), owner: old.owner}, nil
}

// deleteAction deletes the item at key if it is still at the revision old
// shows, returning its current state when it is not.
func (s *Store) deleteAction(key uds.Key, old map[string]types.AttributeValue) types.TransactWriteItem {
	names := map[string]string{"#k": schema.AttrDataKey}
	values := map[string]types.AttributeValue{}
	cond := "attribute_exists(#k) AND " + exactRevision(old, names, values)
	d := &types.Delete{
		TableName:                           aws.String(s.table(key)),
		Key:                                 keyAV(key),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if len(values) > 0 {
		d.ExpressionAttributeValues = values
	}
	return types.TransactWriteItem{Delete: d}
}
