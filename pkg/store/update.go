package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Update replaces the value of an existing item: uds.ErrNotFound if it does
// not exist, uds.ErrPrecondition if w.IfMatch names none of its revisions,
// a *uds.QuotaError if it grows past its owner's limit.
//
// It reads the item's revision, owner and size first, then writes on
// exactly that revision; if another writer got in between, it starts over
// from the new state. The item records the request's write token, so a
// retry recognises its own earlier commit.
func (s *Store) Update(ctx context.Context, w uds.Write) (uds.Item, error) {
	v, err := encodeValue(&w)
	if err != nil {
		return uds.Item{}, err
	}
	uv := &updateVerb{s: s, w: &w, value: v, token: newToken(), op: "update " + w.DataKey()}
	p, err := s.run(ctx, uv.op, uv)
	switch {
	case err != nil:
		return uds.Item{}, plainRefusal(err)
	case p == nil:
		return uv.committed, nil
	}
	return p.changes[0].result, nil
}

// updateVerb is an update as the commit loop runs it.
type updateVerb struct {
	s     *Store
	w     *uds.Write
	value encodedValue
	token string
	op    string
	// committed is the item as an earlier attempt left it, when a later
	// one found it by its write token.
	committed uds.Item
}

func (uv *updateVerb) plan(ctx context.Context, uncertain bool) (*plan, error) {
	av, head, err := uv.s.readForWrite(ctx, uv.w)
	if err != nil {
		return nil, err
	}
	old := stateOf(uv.w.Key, av)
	if old != nil && old.token == uv.token {
		uv.committed = committed(uv.w, av)
		return nil, nil
	}
	now := uv.s.writeTime()
	if err := replaceable(uv.w, old, now); err != nil {
		return nil, surely(err, uncertain, uv.op)
	}
	return uv.replace(ctx, old, head, now)
}

// replace plans the write of uv's value over old, which replaceable let
// through.
func (uv *updateVerb) replace(ctx context.Context, old *itemState, head historyHead, now time.Time) (*plan, error) {
	c, err := uv.s.replaceChange(uv.w, uv.value, old, now, uv.token)
	if err != nil {
		return nil, err
	}
	c.byQuotaMode, c.head = true, head
	return newPlan(now, maxPrunes, c), nil
}

func (uv *updateVerb) refused(_ context.Context, r *refusal, _ bool) (bool, error) {
	refused, current := r.item(0)
	if refused && ownTokenIn(current, uv.token) {
		uv.committed = committed(uv.w, current)
		return false, errCommitted
	}
	// The item changed since it was read.
	return refused, nil
}

// replaceChange decides an update of w over the item the key holds (old,
// nil when none): its checks, then the write of the new value on exactly
// the revision read. The owner of an item that predates UDS becomes the
// writer.
func (s *Store) replaceChange(w *uds.Write, v encodedValue, old *itemState, now time.Time, token string) (*change, error) {
	if err := replaceable(w, old, now); err != nil {
		return nil, err
	}
	up := s.itemUpdate(w, v, now, token, old.av, !old.counted)
	return &change{kind: replaceItem, key: w.Key, w: w, old: old, value: v, item: types.TransactWriteItem{Update: up},
		owner: ownerAfter(w, old), result: updated(w, old.av, now)}, nil
}

// replaceable is an update's checks of the item it replaces: that it is
// there, that w may write over it, at a revision w names.
func replaceable(w *uds.Write, old *itemState, now time.Time) error {
	switch {
	case old == nil || old.expired(now):
		return uds.ErrNotFound
	case refusesWriter(w.IfMatch, old):
		return uds.ErrForbidden
	case !w.IfMatch.Matches(old.revision()):
		return uds.ErrPrecondition
	}
	return nil
}

// ownerAfter is who owns an item once w replaces old: old's owner, or the
// writer of an item that predates UDS, which is counted from then on.
func ownerAfter(w *uds.Write, old *itemState) string {
	if old == nil || !old.counted {
		return w.Subject
	}
	return old.owner
}

// surely is a verb's answer err once it read what it writes again after
// an attempt went unanswered: an item gone or changed may be the work of
// that attempt, so a refusal is no proof that nothing was written.
func surely(err error, uncertain bool, op string) error {
	if uncertain && (errors.Is(err, uds.ErrNotFound) || errors.Is(err, uds.ErrForbidden) || errors.Is(err, uds.ErrPrecondition)) {
		return unknownOutcome(op, "the item changed")
	}
	return err
}

// plainRefusal is a single write's answer to a refusal by an owner's
// limit: the *uds.QuotaError itself.
func plainRefusal(err error) error {
	var refusal *quotaRefusal
	if errors.As(err, &refusal) {
		return refusal.err
	}
	return err
}

// readForWrite reads what a write of w replaces: the item's state, and
// what the capabilities it meets need (needsOf): the whole item, and the
// history head with it in one read.
func (s *Store) readForWrite(ctx context.Context, w *uds.Write) (map[string]types.AttributeValue, historyHead, error) {
	n := needsOf(w)
	if n.head {
		return s.readWithHead(ctx, w.Key)
	}
	old, err := s.readLive(ctx, w.Key, n.whole)
	return old, historyHead{}, err
}

// itemUpdate writes w's value over the item at the revision old shows,
// bumping its version and recording the write token. adopt records the
// writer as the owner of an item that has none (written before UDS). The
// item stays counted as old shows (its condition names how) unless the
// usage capability marks it otherwise (markCounting). The expression is a
// SET clause, then a REMOVE clause, which amendItemUpdate adds to.
func (s *Store) itemUpdate(w *uds.Write, v encodedValue, now time.Time, token string, old map[string]types.AttributeValue, adopt bool) *types.Update {
	names := map[string]string{
		"#k": schema.AttrDataKey, "#val": v.name, "#ud": schema.AttrUpdatedDate,
		"#ub": schema.AttrUpdatedBySubject, "#sz": schema.AttrItemSize, "#sv": schema.AttrSchemaVersion,
		"#v": schema.AttrVersion, "#cn": schema.AttrClassName,
		"#wt": schema.AttrWriteToken,
	}
	values := map[string]types.AttributeValue{
		":val":  v.av,
		":ud":   &types.AttributeValueMemberS{Value: FormatTime(now)},
		":ub":   &types.AttributeValueMemberS{Value: w.Subject},
		":sz":   &types.AttributeValueMemberN{Value: strconv.FormatInt(v.size, 10)},
		":sv":   &types.AttributeValueMemberN{Value: schemaVersion},
		":wt":   &types.AttributeValueMemberS{Value: token},
		":one":  &types.AttributeValueMemberN{Value: "1"},
		":zero": &types.AttributeValueMemberN{Value: "0"},
	}
	set := "SET #val = :val, #ud = :ud, #ub = :ub, #sz = :sz, #sv = :sv, #wt = :wt, #v = if_not_exists(#v, :zero) + :one"
	// The attributes of the value's other forms go, so an item holds one.
	var gone []string
	for i, attr := range valueAttrs {
		ref := "#vf" + strconv.Itoa(i)
		if extra, kept := v.extra[attr]; kept {
			set += ", " + ref + " = :vf" + strconv.Itoa(i)
			values[":vf"+strconv.Itoa(i)] = extra
		} else if attr != v.name {
			gone = append(gone, ref)
		} else {
			continue
		}
		names[ref] = attr
	}
	remove := " REMOVE " + strings.Join(gone, ", ")
	if adopt {
		set += ", #ok = :ok, #cb = if_not_exists(#cb, :owner)"
		names["#ok"], names["#cb"] = schema.AttrOwnerKey, schema.AttrCreatedBySubject
		values[":ok"] = &types.AttributeValueMemberS{Value: ownerKey(w.App, w.Subject)}
		values[":owner"] = &types.AttributeValueMemberS{Value: w.Subject}
	}
	if w.ClassName != "" {
		set += ", #cn = :cn"
		values[":cn"] = &types.AttributeValueMemberS{Value: w.ClassName}
	} else {
		remove += ", #cn"
	}
	// A PUT replaces the item, its expiry included.
	names["#x"], names["#xm"] = schema.AttrExpiresAt, schema.AttrExpiresAtMillis
	if !w.ExpiresAt.IsZero() {
		set += ", #x = :x, #xm = :xm"
		values[":x"], values[":xm"] = expiryAVs(w.ExpiresAt)
	} else {
		remove += ", #x, #xm"
	}
	return &types.Update{
		TableName:                           aws.String(s.table(w.Key)),
		Key:                                 keyAV(w.Key),
		UpdateExpression:                    aws.String(set + remove),
		ConditionExpression:                 aws.String("attribute_exists(#k) AND " + exactRevision(old, names, values)),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// amendItemUpdate sets attribute attr (named ref, "#" and a name) in an
// item update that itemUpdate made, to v, or removes it when v is nil: a
// capability's mark on the item a verb writes. It relies on itemUpdate's
// form: a SET clause, then a REMOVE clause (an item update always removes
// the value's other forms).
func amendItemUpdate(up *types.Update, ref, attr string, v types.AttributeValue) {
	expr := aws.ToString(up.UpdateExpression)
	up.ExpressionAttributeNames[ref] = attr
	if v == nil {
		expr += ", " + ref
	} else {
		value := ":" + ref[1:]
		up.ExpressionAttributeValues[value] = v
		remove := strings.Index(expr, " REMOVE ")
		expr = expr[:remove] + ", " + ref + " = " + value + expr[remove:]
	}
	up.UpdateExpression = aws.String(expr)
}

// updated is the item an update left: the old item's creation fields and
// version plus one, with the value just written.
func updated(w *uds.Write, old map[string]types.AttributeValue, now time.Time) uds.Item {
	it := decodeMeta(w.Key, old)
	it.Data, it.Binary, it.ClassName, it.ExpiresAt = w.Data, w.Binary, w.ClassName, w.ExpiresAt
	it.UpdatedDate, it.UpdatedBy = now, w.Subject
	it.Version++
	if it.CreatedBy == "" {
		it.CreatedBy = w.Subject
	}
	return it
}

// committed is the item as an earlier attempt of this request left it,
// found by its write token after the attempt's answer was lost.
func committed(w *uds.Write, current map[string]types.AttributeValue) uds.Item {
	it := decodeMeta(w.Key, current)
	it.Data, it.Binary, it.ClassName, it.ExpiresAt = w.Data, w.Binary, w.ClassName, w.ExpiresAt
	return it
}

// refusesWriter reports whether pre names a creator other than the one of
// the item old shows. The write that follows is conditional on exactly
// that revision, so the creator cannot change in between.
func refusesWriter(pre uds.Precondition, old *itemState) bool {
	return pre.Creator != "" && old.createdBy != pre.Creator
}

// exactRevision is a condition that holds only while the item is still at
// the revision old shows. A revision is the version and creation instant,
// which UDS never gives two incarnations of a key; an import can (it keeps
// both as exported), so the condition also names what the write or removal
// accounts and checks from old: the size charged, the owner charged, the
// creator, and whether the stream counts the item (usage.go, charged).
// Whatever item it matches, the usage moves by exactly what that item
// holds.
func exactRevision(old map[string]types.AttributeValue, names map[string]string, values map[string]types.AttributeValue) string {
	return asRead(old, names, values, []attrRef{
		{schema.AttrVersion, "#v", ":xv"},
		{schema.AttrCreatedDate, "#cd", ":xcd"},
		{schema.AttrItemSize, "#xz", ":xz"},
		{schema.AttrOwnerKey, "#xo", ":xo"},
		{schema.AttrCreatedBySubject, "#xc", ":xc"},
		{schema.AttrStreamCounted, "#xsc", ":xsc"},
	})
}

// attrRef is an attribute and the placeholders a condition names it and
// its value by.
type attrRef struct{ attr, name, value string }

// asRead is a condition that holds only while each of attrs is as old
// shows it: equal, or absent where old has none.
func asRead(old map[string]types.AttributeValue, names map[string]string, values map[string]types.AttributeValue, attrs []attrRef) string {
	terms := make([]string, 0, len(attrs))
	for _, a := range attrs {
		names[a.name] = a.attr
		if v, ok := old[a.attr]; ok {
			values[a.value] = v
			terms = append(terms, a.name+" = "+a.value)
		} else {
			terms = append(terms, "attribute_not_exists("+a.name+")")
		}
	}
	return strings.Join(terms, " AND ")
}
