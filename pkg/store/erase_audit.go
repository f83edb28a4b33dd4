package store

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// The last part of an erase: the user's name in the audit fields of what
// others own (createdBySubject, updatedBySubject: an item of another's
// that the user updated, a version of it they wrote, a delete marker they
// left) becomes the erase's pseudonym, the same in every item, so that an
// item's history still tells one writer from another. No index finds them
// by writer, so the erase scans the data, list and history tables, with a
// filter, page by page; where it got to is on its record (schema.
// AttrEraseScan), so a step cut off goes on from there. The scan reads
// every item of the three tables once per erase: that is its cost, in
// docs/capacity.md. An item the user created that no usage counts (one
// written before UDS) is theirs, and goes as their other items did.

// auditTables are the tables the audit scan reads, in order.
func (s *Store) auditTables() []string {
	return []string{s.tables.Data, s.tables.List, s.tables.History}
}

// auditPosition is where the audit scan got to: the table (its place in
// auditTables) and the last key read there, as strings and numbers.
type auditPosition struct {
	Table int               `json:"t"`
	S     map[string]string `json:"s,omitempty"`
	N     map[string]string `json:"n,omitempty"`
}

func (p auditPosition) startKey() map[string]types.AttributeValue {
	if len(p.S)+len(p.N) == 0 {
		return nil
	}
	key := map[string]types.AttributeValue{}
	for name, v := range p.S {
		key[name] = &types.AttributeValueMemberS{Value: v}
	}
	for name, v := range p.N {
		key[name] = &types.AttributeValueMemberN{Value: v}
	}
	return key
}

func positionAt(table int, key map[string]types.AttributeValue) auditPosition {
	p := auditPosition{Table: table, S: map[string]string{}, N: map[string]string{}}
	for name, v := range key {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			p.S[name] = v.Value
		case *types.AttributeValueMemberN:
			p.N[name] = v.Value
		}
	}
	return p
}

// eraseAudit scans for the user's name in what others own from where the
// erase's record says, until the deadline; it reports whether the scan
// reached the end.
func (s *Store) eraseAudit(ctx context.Context, user, pseudonym string, record map[string]types.AttributeValue, deadline time.Time) (bool, error) {
	var pos auditPosition
	if saved := str(record, schema.AttrEraseScan); saved != "" {
		if err := json.Unmarshal([]byte(saved), &pos); err != nil {
			return false, failed("erase "+user, err)
		}
	}
	op := "erase " + user + ": audit fields"
	tables := s.auditTables()
	for pos.Table < len(tables) {
		if past(deadline) {
			return false, nil
		}
		in := &dynamodb.ScanInput{
			TableName:                aws.String(tables[pos.Table]),
			FilterExpression:         aws.String("#cb = :u OR #ub = :u"),
			ExpressionAttributeNames: map[string]string{"#cb": schema.AttrCreatedBySubject, "#ub": schema.AttrUpdatedBySubject},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":u": &types.AttributeValueMemberS{Value: user},
			},
			ExclusiveStartKey: pos.startKey(),
			ConsistentRead:    aws.Bool(true),
		}
		out, err := s.client.Scan(ctx, in)
		if err != nil {
			return false, failed(op, err)
		}
		if tables[pos.Table] == s.tables.History {
			err = s.auditKept(ctx, user, pseudonym, out.Items)
		} else {
			err = s.auditItems(ctx, user, pseudonym, out.Items)
		}
		if err != nil {
			return false, err
		}
		next := positionAt(pos.Table, out.LastEvaluatedKey)
		if out.LastEvaluatedKey == nil {
			next = auditPosition{Table: pos.Table + 1}
		}
		if err := s.saveAuditPosition(ctx, user, next); err != nil {
			return false, err
		}
		pos = next
	}
	return true, nil
}

// saveAuditPosition keeps where the audit scan got to on the erase record.
func (s *Store) saveAuditPosition(ctx context.Context, user string, pos auditPosition) error {
	b, _ := json.Marshal(pos)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.Usage), Key: eraseKey(user),
		UpdateExpression:          aws.String("SET #sc = :p"),
		ExpressionAttributeNames:  map[string]string{"#sc": schema.AttrEraseScan},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: string(b)}},
	})
	if err != nil {
		return failed("erase "+user, err)
	}
	return nil
}

// auditItems handles items and list items that name the user: one they
// created that no usage counts goes; in the others, each audit field that
// names the user names the pseudonym instead, if it still does.
func (s *Store) auditItems(ctx context.Context, user, pseudonym string, items []map[string]types.AttributeValue) error {
	for _, av := range items {
		key, ok := keyOf(av)
		if !ok {
			continue
		}
		op := "erase " + user + ": audit fields of " + key.DataKey()
		if _, counted := av[schema.AttrOwnerKey]; !counted && str(av, schema.AttrCreatedBySubject) == user {
			if _, err := s.eraseEntries(ctx, op, user, key.App, []listEntry{{key: key, state: av}}); err != nil {
				return err
			}
			continue
		}
		update := renameWriter(user, pseudonym, av, schema.AttrCreatedBySubject, schema.AttrUpdatedBySubject)
		update.TableName, update.Key = aws.String(s.table(key)), keyAV(key)
		refused, err := s.transact(ctx, op, types.TransactWriteItem{Update: update}, s.tally(user, key.App, map[string]int{uds.ErasedAudit: 1}))
		switch {
		case err != nil:
			return err
		case refused != nil && !refused.anyConditionFailed():
			return failed(op, errUnexpectedCancel(refused))
		}
		// A refused rename found the item gone or written since: it no
		// longer names the user.
	}
	return nil
}

// renameWriter is the update that replaces user by pseudonym in those of
// the named audit fields of av that name them, while they still do.
func renameWriter(user, pseudonym string, av map[string]types.AttributeValue, fields ...string) *types.Update {
	var naming []string
	for _, f := range fields {
		if str(av, f) == user {
			naming = append(naming, f)
		}
	}
	update, refs := renameFields(pseudonym, naming)
	update.ExpressionAttributeValues[":u"] = &types.AttributeValueMemberS{Value: user}
	update.ConditionExpression = aws.String(strings.Join(refs, " = :u AND ") + " = :u")
	return update
}

// renameFields is the update that sets each of fields to pseudonym, without
// its condition, and the names it gives the fields.
func renameFields(pseudonym string, fields []string) (*types.Update, []string) {
	names := map[string]string{}
	refs := make([]string, len(fields))
	for i, f := range fields {
		refs[i] = "#f" + strconv.Itoa(i)
		names[refs[i]] = f
	}
	return &types.Update{
		UpdateExpression:          aws.String("SET " + strings.Join(refs, " = :p, ") + " = :p"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: pseudonym}},
	}, refs
}

// auditKept renames the user in the versions and delete markers that
// others' items' histories keep: each item's head, which lists them with
// their writers, and their rows, in one transaction written on the head's
// revision as read, read again while another write gets in between.
func (s *Store) auditKept(ctx context.Context, user, pseudonym string, rows []map[string]types.AttributeValue) error {
	seen := map[string]bool{}
	for _, row := range rows {
		key, ok := keyOf(row)
		if !ok || seen[historyKey(key)] {
			continue
		}
		seen[historyKey(key)] = true
		if err := s.renameInHistory(ctx, user, pseudonym, key); err != nil {
			return err
		}
	}
	return nil
}

// renameInHistory replaces user by pseudonym in key's history, in rounds
// of as many versions as fit one transaction (roundRoom) with the head and
// the tally (historyRewrite).
func (s *Store) renameInHistory(ctx context.Context, user, pseudonym string, key uds.Key) error {
	r := &historyRewrite{s: s, key: key}
	r.round = func(_ context.Context, head historyHead, p *plan) (bool, error) {
		kept := make([]keptVersion, len(head.kept))
		room := newRoundRoom(2) // the head and the tally
		renamed, more := 0, false
		for i, k := range head.kept {
			kept[i] = k
			if k.updatedBy != user && k.creator != user {
				continue
			}
			if more || !room.take(1, k.rowBytes()) {
				more = true
				continue
			}
			p.add(roleHistory, 0, s.renameKept(user, pseudonym, key, k))
			renamed++
			if k.updatedBy == user {
				kept[i].updatedBy = pseudonym
			}
			if k.creator == user {
				kept[i].creator = pseudonym
			}
		}
		if renamed == 0 {
			return false, nil
		}
		p.add(roleHistory, 0, s.headPut(key, head, kept, head.last))
		p.add(roleTally, 0, s.tally(user, key.App, map[string]int{uds.ErasedAudit: renamed}))
		return more, nil
	}
	return s.rewriteHistory(ctx, "erase "+user+": audit fields in the history of "+key.DataKey(), r)
}

// renameKept is the update of a kept version's row that names pseudonym
// where the head names user as its writer or its item's creator. The row
// may have gone with its version meanwhile, which the head's condition
// then tells.
func (s *Store) renameKept(user, pseudonym string, key uds.Key, k keptVersion) types.TransactWriteItem {
	var fields []string
	if k.updatedBy == user {
		fields = append(fields, schema.AttrUpdatedBySubject)
	}
	if k.creator == user {
		fields = append(fields, schema.AttrCreatedBySubject)
	}
	update, _ := renameFields(pseudonym, fields)
	update.TableName, update.Key = aws.String(s.tables.History), historyEntryKey(key, k.version)
	update.ExpressionAttributeNames["#hk"] = schema.AttrHistoryKey
	update.ConditionExpression = aws.String("attribute_exists(#hk)")
	return types.TransactWriteItem{Update: update}
}
