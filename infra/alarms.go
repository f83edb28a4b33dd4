package main

import (
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/jsii-runtime-go"

	"github.com/udsproject/uds/pkg/schema"
)

// Alarm thresholds, each a sum over alarmPeriod. They start conservative:
// an alarm that fires on every blip gets ignored. The alarms have no actions;
// a deployment wires them to its own paging (an SNS topic, a chat channel).
const (
	// API 5xx answers: the functions answer 500 on internal errors, and
	// the gateway on integration failures (timeouts, permission errors).
	api5xxThreshold = 5
	// Function errors are unhandled failures (crash, timeout); the handlers
	// turn ordinary failures into responses, so one is already notable.
	functionErrorsThreshold = 1
	// Function throttles mean the account's concurrency, or the function's
	// reserved concurrency (reservedConcurrency), is exhausted.
	functionThrottlesThreshold = 1
	// Table throttles on on-demand tables mean a hot partition, a sudden
	// jump past twice the previous peak, or the table's or an index's
	// maximum throughput (maxReadRequestUnits, maxWriteRequestUnits)
	// reached.
	tableThrottlesThreshold = 10
	// DynamoDB system errors (HTTP 500 from the service) are retried by the
	// SDK; a steady stream of them is worth a look.
	tableSystemErrorsThreshold = 5
	// serverErrorSharePercent is the share of a function's requests that
	// may answer 5xx before its alarm fires, once it serves at least
	// minRequestsForShare requests in the period (below that, one failure
	// is a large share of nothing).
	serverErrorSharePercent = 1
	minRequestsForShare     = 20
)

// p99LatencyThresholdMs is, per API function, the p99 latency that fires its
// alarm when held for two of three periods. A single-item request takes a
// few DynamoDB round trips; the list function's delete-all and the admin
// function's listings and recompute take longer by design.
var p99LatencyThresholdMs = map[string]float64{fnKV: 1000, fnList: 3000, fnAdmin: 5000}

var alarmPeriod = awscdk.Duration_Minutes(jsii.Number(5))

// tableOperations are the DynamoDB operations the store makes (see
// functionAccess). DynamoDB publishes throttles and system errors per table
// and operation, so the table alarms add these up. Scan and BatchWriteItem
// are the admin function's bulk work (policy changes, index builds); an
// index build writes the index table with BatchWriteItem alone, so without
// it that table's alarms would miss the heaviest writes it takes.
var tableOperations = []string{
	"GetItem", "BatchGetItem", "UpdateItem", "Query", "TransactWriteItems", "Scan", "BatchWriteItem",
}

// tableOperationsSum adds metricName of table across tableOperations. Each
// term is FILLed with 0 because metric math drops a timestamp from a sum when
// any term has no data point there, and an operation that is never throttled
// has none: without FILL, throttles of one operation would go unseen.
func tableOperationsSum(table awsdynamodb.ITable, metricName, label string) awscloudwatch.IMetric {
	using := map[string]awscloudwatch.IMetric{}
	var terms []string
	for _, op := range tableOperations {
		id := strings.ToLower(op)
		using[id] = table.Metric(jsii.String(metricName), &awscloudwatch.MetricOptions{
			DimensionsMap: &map[string]*string{"TableName": table.TableName(), "Operation": jsii.String(op)},
			Period:        alarmPeriod,
			Statistic:     jsii.String("Sum"),
		})
		terms = append(terms, "FILL("+id+", 0)")
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(strings.Join(terms, " + ")),
		UsingMetrics: &using,
		Label:        jsii.String(label),
		Period:       alarmPeriod,
	})
}

func (s *UdsStack) defineAlarms(props *UdsStackProps) {
	sum := &awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("Sum")}
	s.alarm("Api5xxAlarm", s.API.MetricServerError(sum), api5xxThreshold,
		"The UDS HTTP API answered 5xx")
	for _, f := range functionSpecs {
		fn := s.Functions[f.Name]
		s.alarm(f.ConstructID+"ErrorsAlarm", fn.MetricErrors(sum), functionErrorsThreshold,
			"The UDS "+f.Name+" function failed (crash or timeout)")
		s.alarm(f.ConstructID+"ThrottlesAlarm", fn.MetricThrottles(sum), functionThrottlesThreshold,
			"The UDS "+f.Name+" function was throttled")
	}
	for _, f := range functionSpecs {
		if _, api := p99LatencyThresholdMs[f.Name]; api {
			s.defineRequestAlarms(f)
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
	for _, t := range schema.Tables {
		table := s.Tables[t.ID]
		s.alarm(t.ID+"ThrottlesAlarm",
			tableOperationsSum(table, "ThrottledRequests", "Throttled requests, all operations"),
			tableThrottlesThreshold, "DynamoDB throttled requests to the UDS "+t.ID)
		s.alarm(t.ID+"SystemErrorsAlarm",
			tableOperationsSum(table, "SystemErrors", "System errors, all operations"),
			tableSystemErrorsThreshold, "DynamoDB system errors on the UDS "+t.ID)
	}
}

// The rate limits' alarms (rateLimitedAlarm) are optional, none by
// default: refusing a caller over its limit is the limits doing their
// work, and only the deployment knows how many refusals are news. The
// functions serving data routes count them (RateLimited, EMF); the admin
// routes are not limited.

// defineRequestAlarms alarms on an API function's own request metrics
// (EMF, namespace UDS): its p99 latency, and the share of its requests
// answered 5xx.
func (s *UdsStack) defineRequestAlarms(f functionSpec) {
	dims := &map[string]*string{"function": jsii.String(f.Name)}
	metric := func(name, statistic string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(udsNamespace), MetricName: jsii.String(name), DimensionsMap: dims,
			Statistic: jsii.String(statistic), Period: alarmPeriod,
		})
	}
	awscloudwatch.NewAlarm(s.Stack, jsii.String(f.ConstructID+"LatencyP99Alarm"), &awscloudwatch.AlarmProps{
		Metric:             metric("Latency", "p99"),
		Threshold:          jsii.Number(p99LatencyThresholdMs[f.Name]),
		EvaluationPeriods:  jsii.Number(3),
		DatapointsToAlarm:  jsii.Number(2),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		AlarmDescription:   jsii.String("The UDS " + f.Name + " function's p99 latency is high (see the runbook in docs/operations.md)"),
	})
	share := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("IF(requests >= " + strconv.Itoa(minRequestsForShare) + ", 100 * FILL(errors, 0) / requests, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"requests": metric("Requests", "Sum"),
			"errors":   metric("ServerErrors", "Sum"),
		},
		Label:  jsii.String("5xx share (%)"),
		Period: alarmPeriod,
	})
	s.alarm(f.ConstructID+"ServerErrorShareAlarm", share, serverErrorSharePercent,
		"Over 1% of the UDS "+f.Name+" function's requests answered 5xx (see the runbook in docs/operations.md)")
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
