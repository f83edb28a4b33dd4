package store

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// readKept adds the kept versions and delete markers of the given index
// entries of the history table, read strongly consistent, leaving out
// those gone or expired since the index was read, and under a namespace
// filter those of other namespaces (the index names no namespace).
func (p *exportPager) readKept(ctx context.Context, pos ExportPosition, entries []map[string]types.AttributeValue) error {
	found, err := p.s.keptRows(ctx, "export "+p.q.App, entries)
	if err != nil {
		return err
	}
	now := p.s.now()
	for _, e := range entries {
		row := found[keptID(e)]
		key, ok := keyOf(row)
		if row == nil || !ok || expired(row, now) || (p.q.Namespace != "" && key.Namespace != p.q.Namespace) {
			continue
		}
		rec, err := keptRecord(key, row, pos.Owner)
		if err != nil {
			return failed("export "+p.q.App, err)
		}
		at := ExportPosition{Owner: pos.Owner, History: true, HistoryKey: str(row, schema.AttrHistoryKey), Version: num(row, schema.AttrVersion)}
		if !p.take(rec, at) {
			return nil
		}
	}
	return nil
}

// keptRows reads the history rows that owner index entries name, strongly
// consistent, by keptID; those gone since are absent.
func (s *Store) keptRows(ctx context.Context, op string, entries []map[string]types.AttributeValue) (map[string]map[string]types.AttributeValue, error) {
	found := map[string]map[string]types.AttributeValue{}
	if len(entries) == 0 {
		return found, nil
	}
	ka := types.KeysAndAttributes{ConsistentRead: aws.Bool(true)}
	for _, e := range entries {
		ka.Keys = append(ka.Keys, map[string]types.AttributeValue{
			schema.AttrHistoryKey: e[schema.AttrHistoryKey], schema.AttrVersion: e[schema.AttrVersion],
		})
	}
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{s.tables.History: ka}}
	err := s.getAll(ctx, op, in, func(_ string, row map[string]types.AttributeValue) {
		found[keptID(row)] = row
	})
	return found, err
}

// keptID names a history entry among those of the history table.
func keptID(row map[string]types.AttributeValue) string {
	return str(row, schema.AttrHistoryKey) + "\x00" + strconv.FormatInt(num(row, schema.AttrVersion), 10)
}

// keptRecord is the record of a kept version or delete marker of owner.
func keptRecord(key uds.Key, row map[string]types.AttributeValue, owner string) (uds.Record, error) {
	rec := uds.Record{Owner: owner, KeptAt: time.UnixMilli(num(row, schema.AttrKeptAt)).UTC()}
	if _, marker := row[schema.AttrDeleted]; marker {
		rec.Deleted = true
		rec.Item = decodeMeta(key, row)
		return rec, nil
	}
	it, err := decodeItem(key, row)
	rec.Item = it
	return rec, err
}
