package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Changing a namespace into or out of private moves its items to another
// key space, so it is allowed only while the namespace is empty. Finding
// it empty is not enough: every function caches policies (the limits
// cache's time), and a write that read the old policy may commit up to its
// request budget later, into the key space being left, after the check.
// Guarding every write against that (a condition on the policy in each
// write's transaction) would charge every write for a rare admin change.
//
// So the change goes in two steps, each one conditional write of the
// policy record:
//   1. Announce: the namespace is checked empty, and the change is stored
//      as pending, with SettlesAt = now + the cache's time + the request
//      budget + a margin for clocks. From the moment a function reads it
//      (within the cache's time), it refuses writes to the namespace with a
//      retriable 503; writes that read the old policy before it commit
//      before SettlesAt.
//   2. Complete, from SettlesAt: the namespace is checked empty again, now
//      that no write in flight can still land in the old key space, and the
//      new policy is stored (or, if it holds data, the change is dropped
//      and refused: 409). An administrator completes it by repeating the
//      change; `uds set-policy` waits and repeats.
// A change not completed lapses at LapsesAt (the old policy applies and
// writes resume), so a namespace is never left refusing writes. A
// completion is stored no later than a cache's time before LapsesAt, so
// no function still holding the pending change can take it for lapsed
// and write under the old policy after the new one is in effect.
//
// A change that stays on one side of private (shared and owner-write, a
// new schema) moves nothing and applies at once, as before; it also
// cancels a pending change.
//
// The history policy moves nothing either (kept versions stay where they
// were written, whatever the access mode), so it is never pending: every
// step stores the history the request sets, whether the rest of the
// request applies at once, is announced, replaces a pending target or
// completes. A request that is refused (uds.ErrInUse) stores none of it;
// the history stored before, by the announcement or by an earlier
// request, stays.

// DefaultPolicyWindow is how long a pending change may be completed after
// it settles, unless WithPolicyWindow says otherwise.
const DefaultPolicyWindow = 10 * time.Minute

// policyMargin covers clocks that differ between functions, and a request
// sent just before its budget ran out.
const policyMargin = 5 * time.Second

// DefaultPolicySettle is the settle time of a deployment with the default
// cache time and request budget.
const DefaultPolicySettle = DefaultLimitsTTL + config.DefaultRequestBudget + policyMargin

// WithPolicySettle sets how long a change into or out of private waits
// for writes that read the old policy: the longest time any function may
// cache a policy plus the longest a request may take (PolicySettle).
func WithPolicySettle(d time.Duration) Option { return func(s *Store) { s.policySettle = d } }

// WithPolicyWindow sets how long after it settles a change into or out of
// private may be completed before it lapses.
func WithPolicyWindow(d time.Duration) Option { return func(s *Store) { s.policyWindow = d } }

// PolicySettle is the settle time for a cache time and a request budget.
func PolicySettle(cacheTTL, requestBudget time.Duration) time.Duration {
	return cacheTTL + requestBudget + policyMargin
}

// SetPolicy stores a namespace's policy, or, with the zero Policy, removes
// it (the namespace is shared again, without a schema or history), and
// returns the policy in effect. A change into or out of private is
// announced the first time (the returned policy carries it as Pending, the
// old one still in effect) and completed when repeated after it settles;
// it is refused with uds.ErrInUse while the namespace holds an item. The
// history is stored at once by every step that is not refused (above).
// The schema and the history's bounds must have been checked by the
// caller.
//
// Each step bumps the policy's version, conditioned on the version read,
// so that two admins changing one policy cannot interleave a data check
// and a write.
func (s *Store) SetPolicy(ctx context.Context, app, namespace string, p uds.Policy) (uds.Policy, error) {
	op := "set the policy of " + app + "/" + namespace
	if p.Access == "" {
		// The zero Policy restores the app's default mode, which is the
		// mode a policy read back without one shows.
		p.Access = uds.DefaultAccess(app)
	}
	if !p.History.On() {
		// A history that keeps nothing is stored, and read back, as none.
		p.History = uds.History{}
	}
	requested := p.Indexes
	for range maxWriteAttempts {
		current, err := s.readPolicy(ctx, app, namespace)
		if err != nil {
			return uds.Policy{}, err
		}
		now := s.now()
		p.Indexes, p.IndexBuild = s.declareIndexes(current, requested, now)
		pending := current.Changing(now)
		var next uds.Policy
		switch {
		case !current.CrossesPrivate(p):
			// Nothing moves; a pending change, if any, is cancelled.
			next = s.settled(current, p)
		case pending == nil || !now.Before(pending.LapsesAt.Add(-s.policies.ttl-policyMargin)):
			// A new change (a pending one too close to lapsing is
			// announced again rather than completed).
			if err := s.refuseIfHeld(ctx, app, namespace); err != nil {
				return uds.Policy{}, err
			}
			next = s.announced(current, p, now)
		case now.Before(pending.SettlesAt):
			// Still settling: the target and the history may change,
			// not the times.
			if samePolicy(pending.Target(), p) && current.History == p.History && sameIndexes(current, p) &&
				encodeBinaryRule(current.Binary) == encodeBinaryRule(p.Binary) {
				return current, nil
			}
			next = current
			next.Version, next.Updated, next.History = current.Version+1, s.writeTime(), p.History
			next.Indexes, next.IndexBuild, next.Binary = p.Indexes, p.IndexBuild, p.Binary
			next.Pending = &uds.PolicyChange{Access: p.Access, Schema: p.Schema,
				Since: pending.Since, SettlesAt: pending.SettlesAt, LapsesAt: pending.LapsesAt}
		default:
			held, err := s.holdsData(ctx, app, namespace)
			if err != nil {
				return uds.Policy{}, err
			}
			if s.now().After(pending.LapsesAt.Add(-s.policies.ttl - policyMargin)) {
				continue // the scan took too long: announce again
			}
			if held {
				// Writes that read the old policy landed before it
				// settled: they stay readable under it. The history
				// stored stays too; this request's is refused with it.
				if _, err := s.writePolicy(ctx, app, namespace, current, s.settled(current, current)); err != nil {
					return uds.Policy{}, failed(op, err)
				}
				return uds.Policy{}, uds.ErrInUse
			}
			next = s.settled(current, p)
		}
		ok, err := s.writePolicy(ctx, app, namespace, current, next)
		if err != nil {
			return uds.Policy{}, failed(op, err)
		}
		if ok {
			return next, nil
		}
		// Another change got in first: decide again.
	}
	return uds.Policy{}, &uds.UnavailableError{Op: op, Err: errContended}
}

// refuseIfHeld is uds.ErrInUse when the namespace holds an item.
func (s *Store) refuseIfHeld(ctx context.Context, app, namespace string) error {
	held, err := s.holdsData(ctx, app, namespace)
	switch {
	case err != nil:
		return err
	case held:
		return uds.ErrInUse
	}
	return nil
}

// settled is p stored in place of current, with no change pending.
func (s *Store) settled(current, p uds.Policy) uds.Policy {
	next := uds.Policy{Access: p.Access, Schema: p.Schema, History: p.History, Indexes: p.Indexes, IndexBuild: p.IndexBuild,
		Binary: p.Binary}
	next.Version, next.Updated = current.Version+1, s.writeTime()
	return next
}

// announced is current with a change to p pending from now, and p's
// history in effect at once.
func (s *Store) announced(current, p uds.Policy, now time.Time) uds.Policy {
	next := current
	next.Version, next.Updated, next.History = current.Version+1, s.writeTime(), p.History
	next.Indexes, next.IndexBuild, next.Binary = p.Indexes, p.IndexBuild, p.Binary
	settles := now.Add(s.policySettle)
	next.Pending = &uds.PolicyChange{Access: p.Access, Schema: p.Schema,
		Since: now, SettlesAt: settles, LapsesAt: settles.Add(s.policyWindow)}
	return next
}

// samePolicy reports whether two policies set the same access and schema.
func samePolicy(a, b uds.Policy) bool {
	return a.Access == b.Access && string(a.Schema) == string(b.Schema)
}

// writePolicy stores next over current, conditioned on current's version;
// false if another change got in first.
func (s *Store) writePolicy(ctx context.Context, app, namespace string, current, next uds.Policy) (bool, error) {
	names := map[string]string{"#pv": schema.AttrPolicyVersion, "#ud": schema.AttrUpdatedDate}
	values := map[string]types.AttributeValue{
		":pv": &types.AttributeValueMemberN{Value: strconv.FormatInt(next.Version, 10)},
		":ud": &types.AttributeValueMemberS{Value: FormatTime(next.Updated)},
	}
	set := []string{"#pv = :pv", "#ud = :ud"}
	var remove []string
	// attr sets an attribute to a string, or removes it when empty.
	attr := func(ref, name, value string) {
		names[ref] = name
		if value == "" {
			remove = append(remove, ref)
			return
		}
		set = append(set, ref+" = :"+ref[1:])
		values[":"+ref[1:]] = &types.AttributeValueMemberS{Value: value}
	}
	// millis sets an instant, or removes it with the zero time.
	millis := func(ref, name string, t time.Time) {
		names[ref] = name
		if t.IsZero() {
			remove = append(remove, ref)
			return
		}
		set = append(set, ref+" = :"+ref[1:])
		values[":"+ref[1:]] = &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
	}
	attr("#a", schema.AttrAccess, string(next.Access))
	attr("#js", schema.AttrJSONSchema, string(next.Schema))
	names["#h"] = schema.AttrHistory
	if h := next.History; h.On() {
		set = append(set, "#h = :h")
		values[":h"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			schema.AttrHistoryVersions: &types.AttributeValueMemberN{Value: strconv.Itoa(h.Versions)},
			schema.AttrHistoryDays:     &types.AttributeValueMemberN{Value: strconv.Itoa(h.Days)},
		}}
	} else {
		remove = append(remove, "#h")
	}
	indexes, build := encodeIndexes(next)
	attr("#ix", schema.AttrIndexes, indexes)
	attr("#ib", schema.AttrIndexBuild, build)
	attr("#br", schema.AttrBinaryRule, encodeBinaryRule(next.Binary))
	var c uds.PolicyChange
	if next.Pending != nil {
		c = *next.Pending
	}
	attr("#pa", schema.AttrPendingAccess, string(c.Access))
	attr("#ps", schema.AttrPendingSchema, string(c.Schema))
	millis("#pf", schema.AttrPendingSince, c.Since)
	millis("#st", schema.AttrSettlesAt, c.SettlesAt)
	millis("#la", schema.AttrLapsesAt, c.LapsesAt)
	update := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		update += " REMOVE " + strings.Join(remove, ", ")
	}
	cond := "attribute_not_exists(#pv)"
	if current.Version > 0 {
		cond = "#pv = :cur"
		values[":cur"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(current.Version, 10)}
	}
	return s.updatePolicyRecord(ctx, app, namespace, update, cond, names, values)
}

// updatePolicyRecord applies an update to a namespace's policy record if
// cond holds (false if it does not), and forgets the cached policy.
func (s *Store) updatePolicyRecord(ctx context.Context, app, namespace, update, cond string, names map[string]string, values map[string]types.AttributeValue) (bool, error) {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tables.Namespaces),
		Key:                       policyKey(app, namespace),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case asCCF(err, &ccf):
		return false, nil
	case err != nil:
		return false, err
	}
	s.policies.forget(namespaceRef{app, namespace})
	return true, nil
}
