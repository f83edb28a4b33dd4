package wsgateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
)

// DB is the part of DynamoDB the connections table takes; *dynamodb.Client
// has it.
type DB interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Attributes of a connection's record.
const (
	attrSubject     = "subject"
	attrConnectedAt = "connectedAt"
	attrState       = "state"
	// attrPosting is the id of the queue message whose answers were being
	// posted when the state was last saved (see Deliverer).
	attrPosting = "posting"
	// attrWatches lists the connection's subscriber records, so that
	// closing it finds them without a scan: each is a feed and a
	// subscription id, joined by watchSep.
	attrWatches = "watches"
	// attrConnection and attrSubscription name, on a subscriber's record,
	// the connection and the subscription.
	attrConnection   = "connection"
	attrSubscription = "subscription"
)

// watchSep joins a feed and a subscription's id in attrWatches: neither
// holds a control character (an app is a UUID; a namespace, a subject and
// an id have none).
const watchSep = "\n"

// connectionSort is the sort key of a connection's record.
const connectionSort = "connection"

// connectionLife is how long a connection's records stay in the table:
// API Gateway closes a connection after two hours at the most, and the
// hour after that covers a $disconnect that came late or never.
const connectionLife = 3 * time.Hour

// Connections is the connections table: each open WebSocket connection
// with its caller and its session, and the subscribers of each feed.
type Connections struct {
	db    DB
	table string
}

// NewConnections is the connections table named table.
func NewConnections(db DB, table string) *Connections {
	return &Connections{db: db, table: table}
}

// Connection is a connection's record.
type Connection struct {
	ID, Subject string
	ConnectedAt time.Time
	// State is the session's state as the engine left it; nil before the
	// first event.
	State []byte
	// Posting is the queue message whose answers were being posted when
	// State was saved.
	Posting string
	// Expires is when the record leaves the table.
	Expires time.Time
}

// errNoConnection is what a change to a connection that is no longer in
// the table meets.
var errNoConnection = errors.New("the connection is closed")

func connectionKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.AttrRealtimeKey:  &types.AttributeValueMemberS{Value: "c|" + id},
		schema.AttrRealtimeSort: &types.AttributeValueMemberS{Value: connectionSort},
	}
}

func subscriberKey(feed, connection, subscription string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.AttrRealtimeKey:  &types.AttributeValueMemberS{Value: "f|" + feed},
		schema.AttrRealtimeSort: &types.AttributeValueMemberS{Value: connection + "|" + subscription},
	}
}

func epoch(t time.Time) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
}

// Open records a new connection of subject at instant at.
func (c *Connections) Open(ctx context.Context, id, subject string, at time.Time) error {
	item := connectionKey(id)
	item[attrSubject] = &types.AttributeValueMemberS{Value: subject}
	item[attrConnectedAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(at.UnixMilli(), 10)}
	item[schema.AttrExpiresAt] = epoch(at.Add(connectionLife))
	if _, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: item}); err != nil {
		return fmt.Errorf("record connection %s: %w", id, err)
	}
	return nil
}

// Load reads a connection's record, strongly consistent; nil when it is
// not there (closed, or never opened).
func (c *Connections) Load(ctx context.Context, id string) (*Connection, error) {
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.table), Key: connectionKey(id), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read connection %s: %w", id, err)
	}
	if out.Item == nil {
		return nil, nil
	}
	conn := &Connection{ID: id}
	if v, ok := out.Item[attrSubject].(*types.AttributeValueMemberS); ok {
		conn.Subject = v.Value
	}
	if v, ok := out.Item[attrConnectedAt].(*types.AttributeValueMemberN); ok {
		ms, _ := strconv.ParseInt(v.Value, 10, 64)
		conn.ConnectedAt = time.UnixMilli(ms).UTC()
	}
	if v, ok := out.Item[schema.AttrExpiresAt].(*types.AttributeValueMemberN); ok {
		secs, _ := strconv.ParseInt(v.Value, 10, 64)
		conn.Expires = time.Unix(secs, 0).UTC()
	}
	if v, ok := out.Item[attrState].(*types.AttributeValueMemberB); ok {
		conn.State = v.Value
	}
	if v, ok := out.Item[attrPosting].(*types.AttributeValueMemberS); ok {
		conn.Posting = v.Value
	}
	return conn, nil
}

// Save stores a connection's session state, and the queue message whose
// answers are about to be posted. It answers errNoConnection when the
// connection has been closed meanwhile: a closed connection's record is
// never made again.
func (c *Connections) Save(ctx context.Context, id string, state []byte, posting string) error {
	in := &dynamodb.UpdateItemInput{
		TableName:           aws.String(c.table),
		Key:                 connectionKey(id),
		ConditionExpression: aws.String("attribute_exists(#k)"),
		ExpressionAttributeNames: map[string]string{
			"#k": schema.AttrRealtimeKey, "#p": attrPosting, "#s": attrState,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: posting}},
		UpdateExpression:          aws.String("SET #p = :p REMOVE #s"),
	}
	if len(state) > 0 {
		in.ExpressionAttributeValues[":s"] = &types.AttributeValueMemberB{Value: state}
		in.UpdateExpression = aws.String("SET #p = :p, #s = :s")
	}
	return c.update(ctx, id, in)
}

func (c *Connections) update(ctx context.Context, id string, in *dynamodb.UpdateItemInput) error {
	_, err := c.db.UpdateItem(ctx, in)
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		return errNoConnection
	case err != nil:
		return fmt.Errorf("update connection %s: %w", id, err)
	}
	return nil
}

// Watch makes a connection a subscriber of feed under a subscription's
// id: once it returns, a Subscribers query of the feed finds the
// connection. The connection's record lists the subscriber's first, so
// that closing the connection finds it whatever happens in between; a
// closed connection watches nothing (errNoConnection).
func (c *Connections) Watch(ctx context.Context, id, feed, subscription string, expires time.Time) error {
	err := c.update(ctx, id, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(c.table),
		Key:                       connectionKey(id),
		ConditionExpression:       aws.String("attribute_exists(#k)"),
		ExpressionAttributeNames:  map[string]string{"#k": schema.AttrRealtimeKey, "#w": attrWatches},
		ExpressionAttributeValues: map[string]types.AttributeValue{":w": &types.AttributeValueMemberSS{Value: []string{feed + watchSep + subscription}}},
		UpdateExpression:          aws.String("ADD #w :w"),
	})
	if err != nil {
		return err
	}
	item := subscriberKey(feed, id, subscription)
	item[attrConnection] = &types.AttributeValueMemberS{Value: id}
	item[attrSubscription] = &types.AttributeValueMemberS{Value: subscription}
	item[schema.AttrExpiresAt] = epoch(expires)
	if _, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: item}); err != nil {
		return fmt.Errorf("record subscriber of %s: %w", feed, err)
	}
	return nil
}

// Unwatch ends a subscription's watch of feed: its subscriber's record
// goes first, then its line in the connection's record.
func (c *Connections) Unwatch(ctx context.Context, id, feed, subscription string) error {
	if _, err := c.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(c.table), Key: subscriberKey(feed, id, subscription),
	}); err != nil {
		return fmt.Errorf("remove subscriber of %s: %w", feed, err)
	}
	err := c.update(ctx, id, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(c.table),
		Key:                       connectionKey(id),
		ConditionExpression:       aws.String("attribute_exists(#k)"),
		ExpressionAttributeNames:  map[string]string{"#k": schema.AttrRealtimeKey, "#w": attrWatches},
		ExpressionAttributeValues: map[string]types.AttributeValue{":w": &types.AttributeValueMemberSS{Value: []string{feed + watchSep + subscription}}},
		UpdateExpression:          aws.String("DELETE #w :w"),
	})
	if errors.Is(err, errNoConnection) {
		return nil
	}
	return err
}

// Subscribers lists the connections that watch feed, each once, from a
// strongly consistent query: every Watch that returned before it began
// is in it.
func (c *Connections) Subscribers(ctx context.Context, feed string) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(c.table),
		KeyConditionExpression:    aws.String("#k = :k"),
		ExpressionAttributeNames:  map[string]string{"#k": schema.AttrRealtimeKey, "#c": attrConnection},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: "f|" + feed}},
		ProjectionExpression:      aws.String("#c"),
		ConsistentRead:            aws.Bool(true),
	}
	for {
		out, err := c.db.Query(ctx, in)
		if err != nil {
			return ids, fmt.Errorf("query subscribers of %s: %w", feed, err)
		}
		for _, item := range out.Items {
			if v, ok := item[attrConnection].(*types.AttributeValueMemberS); ok && !seen[v.Value] {
				seen[v.Value] = true
				ids = append(ids, v.Value)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return ids, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// maxBatchWrite is DynamoDB's limit of requests in one BatchWriteItem.
const maxBatchWrite = 25

// closeAttempts bounds the rounds of BatchWriteItem that Close makes for
// the deletes DynamoDB left unprocessed.
const closeAttempts = 5

// Close removes a connection's record and its subscribers' records. The
// subscribers go first: a subscriber whose connection is gone would only
// cost the publisher an event the deliverer drops, and the TTL removes
// whatever a failure leaves.
func (c *Connections) Close(ctx context.Context, id string) error {
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.table), Key: connectionKey(id), ConsistentRead: aws.Bool(true),
		ExpressionAttributeNames: map[string]string{"#w": attrWatches},
		ProjectionExpression:     aws.String("#w"),
	})
	if err != nil {
		return fmt.Errorf("read connection %s: %w", id, err)
	}
	var deletes []types.WriteRequest
	if w, ok := out.Item[attrWatches].(*types.AttributeValueMemberSS); ok {
		for _, watch := range w.Value {
			feed, subscription, _ := strings.Cut(watch, watchSep)
			deletes = append(deletes, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: subscriberKey(feed, id, subscription)}})
		}
	}
	for attempt := 0; len(deletes) > 0; attempt++ {
		if attempt == closeAttempts {
			return fmt.Errorf("remove the subscribers of connection %s: %d left after %d attempts", id, len(deletes), attempt)
		}
		var left []types.WriteRequest
		for start := 0; start < len(deletes); start += maxBatchWrite {
			batch := deletes[start:min(start+maxBatchWrite, len(deletes))]
			res, err := c.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{c.table: batch}})
			if err != nil {
				return fmt.Errorf("remove the subscribers of connection %s: %w", id, err)
			}
			left = append(left, res.UnprocessedItems[c.table]...)
		}
		deletes = left
		if len(deletes) > 0 {
			if err := pause(ctx, time.Duration(50<<attempt)*time.Millisecond); err != nil {
				return err
			}
		}
	}
	if _, err := c.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(c.table), Key: connectionKey(id)}); err != nil {
		return fmt.Errorf("remove connection %s: %w", id, err)
	}
	return nil
}

// pause waits d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
