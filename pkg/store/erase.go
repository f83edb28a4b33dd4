package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// An erase removes everything one person owns in every app: the apps are
// those of the user's usage records, as for their export (export_user.go).
// Its record, in the user's partition of the usage table (eraseKey), is
// written first: from then on the erase guard (erase_guard.go) refuses the
// user's writes. The erase removes nothing while it settles (as long as a
// change of a namespace's access mode does: the limits cache's lifetime
// and a request's budget), so that no write that read the user's records
// before lands after. Then, app
// by app, it removes through the write engine, whose capabilities remove
// index entries, objects and usage with each item, and the erase's count
// of what went (its tally) in the same transaction: so the counts are
// exact however often a step is cut off and run again.
//
//   - the items and list items the user owns, with the uploads they have
//     not committed, found by the owner index of the data and list tables
//     and removed as read, keeping no version (removeEntries);
//   - the versions and delete markers of theirs that a history keeps,
//     found by the history table's owner index (dropKept);
//   - the user's usage record, with the limits and rate set for them, once
//     it holds no usage: in streamed mode the stream releases the items'
//     usage a moment after they go, and a recompute settles any drift.
//
// Each step does what it can before its deadline and is sent again until
// the erase is done; every part of it reads what is left, so a step cut
// off anywhere (a killed process) is resumed by the next.

// erasePerRemoval is how many items one removal of an erase holds: with
// their index entries, the usage change and the tally, within a
// transaction's 100 actions for up to three indexes a namespace (a
// removal that needs more is split, remove).
const erasePerRemoval = 24

// backupWindow is how long the tables' point-in-time backups hold what an
// erase removed (the stack enables recovery, whose window is 35 days).
const backupWindow = 35 * 24 * time.Hour

// EraseQuery asks for a step of the erase of a user's data.
type EraseQuery struct {
	User string
	// HoldDays, read when the erase starts, is how long after it ends it
	// still refuses the user's writes (devices that sync back).
	HoldDays int
	// Deadline ends the step at the next unit of work after it.
	Deadline time.Time
}

// EraseUser starts the erase of q.User's data, or takes the running one a
// step further, and returns where it stands; a done erase answers its
// receipt and does nothing more until its hold is over. From then on the
// user's writes are taken again, so an erase asked for once they hold
// data again starts anew, keeping the earlier receipts
// (uds.Erasure.Previous); a step of the done erase sent again, whose
// answer was lost, still answers its receipt.
func (s *Store) EraseUser(ctx context.Context, q EraseQuery) (uds.Erasure, error) {
	record, err := s.readErase(ctx, q.User)
	if err != nil {
		return uds.Erasure{}, err
	}
	again := false
	if record != nil && heldOver(record, s.now()) {
		if again, err = s.userHoldsData(ctx, q.User); err != nil {
			return uds.Erasure{}, err
		}
	}
	if record == nil || again {
		if record, err = s.startErase(ctx, q, record); err != nil {
			return uds.Erasure{}, err
		}
	}
	e := erasureOf(q.User, record)
	switch {
	case e.State == uds.ErasureDone:
		return e, nil
	case e.State == uds.ErasureSettling && s.now().Before(e.DeletesFrom):
		return e, nil
	case e.State == uds.ErasureSettling:
		if err := s.moveErase(ctx, q.User, uds.ErasureSettling, uds.ErasureErasing); err != nil {
			return uds.Erasure{}, err
		}
	}
	// What a step cut short after a removal left in the bucket goes
	// first.
	if err := s.drainObjects(ctx, q.User, record); err != nil {
		return uds.Erasure{}, err
	}
	done, err := s.eraseApps(ctx, q.User, q.Deadline)
	if err == nil && done {
		done, err = s.eraseAudit(ctx, q.User, e.Pseudonym, record, q.Deadline)
	}
	if err == nil && done {
		if record, err = s.readErase(ctx, q.User); err == nil {
			err = s.drainObjects(ctx, q.User, record)
		}
	}
	if err != nil {
		return uds.Erasure{}, err
	}
	if done {
		if err := s.moveErase(ctx, q.User, uds.ErasureErasing, uds.ErasureDone); err != nil {
			return uds.Erasure{}, err
		}
	}
	return s.Erasure(ctx, q.User)
}

// Erasure reads where the erase of user's data stands, or its receipt;
// uds.ErrNotFound when none was asked for.
func (s *Store) Erasure(ctx context.Context, user string) (uds.Erasure, error) {
	record, err := s.readErase(ctx, user)
	switch {
	case err != nil:
		return uds.Erasure{}, err
	case record == nil:
		return uds.Erasure{}, uds.ErrNotFound
	}
	return erasureOf(user, record), nil
}

// readErase reads a user's erase record, strongly consistent; nil when
// there is none.
func (s *Store) readErase(ctx context.Context, user string) (map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Usage), Key: eraseKey(user), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, failed("read the erase of "+user, err)
	}
	return out.Item, nil
}

// userHoldsData reports whether user has a usage record in any app: what
// they wrote since their last erase, which a new one removes.
func (s *Store) userHoldsData(ctx context.Context, user string) (bool, error) {
	apps, _, err := s.UserApps(ctx, user, "", 1)
	return len(apps) > 0, err
}

// heldOver reports whether an erase record is a done erase whose hold is
// over at now.
func heldOver(record map[string]types.AttributeValue, now time.Time) bool {
	return str(record, schema.AttrEraseState) == string(uds.ErasureDone) && !now.Before(holdUntil(record))
}

// startErase writes the erase record of a user who has none, or over the
// record of their last erase (done, nil when none), whose receipt it
// keeps with the earlier ones; it returns the record as it then is
// (another step's, if one started first). This process refuses the
// user's writes at once; the others within the limits cache's lifetime,
// which the settling outlasts.
func (s *Store) startErase(ctx context.Context, q EraseQuery, done map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	now := s.now()
	// A write that read the user's records before they said so may still
	// land for as long as one that read a namespace's policy before it
	// changed: the same settling covers both.
	settle := s.policySettle
	pseudonym := make([]byte, 8)
	_, _ = rand.Read(pseudonym)
	item := eraseKey(q.User)
	item[schema.AttrEraseState] = &types.AttributeValueMemberS{Value: string(uds.ErasureSettling)}
	item[schema.AttrEraseStarted] = millisAV(now)
	item[schema.AttrEraseDeletes] = millisAV(now.Add(settle))
	item[schema.AttrEraseHoldDays] = &types.AttributeValueMemberN{Value: strconv.Itoa(q.HoldDays)}
	item[schema.AttrErasePseudonym] = &types.AttributeValueMemberS{Value: "erased-" + hex.EncodeToString(pseudonym)}
	put := &dynamodb.PutItemInput{
		TableName: aws.String(s.tables.Usage), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#u)"),
		ExpressionAttributeNames: map[string]string{"#u": schema.AttrUser},
	}
	if done != nil {
		item[schema.AttrErasePrevious] = previousReceipts(done)
		// Over the last erase as read: a step that started the new one
		// first has moved it on.
		put.ConditionExpression = aws.String("#st = :done AND #en = :ended")
		put.ExpressionAttributeNames = map[string]string{"#st": schema.AttrEraseState, "#en": schema.AttrEraseEnded}
		put.ExpressionAttributeValues = map[string]types.AttributeValue{
			":done": &types.AttributeValueMemberS{Value: string(uds.ErasureDone)}, ":ended": done[schema.AttrEraseEnded],
		}
	}
	_, err := s.client.PutItem(ctx, put)
	if err != nil && !isConditionFailed(err) {
		return nil, failed("start the erase of "+q.User, err)
	}
	s.limits.clear()
	return s.readErase(ctx, q.User)
}

// previousReceipts is the receipts a new erase keeps of a user's last
// one (done) and the earlier ones it kept: theirs, then its own record
// but for its key.
func previousReceipts(done map[string]types.AttributeValue) types.AttributeValue {
	var list []types.AttributeValue
	if l, ok := done[schema.AttrErasePrevious].(*types.AttributeValueMemberL); ok {
		list = slices.Clone(l.Value)
	}
	receipt := maps.Clone(done)
	delete(receipt, schema.AttrErasePrevious)
	for name := range eraseKey("") {
		delete(receipt, name)
	}
	return &types.AttributeValueMemberL{Value: append(list, &types.AttributeValueMemberM{Value: receipt})}
}

// moveErase moves a user's erase from state from to next, unless another
// step has moved it already. The move to done stamps the end and drops
// the pseudonym and the audit scan's position: nothing then links the
// audit fields that name the pseudonym to the user.
func (s *Store) moveErase(ctx context.Context, user string, from, next uds.ErasureState) error {
	update := "SET #st = :next"
	values := map[string]types.AttributeValue{
		":from": &types.AttributeValueMemberS{Value: string(from)},
		":next": &types.AttributeValueMemberS{Value: string(next)},
	}
	names := map[string]string{"#st": schema.AttrEraseState}
	if next == uds.ErasureDone {
		update += ", #en = :now REMOVE #ps, #sc"
		values[":now"] = millisAV(s.now())
		names["#en"], names["#ps"], names["#sc"] = schema.AttrEraseEnded, schema.AttrErasePseudonym, schema.AttrEraseScan
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.Usage), Key: eraseKey(user),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("#st = :from"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if err != nil && !isConditionFailed(err) {
		return failed("erase "+user, err)
	}
	return nil
}

// drainObjects removes the objects the erase record notes, then their
// names from it: an object already gone is no error, so a drain cut short
// is done again by the next.
func (s *Store) drainObjects(ctx context.Context, user string, record map[string]types.AttributeValue) error {
	set, _ := record[schema.AttrEraseObjects].(*types.AttributeValueMemberSS)
	if set == nil || len(set.Value) == 0 {
		return nil
	}
	for _, name := range set.Value {
		if s.objects != nil {
			if err := s.objects.Remove(ctx, name); err != nil {
				return &uds.UnavailableError{Op: "erase " + user + ": remove object " + name, Err: err}
			}
		}
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.Usage), Key: eraseKey(user),
		UpdateExpression:          aws.String("DELETE #o :o"),
		ExpressionAttributeNames:  map[string]string{"#o": schema.AttrEraseObjects},
		ExpressionAttributeValues: map[string]types.AttributeValue{":o": set},
	})
	if err != nil {
		return failed("erase "+user, err)
	}
	return nil
}

// erasureOf reads an erase record.
func erasureOf(user string, record map[string]types.AttributeValue) uds.Erasure {
	at := func(name string) time.Time {
		if _, ok := record[name]; !ok {
			return time.Time{}
		}
		return time.UnixMilli(num(record, name)).UTC()
	}
	e := uds.Erasure{
		User: user, State: uds.ErasureState(str(record, schema.AttrEraseState)),
		Started: at(schema.AttrEraseStarted), DeletesFrom: at(schema.AttrEraseDeletes), Ended: at(schema.AttrEraseEnded),
		HoldDays: int(num(record, schema.AttrEraseHoldDays)), Pseudonym: str(record, schema.AttrErasePseudonym),
		Erased: map[string]map[string]int64{},
	}
	if !e.Ended.IsZero() {
		e.HoldUntil, e.BackupsUntil = holdUntil(record).UTC(), e.Ended.Add(backupWindow)
	}
	if l, ok := record[schema.AttrErasePrevious].(*types.AttributeValueMemberL); ok {
		for _, r := range l.Value {
			if m, ok := r.(*types.AttributeValueMemberM); ok {
				e.Previous = append(e.Previous, erasureOf(user, m.Value))
			}
		}
	}
	for name := range record {
		rest, ok := strings.CutPrefix(name, schema.AttrErasedPrefix)
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			continue
		}
		app, kind := rest[:i], rest[i+1:]
		if e.Erased[app] == nil {
			e.Erased[app] = map[string]int64{}
		}
		e.Erased[app][kind] = num(record, name)
	}
	return e
}

func millisAV(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

// tally is the update that adds counts, per kind, to what a user's erase
// has removed in app, and the names of the objects the values it removed
// held, which the bucket cannot remove in the same transaction
// (drainObjects removes them). Every caller counts something.
func (s *Store) tally(user, app string, counts map[string]int, objects ...string) types.TransactWriteItem {
	names, values := map[string]string{}, map[string]types.AttributeValue{}
	var adds []string
	if len(objects) > 0 {
		names["#o"], values[":o"] = schema.AttrEraseObjects, &types.AttributeValueMemberSS{Value: slices.Compact(slices.Sorted(slices.Values(objects)))}
		adds = append(adds, "#o :o")
	}
	for kind, n := range counts {
		if n == 0 {
			continue
		}
		i := strconv.Itoa(len(adds))
		names["#c"+i] = schema.AttrErasedPrefix + app + ":" + kind
		values[":n"+i] = &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
		adds = append(adds, "#c"+i+" :n"+i)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.tables.Usage), Key: eraseKey(user),
		UpdateExpression:          aws.String("ADD " + strings.Join(adds, ", ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

// eraseApps erases the user's data app by app until the deadline; it
// reports whether no app of theirs is left.
func (s *Store) eraseApps(ctx context.Context, user string, deadline time.Time) (bool, error) {
	for {
		// Each app's record goes with its data: the first apps left are
		// the next to erase, until none is.
		apps, _, err := s.userAppStates(ctx, user, "")
		if err != nil || len(apps) == 0 {
			return err == nil, err
		}
		for _, st := range apps {
			if done, err := s.eraseInApp(ctx, user, st.App, deadline); err != nil || !done {
				return false, err
			}
		}
	}
}

// eraseInApp removes what the user owns in app, then their usage record
// there; it reports whether the record went.
func (s *Store) eraseInApp(ctx context.Context, user, app string, deadline time.Time) (bool, error) {
	for {
		if past(deadline) {
			return false, nil
		}
		found := 0
		for _, pos := range []ExportPosition{{Owner: user}, {Owner: user, List: true}} {
			n, err := s.eraseItems(ctx, user, app, pos, deadline)
			if err != nil {
				return false, err
			}
			found += n
		}
		n, err := s.eraseKept(ctx, user, app, deadline)
		if err != nil {
			return false, err
		}
		if found += n; found > 0 {
			// Read the indexes again: what is left, or what they showed
			// late.
			continue
		}
		return s.eraseUsageRecord(ctx, user, app)
	}
}

func past(deadline time.Time) bool { return !deadline.IsZero() && time.Now().After(deadline) }

// eraseItems removes the items (pos.List: the list items) the owner index
// lists of the user in app, as they are read, until the deadline; it
// returns how many it found.
func (s *Store) eraseItems(ctx context.Context, user, app string, pos ExportPosition, deadline time.Time) (int, error) {
	in := s.ownerIndexQuery(app, "", pos)
	in.Limit = aws.Int32(erasePerRemoval)
	op := "erase " + user + " in " + app
	found := 0
	for !past(deadline) {
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return found, failed(op, err)
		}
		keys := make([]uds.Key, 0, len(out.Items))
		for _, e := range out.Items {
			if k, ok := keyOf(e); ok {
				keys = append(keys, k)
			}
		}
		items, err := s.batchGet(ctx, keys, nil)
		if err != nil {
			return found, err
		}
		var pending []listEntry
		for _, k := range keys {
			if av := items[itemID(k)]; av != nil && str(av, schema.AttrOwnerKey) == ownerKey(app, user) {
				pending = append(pending, listEntry{key: k, state: av})
			}
		}
		if len(pending) > 0 {
			found += len(pending)
			if _, err := s.eraseEntries(ctx, op, user, app, pending); err != nil {
				return found, err
			}
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return found, nil
}

// eraseEntries removes items of the user's as they were read; the erase's
// tally counts them in the same transaction (planEraseTally). It returns
// how many it removed: those gone or changed since are left.
func (s *Store) eraseEntries(ctx context.Context, op, user, app string, pending []listEntry) (int, error) {
	return s.remove(ctx, op, &removeVerb{s: s, pending: pending, erasing: &erasure{user: user, app: app}})
}

// erasure is the erase of a user's data in an app, whose removals a plan
// makes.
type erasure struct{ user, app string }

// stillOwns reports whether an item the erase found, as it now stands, is
// still the user's (true when no erase is named): an item written before
// UDS that another user wrote since is the writer's, counted for them, and
// not the erase's to remove.
func (e *erasure) stillOwns(app string, current map[string]types.AttributeValue) bool {
	if e == nil {
		return true
	}
	who, _ := owner(app, current)
	return who == e.user
}

// planEraseTally adds to an erase's removals, in their transaction, the
// erase's count of them and the names of the objects their values held
// (tally), and the removal of their history heads that keep no version: a
// head names its item's key, which the user chose and may name them. A
// head that still lists versions goes with the last of them (eraseKept);
// one that a write moved meanwhile is read again, as the refusal of its
// removal makes the loop plan again.
func (s *Store) planEraseTally(ctx context.Context, p *plan) error {
	if p.erasing == nil || len(p.changes) == 0 {
		return nil
	}
	counts := map[string]int{}
	keys := make([]uds.Key, len(p.changes))
	states := make([]map[string]types.AttributeValue, len(p.changes))
	for i, c := range p.changes {
		counts[erasedKind(c.key)]++
		keys[i], states[i] = c.key, c.old.av
	}
	heads, err := s.readHeads(ctx, keys)
	if err != nil {
		return err
	}
	p.add(roleTally, 0, s.tally(p.erasing.user, p.erasing.app, counts, objectsOf(states...)...))
	for _, k := range keys {
		if head := heads[historyKey(k)]; head.exists && len(head.kept) == 0 {
			p.add(roleTally, 0, s.headDelete(k, head))
		}
	}
	return nil
}

// erasedKind is what an erase counts a removed item as.
func erasedKind(k uds.Key) string {
	switch {
	case k.Namespace == uploadNamespace:
		return uds.ErasedUploads
	case k.SortKey != "":
		return uds.ErasedListItems
	}
	return uds.ErasedItems
}

// eraseKept drops the versions and markers of the user's that histories
// in app keep, item by item as the history table's owner index lists them,
// until the deadline; it returns how many items' histories it removed
// some from. Those about to expire are left to DynamoDB's TTL, as
// DropHistory leaves them: the usage record waits for their release.
func (s *Store) eraseKept(ctx context.Context, user, app string, deadline time.Time) (int, error) {
	in := s.ownerIndexQuery(app, "", ExportPosition{Owner: user, History: true})
	in.Limit = aws.Int32(maxBatchGet)
	op := "erase " + user + " in " + app
	owner := ownerKey(app, user)
	mine := func(k keptVersion) bool { return k.owner == owner || k.createdBy() == user }
	found := 0
	for !past(deadline) {
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return found, failed(op, err)
		}
		rows, err := s.keptRows(ctx, op, out.Items)
		if err != nil {
			return found, err
		}
		seen := map[string]bool{}
		for _, e := range out.Items {
			key, ok := keyOf(rows[keptID(e)])
			if !ok || seen[historyKey(key)] {
				continue
			}
			seen[historyKey(key)] = true
			versions, markers, err := s.dropKept(ctx, key, keptDrop{mine: mine, emptyHead: true, tally: func(versions, markers int, objects []string) types.TransactWriteItem {
				return s.tally(user, app, map[string]int{uds.ErasedVersions: versions, uds.ErasedMarkers: markers}, objects...)
			}})
			switch {
			case errors.Is(err, uds.ErrForbidden):
				// None of what the item's history keeps is theirs any
				// more: the index showed it late.
			case err != nil:
				return found, err
			case versions+markers > 0:
				found++
			}
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return found, nil
}

// eraseUsageRecord removes the user's usage record in app, with the
// limits and rate set for them, once it holds no usage, and counts it; it
// reports whether the record is gone. A record that still holds usage
// when the user owns nothing more is waiting for the stream's releases
// (streamed mode), or has drifted: a recompute settles it, and the next
// step tries again.
func (s *Store) eraseUsageRecord(ctx context.Context, user, app string) (bool, error) {
	op := "erase the usage record of " + user + " in " + app
	remove := types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(s.tables.Usage), Key: usageKey(app, user),
		ConditionExpression:      aws.String("(attribute_not_exists(#ub) OR #ub = :zero) AND (attribute_not_exists(#ui) OR #ui = :zero)"),
		ExpressionAttributeNames: map[string]string{"#ub": schema.AttrUsedBytes, "#ui": schema.AttrUsedItems},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":zero": &types.AttributeValueMemberN{Value: "0"},
		},
	}}
	refused, err := s.transact(ctx, op, remove, s.tally(user, app, map[string]int{uds.ErasedRecords: 1}))
	switch {
	case err != nil:
		return false, err
	case refused == nil:
		return true, nil
	case !refused.anyConditionFailed():
		return false, failed(op, errUnexpectedCancel(refused))
	}
	if _, err := s.Recompute(ctx, app, user); err != nil {
		return false, err
	}
	return false, nil
}
