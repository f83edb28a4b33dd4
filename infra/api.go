package main

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/udsproject/uds/internal/sameorigin"
)

// apiBase is the prefix of every route (seed 002).
const apiBase = "/rest/api/v1"

// apiRoute sends Methods on Path to Function. Admin routes require IAM
// (SigV4) authorization; the others are the data routes, public or behind
// the JWT authorizer.
type apiRoute struct {
	Methods  []awsapigatewayv2.HttpMethod
	Path     string
	Function string
	Admin    bool
}

// HEAD goes wherever GET goes: the functions answer it as GET without the
// body, and a route that lacked it would answer HEAD with the gateway's 404.
var (
	methodsReadDelete = []awsapigatewayv2.HttpMethod{
		awsapigatewayv2.HttpMethod_GET, awsapigatewayv2.HttpMethod_HEAD, awsapigatewayv2.HttpMethod_DELETE,
	}
	methodsItem = []awsapigatewayv2.HttpMethod{
		awsapigatewayv2.HttpMethod_POST, awsapigatewayv2.HttpMethod_PUT, awsapigatewayv2.HttpMethod_PATCH,
		awsapigatewayv2.HttpMethod_GET, awsapigatewayv2.HttpMethod_HEAD, awsapigatewayv2.HttpMethod_DELETE,
	}
)

// apiRoutes is every route of the API.
//
// No route ends in a slash: API Gateway refuses such route keys, and it
// matches a request whose path ends in a slash against the route without it
// (the function still sees the slash in rawPath and accepts both forms).
//
// When several routes match, API Gateway takes the most specific one, so
// .../{id}/list (GET, DELETE) wins over the greedy .../{id}/{sortKey+}. The
// greedy variable lets a sort key contain slashes. POST or PUT on .../list
// falls through to the greedy route and the list function rejects the
// reserved sort key. The quota and batch routes have one segment fewer
// than an item route, so they never overlap with it; they share their
// shape with the namespace route (index queries), and API Gateway prefers
// their literal segment, as the functions' own router does. A GET of
// .../batch then reaches the namespace route and the kv function answers
// it as a query of a namespace named batch, as the local server does.
var apiRoutes = []apiRoute{
	{Methods: methodsItem, Path: apiBase + "/data/{app}/{namespace}/{id}", Function: fnKV},
	{Methods: []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET, awsapigatewayv2.HttpMethod_HEAD}, Path: apiBase + "/data/{app}/{namespace}", Function: fnKV},
	{Methods: []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET, awsapigatewayv2.HttpMethod_HEAD}, Path: apiBase + "/data/{app}/quota", Function: fnKV},
	{Methods: []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST}, Path: apiBase + "/data/{app}/batch", Function: fnKV},
	{Methods: methodsReadDelete, Path: apiBase + "/data/{app}/{namespace}/{id}/list", Function: fnList},
	{Methods: methodsItem, Path: apiBase + "/data/{app}/{namespace}/{id}/{sortKey+}", Function: fnList},
	{Methods: []awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_ANY}, Path: apiBase + "/admin/{proxy+}", Function: fnAdmin, Admin: true},
}

// publicDataRoutesWarning is what synth says about a stack whose data
// routes are public.
const publicDataRoutesWarning = "THE DATA ROUTES ARE PUBLIC (publicDataRoutes=true): anyone who has the API's URL " +
	"can read, write and delete every app's data, as the anonymous caller. Set jwtIssuer and jwtAudience " +
	"(make JWT_ISSUER=... JWT_AUDIENCE=...) instead to require a JWT."

// accessLogFormat is one JSON object per request. It names the route and
// the integration's error and status, which is what tells a gateway problem
// from a function problem.
var accessLogFormat = map[string]string{
	"requestId":          "$context.requestId",
	"requestTime":        "$context.requestTime",
	"ip":                 "$context.identity.sourceIp",
	"userAgent":          "$context.identity.userAgent",
	"httpMethod":         "$context.httpMethod",
	"path":               "$context.path",
	"routeKey":           "$context.routeKey",
	"protocol":           "$context.protocol",
	"status":             "$context.status",
	"responseLength":     "$context.responseLength",
	"responseLatency":    "$context.responseLatency",
	"integrationStatus":  "$context.integrationStatus",
	"integrationLatency": "$context.integrationLatency",
	"integrationError":   "$context.integrationErrorMessage",
	"errorMessage":       "$context.error.message",
	"authorizerError":    "$context.authorizer.error",
}

// accessLogSettings implements awsapigatewayv2.IAccessLogSettings.
type accessLogSettings struct {
	destination awsapigatewayv2.IAccessLogDestination
	format      awsapigateway.AccessLogFormat
}

func (a *accessLogSettings) Destination() awsapigatewayv2.IAccessLogDestination {
	return a.destination
}

func (a *accessLogSettings) Format() awsapigateway.AccessLogFormat { return a.format }

// defineAPI creates the HTTP API, its default stage and its routes.
func (s *UdsStack) defineAPI(props *UdsStackProps) {
	s.API = awsapigatewayv2.NewHttpApi(s.Stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName:       s.Stack.StackName(),
		Description:   jsii.String("UDS, the Universal Data Store"),
		CorsPreflight: corsOptions(props.CORSOrigins),
		// The default stage is made below, because the one HttpApi
		// creates takes neither throttling nor access logs.
		CreateDefaultStage: jsii.Bool(false),
	})

	accessLogs := awslogs.NewLogGroup(s.Stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		EncryptionKey: s.Key,
	})
	format, err := json.Marshal(accessLogFormat)
	if err != nil {
		panic(err)
	}
	s.Stage = awsapigatewayv2.NewHttpStage(s.Stack, jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    s.API,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		// Stage-wide throttling protects the tables and the account's
		// Lambda concurrency from a single runaway client.
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(props.ThrottleRateLimit),
			BurstLimit: jsii.Number(props.ThrottleBurstLimit),
		},
		AccessLogSettings: &accessLogSettings{
			destination: awsapigatewayv2.NewLogGroupLogDestination(accessLogs),
			format:      awsapigateway.AccessLogFormat_Custom(jsii.String(string(format))),
		},
	})

	// One integration per function, shared by its routes, so the API has
	// three integrations however many routes there are. Each route still
	// gets its own invoke permission, scoped to that route.
	integrations := map[string]awsapigatewayv2.HttpRouteIntegration{}
	for _, f := range functionSpecs {
		if !servesRoutes(f.Name) {
			continue
		}
		integrations[f.Name] = awsapigatewayv2integrations.NewHttpLambdaIntegration(
			jsii.String(f.ConstructID+"Integration"), s.Functions[f.Name],
			&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
				PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
			})
	}

	// Validate has made sure that the data routes are public only when
	// the props say so: a missing JWT setting cannot open them.
	var dataAuthorizer awsapigatewayv2.IHttpRouteAuthorizer
	if props.PublicDataRoutes {
		awscdk.Annotations_Of(s.API).AddWarningV2(jsii.String("uds:publicDataRoutes"), jsii.String(publicDataRoutesWarning))
	} else {
		dataAuthorizer = awsapigatewayv2authorizers.NewHttpJwtAuthorizer(
			jsii.String("JwtAuthorizer"), jsii.String(props.JWTIssuer),
			&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{
				JwtAudience: jsii.Strings(props.JWTAudience...),
			})
	}
	adminAuthorizer := awsapigatewayv2authorizers.NewHttpIamAuthorizer()

	var routes []constructs.IDependable
	for _, r := range apiRoutes {
		authorizer := dataAuthorizer
		if r.Admin {
			authorizer = adminAuthorizer
		}
		methods := r.Methods
		for _, route := range *s.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.Path),
			Methods:     &methods,
			Integration: integrations[r.Function],
			Authorizer:  authorizer,
		}) {
			// The route's own resource: the construct would take the
			// integration and permissions made beside it too.
			routes = append(routes, route.Node().DefaultChild())
		}
	}
	s.throttleRoutes(props.RouteThrottles, routes)
}

// throttleRoutes gives single routes throttles of their own, in place of
// the stage's: the stage's route settings, keyed by route key. API
// Gateway refuses a stage whose settings name a route it does not have
// yet, so the stage then waits for the routes (a stage without route
// settings does not, as before).
func (s *UdsStack) throttleRoutes(throttles map[string]RouteThrottle, routes []constructs.IDependable) {
	if len(throttles) == 0 {
		return
	}
	settings := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(throttles)) {
		settings[key] = map[string]any{
			"ThrottlingRateLimit":  throttles[key].RateLimit,
			"ThrottlingBurstLimit": throttles[key].BurstLimit,
		}
	}
	s.Stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetRouteSettings(settings)
	s.Stage.Node().AddDependency(routes...)
}

// routeKeys are the API's route keys ("METHOD PATH", as the access log's
// routeKey shows them), in apiRoutes' order.
func routeKeys() []string {
	var keys []string
	for _, r := range apiRoutes {
		for _, m := range r.Methods {
			keys = append(keys, string(m)+" "+r.Path)
		}
	}
	return keys
}

// corsOptions allows origins to call the API from a browser, as
// sameorigin.API says (the local server answers its allowed origins the
// same); nil origins mean no CORS at all, which is right for
// server-to-server callers.
func corsOptions(origins []string) *awsapigatewayv2.CorsPreflightOptions {
	if len(origins) == 0 {
		return nil
	}
	return &awsapigatewayv2.CorsPreflightOptions{
		AllowOrigins:  jsii.Strings(origins...),
		AllowMethods:  corsMethods(sameorigin.API.Methods),
		AllowHeaders:  jsii.Strings(sameorigin.API.Headers...),
		ExposeHeaders: jsii.Strings(sameorigin.API.Expose...),
		MaxAge:        awscdk.Duration_Hours(jsii.Number(1)),
	}
}

// corsMethods is methods as API Gateway's CORS names them.
func corsMethods(methods []string) *[]awsapigatewayv2.CorsHttpMethod {
	out := make([]awsapigatewayv2.CorsHttpMethod, len(methods))
	for i, m := range methods {
		out[i] = awsapigatewayv2.CorsHttpMethod(m)
	}
	return &out
}

// servesDataRoutes reports whether a function serves data routes, which
// the rate limits of UDS apply to (the admin routes are not limited).
func servesDataRoutes(fn string) bool {
	for _, r := range apiRoutes {
		if r.Function == fn && !r.Admin {
			return true
		}
	}
	return false
}

// servesRoutes reports whether a function is behind the API (the expiry
// and changes functions are not: their events come from the tables'
// streams).
func servesRoutes(fn string) bool {
	for _, r := range apiRoutes {
		if r.Function == fn {
			return true
		}
	}
	return false
}
