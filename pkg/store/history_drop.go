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
	mine := func(k keptVersion) bool { return w.IfMatch.Creator == "" || k.createdBy() == w.IfMatch.Creator }
	versions, _, err := s.dropKept(ctx, w.Key, keptDrop{mine: mine})
	return versions, err
}

// keptDrop is what dropKept drops of a history, and what it does besides.
type keptDrop struct {
	// mine selects the versions and markers to drop.
	mine func(keptVersion) bool
	// tally, when set, makes an action each round's transaction also
	// holds, of the versions and markers the round removes and the
	// objects they held (an erase's count of them, and its note of the
	// objects to remove).
	tally func(versions, markers int, objects []string) types.TransactWriteItem
	// emptyHead removes the head with the last round when nothing is
	// left in the history and no item holds the key (an erase: the head
	// names the key), rather than keeping it empty.
	emptyHead bool
}

// dropKept is DropHistory of the versions and markers d selects,
// returning how many of each it removed.
func (s *Store) dropKept(ctx context.Context, key uds.Key, d keptDrop) (removed, removedMarkers int, err error) {
	op := "drop history of " + key.DataKey()
	for attempt := 0; attempt < maxWriteAttempts; {
		head, err := s.readHead(ctx, key)
		if err != nil || len(head.kept) == 0 {
			return removed, removedMarkers, err
		}
		now := s.now()
		var (
			actions []types.TransactWriteItem
			rest    []keptVersion
			gone    []keptVersion
		)
		deltas := ownerDeltas{}
		versions, markers, own, more := 0, 0, 0, false
		for _, k := range head.kept {
			ours := d.mine(k)
			if ours {
				own++
			}
			switch {
			case !ours:
				rest = append(rest, k)
			case k.expiresAt != 0 && k.expiresAt <= now.Add(expiryMargin).UnixMilli():
			case len(actions) == dropPerRound:
				rest, more = append(rest, k), true
			default:
				actions = append(actions, s.removeKept(key, k, deltas))
				gone = append(gone, k)
				if k.deleted {
					markers++
				} else {
					versions++
				}
			}
		}
		switch {
		case own == 0 && removed+removedMarkers == 0:
			return 0, 0, uds.ErrForbidden
		case len(actions) == 0:
			return removed, removedMarkers, nil
		}
		objects := s.keptObjects(ctx, key, head, gone)
		deltas.each(func(app, owner string, d uds.Usage) { actions = append(actions, s.usageChange(app, owner, d)) })
		headAction := s.headPut(key, head, rest, head.last)
		if d.emptyHead && len(rest) == 0 && !more {
			item, err := s.readMeta(ctx, key, false)
			if err != nil {
				return removed, removedMarkers, err
			}
			if item == nil {
				headAction = s.headDelete(key, head)
			}
		}
		actions = append(actions, headAction)
		if d.tally != nil {
			actions = append(actions, d.tally(versions, markers, objects))
		}
		refused, err := s.transact(ctx, op, actions...)
		switch {
		case err != nil:
			return removed, removedMarkers, err
		case refused == nil:
			s.removeUnnamed(ctx, objects...)
			removed, removedMarkers = removed+versions, removedMarkers+markers
			if !more {
				return removed, removedMarkers, nil
			}
			continue
		case !refused.anyConditionFailed():
			return removed, removedMarkers, failed(op, errUnexpectedCancel(refused))
		}
		attempt++ // the item's history changed: read again
	}
	return removed, removedMarkers, &uds.UnavailableError{Op: op, Err: errContended}
}
