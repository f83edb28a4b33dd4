package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/uds"
)

// A Patcher decides what a patch writes over an item: given the item as it
// is, it fills w's value (Data), and its class name and expiry where the
// request keeps the item's, or refuses (a patch that does not apply, a
// result the namespace's schema or size refuses). Patch calls it again
// each time the item changed under an attempt, so it must not keep state
// between calls.
type Patcher func(current *uds.Item, w *uds.Write) error

// Patch changes an existing item's value into what patch makes of it, on
// exactly the revision patch saw: when another writer got in between, it
// reads the item again and patches that, so concurrent patches of
// different members never lose one another, without If-Match. Everything
// else is an update's (Update): w's precondition, owner-write guard,
// history, indexes, quota and usage. A binary or large value cannot be
// patched (*uds.PatchConflictError).
func (s *Store) Patch(ctx context.Context, w uds.Write, patch Patcher) (uds.Item, error) {
	pv := &patchVerb{updateVerb: updateVerb{s: s, w: &w, token: newToken(), op: "patch " + w.DataKey()}, request: w, patch: patch}
	p, err := s.run(ctx, pv.op, pv)
	switch {
	case err != nil:
		return uds.Item{}, plainRefusal(err)
	case p == nil:
		return pv.committed, nil
	}
	return p.changes[0].result, nil
}

// patchVerb is a patch as the commit loop runs it: an update whose value
// each attempt makes from the item it read.
type patchVerb struct {
	updateVerb
	// request is the write as asked, before a patch made its value.
	request uds.Write
	patch   Patcher
}

func (pv *patchVerb) plan(ctx context.Context, uncertain bool) (*plan, error) {
	item, head, err := pv.read(ctx)
	if err != nil {
		return nil, err
	}
	old := stateOf(pv.request.Key, item)
	if old != nil && old.token == pv.token {
		pv.committed = committed(pv.w, item)
		return nil, nil
	}
	now := pv.s.writeTime()
	if err := replaceable(&pv.request, old, now); err != nil {
		return nil, surely(err, uncertain, pv.op)
	}
	current, err := decodeItem(pv.request.Key, item)
	if err != nil {
		return nil, err
	}
	if current.Binary != nil {
		return nil, &uds.PatchConflictError{Index: -1, Reason: "the item's value is binary: a patch applies to JSON data; PUT the new bytes instead"}
	}
	w := pv.request
	if err := pv.patch(&current, &w); err != nil {
		return nil, err
	}
	if pv.value, err = encodeValue(&w); err != nil {
		return nil, err
	}
	pv.w = &w
	return pv.replace(ctx, old, head, now)
}

// read reads the whole item a patch applies to, and what the capabilities
// the write meets need with it (readForWrite).
func (pv *patchVerb) read(ctx context.Context) (map[string]types.AttributeValue, historyHead, error) {
	if needsOf(&pv.request).head {
		return pv.s.readWithHead(ctx, pv.request.Key)
	}
	item, err := pv.s.readLive(ctx, pv.request.Key, true)
	return item, historyHead{}, err
}
