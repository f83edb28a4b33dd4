package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
)

// TableAdmin is the part of the DynamoDB API that creates tables. Only the
// local server and the tests create tables; deployed tables come from the
// CDK stack.
type TableAdmin interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
}

// CreateOption changes what CreateTables creates.
type CreateOption func(*createOptions)

type createOptions struct {
	withoutStreams bool
}

// WithoutTableStreams creates the tables without their streams, for tests
// that read no stream. DynamoDB Local keeps every stream it was ever asked
// for, those of deleted tables too, and each one it keeps slows every
// later write to any table: after 1,500 streams, writes to tables without
// one went at about 70% of their speed on a fresh engine. A test suite
// that made each test's tables with streams would slow itself down as it
// went.
func WithoutTableStreams() CreateOption { return func(o *createOptions) { o.withoutStreams = true } }

// CreateTables creates every table in schema.Tables under the given names,
// with its indexes and its stream, leaving tables that already exist alone
// (UpgradeTables brings those to the schema).
func CreateTables(ctx context.Context, client TableAdmin, names Tables, opts ...CreateOption) error {
	var o createOptions
	for _, opt := range opts {
		opt(&o)
	}
	for _, t := range schema.Tables {
		in := createTableInput(t, names.Name(t))
		if o.withoutStreams {
			in.StreamSpecification = nil
		}
		_, err := client.CreateTable(ctx, in)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("create table %s: %w", names.Name(t), err)
		}
	}
	return nil
}

// UpgradeTables brings tables kept from an earlier release (the local
// server's data under make run) to the schema: it gives each table the
// stream the schema names, and the indexes a later release added (the
// apps table's byName). The owner index of a seed deployment's data tables
// is the migration's to add (AddOwnerIndex), with its backfill. A table
// with neither a stream nor indexes to check costs no call; the others
// one DescribeTable, and an UpdateTable for each change.
func UpgradeTables(ctx context.Context, client IndexAdmin, names Tables) error {
	for _, t := range schema.Tables {
		indexes := len(t.Indexes) > 0 && t.ID != schema.Data.ID && t.ID != schema.List.ID
		if !indexes && t.Stream == schema.NoStream {
			continue
		}
		name := names.Name(t)
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", name, err)
		}
		if err := upgradeStream(ctx, client, out.Table, t.Stream); err != nil {
			return err
		}
		if indexes {
			if err := addMissingIndexes(ctx, client, out.Table, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// tableUpdateWait bounds the wait for a table to be ACTIVE again after a
// change of its stream. DynamoDB Local is at once; DynamoDB takes seconds.
const tableUpdateWait = 5 * time.Minute

// upgradeStream gives a table the stream view want unless it has it. A
// table without a stream (the local server's tables before streams were
// created there) gets one. A stream of another view (a data table's
// OLD_IMAGE stream from before the streamed quota mode) is disabled first
// and a new one enabled: DynamoDB changes no stream's view in place, and
// DynamoDB Local refuses even that with "Table already has an enabled
// stream". The new stream has a new ARN and starts empty; the old one
// stays readable for 24 hours, and what was written before the change is
// not in the new one.
func upgradeStream(ctx context.Context, c IndexAdmin, table *types.TableDescription, want schema.StreamView) error {
	if want == schema.NoStream {
		return nil
	}
	name := aws.ToString(table.TableName)
	if spec := table.StreamSpecification; spec != nil && aws.ToBool(spec.StreamEnabled) {
		if spec.StreamViewType == types.StreamViewType(want) {
			return nil
		}
		if err := updateStream(ctx, c, name, &types.StreamSpecification{StreamEnabled: aws.Bool(false)}); err != nil {
			return err
		}
	}
	return updateStream(ctx, c, name, streamSpecification(want))
}

// updateStream sets a table's stream and waits until the table is ACTIVE
// again: DynamoDB takes no further change of a table while it is UPDATING.
func updateStream(ctx context.Context, c IndexAdmin, name string, spec *types.StreamSpecification) error {
	_, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(name), StreamSpecification: spec})
	if err != nil {
		return fmt.Errorf("set the stream of %s: %w", name, err)
	}
	err = dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableUpdateWait)
	if err != nil {
		return fmt.Errorf("wait for %s to be active: %w", name, err)
	}
	return nil
}

// streamSpecification is the stream of view v as DynamoDB takes it: nil
// for no stream.
func streamSpecification(v schema.StreamView) *types.StreamSpecification {
	if v == schema.NoStream {
		return nil
	}
	return &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(v)}
}

// addMissingIndexes adds the schema's indexes that an existing table
// lacks, one UpdateTable each.
func addMissingIndexes(ctx context.Context, c IndexAdmin, table *types.TableDescription, t schema.Table) error {
	for _, ix := range t.Indexes {
		if indexState(table, ix.Name) != IndexMissing {
			continue
		}
		if err := addIndex(ctx, c, table, t, ix.Name); err != nil {
			return err
		}
	}
	return nil
}

func createTableInput(t schema.Table, name string) *dynamodb.CreateTableInput {
	attrs := map[string]types.ScalarAttributeType{}
	keySchema := func(hash schema.KeyAttr, rng *schema.KeyAttr) []types.KeySchemaElement {
		ks := []types.KeySchemaElement{{AttributeName: aws.String(hash.Name), KeyType: types.KeyTypeHash}}
		attrs[hash.Name] = types.ScalarAttributeType(hash.Type)
		if rng != nil {
			ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(rng.Name), KeyType: types.KeyTypeRange})
			attrs[rng.Name] = types.ScalarAttributeType(rng.Type)
		}
		return ks
	}
	in := &dynamodb.CreateTableInput{
		TableName:           aws.String(name),
		BillingMode:         types.BillingModePayPerRequest,
		KeySchema:           keySchema(t.Hash, t.Range),
		StreamSpecification: streamSpecification(t.Stream),
	}
	for _, ix := range t.Indexes {
		p := &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
		if len(ix.NonKeyAttributes) > 0 {
			p = &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: ix.NonKeyAttributes}
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.Name),
			KeySchema:  keySchema(ix.Hash, ix.Range),
			Projection: p,
		})
	}
	for name, typ := range attrs {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: typ})
	}
	return in
}
