package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/uds"
)

// dropPerRound bounds the versions one transaction of DropHistory removes:
// with the head and one usage change per owner they stay within
// DynamoDB's 100 actions.
const dropPerRound = 80

// DropHistory removes the versions kept of an item, and its delete
// markers, releasing what each held; the item itself stays. It returns
// how many versions (not markers) it removed. Only w.Key and
// w.IfMatch.Creator count. In an owner-write namespace (a creator named)
// a kept version answers to the creator of the item it was kept of, as
// that item did: the creator named drops the versions and markers of
// their own items and leaves the others' (the key's earlier or later
// items of other creators), and is refused with uds.ErrForbidden when
// none of what is kept is theirs. Each round is one transaction of up to
// dropPerRound removals, their releases and the head written on the
// revision read, so a round that races a write of the item reads again.
// Versions about to expire are left to DynamoDB's TTL, which releases
// them. The objects of large versions go once their round commits.
func (s *Store) DropHistory(ctx context.Context, w uds.Write) (int, error) {
	key := w.Key
	op := "drop history of " + key.DataKey()
	removed := 0
	for attempt := 0; attempt < maxWriteAttempts; {
		head, err := s.readHead(ctx, key)
		if err != nil || len(head.kept) == 0 {
			return removed, err
		}
		now := s.now()
		var (
			actions []types.TransactWriteItem
			rest    []keptVersion
			gone    []keptVersion
		)
		deltas := ownerDeltas{}
		versions, own, more := 0, 0, false
		for _, k := range head.kept {
			mine := w.IfMatch.Creator == "" || k.createdBy() == w.IfMatch.Creator
			if mine {
				own++
			}
			switch {
			case !mine:
				rest = append(rest, k)
			case k.expiresAt != 0 && k.expiresAt <= now.Add(expiryMargin).UnixMilli():
			case len(actions) == dropPerRound:
				rest, more = append(rest, k), true
			default:
				actions = append(actions, s.removeKept(key, k, deltas))
				gone = append(gone, k)
				if !k.deleted {
					versions++
				}
			}
		}
		switch {
		case own == 0 && removed == 0:
			return 0, uds.ErrForbidden
		case len(actions) == 0:
			return removed, nil
		}
		objects := s.keptObjects(ctx, key, head, gone)
		deltas.each(func(app, owner string, d uds.Usage) { actions = append(actions, s.usageChange(app, owner, d)) })
		actions = append(actions, s.headPut(key, head, rest, head.last))
		refused, err := s.transact(ctx, op, actions...)
		switch {
		case err != nil:
			return removed, err
		case refused == nil:
			for _, name := range objects {
				s.removeObject(ctx, name)
			}
			removed += versions
			if !more {
				return removed, nil
			}
			continue
		case !refused.anyConditionFailed():
			return removed, failed(op, errUnexpectedCancel(refused))
		}
		attempt++ // the item's history changed: read again
	}
	return removed, &uds.UnavailableError{Op: op, Err: errContended}
}
