package store

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// maxWriteAttempts bounds the attempts of a write that keeps losing races
// with other writers of its items, or getting no answer.
const maxWriteAttempts = 12

// verb is one write request as the commit loop runs it: it reads and
// decides (plan), and says what a refusal of its items means (refused).
type verb interface {
	// plan reads what the write needs and decides its changes: a plan, a
	// domain error that answers the request, or (nil, nil) when what it
	// read shows the write committed already (an earlier attempt whose
	// answer was lost). uncertain is set once an attempt went
	// unanswered: it may have committed.
	plan(ctx context.Context, uncertain bool) (*plan, error)
	// refused reads a refusal of the plan's item actions (and of the
	// verb's own roles): explained when what they were conditional on
	// changed (the loop then reads again), errCommitted when it shows this
	// write's own earlier commit, or the error that answers the request.
	// The loop reads a capability's refused action itself (raced).
	refused(ctx context.Context, r *refusal, uncertain bool) (explained bool, err error)
}

// reclaimForStream reclaims the expired items of the owner whose tracked
// usage refused a streamed write (checkTracked, before anything is sent).
// The refusal stands: the stream releases what the reclaim removes, and a
// write after that finds the room. Without it an owner at a limit stays
// refused until DynamoDB's TTL deletes its expired items, which may take
// days. A refusal costs a streamed write no DynamoDB call, and an owner at
// its limit meets many in a row, so the reclaim (three queries of the
// owner index) runs at most once per owner for as long as the refusing
// usage is trusted: the writes refused meanwhile could not see its effect
// anyway.
func (s *Store) reclaimForStream(ctx context.Context, p *plan, err error) {
	var refused *quotaRefusal
	if !errors.As(err, &refused) || refused.change >= len(p.changes) {
		return
	}
	c := p.changes[refused.change]
	if !c.streamed {
		return
	}
	_, _ = s.streamReclaims.get(s.now(), ownerRef{c.key.App, c.owner}, func() (bool, error) {
		return s.reclaimOwner(ctx, c.key.App, c.owner, uds.Usage{}), nil
	})
}

// maxReclaimRounds bounds the rounds of reclaiming an owner's expired
// items within one write.
const maxReclaimRounds = 3

// errCommitted is a verb's word that a refusal shows its own earlier
// commit.
var errCommitted = errors.New("committed by an earlier attempt")

// run commits a write: it plans, lets every capability contribute,
// commits, and starts over while the write races with others or goes
// unanswered. A refusal by an owner's limit reclaims that owner's expired
// items and tries again while there are any (at most maxReclaimRounds
// times), then answers a *uds.QuotaError. It returns
// the plan that committed, nil when the verb found its own earlier commit.
func (s *Store) run(ctx context.Context, op string, v verb) (_ *plan, err error) {
	uncertain := false
	reclaims := map[ownerRef]int{}
	// last is the last plan the capabilities contributed to: when the
	// write fails and no attempt may have committed, what they made ready
	// for it is undone (every attempt makes the same).
	var last *plan
	defer func() {
		if err != nil && last != nil && !uncertain {
			last.abandoned(ctx)
		}
	}()
	// lost is the last plan sent without an answer: when the verb then
	// finds it committed, what waits for its commit runs.
	var lost *plan
	done := func() (*plan, error) {
		if lost != nil {
			lost.committed(ctx)
		}
		return nil, nil
	}
	for attempt := range maxWriteAttempts {
		p, err := v.plan(ctx, uncertain)
		switch {
		case err != nil:
			return nil, err
		case p == nil:
			return done()
		}
		last = p
		if err := s.contribute(ctx, p); err != nil {
			s.reclaimForStream(ctx, p, err)
			return nil, err
		}
		outcome, r, err := s.commit(ctx, op, p, attempt)
		switch {
		case err != nil:
			// A commit one of whose attempts went unanswered may have
			// been applied, its time run out before a retry could tell:
			// what the plan made ready stays, as after an attempt left
			// unanswered.
			uncertain = uncertain || mayHaveCommitted(err)
			return nil, err
		case outcome == written:
			p.committed(ctx)
			return p, nil
		case outcome == unanswered:
			uncertain, lost = true, p
			continue
		case outcome == notApplied:
			continue
		}
		explained, err := v.refused(ctx, r, uncertain)
		switch {
		case errors.Is(err, errCommitted):
			return done()
		case err != nil:
			return nil, err
		case explained || r.raced():
			// Another writer got in: wait a moment, longer each time and
			// at random, so that writers of one hot item stop meeting in
			// lockstep and each gets its turn within the attempts.
			if err := waitContended(ctx, op, attempt, uncertain); err != nil {
				return nil, err
			}
			continue
		}
		who, record, limited := r.usage()
		if !limited {
			return nil, failed(op, errUnexpectedCancel(r.reasons))
		}
		// The first round also tries again when the owner holds less
		// than the usage that refused the write counts (a release that
		// committed since); an index that lags the writes shows that
		// too, so the rounds after it try again only while expired items
		// are left.
		var refusedBy uds.Usage
		if reclaims[who] == 0 {
			refusedBy = usageOf(record)
		}
		if reclaims[who] < maxReclaimRounds && s.reclaimOwner(ctx, who.app, who.owner, refusedBy) {
			// The owner's expired items made room, released by this
			// write or by a request that met them first, whose release
			// may still be on its way: from the second round on the
			// write waits a moment for it.
			if reclaims[who]++; reclaims[who] > 1 {
				if err := waitContended(ctx, op, attempt, uncertain); err != nil {
					return nil, err
				}
			}
			continue
		}
		oc := p.chargeOf(who)
		return nil, &quotaRefusal{change: oc.growth, err: s.quotaError(ctx, who.app, who.owner, oc.limits, record)}
	}
	return nil, contendedError(op, errContended, uncertain)
}

// waitContended waits before a write's next attempt after it lost a race
// (contendedWait). When the request's time runs out first, the write is
// unavailable (503, with Retry-After), as one that lost every race is:
// the context's bare error would be an internal one.
func waitContended(ctx context.Context, op string, attempt int, uncertain bool) error {
	if err := sleep(ctx, contendedWait(attempt)); err != nil {
		return contendedError(op, errors.Join(errContended, err), uncertain)
	}
	return nil
}

// contendedError is a write that lost every race for its items (503).
// Unless an attempt of it went unanswered, it is known that nothing was
// written, and the client is told so rather than that it may have been.
func contendedError(op string, cause error, uncertain bool) error {
	e := &uds.UnavailableError{Op: op, Err: cause, RetryAfter: time.Second}
	if !uncertain {
		e.Reason = "the item kept changing under other writers of it, and this write lost every race for it: nothing was written; send it again after the Retry-After delay"
	}
	return e
}

// contendedWait is how long a write waits before its next attempt after
// its attempt-th lost a race: at random up to 5 ms doubled per attempt, at
// most 80 ms, so that 12 attempts spread over about a second of contention
// and stay well within a request's budget.
func contendedWait(attempt int) time.Duration {
	return time.Duration(mrand.Int64N(int64(5*time.Millisecond) << min(attempt, 4)))
}

// quotaRefusal is a plan refused by an owner's limit: the change that
// first grew the owner (a batch names its operation) and the refusal.
type quotaRefusal struct {
	change int
	err    error
	// unsent is set when the plan was refused before it was sent (usage.go),
	// so that nothing it names was tried.
	unsent bool
}

func (q *quotaRefusal) Error() string { return q.err.Error() }
func (q *quotaRefusal) Unwrap() error { return q.err }

// refusal is how DynamoDB refused a plan: per action, whether its
// condition failed and the item as it stood.
type refusal struct {
	plan    *plan
	reasons cancelled
}

// item reports whether the item action of change i was refused, with the
// item as it stood (nil when there is none).
func (r *refusal) item(i int) (bool, map[string]types.AttributeValue) {
	for a, act := range r.plan.actions {
		if act.role == roleItem && act.change == i && r.reasons.conditionFailed(a) {
			return true, r.reasons.item(a)
		}
	}
	return false, nil
}

// raced reports whether a capability's action was refused by its
// condition: what the plan read for it (an item's history head) changed
// since, and the plan is made again from what is there now. A verb's own
// actions are the verb's to read (refused); the usage record's, the
// loop's (usage).
func (r *refusal) raced() bool { return r.anyOf(roleHistory) || r.anyOf(roleTally) }

// anyOf reports whether an action of role ro was refused.
func (r *refusal) anyOf(ro role) bool {
	for a, act := range r.plan.actions {
		if act.role == ro && r.reasons.conditionFailed(a) {
			return true
		}
	}
	return false
}

// usage names the owner whose limit refused the plan, with the usage
// record as it stood.
func (r *refusal) usage() (owner ownerRef, record map[string]types.AttributeValue, ok bool) {
	for a, act := range r.plan.actions {
		if act.role == roleUsage && r.reasons.conditionFailed(a) {
			return act.owner, r.reasons.item(a), true
		}
	}
	return ownerRef{}, nil, false
}

// writeOutcome is how one attempt at a write ended, when it did not fail
// outright.
type writeOutcome int

const (
	written    writeOutcome = iota
	raced                   // a condition refused it
	unanswered              // no answer: the write may or may not have happened
	notApplied              // refused before it was applied (throttled): send it again
)

// commit sends a plan once: one action as its own call, more as one
// idempotent transaction (transact.go). A single call is not retried by
// the SDK: a retry of a commit whose answer was lost would be refused by
// its own condition, and only the verb, reading again, can tell that
// refusal from a race; it comes back unanswered instead.
func (s *Store) commit(ctx context.Context, op string, p *plan, attempt int) (writeOutcome, *refusal, error) {
	switch len(p.actions) {
	case 0:
		return written, nil, nil // nothing to write: a delete of nothing
	case 1:
		return s.commitAlone(ctx, op, p, attempt)
	}
	writes := make([]types.TransactWriteItem, len(p.actions))
	for i, a := range p.actions {
		writes[i] = a.write
	}
	reasons, err := s.transact(ctx, op, writes...)
	switch {
	case err != nil:
		return 0, nil, err
	case reasons != nil:
		return raced, &refusal{plan: p, reasons: reasons}, nil
	}
	return written, nil, nil
}

// commitAlone sends a plan's one action as its own call. A create so sent
// carries its request's write token (change.token): its answer lost, the
// next attempt is refused by its own item, which the token tells from
// another's. A transaction needs none, as DynamoDB applies it once.
func (s *Store) commitAlone(ctx context.Context, op string, p *plan, attempt int) (writeOutcome, *refusal, error) {
	a := p.actions[0]
	if a.role == roleItem && a.write.Put != nil {
		if t := p.changes[a.change].token; t != nil {
			a.write.Put.Item[schema.AttrWriteToken] = &types.AttributeValueMemberS{Value: t.value()}
		}
	}
	err := s.writeAlone(ctx, a.write)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return written, nil, nil
	case asCCF(err, &ccf):
		reason := types.CancellationReason{Code: aws.String("ConditionalCheckFailed"), Item: ccf.Item}
		return raced, &refusal{plan: p, reasons: cancelled{reason}}, nil
	}
	outcome, err := unansweredOrFailed(ctx, op, err, attempt)
	return outcome, nil, err
}

// writeAlone sends one action as its own PutItem, UpdateItem or
// DeleteItem, asking for the item as it stood if its condition fails.
func (s *Store) writeAlone(ctx context.Context, w types.TransactWriteItem) error {
	allOld := types.ReturnValuesOnConditionCheckFailureAllOld
	var err error
	switch {
	case w.Put != nil:
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: w.Put.TableName, Item: w.Put.Item, ConditionExpression: w.Put.ConditionExpression,
			ExpressionAttributeNames: w.Put.ExpressionAttributeNames, ExpressionAttributeValues: w.Put.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: allOld,
		}, withoutRetries)
	case w.Update != nil:
		_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: w.Update.TableName, Key: w.Update.Key, UpdateExpression: w.Update.UpdateExpression,
			ConditionExpression: w.Update.ConditionExpression, ExpressionAttributeNames: w.Update.ExpressionAttributeNames,
			ExpressionAttributeValues: w.Update.ExpressionAttributeValues, ReturnValuesOnConditionCheckFailure: allOld,
		}, withoutRetries)
	case w.Delete != nil:
		_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: w.Delete.TableName, Key: w.Delete.Key, ConditionExpression: w.Delete.ConditionExpression,
			ExpressionAttributeNames: w.Delete.ExpressionAttributeNames, ExpressionAttributeValues: w.Delete.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: allOld,
		}, withoutRetries)
	default:
		err = errors.New("a condition check cannot be sent alone")
	}
	return err
}

// unansweredOrFailed is how a single call that the SDK does not retry
// ended when it neither committed nor was refused by its condition: a
// transient error leaves it unanswered (it may have committed), or not
// applied when DynamoDB refused it before applying it (appliedNothing),
// after a pause before the next attempt; anything else fails it.
func unansweredOrFailed(ctx context.Context, op string, err error, attempt int) (writeOutcome, error) {
	if !isTransient(err) {
		return 0, failed(op, err)
	}
	outcome := notApplied
	if !appliedNothing(err) {
		outcome, err = unanswered, maybeCommitted{err}
	}
	if serr := sleep(ctx, backoff(attempt)); serr != nil {
		return 0, failed(op, errors.Join(err, serr))
	}
	return outcome, nil
}

// writeToken is a request's write token, made when an attempt first needs
// it, which a create that never sends its item alone does not: making one
// reads the system's random source, a few hundred nanoseconds, about 1% of
// a create's time in the handler.
type writeToken struct{ made string }

// value is the token, made on first use.
func (t *writeToken) value() string {
	if t.made == "" {
		t.made = newToken()
	}
	return t.made
}

// in reports whether the item as it stood carries the token: the refusal
// is of a retry, whose earlier attempt committed.
func (t *writeToken) in(current map[string]types.AttributeValue) bool {
	return ownTokenIn(current, t.made)
}

// ownTokenIn reports whether the item as it stood carries this write's
// token: the refusal is of a retry, whose earlier attempt committed.
func ownTokenIn(current map[string]types.AttributeValue, token string) bool {
	return token != "" && str(current, schema.AttrWriteToken) == token
}
