package store

import (
	"context"

	"github.com/udsproject/uds/pkg/uds"
)

// historyRewrite is a write of a key's history alone, which leaves its
// item as it is: a drop of kept versions (history_drop.go), an erase's
// renaming of its user in them (erase_audit.go). It runs in rounds, each a
// plan on the write engine: the round reads the head, decides what it
// does (round), and the commit loop sends it with the capabilities'
// actions (the usage changes of what it releases) and, when another
// writer of the history got in first (the head's condition, or a kept
// version's), waits and decides again from what is there now.
type historyRewrite struct {
	s   *Store
	key uds.Key
	// round adds one round's actions to p, made from head: roleHistory
	// for what it writes of the history, as the loop reads a refusal of
	// those as a race. It reports whether this is the last round (more
	// reports there is more to do after it commits).
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
