package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// maxWriteAttempts bounds the attempts of a single-item write that keeps
// losing races with other writers of the item, or getting no answer.
const maxWriteAttempts = 12

// Update replaces the value of an existing item: uds.ErrNotFound if it does
// not exist, uds.ErrPrecondition if w.IfMatch names none of its revisions,
// a *uds.QuotaError if it grows past its owner's limit.
//
// It reads the item's revision, owner and size first, then writes on
// exactly that revision. A write that changes no usage a transaction
// counts (one that keeps the size, or any in streamed mode over an item
// the stream counts) is one UpdateItem; any other is a transaction with
// the owner's usage change. Either
// way the item records the request's write token, so a retry recognises
// its own earlier commit. If another writer got in between, it starts
// over from the new state.
func (s *Store) Update(ctx context.Context, w uds.Write) (uds.Item, error) {
	v, err := encodeValue(&w)
	if err != nil {
		return uds.Item{}, err
	}
	op := "update " + w.DataKey()
	token := newToken()
	// uncertain is set once a write attempt ended without an answer: it may
	// have committed, so a refusal that the token does not explain is no
	// proof that nothing was written.
	uncertain := false
	for attempt := 0; attempt < maxWriteAttempts; attempt++ {
		old, head, err := s.readForWrite(ctx, &w)
		switch {
		case err != nil:
			return uds.Item{}, err
		case old != nil && str(old, schema.AttrWriteToken) == token:
			return committed(&w, old), nil
		case old == nil && uncertain:
			return uds.Item{}, unknownOutcome(op, "the item is gone")
		case old == nil:
			return uds.Item{}, uds.ErrNotFound
		case refusesWriter(w.IfMatch, old) && uncertain:
			return uds.Item{}, unknownOutcome(op, "the item changed")
		case refusesWriter(w.IfMatch, old):
			return uds.Item{}, uds.ErrForbidden
		case !w.IfMatch.Matches(decodeMeta(w.Key, old).Revision()) && uncertain:
			return uds.Item{}, unknownOutcome(op, "the item changed")
		case !w.IfMatch.Matches(decodeMeta(w.Key, old).Revision()):
			return uds.Item{}, uds.ErrPrecondition
		}
		who, counted := owner(w.App, old)
		if !counted {
			// The item predates UDS: its writer becomes its owner and it
			// is counted from now on.
			who = w.Subject
		}
		// The transaction charges what the write changes of the part it
		// counts; in streamed mode the stream charges the new value.
		lim, streamed, err := s.quotaOf(ctx, &w, who)
		if err != nil {
			return uds.Item{}, err
		}
		value := uds.Usage{Bytes: v.size, Items: 1}
		change := value.Plus(charged(old).Negate())
		if streamed {
			if err := s.checkTracked(ctx, w.App, who, lim, value.Plus(held(old).Negate())); err != nil {
				return uds.Item{}, err
			}
			change = charged(old).Negate()
		}
		now := s.writeTime()
		up := s.itemUpdate(&w, v, now, token, old, !counted, streamed)
		entries := s.indexUpkeep(w.Key, w.Indexes, storedData(w.Key, old), w.Data)
		var outcome writeOutcome
		switch {
		case w.History.On():
			ch := s.keepVersion(w.Key, w.History, head, old, nil, now, maxPrunes)
			ch.actions = append(ch.actions, entries...)
			outcome, err = s.commitKeeping(ctx, op, types.TransactWriteItem{Update: up}, w.App, who, change, ch)
		case change == (uds.Usage{}) && len(entries) == 0:
			outcome, err = s.updateAlone(ctx, op, up, token, attempt)
		default:
			// A streamed item rewritten here is released by the stream.
			due := held(old).Plus(charged(old).Negate())
			if streamed {
				due = uds.Usage{}
			}
			outcome, err = s.updateCharged(ctx, op, up, w.App, who, change, lim, due, entries)
		}
		switch {
		case err != nil:
			return uds.Item{}, err
		case outcome == written:
			if !w.History.On() {
				// A large value replaced goes from the bucket; one kept as
				// a version stays with it.
				s.removeObjects(ctx, old)
			}
			return updated(&w, old, now), nil
		case outcome == unanswered:
			uncertain = true
		}
	}
	return uds.Item{}, &uds.UnavailableError{Op: op, Err: errContended}
}

// readForWrite reads what a write of w replaces: the item's state; in a
// namespace with history the whole item and its history head, and in one
// with indexes the whole item, whose value names the entries it has.
func (s *Store) readForWrite(ctx context.Context, w *uds.Write) (map[string]types.AttributeValue, historyHead, error) {
	if w.History.On() {
		return s.readWithHead(ctx, w.Key)
	}
	old, err := s.readLive(ctx, w.Key, len(w.Indexes) > 0)
	return old, historyHead{}, err
}

// writeOutcome is how one attempt at a conditional write ended, when it did
// not fail outright.
type writeOutcome int

const (
	written    writeOutcome = iota
	raced                   // the item changed since it was read
	unanswered              // no answer: the write may or may not have happened
)

// updateAlone writes an update that leaves the usage as it is, with one
// UpdateItem. The SDK does not retry it: a retry of a commit whose answer
// was lost would be refused by the revision condition, and only the caller,
// re-reading the item, can tell that refusal from a real race.
func (s *Store) updateAlone(ctx context.Context, op string, up *types.Update, token string, attempt int) (writeOutcome, error) {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           up.TableName,
		Key:                                 up.Key,
		UpdateExpression:                    up.UpdateExpression,
		ConditionExpression:                 up.ConditionExpression,
		ExpressionAttributeNames:            up.ExpressionAttributeNames,
		ExpressionAttributeValues:           up.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, withoutRetries)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return written, nil
	case asCCF(err, &ccf) && str(ccf.Item, schema.AttrWriteToken) == token:
		return written, nil
	case asCCF(err, &ccf):
		return raced, nil
	}
	return unansweredOrFailed(ctx, op, err, attempt)
}

// unansweredOrFailed is how a single-item write that the SDK does not
// retry ended when it neither committed nor was refused: a transient
// error leaves it unanswered (it may have committed), after a pause before
// the caller's next attempt; anything else fails it.
func unansweredOrFailed(ctx context.Context, op string, err error, attempt int) (writeOutcome, error) {
	if !isTransient(err) {
		return 0, failed(op, err)
	}
	if serr := sleep(ctx, backoff(attempt)); serr != nil {
		return 0, failed(op, errors.Join(err, serr))
	}
	return unanswered, nil
}

// updateCharged writes an update together with the usage change it makes
// under the owner's limits lim (no change when it keeps the size), of
// which the stream is due to release streamDue, and the index entries it
// moves.
func (s *Store) updateCharged(ctx context.Context, op string, up *types.Update, app, who string, change uds.Usage, lim uds.Limits, streamDue uds.Usage, entries []types.TransactWriteItem) (writeOutcome, error) {
	actions := []types.TransactWriteItem{{Update: up}}
	if change != (uds.Usage{}) {
		usage, _, err := s.usageActionWithin(ctx, app, who, change, lim, streamDue)
		if err != nil {
			return 0, err
		}
		actions = append(actions, usage)
	}
	charged := len(actions) == 2
	refused, err := s.transact(ctx, op, append(actions, entries...)...)
	switch {
	case err != nil:
		return 0, err
	case refused.conditionFailed(0):
		return raced, nil
	case charged && refused.conditionFailed(1) && s.reclaimOwner(ctx, app, who) > 0:
		return raced, nil // the owner's expired items made room: try again
	case charged && refused.conditionFailed(1):
		return 0, s.quotaError(ctx, app, who, lim, refused.item(1))
	case refused != nil:
		return 0, failed(op, errUnexpectedCancel(refused))
	}
	return written, nil
}

// itemUpdate writes w's value over the item at the revision old shows,
// bumping its version and recording the write token. adopt records the
// writer as the owner of an item that has none (written before UDS);
// streamed marks the item as counted by the stream.
func (s *Store) itemUpdate(w *uds.Write, v encodedValue, now time.Time, token string, old map[string]types.AttributeValue, adopt, streamed bool) *types.Update {
	names := map[string]string{
		"#k": schema.AttrDataKey, "#val": v.name, "#ud": schema.AttrUpdatedDate,
		"#ub": schema.AttrUpdatedBySubject, "#sz": schema.AttrItemSize, "#sv": schema.AttrSchemaVersion,
		"#v": schema.AttrVersion, "#cn": schema.AttrClassName,
		"#wt": schema.AttrWriteToken, "#sc": schema.AttrStreamCounted,
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
	// The item is counted the way this write counts it (usage.go,
	// charged).
	if streamed {
		set += ", #sc = :sc"
		values[":sc"] = &types.AttributeValueMemberBOOL{Value: true}
	} else {
		gone = append(gone, "#sc")
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
func refusesWriter(pre uds.Precondition, old map[string]types.AttributeValue) bool {
	return pre.Creator != "" && str(old, schema.AttrCreatedBySubject) != pre.Creator
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
