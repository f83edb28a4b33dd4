package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Usage accounting: the one place that turns a data write into a change of
// its owner's usage record. Every write path (create, update, delete,
// delete-all) commits its data change and the usageChange below in one
// transaction (transact.go), so the record moves by exactly the size of
// what was written or removed, once. A change that grows usage carries the
// limit as its condition, so concurrent writers can never pass it.

// AppShard spreads one app's usage records over schema.AppShards index
// partitions, so no partition carries an app's whole load. The hash is
// 32-bit FNV-1a of the user, computed here rather than through hash/fnv,
// whose hasher every write's usage change would allocate.
func AppShard(app, user string) string {
	const offset32, prime32 = 2166136261, 16777619
	h := uint32(offset32)
	for i := range len(user) {
		h = (h ^ uint32(user[i])) * prime32
	}
	return app + "#" + strconv.Itoa(int(h%schema.AppShards))
}

func usageKey(app, user string) map[string]types.AttributeValue {
	// One allocation holds both attribute values.
	avs := &[2]types.AttributeValueMemberS{{Value: user}, {Value: app}}
	return map[string]types.AttributeValue{schema.AttrUser: &avs[0], schema.AttrApp: &avs[1]}
}

// The usage change's expressions and attribute names are the same for
// every owner, so they are built once and shared by every write, which
// the SDK only reads. They must not be modified: a caller that adds to a
// usage change's names copies them first (expiry.go).
var (
	usageUpdate        = aws.String("ADD #ub :b, #ui :i SET #s = :s, #lw = :lw")
	usageUpdateHistory = aws.String("ADD #ub :b, #ui :i, #hb :h SET #s = :s, #lw = :lw")
	usageNames         = map[string]string{
		"#ub": schema.AttrUsedBytes, "#ui": schema.AttrUsedItems, "#s": schema.AttrAppShard, "#lw": schema.AttrLastWrite,
	}
	usageNamesHistory = map[string]string{
		"#ub": schema.AttrUsedBytes, "#ui": schema.AttrUsedItems, "#s": schema.AttrAppShard, "#lw": schema.AttrLastWrite,
		"#hb": schema.AttrHistoryBytes,
	}
)

// The conditions that keep a growing owner within its limits: usage +
// growth <= limit, written as usage <= limit - growth since conditions
// have no arithmetic. DynamoDB refuses redundant parentheses, so a single
// term goes bare.
const (
	withinBytes = "attribute_not_exists(#ub) OR #ub <= :maxb"
	withinItems = "attribute_not_exists(#ui) OR #ui <= :maxi"
)

var (
	usageWithinBytes = aws.String(withinBytes)
	usageWithinItems = aws.String(withinItems)
	usageWithinBoth  = aws.String("(" + withinBytes + ") AND (" + withinItems + ")")
)

// usageChange is the update that adds d to the owner's usage record
// unconditionally, creating it (with its app shard, for the app's users
// index) if needed, and stamps the change time that recompute waits on.
// Releases use it as it is; usageAction adds the limits to growth.
// A change that moves kept versions also moves historyBytes, the part of
// the bytes they hold; other changes leave it out, so that namespaces
// without history write what they always did. Its expression and names
// are shared (usageNames): a caller copies them before adding to them.
func (s *Store) usageChange(app, owner string, d uds.Usage) types.TransactWriteItem {
	// One allocation holds the update's attribute values; the map has
	// room for the history bytes and the two limits usageActionWithin
	// adds, so that it never grows.
	avs := &struct {
		b, i, lw, h types.AttributeValueMemberN
		s           types.AttributeValueMemberS
	}{
		b:  types.AttributeValueMemberN{Value: strconv.FormatInt(d.Bytes, 10)},
		i:  types.AttributeValueMemberN{Value: strconv.FormatInt(d.Items, 10)},
		lw: types.AttributeValueMemberN{Value: strconv.FormatInt(s.now().UnixMilli(), 10)},
		s:  types.AttributeValueMemberS{Value: AppShard(app, owner)},
	}
	values := make(map[string]types.AttributeValue, 7)
	values[":b"], values[":i"], values[":s"], values[":lw"] = &avs.b, &avs.i, &avs.s, &avs.lw
	up := &types.Update{
		TableName:                 aws.String(s.tables.Usage),
		Key:                       usageKey(app, owner),
		UpdateExpression:          usageUpdate,
		ExpressionAttributeNames:  usageNames,
		ExpressionAttributeValues: values,
	}
	if d.History != 0 {
		up.UpdateExpression, up.ExpressionAttributeNames = usageUpdateHistory, usageNamesHistory
		avs.h.Value = strconv.FormatInt(d.History, 10)
		values[":h"] = &avs.h
	}
	return types.TransactWriteItem{Update: up}
}

// usageAction is the usage change of a write. One that grows a dimension
// reads the limits in effect (through the cache) and holds only while the
// result stays within them, so concurrent writers can never pass them; one
// that could not fit even an empty account is a *uds.QuotaError at once.
// It returns the limits it applied, for the body of a refusal.
func (s *Store) usageAction(ctx context.Context, app, owner string, d uds.Usage) (types.TransactWriteItem, uds.Limits, error) {
	if !d.Grows() {
		return s.usageChange(app, owner, d), uds.Limits{}, nil
	}
	lim, err := s.limitsInEffect(ctx, app, owner)
	if err != nil {
		return s.usageChange(app, owner, d), lim, err
	}
	return s.usageActionWithin(ctx, app, owner, d, lim, uds.Usage{})
}

// usageActionWithin is usageAction under limits the write has read
// already (with its quota mode), so that a request reads them once.
// streamDue is what the stream is due to release of the owner because of
// this write (the streamed item it replaces with one the transaction
// counts): the limits hold for the usage once the stream has released it,
// so that a strict write over an item written in streamed mode is judged
// by what it adds, not by the whole item.
func (s *Store) usageActionWithin(ctx context.Context, app, owner string, d uds.Usage, lim uds.Limits, streamDue uds.Usage) (types.TransactWriteItem, uds.Limits, error) {
	action := s.usageChange(app, owner, d)
	net := d.Plus(streamDue.Negate())
	if !net.Grows() {
		return action, lim, nil
	}
	bytes, items := lim.Bytes != 0 && net.Bytes > 0, lim.Items != 0 && net.Items > 0
	if (bytes && net.Bytes > lim.Bytes) || (items && net.Items > lim.Items) {
		return action, lim, s.quotaError(ctx, app, owner, lim, nil)
	}
	up := action.Update
	switch {
	case bytes && items:
		up.ConditionExpression = usageWithinBoth
	case bytes:
		up.ConditionExpression = usageWithinBytes
	case items:
		up.ConditionExpression = usageWithinItems
	default:
		return action, lim, nil
	}
	// One allocation holds both limits' values.
	maxs := &[2]types.AttributeValueMemberN{}
	if bytes {
		maxs[0].Value = strconv.FormatInt(lim.Bytes-net.Bytes, 10)
		up.ExpressionAttributeValues[":maxb"] = &maxs[0]
	}
	if items {
		maxs[1].Value = strconv.FormatInt(lim.Items-net.Items, 10)
		up.ExpressionAttributeValues[":maxi"] = &maxs[1]
	}
	up.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	return action, lim, nil
}

// planUsage charges a plan's writes to their owners: each new value to
// its owner, and releases what transactions charged for each item
// replaced or removed. A single write is counted as its app's quota mode
// says (quotaOf): a streamed one is marked for the stream to charge, and
// checked against the owner's tracked usage here. With what the other
// capabilities moved (the versions history keeps), it then changes each
// owner's record once, under the owner's limits where it grows.
func (s *Store) planUsage(ctx context.Context, p *plan) error {
	for i, c := range p.changes {
		k := ownerRef{c.key.App, c.owner}
		lim := c.limits
		if c.byQuotaMode {
			var err error
			if lim, c.streamed, err = s.quotaOf(ctx, c.w, c.owner); err != nil {
				return err
			}
		}
		if lim != nil {
			oc := p.owner(k)
			oc.limits, oc.known = *lim, true
		}
		var old uds.Usage // what the owner holds of old, however counted
		if c.old != nil {
			old = c.old.held()
			p.charge(c.key.App, c.old.owner, c.old.charged().Negate(), i)
		}
		if c.kind == removeItem {
			// The stream releases what it counted of the item removed: a
			// write beside it in the plan (an atomic batch's) may grow
			// by as much.
			p.streamReleases(c.key.App, c.old, old)
			continue
		}
		markCounting(c)
		value := uds.Usage{Bytes: c.value.size, Items: 1}
		if c.streamed {
			if err := s.checkTracked(ctx, c.key.App, c.owner, *lim, value.Plus(old.Negate())); err != nil {
				return &quotaRefusal{change: i, err: err, unsent: true}
			}
			continue
		}
		p.chargeOwner(k, value, i)
		// The stream releases what it counted of old.
		p.streamReleases(c.key.App, c.old, old)
	}
	for _, oc := range p.charged() {
		k := oc.who
		var write types.TransactWriteItem
		if oc.delta.Plus(p.streamDue[k].Negate()).Grows() {
			if !oc.known {
				lim, err := s.limitsInEffect(ctx, k.app, k.owner)
				if err != nil {
					return err
				}
				oc.limits, oc.known = lim, true
			}
			var err error
			write, _, err = s.usageActionWithin(ctx, k.app, k.owner, oc.delta, oc.limits, p.streamDue[k])
			if errors.Is(err, uds.ErrQuotaExceeded) {
				return &quotaRefusal{change: oc.growth, err: err, unsent: true}
			}
			if err != nil {
				return err
			}
		} else {
			write = s.usageChange(k.app, k.owner, oc.delta)
		}
		p.actions = append(p.actions, action{role: roleUsage, change: oc.growth, owner: k, write: write})
	}
	return nil
}

// streamReleases notes in p.streamDue what the stream is due to release
// of old, an item the plan replaces or removes, of which its owner holds
// held: what the stream counted of it, the part no transaction charged.
func (p *plan) streamReleases(app string, old *itemState, held uds.Usage) {
	if old == nil {
		return
	}
	due := held.Plus(old.charged().Negate())
	if due == (uds.Usage{}) {
		return // a transaction counted it all
	}
	if p.streamDue == nil {
		p.streamDue = ownerDeltas{}
	}
	p.streamDue.add(app, old.owner, due)
}

// markCounting marks the item a change writes as counted the way the
// change counts it (charged): by the stream, or by the write paths'
// transactions. A replaced item's condition names how it was counted
// (exactRevision), so only a change of way marks it.
func markCounting(c *change) {
	was := c.old != nil && c.kind == replaceItem && streamCounted(c.old.av)
	switch {
	case c.streamed == was:
	case c.item.Put != nil:
		// A create writes the whole item, unmarked unless streamed.
		c.item.Put.Item[schema.AttrStreamCounted] = streamMark
	case c.streamed:
		amendItemUpdate(c.item.Update, "#sc", schema.AttrStreamCounted, streamMark)
	default:
		amendItemUpdate(c.item.Update, "#sc", schema.AttrStreamCounted, nil)
	}
}

// streamMark is the value of schema.AttrStreamCounted on an item the
// stream counts: shared, never modified.
var streamMark = &types.AttributeValueMemberBOOL{Value: true}

// ownerDeltas adds up the usage changes of one transaction per owner, so
// that it moves each owner's record once.
type ownerDeltas map[ownerRef]uds.Usage

func (d ownerDeltas) add(app, owner string, u uds.Usage) {
	k := ownerRef{app, owner}
	d[k] = d[k].Plus(u)
}

// addOwnerKey is add for the owner an owner key (as items and kept
// versions store it) names.
func (d ownerDeltas) addOwnerKey(k string, u uds.Usage) {
	ref := ownerRefOf(k)
	d[ref] = d[ref].Plus(u)
}

// ownerRefOf is the owner an owner key names.
func ownerRefOf(k string) ownerRef {
	app, owner := splitOwnerKey(k)
	return ownerRef{app, owner}
}

// owners are the owners whose usage changes, in order (compareOwners).
func (d ownerDeltas) owners() []ownerRef {
	owners := make([]ownerRef, 0, len(d))
	for k, u := range d {
		if u != (uds.Usage{}) {
			owners = append(owners, k)
		}
	}
	slices.SortFunc(owners, compareOwners)
	return owners
}

// compareOwners orders owners by app and then owner, so that a
// transaction lists its usage changes in one order whatever the order
// they were added in.
func compareOwners(a, b ownerRef) int {
	return cmp.Or(strings.Compare(a.app, b.app), strings.Compare(a.owner, b.owner))
}

// each calls fn for every owner whose usage changes, in order.
func (d ownerDeltas) each(fn func(app, owner string, u uds.Usage)) {
	for _, k := range d.owners() {
		fn(k.app, k.owner, d[k])
	}
}

// quotaError builds the refusal, with the usage record DynamoDB returned
// with the failed condition (read afresh when there is none).
func (s *Store) quotaError(ctx context.Context, app, owner string, lim uds.Limits, record map[string]types.AttributeValue) error {
	used := usageOf(record)
	if record == nil {
		var err error
		if used, err = s.readUsage(ctx, app, owner, true); err != nil {
			return err
		}
	}
	return &uds.QuotaError{Quota: uds.Quota{App: app, User: owner, Limits: lim, Used: used}}
}

// readUsage reads an owner's usage record: consistently for a refusal,
// which reports it, and eventually for tracked usage, which may lag a
// second anyway (checkTracked). It reads only what usageOf does: the
// record also carries a mark per stream shard that counted the owner,
// which streamed writes, reading it on their path, have no use for.
func (s *Store) readUsage(ctx context.Context, app, owner string, consistent bool) (uds.Usage, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Usage), Key: usageKey(app, owner), ConsistentRead: aws.Bool(consistent),
		ProjectionExpression:     aws.String("#b, #i, #h"),
		ExpressionAttributeNames: map[string]string{"#b": schema.AttrUsedBytes, "#i": schema.AttrUsedItems, "#h": schema.AttrHistoryBytes},
	})
	if err != nil {
		return uds.Usage{}, failed("read usage of "+owner+" in "+app, err)
	}
	return usageOf(out.Item), nil
}

// joinAnd joins disjunctions with AND. DynamoDB refuses redundant
// parentheses, so a single term goes bare.
func joinAnd(terms []string) string {
	if len(terms) == 1 {
		return terms[0]
	}
	return "(" + strings.Join(terms, ") AND (") + ")"
}

// charged is what the write paths' transactions have charged to the
// owner's usage for a stored item, and so what a write that replaces or
// removes it releases in its own transaction: the item's size and one
// item. An item written in streamed mode is charged and released by the
// stream (streamusage.go), and one written before UDS (no owner) is not
// counted at all: both come out as nothing.
func charged(av map[string]types.AttributeValue) uds.Usage {
	if streamCounted(av) {
		return uds.Usage{}
	}
	return held(av)
}

// streamCounted reports whether a stored item's usage is counted from the
// stream: it was written in streamed mode.
func streamCounted(av map[string]types.AttributeValue) bool {
	b, ok := av[schema.AttrStreamCounted].(*types.AttributeValueMemberBOOL)
	return ok && b.Value
}

// quotaOf reads (through the cache) what the owner's records set for a
// write of w: the limits in effect and the app's quota mode, in the one
// read a write makes of them. The write goes the streamed way when the
// mode is streamed and its namespace keeps no history (kept versions are
// written in the write's transaction, which then charges them and the item
// as strict mode does; its usage change reads the limits, later, if it
// grows the owner's usage: lim is then nil).
func (s *Store) quotaOf(ctx context.Context, w *uds.Write, owner string) (lim *uds.Limits, streamed bool, err error) {
	if w.History.On() {
		return nil, false, nil
	}
	e, err := s.recordsInEffect(ctx, w.App, owner)
	return &e.limits, e.mode == uds.QuotaStreamed, err
}

// held is what a stored item adds to its owner's usage, whichever way it
// is counted: its size and one item, or nothing for an item written
// before UDS.
func held(av map[string]types.AttributeValue) uds.Usage {
	if _, counted := av[schema.AttrOwnerKey]; !counted {
		return uds.Usage{}
	}
	return uds.Usage{Bytes: num(av, schema.AttrItemSize), Items: 1}
}

// checkTracked refuses, with a *uds.QuotaError, a streamed write that
// would take its owner's tracked usage (the usage record as last read, no
// older than the tracked cache's lifetime) past a limit. Writes the
// stream has not counted yet are not in it: that is the overshoot streamed
// mode allows.
func (s *Store) checkTracked(ctx context.Context, app, owner string, lim uds.Limits, d uds.Usage) error {
	if !d.Grows() || lim == (uds.Limits{}) {
		return nil
	}
	used, err := s.tracked.get(s.now(), ownerRef{app, owner}, func() (uds.Usage, error) {
		return s.readUsage(ctx, app, owner, false)
	})
	if err != nil {
		return err
	}
	after := used.Plus(d)
	if (lim.Bytes > 0 && d.Bytes > 0 && after.Bytes > lim.Bytes) || (lim.Items > 0 && d.Items > 0 && after.Items > lim.Items) {
		return &uds.QuotaError{Quota: uds.Quota{App: app, User: owner, Limits: lim, Used: used}}
	}
	return nil
}
