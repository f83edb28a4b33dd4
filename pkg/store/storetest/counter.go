package storetest

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
)

// Usage is what a span of work cost: DynamoDB calls by operation and the
// capacity they consumed.
type Usage struct {
	Calls map[string]int
	Read  float64 // read capacity units, tables and indexes
	Write float64 // write capacity units, tables and indexes
}

// Counter is a store.Client that asks DynamoDB for the consumed capacity of
// every call and adds it up.
type Counter struct {
	store.Client
	mu sync.Mutex
	u  Usage
}

// NewCounter wraps c.
func NewCounter(c store.Client) *Counter {
	return &Counter{Client: c, u: Usage{Calls: map[string]int{}}}
}

// Take returns the usage so far and starts counting afresh.
func (c *Counter) Take() Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.u
	c.u = Usage{Calls: map[string]int{}}
	return u
}

func (c *Counter) add(op string, cc ...types.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.u.Calls[op]++
	for _, x := range cc {
		if x.ReadCapacityUnits != nil {
			c.u.Read += *x.ReadCapacityUnits
		}
		if x.WriteCapacityUnits != nil {
			c.u.Write += *x.WriteCapacityUnits
		}
		if x.ReadCapacityUnits == nil && x.WriteCapacityUnits == nil && x.CapacityUnits != nil {
			// Engines that report only the total: attribute it by call.
			if op == "GetItem" || op == "Query" || op == "BatchGetItem" {
				c.u.Read += *x.CapacityUnits
			} else {
				c.u.Write += *x.CapacityUnits
			}
		}
	}
}

func one(cc *types.ConsumedCapacity) []types.ConsumedCapacity {
	if cc == nil {
		return nil
	}
	return []types.ConsumedCapacity{*cc}
}

// GetItem counts.
func (c *Counter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.Client.GetItem(ctx, in, o...)
	c.add("GetItem", capacity(out, err, func() *types.ConsumedCapacity { return out.ConsumedCapacity })...)
	return out, err
}

// UpdateItem counts.
func (c *Counter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.Client.UpdateItem(ctx, in, o...)
	c.add("UpdateItem", capacity(out, err, func() *types.ConsumedCapacity { return out.ConsumedCapacity })...)
	return out, err
}

// PutItem counts.
func (c *Counter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.Client.PutItem(ctx, in, o...)
	c.add("PutItem", capacity(out, err, func() *types.ConsumedCapacity { return out.ConsumedCapacity })...)
	return out, err
}

// DeleteItem counts.
func (c *Counter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.Client.DeleteItem(ctx, in, o...)
	c.add("DeleteItem", capacity(out, err, func() *types.ConsumedCapacity { return out.ConsumedCapacity })...)
	return out, err
}

// Query counts.
func (c *Counter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.Client.Query(ctx, in, o...)
	c.add("Query", capacity(out, err, func() *types.ConsumedCapacity { return out.ConsumedCapacity })...)
	return out, err
}

// BatchGetItem counts.
func (c *Counter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.Client.BatchGetItem(ctx, in, o...)
	var cc []types.ConsumedCapacity
	if err == nil {
		cc = out.ConsumedCapacity
	}
	c.add("BatchGetItem", cc...)
	return out, err
}

// TransactWriteItems counts.
func (c *Counter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.Client.TransactWriteItems(ctx, in, o...)
	var cc []types.ConsumedCapacity
	if err == nil {
		cc = out.ConsumedCapacity
	}
	c.add("TransactWriteItems", cc...)
	return out, err
}

// BatchWriteItem counts.
func (c *Counter) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := c.Client.BatchWriteItem(ctx, in, o...)
	var cc []types.ConsumedCapacity
	if err == nil {
		cc = out.ConsumedCapacity
	}
	c.add("BatchWriteItem", cc...)
	return out, err
}

// capacity extracts a single-item call's consumed capacity; failed calls
// (conditional check failures included) report none to the SDK.
func capacity[T any](out *T, err error, get func() *types.ConsumedCapacity) []types.ConsumedCapacity {
	if err != nil || out == nil {
		return nil
	}
	return one(get())
}
