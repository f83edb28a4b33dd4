package store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/uds"
)

// DropHistory removes the versions kept of an item, and its delete
// markers, releasing what each held; the item itself stays. It returns
// how many versions (not markers) it removed. Only w.Key and
// w.IfMatch.Creator count. In an owner-write namespace (a creator named)
// a kept version answers to the creator of the item it was kept of, as
// that item did: the creator named drops the versions and markers of
// their own items and leaves the others' (the key's earlier or later
// items of other creators), and is refused with uds.ErrForbidden when
// none of what is kept is theirs. Each round is one transaction of as
// many removals as fit with their releases and the head written on the
// revision read (historyRewrite), so a round that races a write of the
// item reads again.
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
	r := &historyRewrite{s: s, key: key}
	r.round = func(ctx context.Context, head historyHead, p *plan) (bool, error) {
		if len(head.kept) == 0 {
			return false, nil
		}
		gone, rest, own, more := d.split(head, p.now)
		switch {
		case own == 0 && removed+removedMarkers == 0:
			return false, uds.ErrForbidden
		case len(gone) == 0:
			return false, nil
		}
		versions, markers := 0, 0
		deltas := ownerDeltas{}
		for _, k := range gone {
			p.add(roleHistory, 0, s.removeKept(key, k, deltas))
			if k.deleted {
				markers++
			} else {
				versions++
			}
		}
		// The usage capability releases what the versions held.
		deltas.each(func(app, owner string, u uds.Usage) { p.charge(app, owner, u, 0) })
		headAction := s.headPut(key, head, rest, head.last)
		if d.emptyHead && len(rest) == 0 && !more {
			item, err := s.readMeta(ctx, key, false)
			if err != nil {
				return false, err
			}
			if item == nil {
				headAction = s.headDelete(key, head)
			}
		}
		p.add(roleHistory, 0, headAction)
		objects := s.keptObjects(ctx, key, head, gone)
		if d.tally != nil {
			p.add(roleTally, 0, d.tally(versions, markers, objects))
		}
		p.afterCommit(func(ctx context.Context) {
			removed, removedMarkers = removed+versions, removedMarkers+markers
			for _, name := range objects {
				s.removeObject(ctx, name)
			}
		})
		return more, nil
	}
	err = s.rewriteHistory(ctx, "drop history of "+key.DataKey(), r)
	return removed, removedMarkers, err
}

// split divides head's kept versions and markers into those a round of
// d removes (gone) and those the head keeps listing (rest), counting the
// ones d selects (own); more reports that some it selects wait for a
// later round. Those about to expire are left to DynamoDB's TTL. A round
// removes as many as fit one transaction (roundRoom) with the head, the
// tally and a usage change for each owner whose versions it releases: a
// key's history keeps the versions of every creator that held the key in
// turn, each charged to its own.
func (d keptDrop) split(head historyHead, now time.Time) (gone, rest []keptVersion, own int, more bool) {
	fixed := 1 // the head
	if d.tally != nil {
		fixed++
	}
	room := newRoundRoom(fixed)
	owners := map[string]bool{}
	for _, k := range head.kept {
		ours := d.mine(k)
		if ours {
			own++
		}
		need := 1
		if k.charged() && !owners[k.owner] {
			need++
		}
		switch {
		case !ours:
			rest = append(rest, k)
		case k.expiresAt != 0 && k.expiresAt <= now.Add(expiryMargin).UnixMilli():
		case more || !room.take(need, k.rowBytes()):
			rest, more = append(rest, k), true
		default:
			gone = append(gone, k)
			if k.charged() {
				owners[k.owner] = true
			}
		}
	}
	return gone, rest, own, more
}
