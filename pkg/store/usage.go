package store

import (
	"context"
	"errors"
	"hash/fnv"
	"sort"
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
// partitions, so no partition carries an app's whole load.
func AppShard(app, user string) string {
	h := fnv.New32a()
	h.Write([]byte(user))
	return app + "#" + strconv.Itoa(int(h.Sum32()%schema.AppShards))
}

func usageKey(app, user string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.AttrUser: &types.AttributeValueMemberS{Value: user},
		schema.AttrApp:  &types.AttributeValueMemberS{Value: app},
	}
}

// usageChange is the update that adds d to the owner's usage record
// unconditionally, creating it (with its app shard, for the app's users
// index) if needed, and stamps the change time that recompute waits on.
// Releases use it as it is; usageAction adds the limits to growth.
// A change that moves kept versions also moves historyBytes, the part of
// the bytes they hold; other changes leave it out, so that namespaces
// without history write what they always did.
func (s *Store) usageChange(app, owner string, d uds.Usage) types.TransactWriteItem {
	up := &types.Update{
		TableName:        aws.String(s.tables.Usage),
		Key:              usageKey(app, owner),
		UpdateExpression: aws.String("ADD #ub :b, #ui :i SET #s = :s, #lw = :lw"),
		ExpressionAttributeNames: map[string]string{
			"#ub": schema.AttrUsedBytes, "#ui": schema.AttrUsedItems, "#s": schema.AttrAppShard, "#lw": schema.AttrLastWrite,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":b":  &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Bytes, 10)},
			":i":  &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Items, 10)},
			":s":  &types.AttributeValueMemberS{Value: AppShard(app, owner)},
			":lw": &types.AttributeValueMemberN{Value: strconv.FormatInt(s.now().UnixMilli(), 10)},
		},
	}
	if d.History != 0 {
		up.UpdateExpression = aws.String("ADD #ub :b, #ui :i, #hb :h SET #s = :s, #lw = :lw")
		up.ExpressionAttributeNames["#hb"] = schema.AttrHistoryBytes
		up.ExpressionAttributeValues[":h"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(d.History, 10)}
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
	up := action.Update
	var conds []string
	for _, c := range []struct {
		name, value  string
		limit, delta int64
	}{
		{"#ub", ":maxb", lim.Bytes, net.Bytes},
		{"#ui", ":maxi", lim.Items, net.Items},
	} {
		if c.limit == 0 || c.delta <= 0 {
			continue
		}
		if c.delta > c.limit {
			return action, lim, s.quotaError(ctx, app, owner, lim, nil)
		}
		// usage + growth <= limit, written as usage <= limit - growth
		// since conditions have no arithmetic.
		conds = append(conds, "attribute_not_exists("+c.name+") OR "+c.name+" <= "+c.value)
		up.ExpressionAttributeValues[c.value] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.limit-c.delta, 10)}
	}
	if len(conds) > 0 {
		up.ConditionExpression = aws.String(joinAnd(conds))
		up.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	return action, lim, nil
}

// planUsage charges a plan's writes to their owners: each new value to
// its owner (unless the stream charges it: quotaOf decides, and a
// streamed write is checked against the owner's tracked usage here), and
// releases what transactions charged for each item replaced or removed.
// With what the other capabilities moved (the versions history keeps), it
// then changes each owner's record once, under the owner's limits where it
// grows.
func (s *Store) planUsage(ctx context.Context, p *plan) error {
	for i, c := range p.changes {
		if c.limits != nil {
			p.limits[ownerKey(c.key.App, c.owner)] = *c.limits
		}
		var old uds.Usage // what the owner holds of old, however counted
		if c.old != nil {
			old = c.old.held()
			p.charge(c.key.App, c.old.owner, c.old.charged().Negate(), i)
		}
		if c.kind == removeItem {
			continue
		}
		value := uds.Usage{Bytes: c.value.size, Items: 1}
		if c.streamed {
			var lim uds.Limits
			if c.limits != nil {
				lim = *c.limits
			}
			if err := s.checkTracked(ctx, c.key.App, c.owner, lim, value.Plus(old.Negate())); err != nil {
				return &quotaRefusal{change: i, err: err}
			}
			continue
		}
		p.charge(c.key.App, c.owner, value, i)
		if c.old != nil {
			// The stream releases what it counted of old.
			p.streamDue.add(c.key.App, c.old.owner, old.Plus(c.old.charged().Negate()))
		}
	}
	var err error
	p.deltas.each(func(app, who string, d uds.Usage) {
		if err != nil {
			return
		}
		k := ownerKey(app, who)
		write := s.usageChange(app, who, d)
		if d.Plus(p.streamDue[k].Negate()).Grows() {
			lim, known := p.limits[k]
			if !known {
				lim, err = s.limitsInEffect(ctx, app, who)
				p.limits[k] = lim
			}
			if err == nil {
				write, _, err = s.usageActionWithin(ctx, app, who, d, lim, p.streamDue[k])
			}
			if errors.Is(err, uds.ErrQuotaExceeded) {
				err = &quotaRefusal{change: p.growth[k], err: err}
			}
		}
		p.actions = append(p.actions, action{role: roleUsage, change: p.growth[k], owner: k, write: write})
	})
	return err
}

// ownerDeltas adds up the usage changes of one transaction per owner (by
// owner key), so that it moves each owner's record once.
type ownerDeltas map[string]uds.Usage

func (d ownerDeltas) add(app, owner string, u uds.Usage) {
	k := ownerKey(app, owner)
	d[k] = d[k].Plus(u)
}

// each calls fn for every owner whose usage changes, in owner key order.
func (d ownerDeltas) each(fn func(app, owner string, u uds.Usage)) {
	keys := make([]string, 0, len(d))
	for k, u := range d {
		if u != (uds.Usage{}) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		app, owner := splitOwnerKey(k)
		fn(app, owner, d[k])
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
	used, err := s.tracked.get(s.now(), ownerKey(app, owner), func() (uds.Usage, error) {
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
