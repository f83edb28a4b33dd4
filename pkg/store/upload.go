package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Large values travel straight to the bucket. An upload first reserves the
// value's bytes, and one item, in its owner's quota: a reservation is an
// item of its own in the data table, in a namespace no client can name
// (uploadNamespace), charged to the uploader like any item and expiring
// when the upload lapses. Every path that knows items therefore keeps it
// exact: recompute counts it, and expiry (UDS's reclaim, the TTL stream,
// the local sweep) releases it once and removes its object.
//
// The commit first copies the upload's object to a key of its own
// (uds.ValueName), which no presigned POST names: the form stays valid for
// its whole window, and a POST after the commit (the client's own retry of
// a POST whose answer was lost) then lands where nothing counts or serves
// it. The copy is made once, so no later commit copies such a POST either.
// Then the commit is a write of the item, judged and planned as any write
// is at that moment (commitVerb): the namespace's policy in effect then
// decides whether it may land (a pending change of access mode, the
// binary rule, the key space) and what it meets (history, indexes), and
// one transaction holds the item's create or replacement, naming the copy,
// what every capability adds to it, and the reservation's delete
// (conditioned on it still being there), whose bytes the item takes over.
// So an upload commits once, whether the bucket's event or the client
// commits first, and a commit whose answer was lost finds the item
// holding its value. The upload's object goes after the
// transaction; one that arrives later is removed by the bucket's event for
// it, which finds no reservation, and on AWS by the rule for pending
// uploads.

// uploadNamespace holds reservations. It starts with a control character,
// which no namespace a client names may hold, so no item, list, export,
// query or policy meets it.
const uploadNamespace = "\x00uploads"

// reservationKey is the key of an upload's reservation.
func reservationKey(app, id string) uds.Key {
	return uds.Key{App: app, Namespace: uploadNamespace, ID: id}
}

// WithUploadLapse sets how long an upload's reservation waits for its
// commit (uds.UploadWindow + uds.UploadGrace unless set): tests let
// reservations lapse while they run.
func WithUploadLapse(d time.Duration) Option { return func(s *Store) { s.uploadLapse = d } }

// ReserveUpload reserves the bytes of a large value (w.Binary's content
// type and size) and one item in the uploader's quota, until the upload
// lapses: a *uds.QuotaError if they do not fit. In an owner-write
// namespace (w.IfMatch.Creator) an item another subject created is
// uds.ErrForbidden, now and again at the commit if the namespace is still
// owner-write then.
func (s *Store) ReserveUpload(ctx context.Context, w uds.Write) (uds.Upload, error) {
	if s.objects == nil {
		return uds.Upload{}, uds.ErrNoBucket
	}
	if w.IfMatch.Creator != "" {
		old, err := s.readLive(ctx, w.Key, false)
		switch {
		case err != nil:
			return uds.Upload{}, err
		case old != nil && refusesWriter(w.IfMatch, stateOf(w.Key, old)):
			return uds.Upload{}, uds.ErrForbidden
		}
	}
	id := newToken()
	value := w
	value.Binary = &uds.Binary{ContentType: w.Binary.ContentType, Object: uds.ObjectName(w.App, id), Size: w.Binary.Size}
	v, err := encodeValue(&value)
	if err != nil {
		return uds.Upload{}, err
	}
	now := s.writeTime()
	up := uds.Upload{ID: id, Lapses: now.Add(s.uploadLapse)}
	rv := &reserveVerb{s: s, w: &uds.Write{Key: reservationKey(w.App, id), Subject: w.Subject}, value: v,
		item: reservationItem(&value, v, now, up)}
	if _, err := s.run(ctx, "reserve an upload to "+w.DataKey(), rv); err != nil {
		return uds.Upload{}, plainRefusal(err)
	}
	return up, nil
}

// reserveVerb is an upload's reservation as the commit loop runs it: the
// create of the reservation, which usage charges to the uploader under
// their limits (strictly, whatever the app's quota mode: the commit
// releases it in the transaction that charges the item).
type reserveVerb struct {
	s *Store
	// w is the reservation's write: its key and the uploader.
	w     *uds.Write
	value encodedValue
	item  map[string]types.AttributeValue
}

func (rv *reserveVerb) plan(context.Context, bool) (*plan, error) {
	put := types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(rv.s.tables.Data),
		Item:                     rv.item,
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": schema.AttrDataKey},
	}}
	c := &change{kind: createItem, key: rv.w.Key, w: rv.w, value: rv.value, item: put, owner: rv.w.Subject}
	return newPlan(rv.s.writeTime(), 0, c), nil
}

// refused: a reservation's key is new, so only its owner's limit refuses
// it, which the loop reads.
func (rv *reserveVerb) refused(context.Context, *refusal, bool) (bool, error) { return false, nil }

// reservationItem is the stored reservation of an upload of the item w
// describes: an item of the uploader's, of the size the item will have,
// that expires when the upload lapses.
func reservationItem(w *uds.Write, v encodedValue, now time.Time, up uds.Upload) map[string]types.AttributeValue {
	res := uds.Item{Key: reservationKey(w.App, up.ID), CreatedDate: now, CreatedBy: w.Subject,
		UpdatedDate: now, UpdatedBy: w.Subject, Version: 1, ExpiresAt: up.Lapses}
	av := encodeItem(&res, encodedValue{name: schema.AttrPendingObject,
		av: &types.AttributeValueMemberS{Value: w.Binary.Object}, extra: v.extra, size: v.size})
	av[schema.AttrUploadItem] = &types.AttributeValueMemberS{Value: w.DataKey()}
	if w.SortKey != "" {
		av[schema.AttrUploadSortKey] = &types.AttributeValueMemberS{Value: w.SortKey}
	}
	if w.ClassName != "" {
		av[schema.AttrClassName] = &types.AttributeValueMemberS{Value: w.ClassName}
	}
	if !w.ExpiresAt.IsZero() {
		av[schema.AttrUploadExpires] = &types.AttributeValueMemberN{Value: strconv.FormatInt(w.ExpiresAt.UnixMilli(), 10)}
	}
	return av
}

// CommitUpload makes a large value visible: it checks the object against
// what the upload declared and turns the reservation into the item,
// created or replaced, with a new version. key, when given (a client's
// commit), must be the item the upload was reserved for; the bucket's
// event gives none. It reports whether the item was created.
//
// The commit is a write, judged by the namespace's policy in effect when
// it is made, not when the upload was reserved (judgeCommit): while the
// namespace's access mode is changing it is a *uds.ChangingError, which
// leaves the upload to be committed again; a value the binary rule now
// refuses, an item the caller may no longer replace and a quota that
// cannot take it are refused, and the upload discarded.
//
// It is idempotent: once committed, a commit of the same upload answers
// the item (or uds.ErrNotFound without a key, or once the item has moved
// on). An upload whose reservation lapsed is uds.ErrNotFound, one whose
// object has not arrived uds.ErrUploadPending, and one whose object is
// not the declared size or type a *uds.UploadMismatchError, the object
// and the reservation then discarded.
func (s *Store) CommitUpload(ctx context.Context, app, id string, key *uds.Key) (uds.Item, bool, error) {
	if s.objects == nil {
		return uds.Item{}, false, uds.ErrNoBucket
	}
	rk := reservationKey(app, id)
	res, err := s.readMeta(ctx, rk, true)
	switch {
	case err != nil:
		return uds.Item{}, false, err
	case res == nil:
		return s.committed(ctx, app, id, key)
	}
	target, ok := keyOf(map[string]types.AttributeValue{
		schema.AttrDataKey: res[schema.AttrUploadItem], schema.AttrSortKey: res[schema.AttrUploadSortKey]})
	if !ok || key != nil && (target.DataKey() != key.DataKey() || target.SortKey != key.SortKey) {
		if ok && key != nil && s.leftKeySpace(ctx, target, *key, str(res, schema.AttrCreatedBySubject)) {
			s.discardUpload(ctx, rk, res)
		}
		return uds.Item{}, false, uds.ErrNotFound
	}
	if expired(res, s.now()) {
		s.reclaim(ctx, []listEntry{{key: rk, state: res}})
		return uds.Item{}, false, uds.ErrNotFound
	}
	if ms := num(res, schema.AttrUploadExpires); ms > 0 && !time.UnixMilli(ms).After(s.now()) {
		// The item would be gone as it is made: the upload is of no use.
		s.discardUpload(ctx, rk, res)
		return uds.Item{}, false, uds.Invalid("expiresAt", "the item's expiry, %s, passed before its upload was committed; "+
			"reserve the upload again with a later ttl or expiresAt", FormatTime(time.UnixMilli(ms)))
	}
	// The reservation never changes, so the object is checked once,
	// however often the write races other writers of the item.
	w, err := s.checkUpload(ctx, rk, res, target, app, id)
	if err != nil {
		return uds.Item{}, false, err
	}
	v, err := encodeValue(&w)
	if err != nil {
		return uds.Item{}, false, err
	}
	cv := &commitVerb{s: s, reservation: stateOf(rk, res), w: w, value: v, token: newToken()}
	p, err := s.run(ctx, "commit upload "+uds.ObjectName(app, id), cv)
	switch {
	case err != nil:
		err = plainRefusal(err)
		if discards(err) {
			s.discardUpload(ctx, rk, res)
		}
		return uds.Item{}, false, err
	case p == nil:
		return s.committed(ctx, app, id, key)
	}
	c := p.changes[0]
	return c.result, c.kind == createItem, nil
}

// discards reports whether a commit refused for err discards its upload:
// a refusal that stays true however often the commit is sent again (the
// quota, the binary rule, the owner-write rule, the key space left), as
// opposed to one that passes (a pending change of access mode, DynamoDB
// not answering).
func discards(err error) bool {
	return errors.Is(err, uds.ErrQuotaExceeded) || errors.Is(err, uds.ErrSchema) ||
		errors.Is(err, uds.ErrForbidden) || errors.Is(err, uds.ErrNotFound)
}

// commitVerb is an upload's commit as the commit loop runs it: a write of
// the item that claims the reservation in its transaction.
type commitVerb struct {
	s *Store
	// reservation is the upload's reservation as read.
	reservation *itemState
	// w is the write the upload makes, before the policy (judgeCommit).
	w     uds.Write
	value encodedValue
	token string
}

func (cv *commitVerb) plan(ctx context.Context, _ bool) (*plan, error) {
	w := cv.w
	if err := cv.s.judgeCommit(ctx, &w); err != nil {
		return nil, err
	}
	av, head, err := cv.s.readForWrite(ctx, &w)
	if err != nil {
		return nil, err
	}
	now := cv.s.writeTime()
	var c *change
	if old := stateOf(w.Key, av); old == nil {
		c, err = cv.s.createChange(&w, cv.value, nil, now)
	} else {
		c, err = cv.s.replaceChange(&w, cv.value, old, now, cv.token)
	}
	if err != nil {
		return nil, err
	}
	c.head = head
	p := newPlan(now, maxPrunes, c)
	// The item takes over the reservation's bytes and item: its usage is
	// released in the transaction that charges the item, so a commit
	// moves its owner's usage by what the value differs from what was
	// reserved (nothing, for a create).
	res := cv.reservation
	p.add(roleUpload, 0, types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 aws.String(cv.s.tables.Data),
		Key:                       keyAV(res.key),
		ConditionExpression:       aws.String("#po = :po"),
		ExpressionAttributeNames:  map[string]string{"#po": schema.AttrPendingObject},
		ExpressionAttributeValues: map[string]types.AttributeValue{":po": res.av[schema.AttrPendingObject]},
	}})
	p.charge(res.key.App, res.owner, res.charged().Negate(), 0)
	// The upload's object goes once the item names the copy.
	p.afterCommit(func(ctx context.Context) { cv.s.removeObject(ctx, str(res.av, schema.AttrPendingObject)) })
	return p, nil
}

func (cv *commitVerb) refused(_ context.Context, r *refusal, _ bool) (bool, error) {
	if r.anyOf(roleUpload) {
		// The reservation is gone: the other commit (the bucket's event,
		// or the client's) made the item, or the upload was discarded or
		// lapsed; CommitUpload answers which.
		return false, errCommitted
	}
	// The item changed since it was read.
	refused, _ := r.item(0)
	return refused, nil
}

// judgeCommit applies to an upload's write the policy of its namespace in
// effect now, as a write's request applies it when it is made: while the
// access mode is changing, the commit waits as writes do (a
// *uds.ChangingError); an item whose key space the namespace has left
// since the reservation (a change into or out of private completed
// meanwhile) is uds.ErrNotFound, since committing it there would leave an
// item no caller can reach; the binary rule judges the value; and the
// write meets the history, indexes and owner-write rule of the namespace.
func (s *Store) judgeCommit(ctx context.Context, w *uds.Write) error {
	policy, err := s.Policy(ctx, w.App, w.Namespace)
	if err != nil {
		return err
	}
	if err := policy.Writable(w.Namespace, s.now()); err != nil {
		return err
	}
	if outsideKeySpace(policy, w.Key) {
		return uds.ErrNotFound
	}
	if err := policy.Binary.Check(w.Binary, policy.Schema != nil); err != nil {
		return err
	}
	w.History, w.Indexes, w.IfMatch = policy.History, policy.Indexes, uds.Precondition{}
	if policy.Mode() == uds.AccessOwnerWrite {
		w.IfMatch.Creator = w.Subject
	}
	return nil
}

// outsideKeySpace reports whether the namespace's access mode puts its
// items in another key space than key's: a private namespace's items
// carry their owner, every other namespace's none.
func outsideKeySpace(policy uds.Policy, key uds.Key) bool {
	return (policy.Mode() == uds.AccessPrivate) != (key.Owner != "")
}

// leftKeySpace reports whether the uploader's commit, naming key and not
// the target reserved, names the same item in the key space the namespace
// has moved it to since the reservation (a change into or out of private
// that completed meanwhile). Such an upload cannot be committed while the
// namespace stays so, and its commit discards it, as the bucket's event
// does. A key in a private namespace names its caller, who must be the
// uploader; a shared key names nobody, and the upload's ID is the
// uploader's secret. Any other key leaves the upload alone.
func (s *Store) leftKeySpace(ctx context.Context, target, key uds.Key, uploader string) bool {
	if target.App != key.App || target.Namespace != key.Namespace || target.ID != key.ID || target.SortKey != key.SortKey ||
		key.Owner != "" && key.Owner != uploader {
		return false
	}
	policy, err := s.Policy(ctx, target.App, target.Namespace)
	return err == nil && policy.Writable(target.Namespace, s.now()) == nil && outsideKeySpace(policy, target)
}

// committed answers a commit whose reservation is gone: the item, if it
// holds the upload's value. Without a key it is the bucket's event for an
// object that no reservation awaits (one posted after its upload was
// committed, discarded or lapsed, or the event of an upload the client
// committed first), and the upload's object is removed: nothing counts or
// serves it.
func (s *Store) committed(ctx context.Context, app, id string, key *uds.Key) (uds.Item, bool, error) {
	if key == nil {
		name := uds.ObjectName(app, id)
		if err := s.objects.RemoveUnclaimed(ctx, name); err != nil {
			return uds.Item{}, false, failed("remove the unclaimed upload "+name, err)
		}
		return uds.Item{}, false, uds.ErrNotFound
	}
	it, err := s.Get(ctx, *key)
	switch {
	case err != nil:
		return uds.Item{}, false, err
	case it.Binary == nil || it.Binary.Object != uds.ValueName(app, id) && it.Binary.Object != uds.ObjectName(app, id):
		// An item committed before commits copied values names its
		// upload's object.
		return uds.Item{}, false, uds.ErrNotFound
	}
	return it, false, nil
}

// checkUpload copies the upload's object to the value's own name, checks
// the copy against the reservation and returns the write the commit
// makes, before the policy in effect at the commit applies to it
// (judgeCommit); an object of another size or type is discarded with the
// reservation. What is checked is the copy, the bytes the item will name,
// whatever reaches the upload's key meanwhile. The copy carries no pending
// tag, so the bucket's rule for abandoned uploads never removes a value an
// item holds.
func (s *Store) checkUpload(ctx context.Context, rk uds.Key, res map[string]types.AttributeValue, target uds.Key, app, id string) (uds.Write, error) {
	upload, value := uds.ObjectName(app, id), uds.ValueName(app, id)
	err := s.objects.Copy(ctx, upload, value)
	var size int64
	var contentType string
	if err == nil {
		size, contentType, err = s.objects.Stat(ctx, value)
	}
	switch {
	case errors.Is(err, uds.ErrUploadPending):
		return uds.Write{}, err
	case err != nil:
		// S3 not answering, or answering 5xx, is a 503 the commit may be
		// sent again after, as DynamoDB's is.
		return uds.Write{}, failed("copy the object "+upload, err)
	}
	declaredSize, declaredType := num(res, schema.AttrObjectSize), str(res, schema.AttrContentType)
	var mismatch string
	switch {
	case size != declaredSize:
		mismatch = fmt.Sprintf("the object has %d bytes; the upload declared %d", size, declaredSize)
	case uds.MediaType(contentType) != uds.MediaType(declaredType):
		mismatch = fmt.Sprintf("the object's type is %q; the upload declared %q", uds.Truncate(contentType, 64), declaredType)
	}
	if mismatch != "" {
		s.discardUpload(ctx, rk, res)
		return uds.Write{}, &uds.UploadMismatchError{Reason: mismatch}
	}
	w := uds.Write{Key: target, Subject: str(res, schema.AttrCreatedBySubject), ClassName: str(res, schema.AttrClassName),
		Binary: &uds.Binary{ContentType: declaredType, Object: value, Size: size}}
	if ms := num(res, schema.AttrUploadExpires); ms > 0 {
		w.ExpiresAt = time.UnixMilli(ms).UTC()
	}
	return w, nil
}

// discardUpload removes a reservation, releasing its bytes, and its
// object with any copy of it.
func (s *Store) discardUpload(ctx context.Context, rk uds.Key, res map[string]types.AttributeValue) {
	_, _ = s.removeEntries(ctx, "discard upload "+rk.ID, nil, []listEntry{{key: rk, state: res}})
}
