package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
)

// realtimeRoutes are the WebSocket API's routes, all the realtime
// function's.
var realtimeRoutes = []string{"$connect", "$disconnect", "$default"}

// TestRealtime writes out the realtime endpoint as the stack must define
// it: the WebSocket API and its routes, the stage, the connections table,
// the FIFO queue and its dead letters, the deliver function's mapping,
// every grant of the three functions that take part, their settings, the
// alarms and the output.
func TestRealtime(t *testing.T) {
	ctx := jwtContext()
	ctx[ctxCORSOrigins] = "https://app.example.com"
	s := synth(t, ctx)
	fnRef := func(fn string) string { return "${" + s.logicalID(t, s.stack.Functions[fn]) + "}" }
	fnArn := func(fn string) string { return "${" + s.logicalID(t, s.stack.Functions[fn]) + ".Arn}" }
	api := s.logicalID(t, s.stack.RealtimeAPI)
	queue, dlq := s.logicalID(t, s.stack.RealtimeQueue), s.logicalID(t, s.stack.RealtimeDLQ)

	t.Run("api", func(t *testing.T) {
		p := s.resources[api].Properties
		checkEqual(t, "ProtocolType", p["ProtocolType"], "WEBSOCKET")
		checkEqual(t, "RouteSelectionExpression", p["RouteSelectionExpression"], "$request.body.action")
		var keys []string
		for _, id := range s.ofType("AWS::ApiGatewayV2::Route") {
			r := s.resources[id].Properties
			if flatten(r["ApiId"]) != "${"+api+"}" {
				continue
			}
			key := r["RouteKey"].(string)
			keys = append(keys, key)
			checkEqual(t, key+" AuthorizationType", r["AuthorizationType"], "NONE")
			integration := strings.TrimSuffix(strings.TrimPrefix(flatten(r["Target"]), "integrations/${"), "}")
			ip := s.resources[integration].Properties
			checkEqual(t, key+" integration", []any{ip["IntegrationType"], flatten(ip["IntegrationUri"])},
				[]any{"AWS_PROXY", "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/" + fnArn(fnRealtime) + "/invocations"})
			permitted := false
			for _, pid := range s.ofType("AWS::Lambda::Permission") {
				pp := s.resources[pid].Properties
				permitted = permitted || flatten(pp["FunctionName"]) == fnArn(fnRealtime) && strings.HasSuffix(flatten(pp["SourceArn"]), "/*"+key)
			}
			if !permitted {
				t.Errorf("no invoke permission for %s", key)
			}
		}
		slices.Sort(keys)
		want := slices.Sorted(slices.Values(realtimeRoutes))
		checkEqual(t, "routes", keys, want)
	})

	t.Run("stage", func(t *testing.T) {
		p := s.resources[s.logicalID(t, s.stack.RealtimeStage)].Properties
		checkEqual(t, "stage", []any{flatten(p["ApiId"]), p["StageName"], p["AutoDeploy"]}, []any{"${" + api + "}", "live", true})
		checkEqual(t, "DefaultRouteSettings", p["DefaultRouteSettings"], map[string]any{"ThrottlingRateLimit": 100.0, "ThrottlingBurstLimit": 200.0})
		if _, ok := p["AccessLogSettings"]; ok {
			t.Errorf("an access log, which needs the account's CloudWatch role for API Gateway")
		}
		out, _ := s.outputs["RealtimeUrl"].(map[string]any)
		checkEqual(t, "RealtimeUrl", flatten(out["Value"]), "wss://${"+api+"}.execute-api.${AWS::Region}.${AWS::URLSuffix}/live")
	})

	t.Run("connections table", func(t *testing.T) {
		r := s.resources[s.logicalID(t, s.stack.Tables[schema.Connections.ID])]
		p := r.Properties
		checkEqual(t, "TableName", p["TableName"], "realtime_connections")
		checkEqual(t, "BillingMode", p["BillingMode"], "PAY_PER_REQUEST")
		checkEqual(t, "KeySchema", p["KeySchema"], keySchema(schema.Connections.Hash, schema.Connections.Range))
		checkEqual(t, "TimeToLiveSpecification", p["TimeToLiveSpecification"], map[string]any{"AttributeName": "expiresAt", "Enabled": true})
		// Nothing of it is worth keeping or restoring, and nothing reads
		// its changes.
		for _, k := range []string{"GlobalSecondaryIndexes", "StreamSpecification", "PointInTimeRecoverySpecification", "DeletionProtectionEnabled", "ProvisionedThroughput"} {
			checkEqual(t, k, p[k], nil)
		}
		checkEqual(t, "DeletionPolicy", r.DeletionPolicy, "Delete")
	})

	t.Run("queues", func(t *testing.T) {
		q := s.resources[queue].Properties
		checkEqual(t, "queue", map[string]any{
			"FifoQueue": q["FifoQueue"], "DeduplicationScope": q["DeduplicationScope"], "FifoThroughputLimit": q["FifoThroughputLimit"],
			"VisibilityTimeout": q["VisibilityTimeout"], "RedrivePolicy": redrive(q["RedrivePolicy"]),
			"ContentBasedDeduplication": q["ContentBasedDeduplication"],
		}, map[string]any{
			"FifoQueue": true, "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId",
			"VisibilityTimeout": 6 * functionSpecOf(fnDeliver).Timeout.Seconds(),
			"RedrivePolicy":     []string{"${" + dlq + ".Arn}", "5"},
			// Every event is sent with its deduplication id.
			"ContentBasedDeduplication": nil,
		})
		d := s.resources[dlq].Properties
		checkEqual(t, "dead-letter queue", []any{d["FifoQueue"], d["MessageRetentionPeriod"]}, []any{true, 14 * 24 * 3600.0})
		secured := 0
		for _, id := range s.ofType("AWS::SQS::QueuePolicy") {
			body := flatten(s.resources[id].Properties["PolicyDocument"])
			if strings.Contains(body, `"aws:SecureTransport":"false"`) && (strings.Contains(body, queue) || strings.Contains(body, dlq)) {
				secured++
			}
		}
		checkEqual(t, "queues refusing plain HTTP", secured, 2)
	})

	t.Run("mapping", func(t *testing.T) {
		var got []map[string]any
		for _, id := range s.ofType("AWS::Lambda::EventSourceMapping") {
			p := s.resources[id].Properties
			if flatten(p["EventSourceArn"]) != "${"+queue+".Arn}" {
				continue
			}
			m := map[string]any{}
			for k, v := range p {
				m[k] = flatten(v)
			}
			got = append(got, m)
			if !slices.Contains(s.resources[id].DependsOn, s.logicalID(t, s.stack.Roles[fnDeliver])) {
				t.Errorf("the mapping does not wait for the deliver function's role")
			}
		}
		checkEqual(t, "mappings", got, []map[string]any{{
			"FunctionName": fnRef(fnDeliver), "EventSourceArn": "${" + queue + ".Arn}",
			"BatchSize": "10", "FunctionResponseTypes": "[ReportBatchItemFailures]",
		}})
	})

	// Every SQS and Management API grant of every function, written out.
	t.Run("grants", func(t *testing.T) {
		connections := func(method string) string {
			return "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${" + api + "}/live/" + method + "/@connections/*"
		}
		want := map[string]map[string][]string{
			fnRealtime: {"sqs:SendMessage": {"${" + queue + ".Arn}"}, "execute-api:ManageConnections": {connections("DELETE")}},
			fnChanges:  {"sqs:SendMessage": {"${" + queue + ".Arn}"}, "execute-api:ManageConnections": {connections("DELETE")}},
			fnDeliver: {
				"sqs:ReceiveMessage": {"${" + queue + ".Arn}"}, "sqs:DeleteMessage": {"${" + queue + ".Arn}"},
				"sqs:GetQueueAttributes":        {"${" + queue + ".Arn}"},
				"execute-api:ManageConnections": {connections("DELETE"), connections("POST")},
			},
		}
		for _, f := range functionSpecs {
			got := map[string][]string{}
			for _, st := range s.statements(t, f.Name) {
				for _, a := range asStrings(st["Action"]) {
					for _, r := range asStrings(st["Resource"]) {
						// The expiry function's failure queue is not
						// realtime's.
						if strings.Contains(r, "${"+queue+".") || strings.Contains(r, "${"+dlq+".") || strings.Contains(r, "${"+api+"}") {
							got[a] = append(got[a], r)
						}
					}
				}
			}
			for _, rs := range got {
				slices.Sort(rs)
			}
			w := want[f.Name]
			if w == nil {
				w = map[string][]string{}
			}
			checkEqual(t, f.Name+" SQS and Management API grants", got, w)
		}
	})

	t.Run("settings", func(t *testing.T) {
		env := func(fn string) map[string]any {
			return s.resources[s.logicalID(t, s.stack.Functions[fn])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		}
		r := env(fnRealtime)
		checkEqual(t, "realtime JWT and origins", []any{r[config.EnvJWTIssuer], r[config.EnvJWTAudience], r[config.EnvAllowedOrigins]},
			[]any{"https://issuer.example.com/", "web", "https://app.example.com"})
		for _, fn := range []string{fnDeliver, fnChanges, fnKV} {
			if e := env(fn); e[config.EnvJWTIssuer] != nil || e[config.EnvAllowedOrigins] != nil {
				t.Errorf("%s has the realtime function's settings", fn)
			}
		}
		for _, f := range []string{fnRealtime, fnDeliver} {
			p := s.resources[s.logicalID(t, s.stack.Functions[f])].Properties
			spec := functionSpecOf(f)
			checkEqual(t, f+" sizing", []any{p["Architectures"], p["MemorySize"], p["Timeout"], p["ReservedConcurrentExecutions"]},
				[]any{[]any{"arm64"}, spec.MemoryMB, spec.Timeout.Seconds(), nil})
		}
	})

	t.Run("alarms", func(t *testing.T) {
		for id, want := range map[string][]any{
			"RealtimeQueueAgeAlarm":        {"AWS/SQS", "ApproximateAgeOfOldestMessage", 60.0, map[string]string{"QueueName": "${" + queue + ".QueueName}"}},
			"RealtimeDeadLetterAlarm":      {"AWS/SQS", "ApproximateNumberOfMessagesVisible", 1.0, map[string]string{"QueueName": "${" + dlq + ".QueueName}"}},
			"RealtimePostFailuresAlarm":    {"UDS", "PostFailures", 5.0, map[string]string{"function": fnDeliver}},
			"RealtimePublishFailuresAlarm": {"UDS", "PublishFailures", 1.0, map[string]string{"function": fnChanges}},
		} {
			p := s.resources[s.logicalIDOf(t, id)].Properties
			checkEqual(t, id, []any{p["Namespace"], p["MetricName"], p["Threshold"], dimensions(p)}, want)
		}
		for _, fn := range []string{fnRealtime, fnDeliver} {
			p := s.resources[s.logicalIDOf(t, functionSpecOf(fn).ConstructID+"ErrorsAlarm")].Properties
			checkEqual(t, fn+" errors alarm", []any{p["MetricName"], dimensions(p)}, []any{"Errors", map[string]string{"FunctionName": fnRef(fn)}})
		}
	})

	t.Run("dashboard", func(t *testing.T) {
		body := flatten(s.resources[s.ofType("AWS::CloudWatch::Dashboard")[0]].Properties["DashboardBody"])
		for _, want := range []string{
			`"title":"Realtime: connects and client messages"`, `"AWS/ApiGateway","ConnectCount","ApiId","` + "${" + api + "}" + `"`,
			`"title":"Realtime: the queue's oldest event (s)"`,
			`"title":"Realtime: messages posted, connections closed for a failed post"`, `"UDS","PostFailures","function","deliver"`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the dashboard lacks %s", want)
			}
		}
	})
}

// redrive is a queue's redrive policy: its target and most receives.
func redrive(v any) []string {
	m, _ := v.(map[string]any)
	return []string{flatten(m["deadLetterTargetArn"]), flatten(m["maxReceiveCount"])}
}

// TestRealtimePublic checks that a stack whose data routes are public
// gives the realtime function no issuer: every connection is anonymous,
// as every request of the HTTP API is.
func TestRealtimePublic(t *testing.T) {
	s := synth(t, public())
	env := s.resources[s.logicalID(t, s.stack.Functions[fnRealtime])].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	for _, k := range []string{config.EnvJWTIssuer, config.EnvJWTAudience, config.EnvAllowedOrigins} {
		checkEqual(t, k, env[k], nil)
	}
}
