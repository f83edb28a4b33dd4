package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// The catalogue is what an operator browses data by: the namespaces and
// the apps that have held data. A write that creates an item in a
// namespace whose record carries no mark (schema.AttrHeldSince) marks,
// once it committed, the namespace's record in the namespaces table and
// the app's record in the apps table; an app that is not registered also
// enters the byName index's held partition (schema.HeldPartition), keyed
// by its id, so that the apps holding data are listed without a scan.
//
// The marks are made after the commit and outside its transaction, as a
// large value's object is released (objects.go): two first writers of a
// namespace never conflict, and a write pays for them only while the
// namespace's policy, as its function holds it, shows no mark, which the
// first write's mark ends (the cached policy takes it at once; another
// function sees it at its next read). So no record is written on every
// write, and none is hot. A mark that is lost (the function stopped
// between the commit and the mark, or the call failed) is made by the
// next write that creates an item there.
//
// The marks are never removed: the catalogue is the namespaces and apps
// that have held data, a superset of those that hold some now. Removing a
// mark with the last item would need a count of each namespace's items
// kept by every write (a hot record), or a look for any item left at each
// removal.

// planCatalogue marks, once the plan committed, the namespaces its
// changes create items in that the catalogue does not hold yet.
func (s *Store) planCatalogue(_ context.Context, p *plan) error {
	var created []uds.Key
	for _, c := range p.changes {
		if c.kind != createItem || c.key.Namespace == uploadNamespace || holdsNamespace(created, c.key) || s.catalogued(p.now, c.key) {
			continue
		}
		created = append(created, c.key)
	}
	if len(created) > 0 {
		p.afterCommit(func(ctx context.Context) {
			for _, k := range created {
				s.catalogue(ctx, k.App, k.Namespace)
			}
		})
	}
	return nil
}

// catalogued reports whether the cached policy of k's namespace shows the
// mark already, as it does for every write but a namespace's first ones:
// such a plan then waits for nothing after its commit. A policy not
// cached is left to catalogue, which reads it.
func (s *Store) catalogued(now time.Time, k uds.Key) bool {
	pol, ok := s.policies.cached(now, namespaceRef{k.App, k.Namespace})
	return ok && !pol.HeldSince.IsZero()
}

// holdsNamespace reports whether keys holds one in k's namespace. It looks
// through them: a plan holds at most a batch's changes, mostly in one
// namespace, and comparing them costs less than building a key per change
// for a set, as every single write would.
func holdsNamespace(keys []uds.Key, k uds.Key) bool {
	for _, o := range keys {
		if o.App == k.App && o.Namespace == k.Namespace {
			return true
		}
	}
	return false
}

// catalogue marks a namespace, and its app, as holding data unless the
// namespace's policy, as this function holds it, shows the mark. It is
// best effort: a failure is logged, and the next write that creates an
// item there marks again.
func (s *Store) catalogue(ctx context.Context, app, namespace string) {
	pol, err := s.Policy(ctx, app, namespace)
	if err != nil || !pol.HeldSince.IsZero() {
		return
	}
	// A write of this process that is marking the namespace already
	// stands for this one: should it fail, a later write marks.
	key := namespaceRef{app, namespace}
	if _, marking := s.cataloguing.LoadOrStore(key, true); marking {
		return
	}
	defer s.cataloguing.Delete(key)
	now := s.writeTime()
	if err := s.markHeld(ctx, app, namespace, now); err != nil {
		slog.Default().WarnContext(ctx, "mark a namespace as holding data", slog.String("app", app),
			slog.String("namespace", namespace), slog.String("cause", err.Error()))
		return
	}
	s.policies.update(key, func(p uds.Policy) uds.Policy {
		if p.HeldSince.IsZero() {
			p.HeldSince = now
		}
		return p
	})
}

// MarkHeld marks a namespace, and its app, as holding data, for data
// written before the catalogue (a migration's scan finds it): a mark
// already made keeps its instant.
func (s *Store) MarkHeld(ctx context.Context, ns HeldNamespace) error {
	if err := s.markHeld(ctx, ns.App, ns.Namespace, s.writeTime()); err != nil {
		return failed("mark "+ns.App+"/"+ns.Namespace+" as holding data", err)
	}
	s.policies.forget(namespaceRef{ns.App, ns.Namespace})
	return nil
}

// markHeld marks the namespace's record, then the app's; a mark already
// made keeps its instant.
func (s *Store) markHeld(ctx context.Context, app, namespace string, now time.Time) error {
	at := &types.AttributeValueMemberS{Value: FormatTime(now)}
	if _, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tables.Namespaces),
		Key:                       policyKey(app, namespace),
		UpdateExpression:          aws.String("SET #h = if_not_exists(#h, :now)"),
		ExpressionAttributeNames:  map[string]string{"#h": schema.AttrHeldSince},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": at},
	}); err != nil {
		return err
	}
	// A registered app keeps its partition and its name's key; one that
	// is not enters the held partition under its id.
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.tables.Apps),
		Key:                      appKey(app),
		UpdateExpression:         aws.String("SET #h = if_not_exists(#h, :now), #r = if_not_exists(#r, :held), #k = if_not_exists(#k, :app)"),
		ExpressionAttributeNames: map[string]string{"#h": schema.AttrHeldSince, "#r": schema.AttrRegistry, "#k": schema.AttrAppNameKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": at,
			":held": &types.AttributeValueMemberS{Value: schema.HeldPartition}, ":app": &types.AttributeValueMemberS{Value: app}},
	})
	return err
}
