package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/udsproject/uds/pkg/schema"
)

const (
	// expiryRetries bounds how often a failing batch is retried (halved
	// each time by bisection) before its records go to the failure queue:
	// Lambda's most, so that a batch is in practice retried until its
	// records expire (24 hours). A streamed change given up would leave
	// its owner under-counted; a stuck shard shows in the iterator-age
	// alarm instead.
	expiryRetries = 10000
	// iteratorAgeThresholdMs alarms when the expiry function falls 30 s
	// behind the streams: quotas then still count expired items and kept
	// versions that DynamoDB has deleted, and in the streamed quota mode
	// do not count yet what owners wrote in that time.
	iteratorAgeThresholdMs = 30_000
	// uploadEventRetries is how often Lambda retries an upload event
	// the expiry function failed (Lambda's most): a commit that fails
	// three times fails for a reason retrying does not remove.
	uploadEventRetries = 2
	// expiryWindowSeconds is the mappings' tumbling window. The window
	// is there for what its event carries, not for aggregation: the
	// shard the records come from, which names the high-water marks of
	// the streamed quota mode. One second keeps the lag it adds short.
	expiryWindowSeconds = 1
)

// streamOf is the stream a table keeps (schema.Table.Stream): both images
// for the data tables, whose changes the streamed quota mode sums, old
// images for the history table, whose TTL deletions the expiry function
// releases, none for the others.
func streamOf(t schema.Table) awsdynamodb.StreamViewType {
	return awsdynamodb.StreamViewType(t.Stream)
}

// defineExpiry feeds the streams of the streamed tables (the data tables
// and the history table) to the expiry function. The mappings' filters
// pass DynamoDB's own TTL deletions and, on the data tables, the changes
// of items written in the streamed quota mode (schema.AttrStreamCounted
// in the image before or after), so the many other writes, the versions
// UDS prunes itself among them, never invoke it. A batch that keeps
// failing is bisected, retried a bounded number of times, and then
// recorded in a queue that an alarm watches. Imported tables have no
// stream the stack controls; their expired items are removed and released
// when UDS meets them.
//
// The bucket's upload events (defineBucket) invoke the function
// asynchronously. Lambda retries a failed event twice and then records
// it in the same queue, under the same alarm: an upload whose commit
// keeps failing is as much news as a release that does.
func (s *UdsStack) defineExpiry(props *UdsStackProps) {
	fn, role := s.Functions[fnExpiry], s.Roles[fnExpiry]
	failures := awssqs.NewQueue(s.Stack, jsii.String("ExpiryFailures"), s.underKey(&awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	}))
	fn.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(uploadEventRetries),
		OnFailure:     awslambdadestinations.NewSqsDestination(failures),
	})
	ttlOnly := awslambda.FilterCriteria_Filter(&map[string]interface{}{
		"eventName": awslambda.FilterRule_IsEqual(jsii.String("REMOVE")),
		"userIdentity": map[string]interface{}{
			"type":        awslambda.FilterRule_IsEqual(jsii.String("Service")),
			"principalId": awslambda.FilterRule_IsEqual(jsii.String("dynamodb.amazonaws.com")),
		},
	})
	for _, t := range schema.Tables {
		if t.Stream == schema.NoStream || props.ImportTables[t.ID] {
			continue
		}
		// Lambda ORs the filters of a mapping: a record passes if one
		// matches. The streams with both images are the data tables',
		// whose changes the streamed quota mode sums; the history
		// table's passes TTL deletions alone.
		filters := []*map[string]interface{}{ttlOnly}
		if t.Stream == schema.StreamNewAndOldImages {
			filters = append(filters, streamCounted("NewImage"), streamCounted("OldImage"))
		}
		stream := s.Tables[t.ID].TableStreamArn()
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"),
			Resources: jsii.Strings(*stream),
		}))
		mapping := awslambda.NewEventSourceMapping(s.Stack, jsii.String(t.ID+"ExpiryMapping"), &awslambda.EventSourceMappingProps{
			Target:                  fn,
			EventSourceArn:          stream,
			StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
			BatchSize:               jsii.Number(100),
			BisectBatchOnError:      jsii.Bool(true),
			RetryAttempts:           jsii.Number(expiryRetries),
			ReportBatchItemFailures: jsii.Bool(true),
			OnFailure:               awslambdaeventsources.NewSqsDlq(failures),
			Filters:                 &filters,
			TumblingWindow:          awscdk.Duration_Seconds(jsii.Number(expiryWindowSeconds)),
			// One batch per shard at a time, Lambda's default, written
			// out because the streamed quota mode depends on it: an
			// owner's high-water mark per shard only holds if a shard's
			// batches are applied one after another, in order.
			ParallelizationFactor: jsii.Number(1),
		})
		// Lambda checks the role when it creates the mapping.
		mapping.Node().AddDependency(role)
	}
	s.alarm("ExpiryIteratorAgeAlarm", fn.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
		Period: alarmPeriod, Statistic: jsii.String("Maximum"),
	}), iteratorAgeThresholdMs, "The UDS expiry function is more than 30 s behind the tables' streams")
	s.alarm("ExpiryFailuresAlarm", failures.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
		Period: alarmPeriod, Statistic: jsii.String("Maximum"),
	}), 1, "Stream records the UDS expiry function could not release, or upload events it could not commit, are waiting in its failure queue")
}

// streamCounted is a filter passing the records whose image (NewImage or
// OldImage) is of an item written in the streamed quota mode: a create
// has only the new image, a delete (by a request or by the TTL) only the
// old one, and an update passes when either side was so written.
func streamCounted(image string) *map[string]interface{} {
	return awslambda.FilterCriteria_Filter(&map[string]interface{}{
		"dynamodb": map[string]interface{}{
			image: map[string]interface{}{
				schema.AttrStreamCounted: map[string]interface{}{"BOOL": awslambda.FilterRule_IsEqual(jsii.Bool(true))},
			},
		},
	})
}
