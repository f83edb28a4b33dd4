package store

import (
	"context"
	"encoding/json"
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

// Building and removing indexes. A change of a namespace's indexes leaves
// a build (uds.IndexBuild) in its policy record. From the moment it
// settles, every function writes under the change, keeping the entries of
// the new indexes; the build then walks the items stored before (a
// strongly consistent, filtered scan of both data tables) and puts their
// entries, and scans the index table for the entries of dropped indexes
// and deletes them. Puts and deletes are idempotent, and a write that meets
// the build leaves, at worst, an entry that no longer matches its item,
// which queries skip and remove: so the build may stop anywhere, run
// twice, or restart from the beginning, and no entry is missed.
//
// Each call of BuildIndexes does a bounded step and stores where it
// stopped in the record, conditioned on the record being as it read it.

// buildPhase names the table a build step walks.
type buildPhase string

const (
	phaseData buildPhase = "data"
	phaseList buildPhase = "list"
	phaseDrop buildPhase = "drop"
)

// buildPosition is where a build resumes: the phase and the last key the
// phase's scan evaluated (none at its start).
type buildPosition struct {
	Phase buildPhase `json:"phase"`
	Key   string     `json:"key,omitempty"`
	Sort  string     `json:"sort,omitempty"`
	// Entry is an index entry's sort key, base64 (the drop phase).
	Entry []byte `json:"entry,omitempty"`
}

// buildPageSize bounds the items one scan call of a build reads.
const buildPageSize = 200

// BuildIndexes advances the build of a namespace's indexes for at most
// budget and returns the policy after the step: the build's progress, or
// no build once every index is ready and every dropped one removed. A
// build that has not settled yet is left as it is.
func (s *Store) BuildIndexes(ctx context.Context, app, namespace string, budget time.Duration) (uds.Policy, error) {
	p, err := s.readPolicy(ctx, app, namespace)
	if err != nil || p.IndexBuild == nil || s.now().Before(p.IndexBuild.SettlesAt) {
		return p, err
	}
	deadline := s.now().Add(budget)
	next := p
	next.Indexes = append([]uds.Index(nil), p.Indexes...)
	b := *p.IndexBuild
	next.IndexBuild = &b
	var pos buildPosition
	if b.Position != "" {
		if err := json.Unmarshal([]byte(b.Position), &pos); err != nil {
			pos = buildPosition{}
		}
	}
	if pos.Phase == "" {
		pos.Phase = phaseData
	}
	for pos.Phase != "" && s.now().Before(deadline) {
		if pos, err = s.buildStep(ctx, app, namespace, &next, pos); err != nil {
			return uds.Policy{}, err
		}
	}
	if pos.Phase == "" {
		for i := range next.Indexes {
			next.Indexes[i].Ready = true
		}
		next.IndexBuild = nil
	} else {
		text, _ := json.Marshal(pos)
		next.IndexBuild.Position = string(text)
	}
	ok, err := s.writeBuild(ctx, app, namespace, p, next)
	switch {
	case err != nil:
		return uds.Policy{}, failed("store the index build of "+app+"/"+namespace, err)
	case !ok:
		// The policy changed meanwhile: the entries written stand, and the
		// build goes on from the policy as it now is.
		return s.readPolicy(ctx, app, namespace)
	}
	return next, nil
}

// buildStep does one page of the phase pos names, updating p's progress,
// and returns where the next one starts (no phase when the build is done).
func (s *Store) buildStep(ctx context.Context, app, namespace string, p *uds.Policy, pos buildPosition) (buildPosition, error) {
	prefix := app + uds.KeyDelimiter + namespace + uds.KeyDelimiter
	in := &dynamodb.ScanInput{
		Limit:                    aws.Int32(buildPageSize),
		ConsistentRead:           aws.Bool(true),
		ExpressionAttributeNames: map[string]string{},
	}
	var building []uds.Index
	for _, ix := range p.Indexes {
		if !ix.Ready {
			building = append(building, ix)
		}
	}
	switch pos.Phase {
	case phaseData, phaseList:
		if len(building) == 0 {
			return buildPosition{Phase: phaseDrop}, nil
		}
		in.TableName = aws.String(s.tables.Data)
		if pos.Phase == phaseList {
			in.TableName = aws.String(s.tables.List)
		}
		in.FilterExpression = aws.String("begins_with(#k, :p)")
		in.ExpressionAttributeNames["#k"] = schema.AttrDataKey
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: prefix}}
		if pos.Key != "" {
			in.ExclusiveStartKey = map[string]types.AttributeValue{schema.AttrDataKey: &types.AttributeValueMemberS{Value: pos.Key}}
			if pos.Phase == phaseList {
				in.ExclusiveStartKey[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: pos.Sort}
			}
		}
	case phaseDrop:
		if len(p.IndexBuild.Dropped) == 0 {
			return buildPosition{}, nil
		}
		in.TableName = aws.String(s.tables.Index)
		in.ExpressionAttributeNames["#ik"] = schema.AttrIndexKey
		in.ExpressionAttributeValues = map[string]types.AttributeValue{}
		var terms []string
		for i, id := range p.IndexBuild.Dropped {
			v := ":d" + strconv.Itoa(i)
			terms = append(terms, "begins_with(#ik, "+v+")")
			in.ExpressionAttributeValues[v] = &types.AttributeValueMemberS{Value: prefix + id + uds.KeyDelimiter}
		}
		in.FilterExpression = aws.String(strings.Join(terms, " OR "))
		if pos.Key != "" {
			in.ExclusiveStartKey = map[string]types.AttributeValue{
				schema.AttrIndexKey:  &types.AttributeValueMemberS{Value: pos.Key},
				schema.AttrIndexSort: &types.AttributeValueMemberB{Value: pos.Entry},
			}
		}
	default:
		return buildPosition{Phase: phaseData}, nil
	}
	out, err := s.client.Scan(ctx, in)
	if err != nil {
		return pos, failed("scan for the index build of "+prefix, err)
	}
	var writes []types.WriteRequest
	if pos.Phase == phaseDrop {
		for _, e := range out.Items {
			writes = append(writes, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{
				schema.AttrIndexKey: e[schema.AttrIndexKey], schema.AttrIndexSort: e[schema.AttrIndexSort]}}})
		}
		p.IndexBuild.Removed += int64(len(writes))
	} else {
		now := s.now()
		for _, it := range out.Items {
			key, ok := keyOf(it)
			if !ok || expired(it, now) {
				continue
			}
			data := storedData(key, it)
			for i := range p.Indexes {
				if p.Indexes[i].Ready {
					continue
				}
				for _, e := range indexEntries(key, p.Indexes[i:i+1], data) {
					writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: e.item(key)}})
					p.Indexes[i].Done++
				}
			}
		}
	}
	if err := s.writeAll(ctx, s.tables.Index, writes); err != nil {
		return pos, err
	}
	next := buildPosition{Phase: pos.Phase}
	switch lek := out.LastEvaluatedKey; {
	case lek == nil && pos.Phase == phaseData:
		return buildPosition{Phase: phaseList}, nil
	case lek == nil && pos.Phase == phaseList:
		return buildPosition{Phase: phaseDrop}, nil
	case lek == nil:
		return buildPosition{}, nil
	case pos.Phase == phaseDrop:
		next.Key = str(lek, schema.AttrIndexKey)
		if b, ok := lek[schema.AttrIndexSort].(*types.AttributeValueMemberB); ok {
			next.Entry = b.Value
		}
	default:
		next.Key, next.Sort = str(lek, schema.AttrDataKey), str(lek, schema.AttrSortKey)
	}
	return next, nil
}

// maxBatchWrite is BatchWriteItem's limit of requests per call.
const maxBatchWrite = 25

// writeAll sends writes to table in BatchWriteItem calls, sending again
// what DynamoDB left unprocessed, with backoff.
func (s *Store) writeAll(ctx context.Context, table string, writes []types.WriteRequest) error {
	for start := 0; start < len(writes); start += maxBatchWrite {
		pending := map[string][]types.WriteRequest{table: writes[start:min(start+maxBatchWrite, len(writes))]}
		for attempt := 0; len(pending) > 0; attempt++ {
			out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err == nil {
				pending = out.UnprocessedItems
				if len(pending) == 0 {
					break
				}
			} else if !isTransient(err) {
				return failed("write index entries", err)
			}
			if serr := sleep(ctx, backoff(attempt)); serr != nil {
				return failed("write index entries", errors.Join(err, serr))
			}
		}
	}
	return nil
}

// writeBuild stores a build's progress: next's indexes and build over
// current's, conditioned on the record being as current read it (same
// version, same build), without counting as a change of the policy.
func (s *Store) writeBuild(ctx context.Context, app, namespace string, current, next uds.Policy) (bool, error) {
	names := map[string]string{"#pv": schema.AttrPolicyVersion}
	values := map[string]types.AttributeValue{
		":pv": &types.AttributeValueMemberN{Value: strconv.FormatInt(current.Version, 10)},
	}
	cond, set, remove := []string{"#pv = :pv"}, []string{}, []string{}
	// Each attribute must be as current read it, and becomes next's (or
	// goes, when next has none).
	attr := func(ref, name, was, is string) {
		names[ref] = name
		if was == "" {
			cond = append(cond, "attribute_not_exists("+ref+")")
		} else {
			cond = append(cond, ref+" = :c"+ref[1:])
			values[":c"+ref[1:]] = &types.AttributeValueMemberS{Value: was}
		}
		if is == "" {
			remove = append(remove, ref)
		} else {
			set = append(set, ref+" = :n"+ref[1:])
			values[":n"+ref[1:]] = &types.AttributeValueMemberS{Value: is}
		}
	}
	curIndexes, curBuild := encodeIndexes(current)
	indexes, build := encodeIndexes(next)
	attr("#ix", schema.AttrIndexes, curIndexes, indexes)
	attr("#ib", schema.AttrIndexBuild, curBuild, build)
	var update string
	if len(set) > 0 {
		update = "SET " + strings.Join(set, ", ")
	}
	if len(remove) > 0 {
		update += " REMOVE " + strings.Join(remove, ", ")
	}
	return s.updatePolicyRecord(ctx, app, namespace, update, strings.Join(cond, " AND "), names, values)
}

// PendingIndexBuilds lists the namespaces whose indexes have a build
// under way: a filtered scan of the namespaces table, for the local
// server, which advances them in the background.
func (s *Store) PendingIndexBuilds(ctx context.Context) ([]uds.NamespacePolicy, error) {
	in := &dynamodb.ScanInput{
		TableName:                aws.String(s.tables.Namespaces),
		FilterExpression:         aws.String("attribute_exists(#ib)"),
		ExpressionAttributeNames: map[string]string{"#ib": schema.AttrIndexBuild},
	}
	var out []uds.NamespacePolicy
	for {
		page, err := s.client.Scan(ctx, in)
		if err != nil {
			return nil, failed("list index builds", err)
		}
		for _, av := range page.Items {
			out = append(out, uds.NamespacePolicy{App: str(av, schema.AttrApp), Namespace: str(av, schema.AttrNamespace), Policy: decodePolicy(str(av, schema.AttrApp), av)})
		}
		if page.LastEvaluatedKey == nil {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
