package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// dropPerRound bounds the versions one transaction of DropHistory removes:
// with the head and one usage change per owner they stay within
// DynamoDB's 100 actions.
const dropPerRound = 80

// DropHistory removes every version kept of an item, and its delete
// markers, releasing what each held; the item itself stays. It returns
// how many versions (not markers) it removed. Only w.Key and
// w.IfMatch.Creator count: a caller other than the creator of the item
// (or, once it is deleted, of every kept version) is refused with
// uds.ErrForbidden, as in an owner-write namespace. Each round is one
// transaction of up to dropPerRound removals, their releases and the head
// written on the revision read, so a round that races a write of the item
// reads again. Versions about to expire are left to DynamoDB's TTL, which
// releases them.
func (s *Store) DropHistory(ctx context.Context, w uds.Write) (int, error) {
	key := w.Key
	op := "drop history of " + key.DataKey()
	removed := 0
	for attempt := 0; attempt < maxWriteAttempts; {
		got, err := s.readHistory(ctx, key, metaProjection, schema.HeadVersion)
		head := got.head
		if err != nil || len(head.kept) == 0 {
			return removed, err
		}
		if !s.mayDrop(w, got) {
			return removed, uds.ErrForbidden
		}
		now := s.now()
		var actions []types.TransactWriteItem
		deltas := ownerDeltas{}
		var rest []keptVersion
		versions := 0
		for _, k := range head.kept {
			switch {
			case k.expiresAt != 0 && k.expiresAt <= now.Add(expiryMargin).UnixMilli():
			case len(actions) == dropPerRound:
				rest = append(rest, k)
			default:
				actions = append(actions, s.removeKept(key, k, deltas))
				if !k.deleted {
					versions++
				}
			}
		}
		deltas.each(func(app, owner string, d uds.Usage) { actions = append(actions, s.usageChange(app, owner, d)) })
		actions = append(actions, s.headPut(key, head, rest, head.last))
		if got.item != nil {
			// The creator checked stays the item's while the versions go.
			actions = append(actions, s.itemUnchanged(key, got.item))
		}
		refused, err := s.transact(ctx, op, actions...)
		switch {
		case err != nil:
			return removed, err
		case refused == nil && len(rest) == 0:
			return removed + versions, nil
		case refused == nil:
			removed += versions
			continue
		}
		if !refused.anyConditionFailed() {
			return removed, failed(op, errUnexpectedCancel(refused))
		}
		attempt++ // the item or its history changed: read again
	}
	return removed, &uds.UnavailableError{Op: op, Err: errContended}
}

// mayDrop reports whether w's precondition lets it drop the history read:
// with a creator named, the item (or, with none, every kept version) must
// be that creator's.
func (s *Store) mayDrop(w uds.Write, got historyRead) bool {
	switch {
	case w.IfMatch.Creator == "":
		return true
	case got.item != nil:
		return !refusesWriter(w.IfMatch, stateOf(w.Key, got.item))
	}
	for _, k := range got.head.kept {
		if !k.deleted && k.owner != ownerKey(w.App, w.IfMatch.Creator) {
			return false
		}
	}
	return true
}

// itemUnchanged checks that an item is still at the revision old shows.
func (s *Store) itemUnchanged(key uds.Key, old map[string]types.AttributeValue) types.TransactWriteItem {
	names := map[string]string{"#k": schema.AttrDataKey}
	values := map[string]types.AttributeValue{}
	check := &types.ConditionCheck{
		TableName:                aws.String(s.table(key)),
		Key:                      keyAV(key),
		ConditionExpression:      aws.String("attribute_exists(#k) AND " + exactRevision(old, names, values)),
		ExpressionAttributeNames: names,
	}
	if len(values) > 0 {
		check.ExpressionAttributeValues = values
	}
	return types.TransactWriteItem{ConditionCheck: check}
}
