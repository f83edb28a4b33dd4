package main

import (
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"
)

// Alarm thresholds, each over alarmPeriod. They start conservative: an
// alarm that fires on every blip gets ignored. The alarms have no actions;
// a deployment wires them to its own paging (an SNS topic, a chat channel).
//
// CloudWatch bills an alarm by the metrics it reads ($0.10 a month each),
// so the stack keeps the alarms that say something no other alarm says,
// each on as few metrics as say it (decisions/operations.md, "Alarms").
const (
	// serverErrorSharePercent is the share of the API's requests that may
	// answer 5xx (the functions' internal errors, and the gateway's
	// integration failures: timeouts, throttled or failed functions)
	// before the alarm fires, once the API serves at least
	// minRequestsForShare requests in the period (below that, one failure
	// is a large share of nothing).
	serverErrorSharePercent = 1
	minRequestsForShare     = 20
	// Function errors are unhandled failures (crash, timeout); the handlers
	// turn ordinary failures into responses, so one is already notable.
	functionErrorsThreshold = 1
	// DynamoDB throttles seen by the functions (each retried by the SDK)
	// mean a hot partition, a sudden jump past twice the previous peak,
	// or a table's or an index's maximum throughput (maxReadRequestUnits,
	// maxWriteRequestUnits) reached.
	dynamoDBThrottlesThreshold = 10
)

// p99LatencyThresholdMs is, per API function, the p99 latency that fires its
// alarm when held for two of three periods. A single-item request takes a
// few DynamoDB round trips; the list function's delete-all and the admin
// function's listings and recompute take longer by design.
var p99LatencyThresholdMs = map[string]float64{fnKV: 1000, fnList: 3000, fnAdmin: 5000}

var alarmPeriod = awscdk.Duration_Minutes(jsii.Number(5))

func (s *UdsStack) defineAlarms(props *UdsStackProps) {
	sum := &awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("Sum")}
	// API Gateway's own metrics are free and count every answer, the
	// functions' and its own: one alarm on the share of 5xx says what a
	// 5xx share per function and a count of the gateway's 5xx said.
	share := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("IF(requests >= " + strconv.Itoa(minRequestsForShare) + ", 100 * FILL(errors, 0) / requests, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"requests": s.API.MetricCount(sum),
			"errors":   s.API.MetricServerError(sum),
		},
		Label:  jsii.String("5xx share (%)"),
		Period: alarmPeriod,
	})
	s.alarm("ApiServerErrorShareAlarm", share, serverErrorSharePercent,
		"Over 1% of the UDS HTTP API's requests answered 5xx (see the runbook in docs/operations.md)")
	// A throttled function is not alarmed on its own: behind the API it
	// answers 5xx (the share above), and the stream functions fall behind
	// their streams (their iterator age alarms).
	for _, f := range functionSpecs {
		s.alarm(f.ConstructID+"ErrorsAlarm", s.Functions[f.Name].MetricErrors(sum), functionErrorsThreshold,
			"The UDS "+f.Name+" function failed (crash or timeout)")
	}
	for _, f := range functionSpecs {
		if _, api := p99LatencyThresholdMs[f.Name]; api {
			s.latencyAlarm(f)
		}
		if props.RateLimitedAlarm > 0 && servesDataRoutes(f.Name) {
			s.alarm(f.ConstructID+"RateLimitedAlarm", udsMetric("RateLimited", f.Name, "Sum", "", alarmPeriod),
				float64(props.RateLimitedAlarm),
				"The UDS "+f.Name+" function refused "+strconv.FormatInt(props.RateLimitedAlarm, 10)+
					" or more requests over their rate limits in 5 minutes (see the runbook in docs/operations.md)")
		}
	}
	// A commit the bucket's event could not make is retried by Lambda, and
	// the client's own commit may still make it; one failing at all is
	// news (the function's errors alarm counts it too, among others).
	s.alarm("UploadCommitFailuresAlarm", udsMetric("UploadCommitFailures", fnExpiry, "Sum", "", alarmPeriod), 1,
		"The UDS expiry function failed to commit an upload from the bucket's event")
	s.alarm("DynamoDBThrottlesAlarm", functionsSum("DynamoDBThrottles", "DynamoDB throttles, all functions"),
		dynamoDBThrottlesThreshold, "DynamoDB throttled the UDS functions' requests (see the runbook in docs/operations.md)")
}

// functionsSum adds an EMF metric of every function that writes EMF
// records. The functions make every call the stack's tables take, so what
// they count of DynamoDB's answers is the tables' own: one metric per
// function where DynamoDB's metrics take one per table and operation (8
// tables by 7 operations). The changes function writes no EMF record: its
// throttled writes are written again until they pass, and show as its lag
// (ChangesIteratorAgeAlarm) and in its batch lines (dynamodbThrottles).
// Each term is FILLed with 0 because metric math drops a timestamp from a
// sum when any term has no data point there, and a function that served
// nothing has none.
func functionsSum(name, label string) awscloudwatch.IMetric {
	using := map[string]awscloudwatch.IMetric{}
	var terms []string
	for _, f := range functionSpecs {
		if !f.Metrics {
			continue
		}
		using[f.Name] = udsMetric(name, f.Name, "Sum", "", alarmPeriod)
		terms = append(terms, "FILL("+f.Name+", 0)")
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(strings.Join(terms, " + ")),
		UsingMetrics: &using,
		Label:        jsii.String(label),
		Period:       alarmPeriod,
	})
}

// The rate limits' alarms (rateLimitedAlarm) are optional, none by
// default: refusing a caller over its limit is the limits doing their
// work, and only the deployment knows how many refusals are news. The
// functions serving data routes count them (RateLimited, EMF, written by
// the refused requests only); the admin routes are not limited.

// latencyAlarm alarms on an API function's p99 latency (EMF, namespace
// UDS), which API Gateway's metrics cannot give per function.
func (s *UdsStack) latencyAlarm(f functionSpec) {
	awscloudwatch.NewAlarm(s.Stack, jsii.String(f.ConstructID+"LatencyP99Alarm"), &awscloudwatch.AlarmProps{
		Metric:             udsMetric("Latency", f.Name, "p99", "", alarmPeriod),
		Threshold:          jsii.Number(p99LatencyThresholdMs[f.Name]),
		EvaluationPeriods:  jsii.Number(3),
		DatapointsToAlarm:  jsii.Number(2),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		AlarmDescription:   jsii.String("The UDS " + f.Name + " function's p99 latency is high (see the runbook in docs/operations.md)"),
	})
}

func (s *UdsStack) alarm(id string, metric awscloudwatch.IMetric, threshold float64, description string) {
	awscloudwatch.NewAlarm(s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
		Metric:             metric,
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		// No requests means no data, which is healthy.
		TreatMissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		AlarmDescription: jsii.String(description),
	})
}
