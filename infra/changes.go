package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/udsproject/uds/pkg/schema"
)

const (
	// changesLagThresholdMs alarms when the changes function falls a
	// minute behind the data tables' streams: the feed's readers then see
	// changes that much late (on top of the feed's own two seconds). A
	// shard whose batch keeps failing is retried without end, never
	// skipped, so its lag grows until someone looks: this alarm is how
	// they learn.
	changesLagThresholdMs = 60_000
	// changesBatchingWindowSeconds is how long Lambda gathers a shard's
	// records before it invokes the changes function. Lambda polls a
	// shard four times a second, and without a window each poll that
	// finds a record is an invocation: a shard taking a write every few
	// hundred milliseconds would cost up to four invocations a second,
	// each for one change. A second's window makes that at most about
	// one, for a second more of lag, which the feed's readers hardly
	// notice beside the two seconds a read stays behind now.
	changesBatchingWindowSeconds = 1
	// changesBatchSize is the most records of a batch, Lambda's default
	// for DynamoDB streams: up to 200 rows (an item written to expire
	// has a row at its expiry too), well within the function's timeout.
	changesBatchSize = 100
	// unbounded is CloudFormation's value for no bound on a stream
	// mapping's retries and on the age of the records it hands over:
	// the feed must hold every change, so a batch is retried until it is
	// written, however long that takes.
	unbounded = -1
)

// changesStreams are the tables whose streams the changes function reads:
// the data tables, whose every change of an item is a row of the feed.
var changesStreams = []schema.Table{schema.Data, schema.List}

// defineChanges feeds the data tables' streams to the changes function,
// which writes a row of the changes feed per change (store.LogChanges).
// The mappings have no filter: every change of an item belongs in the
// feed. They start at the streams' oldest record (the last 24 hours), one
// batch per shard at a time so that a shard's changes are written in
// order, and Lambda retries a failed batch from the record the function
// reports (the first of the batch: it writes a batch whole or not at
// all) with no bound on the retries and no maximum record age, so no
// failure queue: a record is never skipped, and a shard that keeps
// failing holds back its later records until it is written, which the
// lag alarm tells.
//
// Beside the expiry function's mappings these make two Lambda readers of
// each data table's stream shard, the most DynamoDB advises (more are
// throttled): a third consumer of those streams needs another way in
// (Kinesis Data Streams for DynamoDB), not another mapping.
//
// An imported data table keeps the stream (if any) it had, which the stack
// does not control, so it gets no mapping, as for the expiry function: the
// feed would then miss its items' changes, so the kv function refuses to
// read the feed (functionEnvironment: UDS_STREAMED_QUOTAS=off).
func (s *UdsStack) defineChanges(props *UdsStackProps) {
	fn, role := s.Functions[fnChanges], s.Roles[fnChanges]
	for _, t := range changesStreams {
		if props.ImportTables[t.ID] {
			continue
		}
		stream := s.Tables[t.ID].TableStreamArn()
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"),
			Resources: jsii.Strings(*stream),
		}))
		mapping := awslambda.NewEventSourceMapping(s.Stack, jsii.String(t.ID+"ChangesMapping"), &awslambda.EventSourceMappingProps{
			Target:                  fn,
			EventSourceArn:          stream,
			StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
			BatchSize:               jsii.Number(changesBatchSize),
			MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(changesBatchingWindowSeconds)),
			ReportBatchItemFailures: jsii.Bool(true),
			// One batch per shard at a time, Lambda's default, written
			// out because the feed depends on it: a shard's changes
			// are written in the order they were made.
			ParallelizationFactor: jsii.Number(1),
		})
		// The CDK refuses -1 for these and, left out, writes nothing,
		// which leaves the bounds to Lambda's defaults; written out, the
		// template says "no bound" itself, and a test can check it.
		cfn := mapping.Node().DefaultChild().(awslambda.CfnEventSourceMapping)
		cfn.SetMaximumRetryAttempts(jsii.Number(unbounded))
		cfn.SetMaximumRecordAgeInSeconds(jsii.Number(unbounded))
		// Lambda checks the role when it creates the mapping.
		mapping.Node().AddDependency(role)
	}
	s.alarm("ChangesIteratorAgeAlarm", s.changesLag(alarmPeriod, ""), changesLagThresholdMs,
		"The UDS changes function is more than a minute behind the data tables' streams: the changes feed is late (see the runbook in docs/operations.md)")
}

// changesLag is the changes function's iterator age over period: the
// age, when Lambda handed it over, of the newest record of a batch, so
// how far behind the streams the feed is. An alarm's metric takes no
// label ("").
func (s *UdsStack) changesLag(period awscdk.Duration, label string) awscloudwatch.IMetric {
	opts := &awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Maximum")}
	if label != "" {
		opts.Label = jsii.String(label)
	}
	return s.Functions[fnChanges].Metric(jsii.String("IteratorAge"), opts)
}
