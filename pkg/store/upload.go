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
// Then one transaction turns the reservation into the item: the
// reservation's delete (conditioned on it still being there), the item's
// create or replacement, naming the copy, the usage they move and the
// item's index entries. So an upload commits once, whether the bucket's
// event or the client commits first, and a commit whose answer was lost
// finds the item holding its value. The upload's object goes after the
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
// uds.ErrForbidden, now and again at the commit.
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
	res := reservationItem(&value, v, now, up)
	op := "reserve an upload to " + w.DataKey()
	for attempt := 0; attempt < 2; attempt++ {
		charge, lim, err := s.usageAction(ctx, w.App, w.Subject, uds.Usage{Bytes: v.size, Items: 1})
		if err != nil {
			return uds.Upload{}, err
		}
		put := types.TransactWriteItem{Put: &types.Put{
			TableName:                aws.String(s.tables.Data),
			Item:                     res,
			ConditionExpression:      aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames: map[string]string{"#k": schema.AttrDataKey},
		}}
		refused, err := s.transact(ctx, op, put, charge)
		switch {
		case err != nil:
			return uds.Upload{}, err
		case refused == nil:
			return up, nil
		case refused.conditionFailed(1) && attempt == 0 && s.reclaimOwner(ctx, w.App, w.Subject) > 0:
			// Expired items made room: try again.
		case refused.conditionFailed(1):
			return uds.Upload{}, s.quotaError(ctx, w.App, w.Subject, lim, refused.item(1))
		default:
			return uds.Upload{}, failed(op, errUnexpectedCancel(refused))
		}
	}
	return uds.Upload{}, &uds.UnavailableError{Op: op, Err: errContended}
}

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
	if w.IfMatch.Creator != "" {
		av[schema.AttrUploadCreator] = &types.AttributeValueMemberS{Value: w.IfMatch.Creator}
	}
	return av
}

// CommitUpload makes a large value visible: it checks the object against
// what the upload declared and turns the reservation into the item,
// created or replaced, with a new version. key, when given (a client's
// commit), must be the item the upload was reserved for; the bucket's
// event gives none. It reports whether the item was created.
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
	name := uds.ObjectName(app, id)
	op := "commit upload " + name
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
		return uds.Item{}, false, uds.ErrNotFound
	}
	if expired(res, s.now()) {
		s.reclaim(ctx, []listEntry{{key: rk, state: res}})
		return uds.Item{}, false, uds.ErrNotFound
	}
	// The reservation never changes, so the object is checked once,
	// however often the transaction races other writers of the item.
	w, err := s.checkUpload(ctx, rk, res, target, app, id)
	if err != nil {
		return uds.Item{}, false, err
	}
	for range maxWriteAttempts {
		it, created, outcome, err := s.commitOnce(ctx, op, rk, res, w)
		switch {
		case err != nil:
			return uds.Item{}, false, err
		case outcome == written:
			return it, created, nil
		}
		// The item changed since it was read, or the reservation is gone:
		// the other commit (the bucket's event, or the client's) made it.
		switch still, err := s.readMeta(ctx, rk, false); {
		case err != nil:
			return uds.Item{}, false, err
		case still == nil:
			return s.committed(ctx, app, id, key)
		}
	}
	return uds.Item{}, false, &uds.UnavailableError{Op: op, Err: errContended}
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
// makes; an object of another size or type is discarded with the
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
	policy, err := s.Policy(ctx, target.App, target.Namespace)
	if err != nil {
		return uds.Write{}, err
	}
	w := uds.Write{Key: target, Subject: str(res, schema.AttrCreatedBySubject), ClassName: str(res, schema.AttrClassName),
		Binary:  &uds.Binary{ContentType: declaredType, Object: value, Size: size},
		IfMatch: uds.Precondition{Creator: str(res, schema.AttrUploadCreator)}, Indexes: policy.Indexes}
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

// commitOnce tries the commit's transaction once against the item as it
// is now.
func (s *Store) commitOnce(ctx context.Context, op string, rk uds.Key, res map[string]types.AttributeValue, w uds.Write) (uds.Item, bool, writeOutcome, error) {
	v, err := encodeValue(&w)
	if err != nil {
		return uds.Item{}, false, 0, err
	}
	old, err := s.readLive(ctx, w.Key, len(w.Indexes) > 0)
	if err != nil {
		return uds.Item{}, false, 0, err
	}
	if old != nil && refusesWriter(w.IfMatch, stateOf(w.Key, old)) {
		s.discardUpload(ctx, rk, res)
		return uds.Item{}, false, 0, uds.ErrForbidden
	}
	now := s.writeTime()
	deltas := ownerDeltas{}
	deltas.add(w.App, w.Subject, uds.Usage{Bytes: -num(res, schema.AttrItemSize), Items: -1})
	var write types.TransactWriteItem
	var it uds.Item
	if old == nil {
		it = newItem(&w, now)
		write = types.TransactWriteItem{Put: &types.Put{
			TableName:                aws.String(s.table(w.Key)),
			Item:                     encodeItem(&it, v),
			ConditionExpression:      aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames: map[string]string{"#k": schema.AttrDataKey},
		}}
		deltas.add(w.App, w.Subject, uds.Usage{Bytes: v.size, Items: 1})
	} else {
		who, counted := owner(w.App, old)
		if !counted {
			who = w.Subject
		}
		deltas.add(w.App, who, uds.Usage{Bytes: v.size, Items: 1}.Plus(charged(old).Negate()))
		write = types.TransactWriteItem{Update: s.itemUpdate(&w, v, now, newToken(), old, !counted, false)}
		it = updated(&w, old, now)
	}
	claim := types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 aws.String(s.tables.Data),
		Key:                       keyAV(rk),
		ConditionExpression:       aws.String("#po = :po"),
		ExpressionAttributeNames:  map[string]string{"#po": schema.AttrPendingObject},
		ExpressionAttributeValues: map[string]types.AttributeValue{":po": res[schema.AttrPendingObject]},
	}}
	actions := []types.TransactWriteItem{write, claim}
	var owners []string
	limits := map[string]uds.Limits{}
	deltas.each(func(app, who string, d uds.Usage) {
		if err != nil {
			return
		}
		var action types.TransactWriteItem
		action, limits[who], err = s.usageAction(ctx, app, who, d)
		actions, owners = append(actions, action), append(owners, who)
	})
	if err != nil {
		return uds.Item{}, false, 0, s.refuseUpload(ctx, rk, res, err)
	}
	actions = append(actions, s.indexUpkeep(w.Key, w.Indexes, storedData(w.Key, old), nil)...)
	refused, err := s.transact(ctx, op, actions...)
	switch {
	case err != nil:
		return uds.Item{}, false, 0, err
	case refused == nil:
		s.removeObjects(ctx, old)
		s.removeObject(ctx, str(res, schema.AttrPendingObject))
		return it, old == nil, written, nil
	case refused.conditionFailed(0) || refused.conditionFailed(1):
		return uds.Item{}, false, raced, nil
	}
	for i, who := range owners {
		if refused.conditionFailed(2 + i) {
			return uds.Item{}, false, 0, s.refuseUpload(ctx, rk, res, s.quotaError(ctx, w.App, who, limits[who], refused.item(2+i)))
		}
	}
	return uds.Item{}, false, 0, failed(op, errUnexpectedCancel(refused))
}

// refuseUpload discards an upload the commit cannot make, for the reason
// err gives (a quota the replaced item's owner cannot grow by).
func (s *Store) refuseUpload(ctx context.Context, rk uds.Key, res map[string]types.AttributeValue, err error) error {
	if errors.As(err, new(*uds.QuotaError)) {
		s.discardUpload(ctx, rk, res)
	}
	return err
}
