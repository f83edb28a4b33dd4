package streampoll

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// record is a stream record as Lambda hands it over: the SDK's record with
// the stream's ARN, which GetRecords leaves out and Lambda adds.
func record(r types.Record, streamARN string) (events.DynamoDBEventRecord, error) {
	out := events.DynamoDBEventRecord{
		AWSRegion: aws.ToString(r.AwsRegion), EventID: aws.ToString(r.EventID), EventName: string(r.EventName),
		EventSource: aws.ToString(r.EventSource), EventVersion: aws.ToString(r.EventVersion), EventSourceArn: streamARN,
	}
	if id := r.UserIdentity; id != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{Type: aws.ToString(id.Type), PrincipalID: aws.ToString(id.PrincipalId)}
	}
	c := r.Dynamodb
	if c == nil {
		return out, nil
	}
	out.Change = events.DynamoDBStreamRecord{
		SequenceNumber: aws.ToString(c.SequenceNumber), SizeBytes: aws.ToInt64(c.SizeBytes), StreamViewType: string(c.StreamViewType),
	}
	if c.ApproximateCreationDateTime != nil {
		out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *c.ApproximateCreationDateTime}
	}
	var err error
	if out.Change.Keys, err = image(c.Keys); err != nil {
		return out, fmt.Errorf("record %s: keys: %w", out.Change.SequenceNumber, err)
	}
	if out.Change.NewImage, err = image(c.NewImage); err != nil {
		return out, fmt.Errorf("record %s: new image: %w", out.Change.SequenceNumber, err)
	}
	if out.Change.OldImage, err = image(c.OldImage); err != nil {
		return out, fmt.Errorf("record %s: old image: %w", out.Change.SequenceNumber, err)
	}
	return out, nil
}

// image converts an item's attributes; an absent image stays absent, as
// in Lambda's event.
func image(m map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		c, err := value(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = c
	}
	return out, nil
}

// value converts one attribute value. A type the SDK does not know (one
// DynamoDB added after it) is an error rather than a guess: the poller
// stops at the record instead of handing over a wrong image.
func value(v types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			c, err := value(e)
			if err != nil {
				return events.DynamoDBAttributeValue{}, fmt.Errorf("element %d: %w", i, err)
			}
			l[i] = c
		}
		return events.NewListAttribute(l), nil
	case *types.AttributeValueMemberM:
		m, err := image(v.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("an attribute value of unknown type %T", v)
}
