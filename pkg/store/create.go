package store

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Create stores a new item: uds.ErrConflict if the key is taken, a
// *uds.QuotaError if the item does not fit its owner's limit. The item and
// its charge to the owner's usage are one transaction. When both
// conditions fail, the conflict wins: the key being taken is the answer
// that stays true whatever the quota. In a namespace with history
// (w.History) the item takes the version after the last its key used, so
// that it follows the versions kept of the key's earlier items.
func (s *Store) Create(ctx context.Context, w uds.Write) (uds.Item, error) {
	v, err := encodeValue(&w)
	if err != nil {
		return uds.Item{}, err
	}
	it := newItem(&w, s.writeTime())
	charge, lim, err := s.usageAction(ctx, w.App, w.Subject, uds.Usage{Bytes: v.size, Items: 1})
	if err != nil {
		return uds.Item{}, err
	}
	put := types.TransactWriteItem{Put: &types.Put{
		TableName:                           aws.String(s.table(w.Key)),
		Item:                                encodeItem(&it, v),
		ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames:            map[string]string{"#k": schema.AttrDataKey},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
	op := "create " + w.DataKey()
	// An expired item on the key, or expired items of the owner that
	// fill its quota, are reclaimed and the create tried again, once; a
	// history head that moved is read again, as often as a write races.
	reclaimed := false
	entries := s.indexUpkeep(w.Key, w.Indexes, nil, w.Data)
	for attempt := 0; attempt < maxWriteAttempts; attempt++ {
		actions := []types.TransactWriteItem{put, charge}
		if w.History.On() {
			head, err := s.readHead(ctx, w.Key)
			if err != nil {
				return uds.Item{}, err
			}
			it.Version = head.last + 1
			put.Put.Item[schema.AttrVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(it.Version, 10)}
			actions = append(actions, s.headUnchanged(w.Key, head))
		}
		refused, err := s.transact(ctx, op, append(actions, entries...)...)
		switch {
		case err != nil:
			return uds.Item{}, err
		case refused == nil:
			return it, nil
		case refused.conditionFailed(0) && !reclaimed && expired(refused.item(0), s.now()):
			s.reclaim(ctx, w.App, []listEntry{{key: w.Key, state: refused.item(0)}})
			reclaimed = true
		case refused.conditionFailed(0):
			return uds.Item{}, uds.ErrConflict
		case refused.conditionFailed(1) && !reclaimed && s.reclaimOwner(ctx, w.App, w.Subject) > 0:
			reclaimed = true
		case refused.conditionFailed(1):
			return uds.Item{}, s.quotaError(ctx, w.App, w.Subject, lim, refused.item(1))
		case refused.conditionFailed(2):
			// A delete of the key's earlier item moved its history.
		default:
			return uds.Item{}, failed(op, errUnexpectedCancel(refused))
		}
	}
	return uds.Item{}, &uds.UnavailableError{Op: op, Err: errContended}
}

// newItem is the item a create of w makes at now: version 1, created and
// updated by the writer.
func newItem(w *uds.Write, now time.Time) uds.Item {
	return uds.Item{
		Key: w.Key, Data: w.Data, Binary: w.Binary, ClassName: w.ClassName,
		CreatedDate: now, CreatedBy: w.Subject, UpdatedDate: now, UpdatedBy: w.Subject,
		Version: 1, ExpiresAt: w.ExpiresAt,
	}
}
