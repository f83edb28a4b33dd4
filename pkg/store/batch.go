package store

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/uds"
)

// WriteAtomic applies a batch of writes all or none: the writes the single
// verbs would make (createChange, replaceChange, removeChange; a patch is
// the update of what it makes of the item read), with what
// every capability adds to them, in one plan, which the commit loop sends
// as one TransactWriteItems with one usage change per owner. The items to
// update or delete are read first (one strongly consistent BatchGetItem)
// and written at exactly the revision read; if one changed meanwhile, the
// batch starts over. It returns the items the writes left (zero for
// deletes), or a *uds.BatchError naming the operation that refused the
// batch.
func (s *Store) WriteAtomic(ctx context.Context, ops []uds.BatchOp) ([]uds.Item, error) {
	values := make([]encodedValue, len(ops))
	total := int64(0)
	for i, op := range ops {
		if op.Method == http.MethodDelete || op.Method == http.MethodPatch {
			continue // a patch's value is made from the item read
		}
		v, err := encodeValue(&ops[i].Write)
		if err != nil {
			return nil, &uds.BatchError{Index: i, Err: err}
		}
		// A large value's item carries its object's name, not its bytes
		// (a restore of a large version).
		if total += v.itemBytes; total > maxTxBytes {
			return nil, &uds.BatchError{Index: i, Err: &uds.TooLargeError{Reason: "an atomic batch holds at most about 3.5 MB of items (one DynamoDB transaction); split it or use \"atomic\": false"}}
		}
		values[i] = v
	}
	bv := &batchVerb{s: s, ops: ops, values: values, token: newToken(), prunes: maxPrunes}
	if len(ops) > 1 {
		// A write that shares its transaction with up to 49 others
		// prunes one version; a batch of one prunes as a single write.
		bv.prunes = 1
	}
	p, err := s.run(ctx, "atomic batch", bv)
	var refusal *quotaRefusal
	switch {
	case errors.As(err, &refusal):
		return nil, &uds.BatchError{Index: bv.opOf[refusal.change], Err: refusal.err}
	case err != nil:
		return nil, err
	}
	items := bv.committed
	if p != nil {
		items = make([]uds.Item, len(ops))
		for i, c := range p.changes {
			if c.kind != removeItem {
				items[bv.opOf[i]] = c.result
			}
		}
	}
	for i := range ops {
		if ops[i].Restore {
			ops[i].Method = bv.methods[i]
		}
	}
	return items, nil
}

// batchVerb is an atomic batch as the commit loop runs it.
type batchVerb struct {
	s      *Store
	ops    []uds.BatchOp
	values []encodedValue
	token  string
	// prunes bounds the versions each write removes (newPlan).
	prunes int
	// opOf is the operation each change of the last plan serves.
	opOf []int
	// methods is the write each operation makes: its own method, or for
	// a restore the update or create it became.
	methods []string
	// patched holds each PATCH's write as the last plan made it.
	patched []uds.Write
	// committed is the items an earlier attempt left, when a later one
	// found the batch's write token on them.
	committed []uds.Item
}

// plan reads every item the batch writes and decides each operation as
// its single verb does.
func (bv *batchVerb) plan(ctx context.Context, uncertain bool) (*plan, error) {
	states, heads, err := bv.s.readStates(ctx, bv.ops)
	if err != nil {
		return nil, err
	}
	if uncertain && bv.foundCommitted(states) {
		return nil, nil
	}
	now := bv.s.writeTime()
	bv.opOf, bv.methods = bv.opOf[:0], make([]string, len(bv.ops))
	if bv.patched == nil {
		bv.patched = make([]uds.Write, len(bv.ops))
	}
	var changes []*change
	for i := range bv.ops {
		c, err := bv.decide(i, stateOf(bv.ops[i].Write.Key, states[i]), states[i], now)
		if err != nil {
			return nil, &uds.BatchError{Index: i, Err: err}
		}
		if c != nil {
			c.head = heads[i]
			changes = append(changes, c)
			bv.opOf = append(bv.opOf, i)
		}
	}
	return newPlan(now, bv.prunes, changes...), nil
}

// foundCommitted reports whether an item read carries the batch's write
// token, which only this batch's transaction writes: an attempt whose
// answer was lost committed, and the items read are what it left. Without
// it a lost answer would apply a batch's patches twice.
func (bv *batchVerb) foundCommitted(states []map[string]types.AttributeValue) bool {
	if !slices.ContainsFunc(states, func(av map[string]types.AttributeValue) bool { return ownTokenIn(av, bv.token) }) {
		return false
	}
	bv.committed = make([]uds.Item, len(bv.ops))
	for i, av := range states {
		w := &bv.ops[i].Write
		if bv.ops[i].Method == http.MethodPatch {
			w = &bv.patched[i]
		}
		if av != nil && bv.methods[i] != http.MethodDelete {
			bv.committed[i] = committed(w, av)
		}
	}
	return true
}

// decide is operation i's change over the state read (av, old; nil:
// nothing to write). A restore becomes an update of a live item or a
// create; a patch, the update of what it makes of the item.
func (bv *batchVerb) decide(i int, old *itemState, av map[string]types.AttributeValue, now time.Time) (*change, error) {
	op, w := bv.ops[i], &bv.ops[i].Write
	live := old != nil && !old.expired(now)
	method := op.Method
	if op.Restore {
		switch {
		case live:
			method = http.MethodPut
		case w.IfMatch.Any || len(w.IfMatch.Revisions) > 0:
			// If-Match names an item that exists, as on the route.
			return nil, uds.ErrNotFound
		default:
			method = http.MethodPost
		}
	}
	bv.methods[i] = method
	switch method {
	case http.MethodPost:
		return bv.s.createChange(w, bv.values[i], old, now)
	case http.MethodPatch:
		if err := replaceable(w, old, now); err != nil {
			return nil, err
		}
		pw, v, err := patched(w, av, op.Patch)
		if err != nil {
			return nil, err
		}
		bv.patched[i], bv.values[i] = pw, v
		return bv.s.replaceChange(&bv.patched[i], v, old, now, bv.token)
	case http.MethodPut:
		return bv.s.replaceChange(w, bv.values[i], old, now, bv.token)
	}
	switch {
	case !live && w.IfMatch.IsSet():
		return nil, uds.ErrPrecondition
	case !live:
		return nil, nil // nothing there: 204, nothing to write
	}
	return bv.s.removeChange(w, old)
}

func (bv *batchVerb) refused(_ context.Context, r *refusal, _ bool) (bool, error) {
	// An item changed since it was read, perhaps by an attempt whose
	// answer was lost: read again (plan tells which).
	return r.anyOf(roleItem), nil
}

// readStates reads the items a batch writes, strongly consistent (nil
// where there is none), without their values unless a write needs them
// (needsOf), and the history heads the writes need, in one BatchGetItem.
func (s *Store) readStates(ctx context.Context, ops []uds.BatchOp) ([]map[string]types.AttributeValue, []historyHead, error) {
	keys := make([]uds.Key, len(ops))
	var kept []uds.Key
	projection := metaRead
	for i, op := range ops {
		keys[i] = op.Write.Key
		n := needsOf(&op.Write)
		if n.head {
			kept = append(kept, op.Write.Key)
		}
		if n.whole || op.Method == http.MethodPatch {
			projection = nil // a patch applies to the item's value
		}
	}
	found, foundHeads, err := s.readItemsAndHeads(ctx, keys, projection, kept)
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
