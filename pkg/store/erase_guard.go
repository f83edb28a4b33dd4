package store

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// The erase guard (the write engine's capability of an erase, erase.go):
// while an erase of a user's data runs, and for the days it holds them
// after, no write of that user's lands, and no write grows what they own.
// Every write reads the writer's records through the limits cache already
// (its rate limits, its quota); the user's erase record comes in the same
// BatchGetItem, so the guard costs half a read unit per cache miss and no
// call. An erase refuses writes from the moment it starts, but a process
// may hold the records it read before for the cache's lifetime, and a
// request may run for its budget: the erase removes nothing until both
// have passed (erase.go, startErase).

// eraseKey is the key of a user's erase record in the usage table.
func eraseKey(user string) map[string]types.AttributeValue {
	return usageKey(schema.EraseRecord, user)
}

// eraseGuardAttrs are what the guard reads of an erase record.
const eraseGuardAttrs = schema.AttrEraseState + ", " + schema.AttrEraseEnded + ", " + schema.AttrEraseHoldDays

// refusesWrites reports whether the erase record refuses its user's writes
// at now: while the erase runs, and until its hold ends after.
func refusesWrites(record map[string]types.AttributeValue, now time.Time) bool {
	if record == nil {
		return false
	}
	if uds.ErasureState(str(record, schema.AttrEraseState)) != uds.ErasureDone {
		return true
	}
	return now.Before(holdUntil(record))
}

// holdUntil is when a done erase stops refusing its user's writes.
func holdUntil(record map[string]types.AttributeValue) time.Time {
	return time.UnixMilli(num(record, schema.AttrEraseEnded)).AddDate(0, 0, int(num(record, schema.AttrEraseHoldDays)))
}

// planErasure refuses a plan with uds.ErrErasing when an erase refuses its
// writer, or, for a change that writes a value, the owner it charges (a
// write to an item the user owns in a shared namespace). A removal as read
// (a reclaim, the erase's own) has no writer and is never refused.
func (s *Store) planErasure(ctx context.Context, p *plan) error {
	// A batch's changes mostly share one writer in one app: each user is
	// looked up once in a row of them. A change whose writer has no
	// subject (an import's) has no writer to check, and leaves the last
	// user looked up in place, so that a run of one owner's records looks
	// the owner up once.
	var lastApp, lastWho string
	check := func(app, who string) error {
		if who == "" || (app == lastApp && who == lastWho) {
			return nil
		}
		if err := s.refuseErasing(ctx, app, who); err != nil {
			return err
		}
		lastApp, lastWho = app, who
		return nil
	}
	for _, c := range p.changes {
		if c.w == nil {
			continue
		}
		if err := check(c.key.App, c.w.Subject); err != nil {
			return err
		}
		if c.kind != removeItem && c.owner != c.w.Subject {
			if err := check(c.key.App, c.owner); err != nil {
				return err
			}
		}
	}
	return nil
}

// Erasing reports whether an erase removes user's data in app, or holds it
// after, so that a write of theirs is refused: a migration leaves out such
// a person's records rather than bringing their data in again.
func (s *Store) Erasing(ctx context.Context, app, user string) (bool, error) {
	err := s.refuseErasing(ctx, app, user)
	if errors.Is(err, uds.ErrErasing) {
		return true, nil
	}
	return false, err
}

// refuseErasing is uds.ErrErasing when an erase refuses who's writes in
// app.
func (s *Store) refuseErasing(ctx context.Context, app, who string) error {
	if who == "" {
		return nil
	}
	e, err := s.recordsInEffect(ctx, app, who)
	switch {
	case err != nil:
		return err
	case e.erasing:
		return uds.ErrErasing
	}
	return nil
}
