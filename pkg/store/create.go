package store

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Create stores a new item: uds.ErrConflict if the key is taken, a
// *uds.QuotaError if the item does not fit its owner's limit. In strict
// mode the item and its charge to the owner's usage are one transaction;
// in streamed mode (createStreamed) the item goes alone and the stream
// charges it. When both
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
	lim, streamed, err := s.quotaOf(ctx, &w, w.Subject)
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
	entries := s.indexUpkeep(w.Key, w.Indexes, nil, w.Data)
	if streamed {
		if err := s.checkTracked(ctx, w.App, w.Subject, lim, uds.Usage{Bytes: v.size, Items: 1}); err != nil {
			return uds.Item{}, s.conflictFirst(ctx, w.Key, err)
		}
		return s.createStreamed(ctx, op, it, put.Put, entries)
	}
	var charge types.TransactWriteItem
	if w.History.On() {
		charge, lim, err = s.usageAction(ctx, w.App, w.Subject, uds.Usage{Bytes: v.size, Items: 1})
	} else {
		charge, lim, err = s.usageActionWithin(ctx, w.App, w.Subject, uds.Usage{Bytes: v.size, Items: 1}, lim, uds.Usage{})
	}
	if err != nil {
		return uds.Item{}, err
	}
	// An expired item on the key, or expired items of the owner that
	// fill its quota, are reclaimed and the create tried again, once; a
	// history head that moved is read again, as often as a write races.
	reclaimed := false
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

// createStreamed stores a new item in streamed mode: the item alone (one
// conditional PutItem, or a transaction with its index entries), marked
// as counted by the stream, which charges its owner (streamusage.go). The
// item records a write token, so that a retry whose earlier attempt
// committed without an answer recognises its own item.
func (s *Store) createStreamed(ctx context.Context, op string, it uds.Item, put *types.Put, entries []types.TransactWriteItem) (uds.Item, error) {
	token := newToken()
	put.Item[schema.AttrStreamCounted] = &types.AttributeValueMemberBOOL{Value: true}
	put.Item[schema.AttrWriteToken] = &types.AttributeValueMemberS{Value: token}
	reclaimed, uncertain := false, false
	for attempt := 0; attempt < maxWriteAttempts; attempt++ {
		var current map[string]types.AttributeValue
		if len(entries) == 0 {
			outcome, item, err := s.putAlone(ctx, op, put, attempt)
			switch {
			case err != nil:
				return uds.Item{}, err
			case outcome == written:
				return it, nil
			case outcome == unanswered:
				uncertain = true
				continue
			}
			current = item
		} else {
			refused, err := s.transact(ctx, op, append([]types.TransactWriteItem{{Put: put}}, entries...)...)
			switch {
			case err != nil:
				return uds.Item{}, err
			case refused == nil:
				return it, nil
			case !refused.conditionFailed(0):
				return uds.Item{}, failed(op, errUnexpectedCancel(refused))
			}
			current = refused.item(0)
		}
		switch {
		case str(current, schema.AttrWriteToken) == token:
			return it, nil // an earlier attempt's, whose answer was lost
		case !reclaimed && expired(current, s.now()):
			s.reclaim(ctx, it.App, []listEntry{{key: it.Key, state: current}})
			reclaimed = true
		case uncertain:
			return uds.Item{}, unknownOutcome(op, "the key holds another item")
		default:
			return uds.Item{}, uds.ErrConflict
		}
	}
	return uds.Item{}, &uds.UnavailableError{Op: op, Err: errContended}
}

// putAlone writes a new item with one conditional PutItem. The SDK does
// not retry it: a retry of a commit whose answer was lost would be refused
// by the condition, and only the caller, comparing write tokens, can tell
// that refusal from a taken key. A refusal returns the item that holds the
// key.
func (s *Store) putAlone(ctx context.Context, op string, put *types.Put, attempt int) (writeOutcome, map[string]types.AttributeValue, error) {
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           put.TableName,
		Item:                                put.Item,
		ConditionExpression:                 put.ConditionExpression,
		ExpressionAttributeNames:            put.ExpressionAttributeNames,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, withoutRetries)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return written, nil, nil
	case asCCF(err, &ccf):
		return raced, ccf.Item, nil
	}
	outcome, err := unansweredOrFailed(ctx, op, err, attempt)
	return outcome, nil, err
}

// conflictFirst is the answer to a create refused for its quota before it
// was sent: a key already taken is the answer that stays true whatever the
// quota, as it is when a strict create's transaction fails both ways.
func (s *Store) conflictFirst(ctx context.Context, key uds.Key, refusal error) error {
	current, err := s.readMeta(ctx, key, false)
	if err == nil && current != nil && !expired(current, s.now()) {
		return uds.ErrConflict
	}
	return refusal
}
