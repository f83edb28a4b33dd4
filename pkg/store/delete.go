package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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
	key, ifMatch := w.Key, w.IfMatch
	op := "delete " + key.DataKey()
	// uncertain is set once a delete got no answer: it may have removed
	// the item (sent, at that revision), so the item's absence is no proof
	// that the precondition failed, and another item on the key may have
	// come after it.
	uncertain := false
	var sent uds.Revision
	for attempt := range maxWriteAttempts {
		old, head, err := s.readForWrite(ctx, &w)
		switch {
		case err != nil:
			return false, err
		case old == nil && ifMatch.IsSet() && uncertain:
			return false, unknownOutcome(op, "the item is gone")
		case old == nil && ifMatch.IsSet():
			return false, uds.ErrPrecondition
		case old == nil:
			return false, nil
		case uncertain && decodeMeta(key, old).Revision() != sent:
			return false, unknownOutcome(op, "the key holds another item")
		case refusesWriter(ifMatch, old):
			return false, uds.ErrForbidden
		case !ifMatch.Matches(decodeMeta(key, old).Revision()):
			return false, uds.ErrPrecondition
		}
		who, _ := owner(key.App, old)
		release := charged(old).Negate()
		entries := s.indexUpkeep(key, w.Indexes, storedData(key, old), nil)
		if w.History.On() {
			ch := s.keepVersion(key, w.History, head, old, &w.Subject, s.writeTime(), maxPrunes)
			ch.actions = append(ch.actions, entries...)
			outcome, err := s.commitKeeping(ctx, op, s.deleteAction(key, old), key.App, who, release, ch)
			switch {
			case err != nil:
				return false, err
			case outcome == written:
				return true, nil
			}
			continue // changed since it was read
		}
		if release == (uds.Usage{}) && len(entries) == 0 {
			// An item the stream counts (or one never counted) goes
			// alone; the stream releases it.
			sent = decodeMeta(key, old).Revision()
			outcome, err := s.deleteAlone(ctx, op, s.deleteAction(key, old).Delete, attempt)
			switch {
			case err != nil:
				return false, err
			case outcome == written:
				s.removeObjects(ctx, old)
				return true, nil
			case outcome == unanswered:
				uncertain = true
			}
			continue
		}
		actions := []types.TransactWriteItem{s.deleteAction(key, old)}
		if release != (uds.Usage{}) {
			actions = append(actions, s.usageChange(key.App, who, release))
		}
		refused, err := s.transact(ctx, op, append(actions, entries...)...)
		switch {
		case err != nil:
			return false, err
		case refused.conditionFailed(0):
			continue // changed since it was read
		case refused != nil:
			return false, failed(op, errUnexpectedCancel(refused))
		}
		s.removeObjects(ctx, old)
		return true, nil
	}
	return false, &uds.UnavailableError{Op: op, Err: errContended}
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

// deleteAlone removes an item with one conditional DeleteItem. The SDK
// does not retry it: a retry of a removal whose answer was lost would be
// refused by the condition, and only the caller, reading the key again,
// can tell what happened.
func (s *Store) deleteAlone(ctx context.Context, op string, d *types.Delete, attempt int) (writeOutcome, error) {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 d.TableName,
		Key:                       d.Key,
		ConditionExpression:       d.ConditionExpression,
		ExpressionAttributeNames:  d.ExpressionAttributeNames,
		ExpressionAttributeValues: d.ExpressionAttributeValues,
	}, withoutRetries)
	switch {
	case err == nil:
		return written, nil
	case isConditionFailed(err):
		return raced, nil
	}
	return unansweredOrFailed(ctx, op, err, attempt)
}
