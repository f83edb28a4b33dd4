package main

import (
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
	// Function throttles mean the account's concurrency is exhausted.
	functionThrottlesThreshold = 1
	// Table throttles on on-demand tables mean a hot partition or a sudden
	// jump past twice the previous peak.
	tableThrottlesThreshold = 10
	// DynamoDB system errors (HTTP 500 from the service) are retried by the
	// SDK; a steady stream of them is worth a look.
	tableSystemErrorsThreshold = 5
)

var alarmPeriod = awscdk.Duration_Minutes(jsii.Number(5))

// tableOperations are the DynamoDB operations the store makes (see
// functionAccess). DynamoDB publishes throttles and system errors per table
// and operation, so the table alarms add these up.
var tableOperations = []string{
	"GetItem", "BatchGetItem", "UpdateItem", "Query", "TransactWriteItems",
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

func (s *UdsStack) defineAlarms() {
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
