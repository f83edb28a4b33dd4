package store

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
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
		states, heads, err := s.readStates(ctx, ops)
		if err != nil {
			return nil, err
		}
		plan, err := s.planAtomic(ctx, ops, values, states, heads, token)
		if err != nil {
			return nil, err
		}
		if len(plan.actions) == 0 {
			plan.settleRestores(ops)
			return plan.items, nil
		}
		refused, err := s.transact(ctx, op, plan.actions...)
		if err != nil {
			return nil, err
		}
		if refused == nil {
			plan.settleRestores(ops)
			s.removeObjects(ctx, plan.replaced...)
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
	// replaced holds the states of the items the batch replaces or
	// deletes outside history, whose large values' objects go once it
	// commits.
	replaced []map[string]types.AttributeValue
	// usageOwner names, per action, the owner whose usage it changes ("" for
	// item writes).
	usageOwner  []string
	firstGrowth map[string]int
	limits      map[string]uds.Limits
	items       []uds.Item
	// methods is the write each operation makes: its own method, or for
	// a restore the update or create it became.
	methods []string
}

// settleRestores tells each restore of ops the write it became.
func (p *atomicPlan) settleRestores(ops []uds.BatchOp) {
	for i := range ops {
		if ops[i].Restore {
			ops[i].Method = p.methods[i]
		}
	}
}

// planAtomic checks every operation against the state read and builds the
// transaction: item writes conditional on that state (with, where history
// is kept, the versions they keep and their heads), then one usage change
// per owner.
func (s *Store) planAtomic(ctx context.Context, ops []uds.BatchOp, values []encodedValue, states []map[string]types.AttributeValue, heads []historyHead, token string) (atomicPlan, error) {
	p := atomicPlan{firstGrowth: map[string]int{}, limits: map[string]uds.Limits{}, items: make([]uds.Item, len(ops)), methods: make([]string, len(ops))}
	app := ops[0].Write.App
	deltas := ownerDeltas{}
	move := func(owner string, d uds.Usage, i int) {
		deltas.add(app, owner, d)
		if _, seen := p.firstGrowth[owner]; !seen && d.Grows() {
			p.firstGrowth[owner] = i
		}
	}
	now := s.writeTime()
	// keep adds what a write that replaces old keeps of it.
	kept := int64(0)
	keep := func(i int, w *uds.Write, old map[string]types.AttributeValue, deleter *string) {
		ch := s.keepVersion(w.Key, w.History, heads[i], old, deleter, now, 1)
		for _, a := range ch.actions {
			p.add(a, "")
		}
		ch.deltas.each(func(_, o string, d uds.Usage) { move(o, d, i) })
		kept += num(old, schema.AttrItemSize)
	}
	for i, op := range ops {
		w, old := &ops[i].Write, states[i]
		live := old != nil && !expired(old, now)
		method := op.Method
		if op.Restore {
			switch {
			case live:
				method = http.MethodPut
			case len(w.IfMatch.Revisions) > 0:
				return p, &uds.BatchError{Index: i, Err: uds.ErrNotFound}
			case op.RecreateForbidden:
				return p, &uds.BatchError{Index: i, Err: uds.ErrForbidden}
			default:
				method = http.MethodPost
			}
		}
		p.methods[i] = method
		if old != nil && !w.History.On() {
			p.replaced = append(p.replaced, old)
		}
		switch method {
		case http.MethodPost:
			if live {
				return p, &uds.BatchError{Index: i, Err: uds.ErrConflict}
			}
			it := newItem(w, now)
			if w.History.On() {
				it.Version = heads[i].last + 1
				p.add(s.headUnchanged(w.Key, heads[i]), "")
			}
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
				who, _ := owner(w.App, old)
				move(who, charged(old).Negate(), i)
			}
			p.add(types.TransactWriteItem{Put: put}, "")
			p.addAll(s.indexUpkeep(w.Key, w.Indexes, storedData(w.Key, old), w.Data))
			move(w.Subject, uds.Usage{Bytes: values[i].size, Items: 1}, i)
			p.items[i] = it
		case http.MethodPut:
			switch {
			case !live:
				return p, &uds.BatchError{Index: i, Err: uds.ErrNotFound}
			case refusesWriter(w.IfMatch, old):
				return p, &uds.BatchError{Index: i, Err: uds.ErrForbidden}
			case !w.IfMatch.Matches(decodeMeta(w.Key, old).Revision()):
				return p, &uds.BatchError{Index: i, Err: uds.ErrPrecondition}
			}
			who, counted := owner(w.App, old)
			if !counted {
				who = w.Subject
			}
			change := uds.Usage{Bytes: values[i].size, Items: 1}.Plus(charged(old).Negate())
			p.add(types.TransactWriteItem{Update: s.itemUpdate(w, values[i], now, token, old, !counted, false)}, "")
			p.addAll(s.indexUpkeep(w.Key, w.Indexes, storedData(w.Key, old), w.Data))
			move(who, change, i)
			if w.History.On() {
				keep(i, w, old, nil)
			}
			p.items[i] = updated(w, old, now)
		case http.MethodDelete:
			switch {
			case !live && w.IfMatch.IsSet():
				return p, &uds.BatchError{Index: i, Err: uds.ErrPrecondition}
			case !live:
				continue // nothing there: 204, nothing to write
			case refusesWriter(w.IfMatch, old):
				return p, &uds.BatchError{Index: i, Err: uds.ErrForbidden}
			case !w.IfMatch.Matches(decodeMeta(w.Key, old).Revision()):
				return p, &uds.BatchError{Index: i, Err: uds.ErrPrecondition}
			}
			p.add(s.deleteAction(w.Key, old), "")
			p.addAll(s.indexUpkeep(w.Key, w.Indexes, storedData(w.Key, old), nil))
			who, _ := owner(w.App, old)
			move(who, charged(old).Negate(), i)
			if w.History.On() {
				keep(i, w, old, &w.Subject)
			}
		}
	}
	if kept > 0 {
		// The kept versions travel in the transaction beside the new
		// values, which WriteAtomic has measured.
		total := kept
		for _, v := range values {
			total += v.size
		}
		if total > maxTxBytes {
			return p, &uds.TooLargeError{Reason: "with the versions its writes keep, this atomic batch holds more than about 3.5 MB (one DynamoDB transaction); split it or use \"atomic\": false"}
		}
	}
	var err error
	deltas.each(func(app, o string, d uds.Usage) {
		if err != nil {
			return
		}
		var action types.TransactWriteItem
		action, p.limits[o], err = s.usageAction(ctx, app, o, d)
		if errors.As(err, new(*uds.QuotaError)) {
			err = &uds.BatchError{Index: p.firstGrowth[o], Err: err}
		}
		p.add(action, o)
	})
	if err == nil && len(p.actions) > maxTxActions {
		err = uds.Invalid("operations", "with the versions its writes keep, their history heads, index entries and usage changes, this atomic batch needs %d actions; one DynamoDB transaction takes %d: split it or use \"atomic\": false", len(p.actions), maxTxActions)
	}
	return p, err
}

func (p *atomicPlan) add(a types.TransactWriteItem, owner string) {
	p.actions = append(p.actions, a)
	p.usageOwner = append(p.usageOwner, owner)
}

// addAll adds actions that change no usage (index entries).
func (p *atomicPlan) addAll(actions []types.TransactWriteItem) {
	for _, a := range actions {
		p.add(a, "")
	}
}

// readStates reads the items a batch writes, strongly consistent (nil
// where there is none): without their values, unless a write keeps the
// version it replaces or moves index entries, which the value names; then
// also the history heads of the items written with history.
func (s *Store) readStates(ctx context.Context, ops []uds.BatchOp) ([]map[string]types.AttributeValue, []historyHead, error) {
	keys := make([]uds.Key, len(ops))
	var kept []uds.Key
	projection := metaProjection
	for i, op := range ops {
		keys[i] = op.Write.Key
		if op.Write.History.On() {
			kept = append(kept, op.Write.Key)
		}
		if op.Write.History.On() || len(op.Write.Indexes) > 0 {
			projection = ""
		}
	}
	found, err := s.batchGet(ctx, keys, projection)
	if err != nil {
		return nil, nil, err
	}
	foundHeads, err := s.readHeads(ctx, kept)
	if err != nil {
		return nil, nil, err
	}
	states := make([]map[string]types.AttributeValue, len(ops))
	heads := make([]historyHead, len(ops))
	for i, k := range keys {
		states[i], heads[i] = found[itemID(k)], foundHeads[historyKey(k)]
	}
	return states, heads, nil
}
