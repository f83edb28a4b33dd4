package store

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Create stores a new item: uds.ErrConflict if the key is taken, a
// *uds.QuotaError if the item does not fit its owner's limit. The item is
// written on the condition that the key is free, without reading it
// first; when an expired item holds the key, the refusal shows it and the
// create replaces it (nothing keeps an expired item). When the key is
// taken and the quota refuses too, the conflict wins: the key being taken
// is the answer that stays true whatever the quota.
//
// A create sent alone (one no capability adds an action to, as in the
// streamed quota mode without indexes or history) carries the request's
// write token, so that a retry whose earlier attempt committed without an
// answer recognises its own item (commitAlone).
func (s *Store) Create(ctx context.Context, w uds.Write) (uds.Item, error) {
	v, err := encodeValue(&w)
	if err != nil {
		return uds.Item{}, err
	}
	cv := &createVerb{s: s, w: &w, value: v, op: "create " + w.DataKey()}
	p, err := s.run(ctx, cv.op, cv)
	var refusal *quotaRefusal
	switch {
	case errors.As(err, &refusal) && refusal.unsent:
		// A refusal before sending (the streamed mode's tracked usage,
		// or a value larger than the whole limit) did not try the key,
		// which a retry's own earlier attempt may hold.
		return s.conflictFirst(ctx, &w, &cv.token, refusal.err)
	case errors.As(err, &refusal):
		return uds.Item{}, refusal.err
	case err != nil:
		return uds.Item{}, err
	case p == nil:
		return cv.committed, nil
	}
	return p.changes[0].result, nil
}

// createVerb is a create as the commit loop runs it.
type createVerb struct {
	s     *Store
	w     *uds.Write
	value encodedValue
	token writeToken
	op    string
	// expired is an expired item a refusal showed on the key, which the
	// next attempt replaces.
	expired *itemState
	// committed is the item as an earlier attempt left it, when a later
	// one found it by its write token.
	committed uds.Item
}

func (cv *createVerb) plan(ctx context.Context, _ bool) (*plan, error) {
	now := cv.s.writeTime()
	c, err := cv.s.createChange(cv.w, cv.value, cv.expired, now)
	if err != nil {
		return nil, err
	}
	c.byQuotaMode, c.token = true, &cv.token
	if needsOf(cv.w).head {
		if c.head, err = cv.s.readHead(ctx, cv.w.Key); err != nil {
			return nil, err
		}
	}
	return newPlan(now, maxPrunes, c), nil
}

func (cv *createVerb) refused(_ context.Context, r *refusal, uncertain bool) (bool, error) {
	refused, current := r.item(0)
	switch {
	case !refused:
		// Another action was refused: the loop reads it.
		return false, nil
	case cv.token.in(current):
		cv.committed = committed(cv.w, current)
		return false, errCommitted
	case current == nil:
		// The expired item the create was to replace went meanwhile.
		cv.expired = nil
		return true, nil
	case expired(current, cv.s.now()):
		cv.expired = stateOf(cv.w.Key, current)
		return true, nil
	case uncertain:
		return false, unknownOutcome(cv.op, "the key holds another item")
	}
	return false, uds.ErrConflict
}

// createChange decides a create of w over what the key holds: nothing, or
// an expired item (old), which the create replaces. The item is written
// on the condition that the key is still as read.
func (s *Store) createChange(w *uds.Write, v encodedValue, old *itemState, now time.Time) (*change, error) {
	if old != nil && !old.expired(now) {
		return nil, uds.ErrConflict
	}
	it := newItem(w, now)
	put := &types.Put{
		TableName:                           aws.String(s.table(w.Key)),
		Item:                                encodeItem(&it, v),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if old == nil {
		put.ConditionExpression, put.ExpressionAttributeNames = keyFree, keyFreeNames
	} else {
		names, values := map[string]string{}, map[string]types.AttributeValue{}
		put.ConditionExpression = aws.String(exactRevision(old.av, names, values))
		put.ExpressionAttributeNames, put.ExpressionAttributeValues = names, values
	}
	return &change{kind: createItem, key: w.Key, w: w, old: old, value: v, item: types.TransactWriteItem{Put: put}, owner: w.Subject, result: it}, nil
}

// keyFree is a create's condition on a free key, the same for every
// create: built once and shared, never modified.
var (
	keyFree      = aws.String("attribute_not_exists(#k)")
	keyFreeNames = map[string]string{"#k": schema.AttrDataKey}
)

// newItem is the item a create of w makes at now: version 1, created and
// updated by the writer.
func newItem(w *uds.Write, now time.Time) uds.Item {
	return uds.Item{
		Key: w.Key, Data: w.Data, Binary: w.Binary, ClassName: w.ClassName,
		CreatedDate: now, CreatedBy: w.Subject, UpdatedDate: now, UpdatedBy: w.Subject,
		Version: 1, ExpiresAt: w.ExpiresAt,
	}
}

// conflictFirst is the answer to a create refused for its quota before it
// was sent: a key already taken is the answer that stays true whatever the
// quota, as it is when a strict create's transaction fails both ways; a
// key that holds the create's own item (token), which an earlier attempt
// committed without an answer, means the create is done. When the key
// cannot be read, which of them holds is not known, and the read's failure
// is the answer: a retry tells.
func (s *Store) conflictFirst(ctx context.Context, w *uds.Write, token *writeToken, refusal error) (uds.Item, error) {
	current, err := s.readMeta(ctx, w.Key, false)
	switch {
	case err != nil:
		return uds.Item{}, err
	case token.in(current):
		return committed(w, current), nil
	case current != nil && !expired(current, s.now()):
		return uds.Item{}, uds.ErrConflict
	}
	return uds.Item{}, refusal
}
