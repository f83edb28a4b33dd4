package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/uds"
)

// Patch changes an existing item's value into what patch makes of it, on
// exactly the revision patch saw: when another writer got in between, it
// reads the item again and patches that, so concurrent patches of
// different members never lose one another, without If-Match. Everything
// else is an update's (Update): w's precondition, owner-write guard,
// history, indexes, quota and usage. A binary or large value cannot be
// patched (*uds.PatchConflictError).
func (s *Store) Patch(ctx context.Context, w uds.Write, patch uds.Patcher) (uds.Item, error) {
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
	patch   uds.Patcher
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
	w, v, err := patched(&pv.request, item, pv.patch)
	if err != nil {
		return nil, err
	}
	pv.value, pv.w = v, &w
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

// patched is the write a patch makes of the item read (av): the request
// with the value, and the class name and expiry, that patch made of the
// item as it is, and that value encoded. A binary value cannot be patched.
func patched(request *uds.Write, av map[string]types.AttributeValue, patch uds.Patcher) (uds.Write, encodedValue, error) {
	current, err := decodeItem(request.Key, av)
	if err != nil {
		return uds.Write{}, encodedValue{}, err
	}
	if current.Binary != nil {
		return uds.Write{}, encodedValue{}, &uds.PatchConflictError{Index: -1, Reason: "the item's value is binary: a patch applies to JSON data; PUT the new bytes instead"}
	}
	w := *request
	if err := patch(&current, &w); err != nil {
		return uds.Write{}, encodedValue{}, err
	}
	v, err := encodeValue(&w)
	return w, v, err
}
