// Package storetest gives tests a real DynamoDB engine: the endpoint in
// UDS_DYNAMODB_ENDPOINT (DynamoDB Local started by `make test`, dynoxide, or
// real DynamoDB) and fresh, uniquely named tables per test.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
)

var (
	clientOnce sync.Once
	client     *dynamodb.Client
	clientErr  error
)

// Client returns a client of the test engine.
func Client(t testing.TB) *dynamodb.Client {
	t.Helper()
	endpoint := engine(t)
	clientOnce.Do(func() { client, clientErr = store.NewClient(context.Background(), endpoint, quietSDK) })
	if clientErr != nil {
		t.Fatalf("DynamoDB client: %v", clientErr)
	}
	return client
}

// engine is the test engine's endpoint. Without one the test fails: the
// suite is meant to run through `make test`, which starts one.
func engine(t testing.TB) string {
	t.Helper()
	endpoint := os.Getenv(config.EnvDynamoDBEndpoint)
	if endpoint == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which starts DynamoDB Local, or point it at an engine", config.EnvDynamoDBEndpoint)
	}
	return endpoint
}

// quietSDK turns the SDK's own log off in the test clients. All it says
// there is that a response body could not be drained, which is what a
// request cancelled by its budget or cut by an injected fault does; and it
// would print past the tests' output, to whichever test fails.
func quietSDK(o *dynamodb.Options) { o.Logger = logging.Nop{} }

// FaultyClient returns a client of the test engine, configured as the
// functions configure theirs, whose traffic passes through a fault
// injector with the given seed and no rules yet.
func FaultyClient(t testing.TB, seed uint64) (*dynamodb.Client, *faults.Transport) {
	t.Helper()
	ft := faults.New(seed, http.DefaultTransport.(*http.Transport).Clone())
	c, err := store.NewClient(context.Background(), engine(t), quietSDK, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: ft}
	})
	if err != nil {
		t.Fatalf("DynamoDB client: %v", err)
	}
	return c, ft
}

// NewTables creates a fresh set of UDS tables with a random prefix, without
// streams, and deletes them when the test ends. The engine keeps every
// stream it was asked for after its table is gone, and each slows all
// later writes (store.WithoutTableStreams), so only the tests that read
// streams make tables with them (NewStreamedTables).
func NewTables(t testing.TB) store.Tables {
	t.Helper()
	return newTables(t, store.WithoutTableStreams())
}

// NewStreamedTables is NewTables with the streams the stack gives the
// deployed tables and the local server its own: for the tests that read
// them (the streamed quota mode, the local server's poller) or check them.
func NewStreamedTables(t testing.TB) store.Tables {
	t.Helper()
	return newTables(t)
}

func newTables(t testing.TB, opts ...store.CreateOption) store.Tables {
	t.Helper()
	tables := uniqueTables(t)
	if err := store.CreateTables(context.Background(), Client(t), tables, opts...); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	return tables
}

// uniqueTables names a set of tables with a random prefix and deletes
// whichever of them exist when the test ends.
func uniqueTables(t testing.TB) store.Tables {
	c := Client(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "t" + hex.EncodeToString(b) + "_"
	tables := store.Tables{
		Data:       prefix + schema.Data.DefaultName,
		List:       prefix + schema.List.DefaultName,
		History:    prefix + schema.History.DefaultName,
		Index:      prefix + schema.IndexEntries.DefaultName,
		Usage:      prefix + schema.Usage.DefaultName,
		Apps:       prefix + schema.Apps.DefaultName,
		Namespaces: prefix + schema.Namespaces.DefaultName,
		Changes:    prefix + schema.Changes.DefaultName,
	}
	t.Cleanup(func() {
		for _, name := range []string{tables.Data, tables.List, tables.History, tables.Index, tables.Usage, tables.Apps, tables.Namespaces, tables.Changes} {
			_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	return tables
}

// NewSeedTables creates tables the way a seed deployment has them: the two
// data tables with their keys only (no owner index; the key-value table
// with provisioned capacity, the list table on demand), beside the usage
// and apps tables UDS creates. They are deleted when the test ends.
func NewSeedTables(t testing.TB) store.Tables {
	t.Helper()
	c := Client(t)
	tables := uniqueTables(t)
	str := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	for _, in := range []*dynamodb.CreateTableInput{{
		TableName:             aws.String(tables.Data),
		KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String(schema.AttrDataKey), KeyType: types.KeyTypeHash}},
		AttributeDefinitions:  []types.AttributeDefinition{str(schema.AttrDataKey)},
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)},
	}, {
		TableName: aws.String(tables.List),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(schema.AttrDataKey), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(schema.AttrSortKey), KeyType: types.KeyTypeRange},
		},
		AttributeDefinitions: []types.AttributeDefinition{str(schema.AttrDataKey), str(schema.AttrSortKey)},
		BillingMode:          types.BillingModePayPerRequest,
	}} {
		if _, err := c.CreateTable(context.Background(), in); err != nil {
			t.Fatalf("create seed table: %v", err)
		}
	}
	if err := store.CreateTables(context.Background(), c, tables, store.WithoutTableStreams()); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	return tables
}
