package store

import (
	"context"

	"github.com/udsproject/uds/pkg/uds"
)

// historyRewrite is a write of a key's history alone, which leaves its
// item as it is: a drop of kept versions (history_drop.go), an import of
// them (history_import.go), an erase's renaming of its user in them
// (erase_audit.go). It runs in rounds, each a plan on the write engine:
// the round reads the head, decides what it does (round), and the commit
// loop sends it with the capabilities' actions (the usage changes of what
// it charges or releases) and, when another writer of the history got in
// first (the head's condition, or a kept version's), waits and decides
// again from what is there now.
type historyRewrite struct {
	s   *Store
	key uds.Key
	// round adds one round's actions to p, made from head: roleHistory
	// for what it writes of the history, as the loop reads a refusal of
	// those as a race. It reports whether there is more to do once the
	// round commits.
	round func(ctx context.Context, head historyHead, p *plan) (more bool, err error)
	// more is what the round last planned reported.
	more bool
}

// rewriteHistory runs r's rounds on the write engine until one that
// commits says it is the last.
func (s *Store) rewriteHistory(ctx context.Context, op string, r *historyRewrite) error {
	for {
		if _, err := s.run(ctx, op, r); err != nil {
			return err
		}
		if !r.more {
			return nil
		}
	}
}

func (r *historyRewrite) plan(ctx context.Context, _ bool) (*plan, error) {
	head, err := r.s.readHead(ctx, r.key)
	if err != nil {
		return nil, err
	}
	p := newPlan(r.s.now(), 0)
	if r.more, err = r.round(ctx, head, p); err != nil {
		return nil, err
	}
	return p, nil
}

// refused has nothing of the rewrite's own to read: its actions are
// history's, whose refusal the loop reads as a race.
func (r *historyRewrite) refused(context.Context, *refusal, bool) (bool, error) {
	return false, nil
}

// roundRoom is what is left of one transaction for a round of a history
// rewrite, beside the head's action and an erase's tally: of DynamoDB's
// 100 actions, and of the bytes of the rows the round writes or removes
// (maxTxBytes). A key's history may keep a hundred versions near the
// largest value an item holds, of as many owners.
type roundRoom struct {
	actions int
	bytes   int64
	taken   int
}

// newRoundRoom is the room of a round whose transaction also holds fixed
// actions of its own.
func newRoundRoom(fixed int) roundRoom {
	return roundRoom{actions: maxTxActions - fixed, bytes: maxTxBytes}
}

// take reports whether an entry of the round's, of actions actions and a
// row of bytes bytes, still fits, and takes its room if so. The first
// always fits, so that every round makes progress.
func (r *roundRoom) take(actions int, bytes int64) bool {
	if r.taken > 0 && (actions > r.actions || bytes > r.bytes) {
		return false
	}
	r.actions, r.bytes, r.taken = r.actions-actions, r.bytes-bytes, r.taken+1
	return true
}
