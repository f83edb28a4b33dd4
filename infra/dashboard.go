package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/udsproject/uds/pkg/schema"
)

// udsNamespace is the CloudWatch namespace of the functions' EMF metrics
// (internal/emf).
const udsNamespace = "UDS"

// dashboardPeriod is the resolution of every dashboard graph.
var dashboardPeriod = awscdk.Duration_Minutes(jsii.Number(5))

// apiFunctions are the functions behind the HTTP API, whose request
// metrics carry a function dimension (and a route one with routeMetrics).
var apiFunctions = []string{fnKV, fnList, fnAdmin}

// udsMetric is one of the functions' EMF metrics for one function, over
// period. An alarm's metric takes no label ("") and is then written as
// the plain metric, not as a query of one.
func udsMetric(name, function, statistic, label string, period awscdk.Duration) awscloudwatch.IMetric {
	props := &awscloudwatch.MetricProps{
		Namespace:     jsii.String(udsNamespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &map[string]*string{"function": jsii.String(function)},
		Statistic:     jsii.String(statistic),
		Period:        period,
	}
	if label != "" {
		props.Label = jsii.String(label)
	}
	return awscloudwatch.NewMetric(props)
}

// perRoute graphs an EMF metric for every route that has data, where the
// deployment publishes per-route metrics (routeMetrics): a SEARCH finds
// the routes, so a route added to the API needs no change here.
func perRoute(name, statistic, label string) awscloudwatch.IMetric {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("SEARCH('{" + udsNamespace + ",function,route} MetricName=\"" + name + "\"', '" +
			statistic + "', 300)"),
		Label:  jsii.String(label),
		Period: dashboardPeriod,
	})
}

func graph(title string, left []awscloudwatch.IMetric, width float64) awscloudwatch.IWidget {
	return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
		Title:  jsii.String(title),
		Left:   &left,
		Width:  jsii.Number(width),
		Height: jsii.Number(6),
		Period: dashboardPeriod,
	})
}

// forFunctions is one metric per API function, labelled with both.
func forFunctions(name, statistic string) []awscloudwatch.IMetric {
	var out []awscloudwatch.IMetric
	for _, f := range apiFunctions {
		out = append(out, udsMetric(name, f, statistic, f+" "+name, dashboardPeriod))
	}
	return out
}

// initDurationQuery charts cold starts from the functions' platform.report
// records. Under the JSON log format a report is a JSON record, not the
// plain-text REPORT line that @type and @initDuration describe:
// {"type":"platform.report","record":{"metrics":{"initDurationMs":...}}},
// with initDurationMs only after a cold start.
var initDurationQuery = []string{
	`filter type = "platform.report" and ispresent(record.metrics.initDurationMs)`,
	`stats count() as coldStarts, avg(record.metrics.initDurationMs) as avgInitMs, ` +
		`pct(record.metrics.initDurationMs, 99) as p99InitMs by bin(5m)`,
}

// The request lines' queries: the per-route detail the functions publish
// no metrics for by default (routeMetrics). Lambda's JSON log format names
// the line's message "message".
var (
	routeLatencyQuery = []string{
		`filter message = "request"`,
		`stats count() as requests, pct(latencyMs, 50) as p50Ms, pct(latencyMs, 99) as p99Ms by route`,
		`sort requests desc`,
		`limit 40`,
	}
	routeErrorsQuery = []string{
		`filter message = "request" and status >= 400`,
		`stats count() as answers by route, status, error`,
		`sort answers desc`,
		`limit 40`,
	}
	refusalsQuery = []string{
		`filter message = "request" and (quota = "refused" or status = 409 or status = 412 or status = 429 or rateLimiter = "open")`,
		`stats count() as requests, sum(quotaRefusals) as quotaRefusals by route, status, rateLimiter`,
		`sort requests desc`,
		`limit 40`,
	}
	routeDynamoDBQuery = []string{
		`filter message = "request"`,
		`stats sum(dynamodbCalls) as calls, sum(dynamodbRetries) as retries, sum(dynamodbThrottles) as throttles, ` +
			`sum(readUnits) as readUnits, sum(writeUnits) as writeUnits by route`,
		`sort calls desc`,
		`limit 40`,
	}
)

// changesBatchQuery charts the changes function's batch lines
// (pkg/changes): the records it took, the feed's rows it wrote, the
// newest record's age when written and the throttled writes, per 5
// minutes.
var changesBatchQuery = []string{
	`filter message = "changes batch"`,
	`stats sum(records) as records, sum(rows) as rows, max(lagMs) as maxLagMs, sum(dynamodbThrottles) as throttles by bin(5m)`,
}

// logTable is a Logs Insights query over logGroups, shown as a table.
func logTable(title string, logGroups []*string, query []string, width float64) awscloudwatch.IWidget {
	return awscloudwatch.NewLogQueryWidget(&awscloudwatch.LogQueryWidgetProps{
		Title:         jsii.String(title),
		LogGroupNames: &logGroups,
		QueryLines:    jsii.Strings(query...),
		View:          awscloudwatch.LogQueryVisualizationType_TABLE,
		Width:         jsii.Number(width),
		Height:        jsii.Number(6),
	})
}

// defineDashboard builds the operations dashboard: per function requests,
// latency, errors, 429s and DynamoDB throttles (the functions' metrics);
// per route requests, latency, errors, refusals and DynamoDB calls (Logs
// Insights queries of the request lines, or, with routeMetrics, the
// per-route metrics too); the tables' throttles and capacity; the
// functions' duration, cold starts, concurrency, errors and throttles; the
// expiry stream's lag and releases; the changes feed's lag and batches.
// Its URL is a stack output.
func (s *UdsStack) defineDashboard(props *UdsStackProps) {
	d := awscloudwatch.NewDashboard(s.Stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	d.AddWidgets(awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String("# UDS\nPer function: requests, p50/p99 latency, 4xx and 5xx (EMF metrics, namespace `UDS`). " +
			"Per route: Logs Insights queries of the request lines (each refresh scans the time range's logs). " +
			"The runbook in docs/operations.md says what each alarm means and which Logs Insights queries to run first."),
		Width: jsii.Number(24), Height: jsii.Number(2),
	}))
	var apiLogGroups []*string
	for _, f := range apiFunctions {
		apiLogGroups = append(apiLogGroups, s.Functions[f].LogGroup().LogGroupName())
	}
	d.AddWidgets(
		graph("Requests per function", forFunctions("Requests", "Sum"), 6),
		graph("p50 latency per function (ms)", forFunctions("Latency", "p50"), 6),
		graph("p99 latency per function (ms)", forFunctions("Latency", "p99"), 6),
		graph("4xx and 5xx per function", append(forFunctions("ClientErrors", "Sum"), forFunctions("ServerErrors", "Sum")...), 6),
	)
	d.AddWidgets(
		logTable("Per route: requests, p50 and p99 latency (ms)", apiLogGroups, routeLatencyQuery, 12),
		logTable("Per route: 4xx and 5xx answers", apiLogGroups, routeErrorsQuery, 12),
	)
	d.AddWidgets(
		logTable("Per route: quota refusals, conditional failures (409/412), 429s, rate limits let through", apiLogGroups, refusalsQuery, 12),
		logTable("Per route: DynamoDB calls, retries, throttles and capacity units", apiLogGroups, routeDynamoDBQuery, 12),
	)
	if props.RouteMetrics {
		d.AddWidgets(
			graph("Requests per route", []awscloudwatch.IMetric{perRoute("Requests", "Sum", "")}, 6),
			graph("p99 latency per route (ms)", []awscloudwatch.IMetric{perRoute("Latency", "p99", "")}, 6),
			graph("4xx per route", []awscloudwatch.IMetric{perRoute("ClientErrors", "Sum", "")}, 6),
			graph("5xx per route", []awscloudwatch.IMetric{perRoute("ServerErrors", "Sum", "")}, 6),
		)
	}
	d.AddWidgets(s.realtimeWidgets()...)
	var consumedRead, consumedWrite []awscloudwatch.IMetric
	var tableNames []string
	for _, t := range schema.Tables {
		table := s.Tables[t.ID]
		consumedRead = append(consumedRead, table.MetricConsumedReadCapacityUnits(&awscloudwatch.MetricOptions{Period: dashboardPeriod, Label: jsii.String(t.ID)}))
		consumedWrite = append(consumedWrite, table.MetricConsumedWriteCapacityUnits(&awscloudwatch.MetricOptions{Period: dashboardPeriod, Label: jsii.String(t.ID)}))
		tableNames = append(tableNames, `TableName="`+props.TableName(t)+`"`)
	}
	// DynamoDB publishes throttles per table and operation: one search
	// finds every operation of the stack's tables.
	tableThrottles := []awscloudwatch.IMetric{awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("SEARCH('{AWS/DynamoDB,TableName,Operation} MetricName=\"ThrottledRequests\" (" +
			strings.Join(tableNames, " OR ") + ")', 'Sum', 300)"),
		Label:  jsii.String(""),
		Period: dashboardPeriod,
	})}
	d.AddWidgets(
		graph("DynamoDB throttles seen by the functions, and 429s answered",
			append(forFunctions("DynamoDBThrottles", "Sum"), forFunctions("RateLimited", "Sum")...), 6),
		graph("DynamoDB throttled requests per table", tableThrottles, 6),
		graph("Consumed read capacity per table", consumedRead, 6),
		graph("Consumed write capacity per table", consumedWrite, 6),
	)
	var duration, concurrency, errs []awscloudwatch.IMetric
	var logGroups []*string
	for _, f := range functionSpecs {
		fn := s.Functions[f.Name]
		duration = append(duration,
			fn.MetricDuration(&awscloudwatch.MetricOptions{Period: dashboardPeriod, Statistic: jsii.String("p50"), Label: jsii.String(f.Name + " p50")}),
			fn.MetricDuration(&awscloudwatch.MetricOptions{Period: dashboardPeriod, Statistic: jsii.String("p99"), Label: jsii.String(f.Name + " p99")}))
		concurrency = append(concurrency, fn.Metric(jsii.String("ConcurrentExecutions"), &awscloudwatch.MetricOptions{
			Period: dashboardPeriod, Statistic: jsii.String("Maximum"), Label: jsii.String(f.Name)}))
		errs = append(errs, fn.MetricErrors(&awscloudwatch.MetricOptions{Period: dashboardPeriod, Label: jsii.String(f.Name + " errors")}),
			fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: dashboardPeriod, Label: jsii.String(f.Name + " throttles")}))
		logGroups = append(logGroups, fn.LogGroup().LogGroupName())
	}
	d.AddWidgets(
		graph("Function duration (ms)", duration, 6),
		awscloudwatch.NewLogQueryWidget(&awscloudwatch.LogQueryWidgetProps{
			Title:         jsii.String("Cold starts: init duration (ms)"),
			LogGroupNames: &logGroups,
			QueryLines:    jsii.Strings(initDurationQuery...),
			View:          awscloudwatch.LogQueryVisualizationType_LINE,
			Width:         jsii.Number(6),
			Height:        jsii.Number(6),
		}),
		graph("Concurrent executions", concurrency, 6),
		graph("Function errors (crash or timeout) and throttles", errs, 6),
	)
	expiry := s.Functions[fnExpiry]
	d.AddWidgets(
		graph("Expiry: stream iterator age (ms)", []awscloudwatch.IMetric{expiry.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
			Period: dashboardPeriod, Statistic: jsii.String("Maximum"), Label: jsii.String("IteratorAge")})}, 12),
		graph("Expiry: usage releases and failures", []awscloudwatch.IMetric{
			udsMetric("Releases", fnExpiry, "Sum", "releases", dashboardPeriod),
			udsMetric("ReleaseFailures", fnExpiry, "Sum", "failures", dashboardPeriod)}, 12),
	)
	d.AddWidgets(
		graph("Changes feed: lag, the stream iterator age (ms)", []awscloudwatch.IMetric{s.changesLag(dashboardPeriod, "IteratorAge")}, 12),
		awscloudwatch.NewLogQueryWidget(&awscloudwatch.LogQueryWidgetProps{
			Title:         jsii.String("Changes feed: records, rows written, lag (ms) and throttles"),
			LogGroupNames: &[]*string{s.Functions[fnChanges].LogGroup().LogGroupName()},
			QueryLines:    jsii.Strings(changesBatchQuery...),
			View:          awscloudwatch.LogQueryVisualizationType_LINE,
			Width:         jsii.Number(12),
			Height:        jsii.Number(6),
		}),
	)
	awscdk.NewCfnOutput(s.Stack, jsii.String("DashboardUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("The UDS operations dashboard in the CloudWatch console"),
		Value: awscdk.Fn_Join(jsii.String(""), jsii.Strings(
			"https://console.aws.amazon.com/cloudwatch/home?region=", *awscdk.Aws_REGION(),
			"#dashboards:name=", *d.DashboardName())),
	})
}
