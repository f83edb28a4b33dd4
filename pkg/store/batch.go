package store

import (
	"context"
	"errors"
	"net/http"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// WriteAtomic applies a batch of writes all or none: one TransactWriteItems
// of every item write and one usage change per owner, with a client
// request token. The items to update or delete are read first (one
// strongly consistent BatchGetItem) and written at exactly the revision
// read; if one changed meanwhile, the batch starts over. It returns the
// items the writes left (zero for deletes), or a *uds.BatchError naming
// the operation that refused the batch.
func (s *Store) WriteAtomic(ctx context.Context, ops []uds.BatchOp) ([]uds.Item, error) {
	values := make([]encodedValue, len(ops))
	total := int64(0)
	for i, op := range ops {
		if op.Method == http.MethodDelete {
			continue
		}
		v, err := encodeValue(&ops[i].Write)
		if err != nil {
			return nil, &uds.BatchError{Index: i, Err: err}
		}
		if total += v.size; total > maxTxBytes {
			return nil, &uds.BatchError{Index: i, Err: &uds.TooLargeError{Reason: "an atomic batch holds at most about 3.5 MB of items (one DynamoDB transaction); split it or use \"atomic\": false"}}
		}
		values[i] = v
	}
	op := "atomic batch"
	token := newToken()
	for range maxWriteAttempts {
		states, err := s.readStates(ctx, ops)
		if err != nil {
			return nil, err
		}
		plan, err := s.planAtomic(ctx, ops, values, states, token)
		if err != nil {
			return nil, err
		}
		if len(plan.actions) == 0 {
			return plan.items, nil
		}
		refused, err := s.transact(ctx, op, plan.actions...)
		if err != nil {
			return nil, err
		}
		if refused == nil {
			return plan.items, nil
		}
		for a, owner := range plan.usageOwner {
			if owner != "" && refused.conditionFailed(a) {
				i := plan.firstGrowth[owner]
				return nil, &uds.BatchError{Index: i, Err: s.quotaError(ctx, ops[i].Write.App, owner, plan.limits[owner], refused.item(a))}
			}
		}
		// An item changed since it was read: read again and start over.
	}
	return nil, &uds.UnavailableError{Op: op, Err: errContended}
}

// atomicPlan is the transaction of one attempt at an atomic batch.
type atomicPlan struct {
	actions []types.TransactWriteItem
	// usageOwner names, per action, the owner whose usage it changes ("" for
	// item writes).
	usageOwner  []string
	firstGrowth map[string]int
	limits      map[string]uds.Limits
	items       []uds.Item
}

// planAtomic checks every operation against the state read and builds the
// transaction: item writes conditional on that state, then one usage
// change per owner.
func (s *Store) planAtomic(ctx context.Context, ops []uds.BatchOp, values []encodedValue, states []map[string]types.AttributeValue, token string) (atomicPlan, error) {
	p := atomicPlan{firstGrowth: map[string]int{}, limits: map[string]uds.Limits{}, items: make([]uds.Item, len(ops))}
	deltas := map[string]uds.Usage{}
	move := func(owner string, d uds.Usage, i int) {
		u := deltas[owner]
		deltas[owner] = uds.Usage{Bytes: u.Bytes + d.Bytes, Items: u.Items + d.Items}
		if _, seen := p.firstGrowth[owner]; !seen && (d.Bytes > 0 || d.Items > 0) {
			p.firstGrowth[owner] = i
		}
	}
	now := writeTime()
	for i, op := range ops {
		w, old := &ops[i].Write, states[i]
		live := old != nil && !expired(old, now)
		switch op.Method {
		case http.MethodPost:
			if live {
				return p, &uds.BatchError{Index: i, Err: uds.ErrConflict}
			}
			it := uds.Item{Key: w.Key, Data: w.Data, ClassName: w.ClassName, CreatedDate: now, CreatedBy: w.Subject,
				UpdatedDate: now, UpdatedBy: w.Subject, Version: 1, ExpiresAt: w.ExpiresAt}
			put := &types.Put{TableName: aws.String(s.table(w.Key)), Item: encodeItem(&it, values[i])}
			if old == nil {
				put.ConditionExpression = aws.String("attribute_not_exists(#k)")
				put.ExpressionAttributeNames = map[string]string{"#k": schema.AttrDataKey}
			} else {
				// An expired item holds the key: the create replaces it
				// and releases it.
				names, vals := map[string]string{}, map[string]types.AttributeValue{}
				put.ConditionExpression = aws.String(exactRevision(old, names, vals))
				put.ExpressionAttributeNames, put.ExpressionAttributeValues = names, vals
				if who, counted := owner(w.App, old); counted {
					move(who, uds.Usage{Bytes: -num(old, schema.AttrItemSize), Items: -1}, i)
				}
			}
			p.add(types.TransactWriteItem{Put: put}, "")
			move(w.Subject, uds.Usage{Bytes: values[i].size, Items: 1}, i)
			p.items[i] = it
		case http.MethodPut:
			switch {
			case !live:
				return p, &uds.BatchError{Index: i, Err: uds.ErrNotFound}
			case !w.IfMatch.Matches(decodeMeta(w.Key, old).Revision()):
				return p, &uds.BatchError{Index: i, Err: uds.ErrPrecondition}
			}
			who, counted := owner(w.App, old)
			change := uds.Usage{Bytes: values[i].size - num(old, schema.AttrItemSize)}
			if !counted {
				who, change = w.Subject, uds.Usage{Bytes: values[i].size, Items: 1}
			}
			p.add(types.TransactWriteItem{Update: s.itemUpdate(w, values[i], now, token, old, !counted)}, "")
			move(who, change, i)
			p.items[i] = updated(w, old, now)
		case http.MethodDelete:
			switch {
			case !live && w.IfMatch.IsSet():
				return p, &uds.BatchError{Index: i, Err: uds.ErrPrecondition}
			case !live:
				continue // nothing there: 204, nothing to write
			case !w.IfMatch.Matches(decodeMeta(w.Key, old).Revision()):
				return p, &uds.BatchError{Index: i, Err: uds.ErrPrecondition}
			}
			p.add(s.deleteAction(w.Key, old), "")
			if who, counted := owner(w.App, old); counted {
				move(who, uds.Usage{Bytes: -num(old, schema.AttrItemSize), Items: -1}, i)
			}
		}
	}
	owners := make([]string, 0, len(deltas))
	for o := range deltas {
		owners = append(owners, o)
	}
	sort.Strings(owners)
	for _, o := range owners {
		d := deltas[o]
		if d == (uds.Usage{}) {
			continue
		}
		app := ops[0].Write.App
		var action types.TransactWriteItem
		var err error
		if d.Bytes > 0 || d.Items > 0 {
			var lim uds.Limits
			action, lim, err = s.chargeFor(ctx, app, o, d)
			p.limits[o] = lim
		} else {
			action, err = s.usageChange(ctx, app, o, d, uds.Limits{})
		}
		if err != nil {
			var q *uds.QuotaError
			if errors.As(err, &q) {
				return p, &uds.BatchError{Index: p.firstGrowth[o], Err: err}
			}
			return p, err
		}
		p.add(action, o)
	}
	return p, nil
}

func (p *atomicPlan) add(a types.TransactWriteItem, owner string) {
	p.actions = append(p.actions, a)
	p.usageOwner = append(p.usageOwner, owner)
}

// readStates reads the items a batch writes, strongly consistent and
// without their values, in one BatchGetItem per table (nil where there is
// none).
func (s *Store) readStates(ctx context.Context, ops []uds.BatchOp) ([]map[string]types.AttributeValue, error) {
	states := make([]map[string]types.AttributeValue, len(ops))
	keysBy := map[string][]map[string]types.AttributeValue{}
	for _, op := range ops {
		keysBy[s.table(op.Write.Key)] = append(keysBy[s.table(op.Write.Key)], keyAV(op.Write.Key))
	}
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{}}
	for table, keys := range keysBy {
		in.RequestItems[table] = types.KeysAndAttributes{
			Keys: keys, ConsistentRead: aws.Bool(true),
			ProjectionExpression: aws.String(metaProjection + ", #s"), ExpressionAttributeNames: withSortKey(metaNames),
		}
	}
	found := map[string]map[string]types.AttributeValue{}
	for attempt := 0; len(in.RequestItems) > 0; attempt++ {
		out, err := s.client.BatchGetItem(ctx, in)
		if err != nil {
			return nil, failed("read a batch's items", err)
		}
		for _, items := range out.Responses {
			for _, it := range items {
				found[str(it, schema.AttrDataKey)+"\x00"+str(it, schema.AttrSortKey)] = it
			}
		}
		in.RequestItems = out.UnprocessedKeys
		if len(in.RequestItems) > 0 {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return nil, failed("read a batch's items", err)
			}
		}
	}
	for i, op := range ops {
		states[i] = found[op.Write.DataKey()+"\x00"+op.Write.SortKey]
	}
	return states, nil
}

func withSortKey(names map[string]string) map[string]string {
	out := make(map[string]string, len(names)+1)
	for k, v := range names {
		out[k] = v
	}
	out["#s"] = schema.AttrSortKey
	return out
}
