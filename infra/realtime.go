package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
)

// The realtime endpoint (docs/decisions/realtime.md): a WebSocket API
// whose routes the realtime function serves, a FIFO queue that puts each
// connection's events in one line for the deliver function, and the
// connections table. The changes function publishes what it lands to
// the queue.
const (
	// realtimeStage is the WebSocket API's one stage, the last segment of
	// its URL.
	realtimeStage = "live"
	// routeSelection selects a route by the client message's action: no
	// route but $default is defined, so every message reaches the
	// realtime function, which queues it whatever its action. The
	// protocol's messages are the API's own.
	routeSelection = "$request.body.action"
	// deliverBatchSize is the most events of one deliver invocation,
	// SQS's limit for a FIFO queue's batch.
	deliverBatchSize = 10
	// deliverRedrives is how often the queue hands an event over before
	// it moves it to the dead-letter queue: past the deliver function's own tries (wsgateway's giveUp), so
	// that only an event whose connection could not even be closed ends
	// there.
	deliverRedrives = 5
	// realtimeQueueAgeSeconds alarms when the oldest event has waited a
	// minute: connections see their changes that much late.
	realtimeQueueAgeSeconds = 60
	// postFailuresThreshold alarms when the deliver function closed that
	// many connections in a period because a message could not be posted
	// (not those API Gateway had closed already).
	postFailuresThreshold = 5
)

// defineConnectionsTable creates the connections table. It holds no user
// data, only who is connected and subscribed, for at most a few hours
// (TTL): it is removed with the stack, has no point-in-time recovery
// (billed by the table's size, for nothing worth restoring), and is
// never imported; its throughput caps are the other tables'.
func defineConnectionsTable(scope awscdk.Stack, props *UdsStackProps, key awskms.IKey) awsdynamodb.ITable {
	t := schema.Connections
	return awsdynamodb.NewTable(scope, jsii.String(t.ID), tableUnderKey(&awsdynamodb.TableProps{
		TableName:            jsii.String(props.TableName(t)),
		PartitionKey:         keyAttribute(&t.Hash),
		SortKey:              keyAttribute(t.Range),
		BillingMode:          awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute:  jsii.String(schema.AttrExpiresAt),
		RemovalPolicy:        awscdk.RemovalPolicy_DESTROY,
		MaxReadRequestUnits:  throughputCap(props.MaxReadRequestUnits),
		MaxWriteRequestUnits: throughputCap(props.MaxWriteRequestUnits),
	}, key))
}

// defineRealtime creates the WebSocket API, its stage and routes, the
// queue and its dead-letter queue, and the grants and settings that tie
// them to the realtime, deliver and changes functions.
func (s *UdsStack) defineRealtime(props *UdsStackProps) {
	routes, deliver := s.Functions[fnRealtime], s.Functions[fnDeliver]

	// One integration per route (API Gateway invokes the function with
	// the route's event), one function behind the three.
	integration := func(id string) *awsapigatewayv2.WebSocketRouteOptions {
		return &awsapigatewayv2.WebSocketRouteOptions{
			Integration: awsapigatewayv2integrations.NewWebSocketLambdaIntegration(jsii.String(id), routes, nil),
		}
	}
	s.RealtimeAPI = awsapigatewayv2.NewWebSocketApi(s.Stack, jsii.String("RealtimeApi"), &awsapigatewayv2.WebSocketApiProps{
		ApiName:                  jsii.String(*s.Stack.StackName() + "-realtime"),
		Description:              jsii.String("UDS realtime: subscribe to a namespace, an item or a list and receive each change as it commits"),
		RouteSelectionExpression: jsii.String(routeSelection),
		ConnectRouteOptions:      integration("RealtimeConnect"),
		DisconnectRouteOptions:   integration("RealtimeDisconnect"),
		DefaultRouteOptions:      integration("RealtimeDefault"),
	})
	// No access log: a WebSocket stage's logs need the account's
	// CloudWatch role for API Gateway, which a stack cannot assume is set;
	// the realtime function logs each connect, refusal and failure.
	s.RealtimeStage = awsapigatewayv2.NewWebSocketStage(s.Stack, jsii.String("RealtimeStage"), &awsapigatewayv2.WebSocketStageProps{
		WebSocketApi: s.RealtimeAPI,
		StageName:    jsii.String(realtimeStage),
		AutoDeploy:   jsii.Bool(true),
		// The HTTP API's stage throttle, for client messages.
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(props.ThrottleRateLimit),
			BurstLimit: jsii.Number(props.ThrottleBurstLimit),
		},
	})

	// High-throughput FIFO: deduplication and the throughput limit per
	// message group (a connection), not per queue.
	s.RealtimeDLQ = awssqs.NewQueue(s.Stack, jsii.String("RealtimeDeadLetterQueue"), s.underKey(&awssqs.QueueProps{
		Fifo:            jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		EnforceSSL:      jsii.Bool(true),
	}))
	deliverTimeout := awscdk.Duration_Seconds(jsii.Number(functionSpecOf(fnDeliver).Timeout.Seconds()))
	s.RealtimeQueue = awssqs.NewQueue(s.Stack, jsii.String("RealtimeQueue"), s.underKey(&awssqs.QueueProps{
		Fifo:                jsii.Bool(true),
		DeduplicationScope:  awssqs.DeduplicationScope_MESSAGE_GROUP,
		FifoThroughputLimit: awssqs.FifoThroughputLimit_PER_MESSAGE_GROUP_ID,
		// Lambda advises six times the function's timeout, so that a
		// batch retried after a throttle is not handed to a second
		// invocation while the first still holds it.
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(6 * *deliverTimeout.ToSeconds(nil))),
		EnforceSSL:        jsii.Bool(true),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: s.RealtimeDLQ, MaxReceiveCount: jsii.Number(deliverRedrives)},
	}))
	mapping := awslambda.NewEventSourceMapping(s.Stack, jsii.String("RealtimeDeliverMapping"), &awslambda.EventSourceMappingProps{
		Target:                  deliver,
		EventSourceArn:          s.RealtimeQueue.QueueArn(),
		BatchSize:               jsii.Number(deliverBatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
	})
	s.Roles[fnDeliver].AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"),
		Resources: jsii.Strings(*s.RealtimeQueue.QueueArn()),
	}))
	// Lambda checks the role when it creates the mapping.
	mapping.Node().AddDependency(s.Roles[fnDeliver])

	// SendMessageBatch is authorised as SendMessage.
	for _, fn := range []string{fnRealtime, fnChanges} {
		s.Roles[fn].AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("sqs:SendMessage"),
			Resources: jsii.Strings(*s.RealtimeQueue.QueueArn()),
		}))
	}
	// The Management API: the deliver function posts and closes; the
	// realtime and changes functions close a connection whose event they
	// could not queue.
	for fn, methods := range realtimeManagement {
		var arns []string
		for _, m := range methods {
			arns = append(arns, *s.managementArn(m))
		}
		s.Roles[fn].AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("execute-api:ManageConnections"),
			Resources: jsii.Strings(arns...),
		}))
	}

	for _, fn := range []string{fnRealtime, fnDeliver, fnChanges} {
		f := s.Functions[fn]
		f.AddEnvironment(jsii.String(schema.Connections.EnvVar), jsii.String(props.TableName(schema.Connections)), nil)
		f.AddEnvironment(jsii.String(config.EnvRealtimeCallback), s.RealtimeStage.CallbackUrl(), nil)
		if fn != fnDeliver {
			f.AddEnvironment(jsii.String(config.EnvRealtimeQueue), s.RealtimeQueue.QueueUrl(), nil)
		}
	}
	// The realtime function verifies the tokens the HTTP API's JWT
	// authorizer would, and lets the pages of its CORS origins connect.
	if props.JWTIssuer != "" {
		routes.AddEnvironment(jsii.String(config.EnvJWTIssuer), jsii.String(props.JWTIssuer), nil)
		routes.AddEnvironment(jsii.String(config.EnvJWTAudience), jsii.String(strings.Join(props.JWTAudience, ",")), nil)
	}
	if len(props.CORSOrigins) > 0 {
		routes.AddEnvironment(jsii.String(config.EnvAllowedOrigins), jsii.String(strings.Join(props.CORSOrigins, ",")), nil)
	}

	sum := &awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("Maximum")}
	s.alarm("RealtimeQueueAgeAlarm", s.RealtimeQueue.MetricApproximateAgeOfOldestMessage(sum), realtimeQueueAgeSeconds,
		"The UDS realtime queue's oldest event has waited a minute: subscribers see their changes late (see the runbook in docs/operations.md)")
	s.alarm("RealtimeDeadLetterAlarm", s.RealtimeDLQ.MetricApproximateNumberOfMessagesVisible(sum), 1,
		"An event of the UDS realtime queue could neither be delivered nor its connection closed: that subscriber may have missed a change (see the runbook in docs/operations.md)")
	s.alarm("RealtimePostFailuresAlarm", udsMetric("PostFailures", fnDeliver, "Sum", "", alarmPeriod), postFailuresThreshold,
		"The UDS deliver function closed connections because messages could not be posted to them")
	s.alarm("RealtimePublishFailuresAlarm", udsMetric("PublishFailures", fnChanges, "Sum", "", alarmPeriod), 1,
		"The UDS changes function could not publish what it landed to the realtime subscribers: some wait for the next change (see the runbook in docs/operations.md)")

	awscdk.NewCfnOutput(s.Stack, jsii.String("RealtimeUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("URL of the realtime WebSocket API; a JWT goes in the access_token query parameter"),
		Value:       s.RealtimeStage.Url(),
	})
}

// realtimeManagement is what each function may do with the Management
// API: the HTTP methods of @connections (POST posts, DELETE closes).
var realtimeManagement = map[string][]string{
	fnDeliver:  {"POST", "DELETE"},
	fnRealtime: {"DELETE"},
	fnChanges:  {"DELETE"},
}

// managementArn is the ARN of the stage's @connections under method.
func (s *UdsStack) managementArn(method string) *string {
	return s.Stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("execute-api"),
		Resource:     s.RealtimeAPI.ApiId(),
		ResourceName: jsii.String(realtimeStage + "/" + method + "/@connections/*"),
		ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
	})
}

// realtimeWidgets are the dashboard's row of the realtime endpoint:
// API Gateway's and SQS's own metrics, which are free, and the deliver
// function's deliveries.
func (s *UdsStack) realtimeWidgets() []awscloudwatch.IWidget {
	opts := func(stat, label string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: dashboardPeriod, Statistic: jsii.String(stat), Label: jsii.String(label)}
	}
	return []awscloudwatch.IWidget{
		graph("Realtime: connects and client messages", []awscloudwatch.IMetric{
			s.RealtimeAPI.Metric(jsii.String("ConnectCount"), opts("Sum", "connects")),
			s.RealtimeAPI.Metric(jsii.String("MessageCount"), opts("Sum", "messages")),
		}, 8),
		graph("Realtime: the queue's oldest event (s)", []awscloudwatch.IMetric{
			s.RealtimeQueue.MetricApproximateAgeOfOldestMessage(opts("Maximum", "oldest event")),
		}, 8),
		graph("Realtime: messages posted, connections closed for a failed post", []awscloudwatch.IMetric{
			udsMetric("Deliveries", fnDeliver, "Sum", "posted", dashboardPeriod),
			udsMetric("PostFailures", fnDeliver, "Sum", "post failures", dashboardPeriod),
		}, 8),
	}
}
