package store

import (
	"context"
	"errors"
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

// Migration from a seed deployment: its data tables hold items without an
// owner, a size or a schema version, and have no owner index. These calls
// let a migration add the index and count those items; cmd/uds-migrate
// drives them.

// IndexAdmin is the part of the DynamoDB API that inspects tables and adds
// indexes. Only the migration uses it.
type IndexAdmin interface {
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

// IndexState is how far an owner index is.
type IndexState string

// Owner index states.
const (
	IndexMissing  IndexState = "missing"
	IndexCreating IndexState = "creating"
	IndexActive   IndexState = "active"
)

// OwnerIndexState reports whether a data table has its owner index, and
// whether the index is ready to be queried.
func OwnerIndexState(ctx context.Context, c IndexAdmin, table string) (IndexState, error) {
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", failed("describe "+table, err)
	}
	return indexState(out.Table, schema.IndexByOwner), nil
}

// indexState reports whether a table has the named index, and whether the
// index is ready to be queried.
func indexState(t *types.TableDescription, index string) IndexState {
	for _, gsi := range t.GlobalSecondaryIndexes {
		if aws.ToString(gsi.IndexName) != index {
			continue
		}
		if gsi.IndexStatus == types.IndexStatusActive && !aws.ToBool(gsi.Backfilling) {
			return IndexActive
		}
		return IndexCreating
	}
	return IndexMissing
}

// AddOwnerIndex adds the owner index, as the schema defines it, to a data
// table that lacks it (unless dryRun), and reports whether it was missing.
func AddOwnerIndex(ctx context.Context, c IndexAdmin, table string, t schema.Table, dryRun bool) (bool, error) {
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return false, failed("describe "+table, err)
	}
	missing := indexState(out.Table, schema.IndexByOwner) == IndexMissing
	if !missing || dryRun {
		return missing, nil
	}
	if err := addIndex(ctx, c, out.Table, t, schema.IndexByOwner); err != nil {
		return false, err
	}
	return true, nil
}

// addIndex adds the named index, as the schema defines it, to an existing
// table. A table with provisioned capacity gives the index the table's own.
func addIndex(ctx context.Context, c IndexAdmin, table *types.TableDescription, t schema.Table, index string) error {
	name := aws.ToString(table.TableName)
	// The index as CreateTables would define it.
	def := createTableInput(t, name)
	create := &types.CreateGlobalSecondaryIndexAction{}
	for _, gsi := range def.GlobalSecondaryIndexes {
		if aws.ToString(gsi.IndexName) == index {
			create.IndexName, create.KeySchema, create.Projection = gsi.IndexName, gsi.KeySchema, gsi.Projection
		}
	}
	if p := table.ProvisionedThroughput; p != nil && aws.ToInt64(p.ReadCapacityUnits) > 0 {
		create.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: p.ReadCapacityUnits, WriteCapacityUnits: p.WriteCapacityUnits}
	}
	_, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName:                   aws.String(name),
		AttributeDefinitions:        def.AttributeDefinitions,
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: create}},
	})
	if err != nil {
		return failed("add the index "+index+" to "+name, err)
	}
	return nil
}

// ScanPosition is where a segment of a scan stopped: the last key read, as
// strings (the data tables' keys are strings). Nil is the start.
type ScanPosition map[string]string

// LegacyItem is an item written before UDS, as a migration counts it.
type LegacyItem struct {
	DataKey, SortKey string
	App, Owner       string
	// Size is the item's size in the quota measure; ValueBytes the length
	// of its stored value, which the adoption's condition checks.
	Size, ValueBytes int64
	ClassName        *string
}

// tableKey is the item's key in its table.
func (it LegacyItem) tableKey() map[string]types.AttributeValue {
	key := map[string]types.AttributeValue{schema.AttrDataKey: &types.AttributeValueMemberS{Value: it.DataKey}}
	if it.SortKey != "" {
		key[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: it.SortKey}
	}
	return key
}

// HeldNamespace names a namespace that holds data, for the catalogue
// (catalog.go).
type HeldNamespace struct{ App, Namespace string }

// ScanLegacy reads one page of one segment of a segmented scan of a data
// table and returns the items that have no owner yet, and the namespaces
// of all the page's items (each once), which the catalogue may not hold
// yet: data written before it, by a seed deployment or an earlier
// release. Items that name no creator are given defaultOwner. next is nil
// when the segment is done.
//
// The scan reads every item either way (a filter saves no read units,
// only transfer), so it returns every item's key and owner, and the
// value's length of those without an owner, which their adoption needs.
func (s *Store) ScanLegacy(ctx context.Context, table string, segment, segments int, after ScanPosition, defaultOwner string) (items []LegacyItem, namespaces []HeldNamespace, next ScanPosition, err error) {
	in := &dynamodb.ScanInput{
		TableName:            aws.String(table),
		Segment:              aws.Int32(int32(segment)),
		TotalSegments:        aws.Int32(int32(segments)),
		ProjectionExpression: aws.String("#k, #s, #v, #cn, #cb, #o"),
		ExpressionAttributeNames: map[string]string{
			"#o": schema.AttrOwnerKey, "#k": schema.AttrDataKey, "#s": schema.AttrSortKey,
			"#v": schema.AttrDataValue, "#cn": schema.AttrClassName, "#cb": schema.AttrCreatedBySubject,
		},
	}
	if after != nil {
		in.ExclusiveStartKey = map[string]types.AttributeValue{}
		for k, v := range after {
			in.ExclusiveStartKey[k] = &types.AttributeValueMemberS{Value: v}
		}
	}
	out, err := s.client.Scan(ctx, in)
	if err != nil {
		return nil, nil, nil, failed("scan "+table, err)
	}
	seen := map[HeldNamespace]bool{}
	for _, it := range out.Items {
		dataKey := str(it, schema.AttrDataKey)
		if k, ok := keyOf(it); ok && k.Namespace != uploadNamespace && !seen[HeldNamespace{k.App, k.Namespace}] {
			seen[HeldNamespace{k.App, k.Namespace}] = true
			namespaces = append(namespaces, HeldNamespace{k.App, k.Namespace})
		}
		if _, owned := it[schema.AttrOwnerKey]; owned {
			continue
		}
		app, _, _ := strings.Cut(dataKey, uds.KeyDelimiter)
		who := str(it, schema.AttrCreatedBySubject)
		if who == "" {
			who = defaultOwner
		}
		value := int64(len(str(it, schema.AttrDataValue)))
		li := LegacyItem{DataKey: dataKey, SortKey: str(it, schema.AttrSortKey), App: app, Owner: who, ValueBytes: value}
		if cn, ok := it[schema.AttrClassName].(*types.AttributeValueMemberS); ok {
			li.ClassName = &cn.Value
		}
		// The measure of encodeValue: key, stored value and class name
		// bytes plus the fixed allowance for the other attributes.
		li.Size = int64(len(dataKey)+len(li.SortKey)) + value + int64(len(aws.ToString(li.ClassName))) + itemOverhead
		items = append(items, li)
	}
	if out.LastEvaluatedKey != nil {
		next = ScanPosition{}
		for k := range out.LastEvaluatedKey {
			next[k] = str(out.LastEvaluatedKey, k)
		}
	}
	return items, namespaces, next, nil
}

// AdoptLegacy counts items written before UDS: each gets its owner key,
// size and schema version, and its owner's usage grows by its size, in
// transactions of up to 50 items with one usage change per (app, owner),
// so usage and data agree at every commit and a retried transaction is
// applied once. Limits are not checked: the data is already stored. An
// item that changed since it was read (adopted by a UDS write, deleted, or
// rewritten with another size) is left alone: its writer counted it, or a
// later run will.
//
// An item of an owner whose data an erase removes, or holds after (the
// erase guard), is removed instead, as the erase removes it (eraseLegacy).
// The erase finds the person's counted items by the owner index and their
// legacy ones by its audit scan: an item adopted after the first and
// before the second would outlive the erase, and one adopted during the
// hold is data of theirs landing while the erase refuses it. An adoption
// therefore holds only while each owner's erase record is as read, so an
// erase that starts while a page is adopted (however long its retries
// take) sends the page back to be sorted again.
func (s *Store) AdoptLegacy(ctx context.Context, table string, items []LegacyItem) (Adoption, error) {
	var done Adoption
	op := "adopt legacy items of " + table
	for len(items) > 0 {
		n := adoptionBatch(items)
		batch := items[:n]
		items = items[n:]
		for attempt := 0; len(batch) > 0; attempt++ {
			if attempt == maxWriteAttempts {
				return done, &uds.UnavailableError{Op: op, Err: errors.New("the owners' erase records kept changing")}
			}
			erases, err := s.eraseRecords(ctx, batch)
			if err != nil {
				return done, err
			}
			var adopt, erase []LegacyItem
			for _, it := range batch {
				if refusesWrites(erases[it.Owner], s.now()) {
					erase = append(erase, it)
				} else {
					adopt = append(adopt, it)
				}
			}
			if len(erase) > 0 {
				removed, err := s.eraseLegacy(ctx, table, erase)
				done.Erased, done.Changed = done.Erased+removed, done.Changed+len(erase)-removed
				if err != nil {
					return done, err
				}
			}
			if batch = adopt; len(batch) == 0 {
				break
			}
			actions, usage, checks := s.adoptActions(table, batch, erases)
			refused, err := s.transact(ctx, op, slices.Concat(actions, usage, checks)...)
			if err != nil {
				return done, err
			}
			if refused == nil {
				done.Adopted += len(batch)
				break
			}
			var rest []LegacyItem
			for i, it := range batch {
				if refused.conditionFailed(i) {
					done.Changed++
				} else {
					rest = append(rest, it)
				}
			}
			eraseBegan := false
			for j := range checks {
				eraseBegan = eraseBegan || refused.conditionFailed(len(actions)+len(usage)+j)
			}
			if len(rest) == len(batch) && !eraseBegan {
				return done, failed(op, errUnexpectedCancel(refused))
			}
			batch = rest
		}
	}
	return done, nil
}

// Adoption is what AdoptLegacy did: the items adopted, the items removed
// because an erase removes their owner's data, and the items left because
// they changed since they were read.
type Adoption struct {
	Adopted, Erased, Changed int
}

// adoptionBatch is how many of items one adoption takes: at most half a
// transaction of item updates, and with them a usage change per app and
// owner and a check of each owner's erase record (an erase is of a user in
// every app).
func adoptionBatch(items []LegacyItem) int {
	n := min(len(items), maxTxActions/2)
	charged, checked := map[ownerRef]bool{}, map[string]bool{}
	for i, it := range items[:n] {
		charged[ownerRef{it.App, it.Owner}], checked[it.Owner] = true, true
		if i+1+len(charged)+len(checked) > maxTxActions {
			return i
		}
	}
	return n
}

// eraseRecords reads the erase records of a batch's owners, strongly
// consistent, in one BatchGetItem (a batch has at most 50 owners): an
// adoption is conditional on each being as read. An owner with none is
// absent from the map.
func (s *Store) eraseRecords(ctx context.Context, batch []LegacyItem) (map[string]map[string]types.AttributeValue, error) {
	ka := types.KeysAndAttributes{ConsistentRead: aws.Bool(true)}
	asked := map[string]bool{}
	for _, it := range batch {
		if !asked[it.Owner] {
			asked[it.Owner] = true
			ka.Keys = append(ka.Keys, eraseKey(it.Owner))
		}
	}
	records := map[string]map[string]types.AttributeValue{}
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{s.tables.Usage: ka}}
	err := s.getAll(ctx, "read erase records", in, func(_ string, record map[string]types.AttributeValue) {
		records[str(record, schema.AttrUser)] = record
	})
	return records, err
}

// eraseLegacy removes legacy items of owners whose data an erase removes,
// as the erase's audit scan removes one: read again (one BatchGetItem, a
// batch has at most 50 items), and removed through the write engine
// (eraseEntries: with their index entries and history heads, counted on
// the erase's receipt), each owner's in an app together. An item whose
// key UDS cannot read (which no index or history names) is deleted as it
// is, while still legacy. It returns how many it removed: those gone or
// counted since they were read are left.
func (s *Store) eraseLegacy(ctx context.Context, table string, items []LegacyItem) (int, error) {
	op := "erase legacy items of " + table
	ka := types.KeysAndAttributes{ConsistentRead: aws.Bool(true)}
	for _, it := range items {
		ka.Keys = append(ka.Keys, it.tableKey())
	}
	current := map[string]map[string]types.AttributeValue{}
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: ka}}
	err := s.getAll(ctx, op, in, func(_ string, av map[string]types.AttributeValue) {
		current[str(av, schema.AttrDataKey)+"\x00"+str(av, schema.AttrSortKey)] = av
	})
	if err != nil {
		return 0, err
	}
	groups := map[ownerRef][]listEntry{}
	var order []ownerRef
	removed := 0
	for _, it := range items {
		av := current[it.DataKey+"\x00"+it.SortKey]
		if _, counted := av[schema.AttrOwnerKey]; av == nil || counted {
			continue
		}
		k, ok := keyOf(av)
		if !ok {
			gone, err := s.deleteUnreadable(ctx, table, it.tableKey())
			if gone {
				removed++
			}
			if err != nil {
				return removed, err
			}
			continue
		}
		g := ownerRef{it.App, it.Owner}
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], listEntry{key: k, state: av})
	}
	for _, g := range order {
		n, err := s.eraseEntries(ctx, op, g.owner, g.app, groups[g])
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// deleteUnreadable deletes a legacy item whose key UDS cannot read, while
// it is still legacy; false when it was counted or gone meanwhile.
func (s *Store) deleteUnreadable(ctx context.Context, table string, key map[string]types.AttributeValue) (bool, error) {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(table), Key: key,
		ConditionExpression:      aws.String("attribute_exists(#k) AND attribute_not_exists(#o)"),
		ExpressionAttributeNames: map[string]string{"#k": schema.AttrDataKey, "#o": schema.AttrOwnerKey},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, nil
	case err != nil:
		return false, failed("erase a legacy item of "+table, err)
	}
	return true, nil
}

// adoptActions are the item updates of a batch, the usage changes of its
// owners, and the checks that each owner's erase record is as read
// (erases), in a stable order.
func (s *Store) adoptActions(table string, batch []LegacyItem, erases map[string]map[string]types.AttributeValue) (items, usage, checks []types.TransactWriteItem) {
	charges := ownerDeltas{}
	checked := map[string]bool{}
	for _, it := range batch {
		names := map[string]string{
			"#k": schema.AttrDataKey, "#o": schema.AttrOwnerKey, "#z": schema.AttrItemSize,
			"#sv": schema.AttrSchemaVersion, "#v": schema.AttrDataValue, "#cn": schema.AttrClassName,
		}
		values := map[string]types.AttributeValue{
			":o":  &types.AttributeValueMemberS{Value: ownerKey(it.App, it.Owner)},
			":z":  &types.AttributeValueMemberN{Value: strconv.FormatInt(it.Size, 10)},
			":sv": &types.AttributeValueMemberN{Value: schemaVersion},
		}
		// The item must still lack an owner and hold a value of the size
		// measured (size() of a missing attribute fails, hence the other
		// form) and the class name read.
		cond := "attribute_exists(#k) AND attribute_not_exists(#o) AND attribute_not_exists(#v)"
		if it.ValueBytes > 0 {
			cond = "attribute_exists(#k) AND attribute_not_exists(#o) AND size(#v) = :vb"
			values[":vb"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(it.ValueBytes, 10)}
		}
		if it.ClassName != nil {
			cond += " AND #cn = :cn"
			values[":cn"] = &types.AttributeValueMemberS{Value: *it.ClassName}
		} else {
			cond += " AND attribute_not_exists(#cn)"
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(table),
			Key:                       it.tableKey(),
			UpdateExpression:          aws.String("SET #o = :o, #z = :z, #sv = :sv"),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}})
		charges.add(it.App, it.Owner, uds.Usage{Bytes: it.Size, Items: 1})
		if !checked[it.Owner] {
			checked[it.Owner] = true
			checks = append(checks, s.eraseUnchanged(it.Owner, erases[it.Owner]))
		}
	}
	charges.each(func(app, owner string, u uds.Usage) {
		usage = append(usage, s.usageChange(app, owner, u))
	})
	return items, usage, checks
}

// eraseUnchanged checks that user's erase record is as read (record, nil
// for none): none yet, or the same done erase, whose hold had ended.
func (s *Store) eraseUnchanged(user string, record map[string]types.AttributeValue) types.TransactWriteItem {
	check := &types.ConditionCheck{
		TableName: aws.String(s.tables.Usage), Key: eraseKey(user),
		ConditionExpression:      aws.String("attribute_not_exists(#st)"),
		ExpressionAttributeNames: map[string]string{"#st": schema.AttrEraseState},
	}
	if record != nil {
		check.ConditionExpression = aws.String("#st = :st AND #en = :en")
		check.ExpressionAttributeNames["#en"] = schema.AttrEraseEnded
		check.ExpressionAttributeValues = map[string]types.AttributeValue{":st": record[schema.AttrEraseState], ":en": record[schema.AttrEraseEnded]}
	}
	return types.TransactWriteItem{ConditionCheck: check}
}

// errIndexNotReady is the cause of a 503 while the owner index is missing
// or still being built (a migration adds it).
var errIndexNotReady = &uds.UnavailableError{
	Op:         "query the owner index",
	Err:        errors.New("the owner index is not ready"),
	Reason:     "index not ready: the owner index of the data tables is missing or still being built (a migration adds it); retry later",
	RetryAfter: time.Minute,
}

// indexNotReady reports whether DynamoDB refused a query because the index
// does not exist yet or is still backfilling.
func indexNotReady(err error) bool {
	var apiErr interface {
		ErrorCode() string
		ErrorMessage() string
	}
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		return false
	}
	msg := strings.ToLower(apiErr.ErrorMessage())
	return strings.Contains(msg, "specified index") || strings.Contains(msg, "backfilling")
}
