package store

import (
	"context"
	"errors"
	"fmt"

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

// CreateTables creates every table in schema.Tables under the given names,
// leaving tables that already exist alone.
func CreateTables(ctx context.Context, client TableAdmin, names Tables) error {
	for _, t := range schema.Tables {
		_, err := client.CreateTable(ctx, createTableInput(t, names.Name(t)))
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("create table %s: %w", names.Name(t), err)
		}
	}
	return nil
}

// UpgradeTables adds to existing tables the indexes a later release added
// to the schema (the apps table's byName), so that the local server's kept
// data (make run) serves them. The owner index of a seed deployment's data
// tables is the migration's to add (AddOwnerIndex), with its backfill.
func UpgradeTables(ctx context.Context, client IndexAdmin, names Tables) error {
	for _, t := range schema.Tables {
		if t.ID == schema.Data.ID || t.ID == schema.List.ID {
			continue
		}
		if err := addMissingIndexes(ctx, client, names.Name(t), t); err != nil {
			return err
		}
	}
	return nil
}

// addMissingIndexes adds the schema's indexes that an existing table
// lacks, one UpdateTable each, after one DescribeTable: a table without
// indexes to have costs no call.
func addMissingIndexes(ctx context.Context, c IndexAdmin, name string, t schema.Table) error {
	if len(t.Indexes) == 0 {
		return nil
	}
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describe table %s: %w", name, err)
	}
	for _, ix := range t.Indexes {
		if indexState(out.Table, ix.Name) != IndexMissing {
			continue
		}
		if err := addIndex(ctx, c, out.Table, t, ix.Name); err != nil {
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
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   keySchema(t.Hash, t.Range),
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
