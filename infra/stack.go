package main

import (
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// UdsStack is the deployed UDS: the tables, the bucket for large values,
// the seven functions, the HTTP API in front of three of them and the
// realtime WebSocket API in front of one. The
// fields let tests find the resources a construct made without guessing
// logical IDs.
type UdsStack struct {
	awscdk.Stack
	// Tables by schema.Table.ID, the connections table's among them.
	Tables map[string]awsdynamodb.ITable
	// Functions by function name (kv, list, admin, expiry, changes,
	// realtime, deliver).
	Functions map[string]awslambda.Function
	Roles     map[string]awsiam.Role
	API       awsapigatewayv2.HttpApi
	Stage     awsapigatewayv2.HttpStage
	// The realtime endpoint: its WebSocket API and stage, and the queue
	// of its connections' events with its dead-letter queue.
	RealtimeAPI   awsapigatewayv2.WebSocketApi
	RealtimeStage awsapigatewayv2.WebSocketStage
	RealtimeQueue awssqs.Queue
	RealtimeDLQ   awssqs.Queue
	// Key encrypts the tables, the bucket, the queues and the log groups
	// where the props name one (kms.go); nil otherwise.
	Key awskms.IKey
	// Bucket holds the large values: made by the stack, or imported.
	Bucket awss3.IBucket
	// BucketName is the bucket's name as the functions and the grants
	// see it (see bucketNameOf), bucketArn its ARN built from the name.
	BucketName *string
	bucketArn  *string
}

// NewUdsStack defines the whole stack. The stack carries no account or
// region, so it synthesizes without AWS credentials and deploys wherever the
// CLI's credentials point.
func NewUdsStack(scope constructs.Construct, id string, props *UdsStackProps) *UdsStack {
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	s := &UdsStack{
		Stack:     stack,
		Tables:    map[string]awsdynamodb.ITable{},
		Functions: map[string]awslambda.Function{},
		Roles:     map[string]awsiam.Role{},
		Key:       defineKey(stack, props),
	}
	for _, t := range schema.Tables {
		s.Tables[t.ID] = defineTable(stack, t, props, s.Key)
	}
	s.Tables[schema.Connections.ID] = defineConnectionsTable(stack, props, s.Key)
	s.BucketName = bucketNameOf(stack, props)
	s.bucketArn = stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("s3"), Region: jsii.String(""), Account: jsii.String(""), Resource: s.BucketName,
	})
	for _, f := range functionSpecs {
		s.defineFunction(f, props)
	}
	s.grantKey()
	s.defineAPI(props)
	s.defineExpiry(props)
	s.defineChanges(props)
	s.defineRealtime(props)
	s.defineBucket(props)
	s.defineAlarms(props)
	s.defineDashboard(props)

	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("Base URL of the HTTP API; the routes start with /rest/api/v1"),
		Value:       s.Stage.Url(),
	})
	for _, f := range functionSpecs {
		awscdk.NewCfnOutput(stack, jsii.String(f.ConstructID+"LogGroup"), &awscdk.CfnOutputProps{
			Description: jsii.String("Log group of the " + f.Name + " function: its request lines, for CloudWatch Logs Insights"),
			Value:       s.Functions[f.Name].LogGroup().LogGroupName(),
		})
	}
	for _, t := range schema.Tables {
		awscdk.NewCfnOutput(stack, jsii.String(t.ID+"Name"), &awscdk.CfnOutputProps{
			Description: jsii.String("Physical name of the " + t.ID + " (" + t.EnvVar + ")"),
			Value:       jsii.String(props.TableName(t)),
		})
	}
	return s
}

// defineTable creates table t as the schema describes it, or references an
// existing one in import mode.
//
// Tables are retained when the stack is deleted or the resource replaced:
// they hold user data, and a later stack can adopt them with
// importExistingTables (all of them, or some by name). Deletion protection
// (on unless the props turn it off) also refuses a DeleteTable from
// anywhere else: the console, the CLI, a script.
//
// The throughput caps apply to the table and to each of its indexes alike:
// DynamoDB keeps a maximum per table and per index, and an index whose
// maximum is reached throttles the writes to its table. A write puts no
// more units on an index than on the table (an index entry is a
// projection of the item), so the same cap never makes an index the first
// to throttle writes.
//
// With a key of the deployment's own (kms.go), a created table, and with it
// its stream, is encrypted under it; an imported table keeps its own
// encryption, which the stack cannot change.
func defineTable(scope constructs.Construct, t schema.Table, props *UdsStackProps, key awskms.IKey) awsdynamodb.ITable {
	name := props.TableName(t)
	if props.ImportTables[t.ID] {
		// Naming the indexes makes grants and ARNs cover them as they
		// would for a table this stack created.
		var indexes []*string
		for _, idx := range t.Indexes {
			indexes = append(indexes, jsii.String(idx.Name))
		}
		attrs := &awsdynamodb.TableAttributes{TableName: jsii.String(name)}
		if len(indexes) > 0 {
			attrs.GlobalIndexes = &indexes
		}
		return awsdynamodb.Table_FromTableAttributes(scope, jsii.String(t.ID), attrs)
	}

	table := awsdynamodb.NewTable(scope, jsii.String(t.ID), tableUnderKey(&awsdynamodb.TableProps{
		TableName:    jsii.String(name),
		PartitionKey: keyAttribute(&t.Hash),
		SortKey:      keyAttribute(t.Range),
		// On-demand capacity: UDS traffic is spiky and per-tenant, and
		// nobody should have to tune capacity for a generic store.
		BillingMode: awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute:  jsii.String(schema.AttrExpiresAt),
		RemovalPolicy:        awscdk.RemovalPolicy_RETAIN,
		DeletionProtection:   jsii.Bool(props.DeletionProtection),
		Stream:               streamOf(t),
		MaxReadRequestUnits:  throughputCap(props.MaxReadRequestUnits),
		MaxWriteRequestUnits: throughputCap(props.MaxWriteRequestUnits),
	}, key))
	for _, idx := range t.Indexes {
		gsi := &awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:            jsii.String(idx.Name),
			PartitionKey:         keyAttribute(&idx.Hash),
			SortKey:              keyAttribute(idx.Range),
			ProjectionType:       awsdynamodb.ProjectionType_KEYS_ONLY,
			MaxReadRequestUnits:  throughputCap(props.MaxReadRequestUnits),
			MaxWriteRequestUnits: throughputCap(props.MaxWriteRequestUnits),
		}
		if len(idx.NonKeyAttributes) > 0 {
			gsi.ProjectionType = awsdynamodb.ProjectionType_INCLUDE
			gsi.NonKeyAttributes = jsii.Strings(idx.NonKeyAttributes...)
		}
		table.AddGlobalSecondaryIndex(gsi)
	}
	return table
}

// throughputCap is a cap for the CDK: nil (none) for 0.
func throughputCap(units int64) *float64 {
	if units == 0 {
		return nil
	}
	return jsii.Number(units)
}

// keyAttribute is key attribute a for the CDK (nil for none). A type
// the schema adds must be added here too: it panics on one it does not
// know rather than define the key as a string, which DynamoDB would then
// refuse for every item the store writes.
func keyAttribute(a *schema.KeyAttr) *awsdynamodb.Attribute {
	if a == nil {
		return nil
	}
	var typ awsdynamodb.AttributeType
	switch a.Type {
	case schema.String:
		typ = awsdynamodb.AttributeType_STRING
	case schema.Number:
		typ = awsdynamodb.AttributeType_NUMBER
	case schema.Binary:
		typ = awsdynamodb.AttributeType_BINARY
	default:
		panic("key attribute " + a.Name + ": unknown type " + string(a.Type))
	}
	return &awsdynamodb.Attribute{Name: jsii.String(a.Name), Type: typ}
}

// defineFunction creates one function with its own log group and its own
// role. The role is made here rather than by the Function construct so that
// it carries no managed policy: the stock AWSLambdaBasicExecutionRole allows
// writing to every log group in the account, and this role may write to its
// own log group only.
func (s *UdsStack) defineFunction(f functionSpec, props *UdsStackProps) {
	logGroup := awslogs.NewLogGroup(s.Stack, jsii.String(f.ConstructID+"Logs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		EncryptionKey: s.Key,
	})
	role := awsiam.NewRole(s.Stack, jsii.String(f.ConstructID+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Runs the UDS " + f.Name + " function"),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*logGroup.LogGroupArn()),
	}))
	for _, a := range accessOf(f.Name) {
		arn := s.Tables[a.Table.ID].TableArn()
		if a.Index != "" {
			arn = awscdk.Fn_Join(jsii.String(""), jsii.Strings(*arn, "/index/"+a.Index))
		}
		statement := &awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(a.Actions...),
			Resources: jsii.Strings(*arn),
		}
		switch {
		case len(a.LeadingKeys) > 0:
			// ForAllValues: every partition key the request names must
			// match; an item call names one.
			statement.Conditions = &map[string]any{
				"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": a.LeadingKeys},
			}
		case len(a.Attributes) > 0:
			// ForAllValues: every attribute the request names must be
			// one of these.
			statement.Conditions = &map[string]any{
				"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": a.Attributes},
			}
		}
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(statement))
	}

	fn := awslambda.NewFunction(s.Stack, jsii.String(f.ConstructID), &awslambda.FunctionProps{
		Description:  jsii.String(f.Description),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(f.zipPath(props.AssetDir)), nil),
		MemorySize:   jsii.Number(f.MemoryMB),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(f.Timeout.Seconds())),
		Environment:  functionEnvironment(f, props, s.BucketName),
		Role:         role,
		LogGroup:     logGroup,
		// The functions write JSON themselves (aws-lambda-go's slog
		// handler follows this setting) and EMF records beside it.
		LoggingFormat: awslambda.LoggingFormat_JSON,
		// Lambda files a line without a level, as every EMF record is,
		// at INFO: an application log level above INFO would drop the
		// metrics. The functions apply LOG_LEVEL to their own lines
		// (UDS_LOG_LEVEL) instead.
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel(lambdaLogLevel(props.LogLevel)),
		// The platform.report record, which carries a cold start's init
		// duration for the dashboard, is INFO.
		SystemLogLevelV2: awslambda.SystemLogLevel_INFO,
		// A reserved concurrency is also the function's ceiling. Only
		// the API's functions get one: clients drive them, while the
		// stream functions (expiry, changes) run one batch per stream
		// shard at a time and would only hold back concurrency they
		// never use.
		ReservedConcurrentExecutions: reservedConcurrency(f, props),
	})
	s.Functions[f.Name] = fn
	s.Roles[f.Name] = role
}

// reservedConcurrency is the reserved concurrency of function f: nil
// (none) unless the props set one and f serves the API.
func reservedConcurrency(f functionSpec, props *UdsStackProps) *float64 {
	if props.ReservedConcurrency == 0 || !servesRoutes(f.Name) {
		return nil
	}
	return jsii.Number(props.ReservedConcurrency)
}

// lambdaLogLevel is Lambda's application log level for the configured
// one: DEBUG, so that the functions' DEBUG lines get through, or else
// INFO.
func lambdaLogLevel(level string) string {
	if level == "DEBUG" {
		return level
	}
	return "INFO"
}

// functionEnvironment is the configuration pkg/config reads. Table names go
// in as plain strings rather than references, so `sam local invoke` on the
// synthesized template sees the real names too; the bucket's name is the
// one the stack gives it (bucketNameOf), not a reference either.
func functionEnvironment(f functionSpec, props *UdsStackProps, bucket *string) *map[string]*string {
	env := map[string]*string{
		config.EnvSubjectClaim:      jsii.String(props.SubjectClaim),
		config.EnvDefaultLimitBytes: jsii.String(strconv.FormatInt(props.DefaultLimitBytes, 10)),
		config.EnvDefaultLimitItems: jsii.String(strconv.FormatInt(props.DefaultLimitItems, 10)),
		config.EnvLogLevel:          jsii.String(props.LogLevel),
		envBucket:                   bucket,
	}
	for _, t := range schema.Tables {
		env[t.EnvVar] = jsii.String(props.TableName(t))
	}
	// All functions must share the cursor key, and it must not change
	// while cursors are in flight. The stack ID is both, differs between
	// stacks, and is not known to clients; a configured secret replaces it.
	if props.CursorSecret != "" {
		env[config.EnvCursorSecret] = jsii.String(props.CursorSecret)
	} else {
		env[config.EnvCursorSecret] = awscdk.Aws_STACK_ID()
	}
	// The registry reserves the created-content app's name; only the
	// admin routes register names.
	if f.Name == fnAdmin && props.CreatedContentApp != "" {
		app, _ := uds.ParseApp(props.CreatedContentApp)
		env[config.EnvCreatedContentApp] = jsii.String(app)
	}
	// Imported data tables keep the streams (if any) they had, which no
	// mapping of this stack reads: the admin routes then refuse the
	// streamed quota mode, whose writes nothing would count, and the kv
	// and deliver functions reads of the changes feed, which nothing
	// would write.
	if (f.Name == fnAdmin || f.Name == fnKV || f.Name == fnDeliver) && (props.ImportTables[schema.Data.ID] || props.ImportTables[schema.List.ID]) {
		env[config.EnvStreamedQuotas] = jsii.String("off")
	}
	// Only the API's functions have routes to publish metrics of.
	if props.RouteMetrics && servesRoutes(f.Name) {
		env[config.EnvRouteMetrics] = jsii.String("1")
	}
	if f.Name == fnList {
		env[config.EnvDeleteAllBudget] = jsii.String(listDeleteAllBudget.String())
	}
	// The deployment's rate limits apply where the data routes are
	// served, and to realtime subscribes, each charged as a request;
	// unset, they limit nothing.
	if servesDataRoutes(f.Name) || f.Name == fnDeliver {
		for name, r := range map[string]uds.Rate{config.EnvRatePerCaller: props.RatePerCaller, config.EnvRatePerApp: props.RatePerApp} {
			if r.On() {
				env[name] = jsii.String(config.FormatRate(r))
			}
		}
	}
	return &env
}
