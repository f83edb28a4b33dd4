# mk/infra.mk: the CDK app (infra/) and the CDK CLI.
#
# The root Makefile includes this file and runs from the repository root; the
# paths below are relative to it. The root Makefile defines build-zips, which
# writes build/<function>.zip for kv, list, admin, expiry and changes (one
# executable named bootstrap in each), the code the stack deploys.
#
# Targets:
#   cdk-install    install the npm packages pinned in package-lock.json
#                  (the CDK CLI, DynamoDB Local, Redocly), once per lock
#                  file change, through the root Makefile's
#                  node_modules/.package-lock.json
#   synth          write the CloudFormation template to cdk.out/, offline and
#                  without AWS credentials
#   cdk-diff       compare the stack with what is deployed
#   cdk-bootstrap  prepare an account and region for CDK deployments (once):
#                  the account and region of the credentials in the
#                  environment (AWS_REGION), without running the app
#   deploy         deploy the stack with the credentials in the environment
#   test-infra     run the CDK app's assertion tests
#   smoke          check a deployed stack end to end (cmd/uds-smoke):
#                  make smoke ENDPOINT=<ApiUrl output> [TOKEN=<JWT>]
#
# Configuration is passed to the app as CDK context through make variables,
# for synth, cdk-diff and deploy alike, e.g.
#   make deploy JWT_ISSUER=https://issuer.example.com/ JWT_AUDIENCE=web,mobile
# A variable left empty leaves the app's default in place. The data routes
# need JWT_ISSUER and JWT_AUDIENCE, or PUBLIC_DATA_ROUTES=true: without
# either synth, cdk-diff and deploy refuse before building anything.
#   STACK_NAME             stackName             stack name (UdsStack)
#   TABLE_DATA             tableData             table names (the seed's
#   TABLE_LIST             tableList             data_store, data_store_list,
#   TABLE_HISTORY          tableHistory          data_history, data_index,
#   TABLE_INDEX            tableIndex            data_usage, apps,
#   TABLE_USAGE            tableUsage            namespace_policies,
#   TABLE_APPS             tableApps             data_changes)
#   TABLE_NAMESPACES       tableNamespaces
#   TABLE_CHANGES          tableChanges
#   IMPORT_EXISTING_TABLES importExistingTables  true: use every existing
#                                                table (kept by an earlier
#                                                stack); a list such as
#                                                data,list,usage,apps: those
#                                                (data,list adopts a seed
#                                                deployment's tables; a
#                                                stack from before the
#                                                changes feed lists all
#                                                but changes)
#   BUCKET_NAME            bucketName            the bucket of large values
#                                                (stack name, lower case,
#                                                -values-<account>-<region>)
#   IMPORT_EXISTING_BUCKET importExistingBucket  true: use the existing bucket
#                                                of that name (kept by an
#                                                earlier stack); point its
#                                                event at the new expiry
#                                                function by hand
#   CREATED_CONTENT_APP    createdContentApp     the app seed 000's reserved
#                                                name hmh stands for (none)
#   KMS_KEY                kmsKey                create, or a KMS key's ARN:
#                                                tables, bucket, queues and
#                                                log groups under that key
#                                                (AWS's own keys)
#   JWT_ISSUER             jwtIssuer             with JWT_AUDIENCE (comma-
#   JWT_AUDIENCE           jwtAudience           separated): JWT authorizer on
#                                                the data routes
#   PUBLIC_DATA_ROUTES     publicDataRoutes      true: the data routes have no
#                                                authorizer (synth warns); not
#                                                with JWT_ISSUER/JWT_AUDIENCE
#   JWT_SUBJECT_CLAIM      jwtSubjectClaim       claim naming the caller (sub)
#   CURSOR_SECRET          cursorSecret          pagination cursor key (the
#                                                stack ID)
#   DEFAULT_LIMIT_BYTES    defaultLimitBytes     global per-user quota, 0 is
#   DEFAULT_LIMIT_ITEMS    defaultLimitItems     unlimited (0)
#   CORS_ORIGINS           corsOrigins           comma-separated browser
#                                                origins (none: no CORS)
#   THROTTLE_RATE_LIMIT    throttleRateLimit     stage throttling, requests
#   THROTTLE_BURST_LIMIT   throttleBurstLimit    per second and burst (100, 200)
#   LOG_LEVEL              logLevel              functions' log level: DEBUG,
#                                                INFO (a line per request),
#                                                WARN or ERROR (INFO)
#   DELETION_PROTECTION    deletionProtection    false: the tables the stack
#                                                creates may be deleted (true)
#   MAX_READ_REQUEST_UNITS maxReadRequestUnits   on-demand throughput cap of
#   MAX_WRITE_REQUEST_UNITS maxWriteRequestUnits each table and index, request
#                                                units per second (no cap)
#   RESERVED_CONCURRENCY   reservedConcurrency   concurrency reserved for, and
#                                                cap of, each API function
#                                                (none)
#   RATE_PER_CALLER        ratePerCaller         the deployment's rate limits
#   RATE_PER_APP           ratePerApp            of each caller of an app and
#                                                of each app, R/B: requests a
#                                                second and burst, where the
#                                                app sets none (none)
#   ROUTE_THROTTLES        routeThrottles        API Gateway throttles of
#                                                single routes, JSON:
#                                                {"<route key>": {"rateLimit":
#                                                n, "burstLimit": n}} (none)
#   RATE_LIMITED_ALARM     rateLimitedAlarm      requests refused 429 in 5
#                                                minutes that fire an alarm
#                                                (none)
#   ROUTE_METRICS          routeMetrics          true: the API functions also
#                                                publish per-route metrics,
#                                                a few custom metrics a route
#                                                (false: per function only)
#   CDK_DEPLOY_FLAGS       extra flags for cdk deploy, e.g. --require-approval never

CDK := node_modules/.bin/cdk

# The CDK CLI comes from the same npm install as DynamoDB Local. The root
# Makefile owns the rule for that install: its target is the stamp
# node_modules/.package-lock.json (npm rewrites it on every install, so it is
# newer than package-lock.json exactly when node_modules matches the lock),
# and its recipe runs npm ci. A second rule here would override that one.
NODE_MODULES_STAMP := node_modules/.package-lock.json

# Context variable = context key.
CDK_CONTEXT_VARS := \
	STACK_NAME=stackName \
	TABLE_DATA=tableData TABLE_LIST=tableList TABLE_USAGE=tableUsage TABLE_APPS=tableApps \
	TABLE_NAMESPACES=tableNamespaces TABLE_HISTORY=tableHistory TABLE_INDEX=tableIndex \
	TABLE_CHANGES=tableChanges \
	IMPORT_EXISTING_TABLES=importExistingTables \
	BUCKET_NAME=bucketName IMPORT_EXISTING_BUCKET=importExistingBucket \
	CREATED_CONTENT_APP=createdContentApp KMS_KEY=kmsKey \
	JWT_ISSUER=jwtIssuer JWT_AUDIENCE=jwtAudience JWT_SUBJECT_CLAIM=jwtSubjectClaim \
	CURSOR_SECRET=cursorSecret \
	DEFAULT_LIMIT_BYTES=defaultLimitBytes DEFAULT_LIMIT_ITEMS=defaultLimitItems \
	CORS_ORIGINS=corsOrigins \
	THROTTLE_RATE_LIMIT=throttleRateLimit THROTTLE_BURST_LIMIT=throttleBurstLimit \
	LOG_LEVEL=logLevel \
	PUBLIC_DATA_ROUTES=publicDataRoutes DELETION_PROTECTION=deletionProtection \
	MAX_READ_REQUEST_UNITS=maxReadRequestUnits MAX_WRITE_REQUEST_UNITS=maxWriteRequestUnits \
	RESERVED_CONCURRENCY=reservedConcurrency \
	RATE_PER_CALLER=ratePerCaller RATE_PER_APP=ratePerApp ROUTE_THROTTLES=routeThrottles \
	RATE_LIMITED_ALARM=rateLimitedAlarm ROUTE_METRICS=routeMetrics

cdk_var = $(word 1,$(subst =, ,$(1)))
cdk_key = $(word 2,$(subst =, ,$(1)))
CDK_CONTEXT = $(foreach p,$(CDK_CONTEXT_VARS),$(if $($(call cdk_var,$(p))),--context '$(call cdk_key,$(p))=$($(call cdk_var,$(p)))'))

# The CLI checks for new versions and sends telemetry unless told not to,
# and the notices and version reporting flags keep it from fetching notices
# and from adding a metadata resource to the template.
CDK_FLAGS := --no-notices --no-version-reporting
CDK_ENV := CDK_DISABLE_VERSION_CHECK=1 CDK_DISABLE_CLI_TELEMETRY=1

# The Go app runs the CDK through jsii, a node child process that prints a
# banner on every run under a Node it no longer supports. For Node 20 (past
# its end of life; the machines run Debian's 20.x) scripts/check-node.sh
# says the same plainly when node_modules is installed, so the banner is
# silenced for Node 20 alone. Under any other Node jsii's banners stay:
# nothing else in the project says what they say.
JSII_ENV := JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20

# synth needs no AWS account: the stack names no account or region and does
# no lookups. Before running the app the CLI still asks the AWS SDK for a
# default account, which with no credentials configured would probe the EC2
# instance metadata address; that probe is switched off here.
SYNTH_ENV := AWS_EC2_METADATA_DISABLED=true

.PHONY: cdk-install synth cdk-diff cdk-bootstrap deploy test-infra smoke

# The app refuses a stack whose data routes have no authorizer, but only
# once build-zips, the npm install and the app's own build have run (some
# minutes on a fresh clone). So make refuses first, with the app's words,
# when a goal runs the app and neither a make variable nor a CDK context
# file (cdk.json, cdk.context.json, ~/.cdk.json) makes the choice; the app
# still judges the choice made (infra/props.go Validate).
# infra/make_test.go checks that the words are the app's.
ifneq ($(filter synth cdk-diff deploy,$(MAKECMDGOALS)),)
ifeq ($(JWT_ISSUER)$(JWT_AUDIENCE)$(PUBLIC_DATA_ROUTES)$(shell grep -ls '"jwtIssuer"\|"jwtAudience"\|"publicDataRoutes"' cdk.json cdk.context.json $(HOME)/.cdk.json 2>/dev/null),)
$(error the data routes have no authorizer: set context jwtIssuer and jwtAudience (make JWT_ISSUER=... JWT_AUDIENCE=...) to put a JWT authorizer on them, or publicDataRoutes=true (make PUBLIC_DATA_ROUTES=true) to serve them to anyone who has the URL)
endif
endif

cdk-install: $(NODE_MODULES_STAMP)

synth: build-zips cdk-install
	$(CDK_ENV) $(SYNTH_ENV) $(JSII_ENV) $(CDK) synth --quiet --no-lookups $(CDK_FLAGS) $(CDK_CONTEXT)
	@echo "wrote cdk.out/$(or $(STACK_NAME),UdsStack).template.json"

cdk-diff: build-zips cdk-install
	$(CDK_ENV) $(JSII_ENV) $(CDK) diff $(CDK_FLAGS) $(CDK_CONTEXT)

# Bootstrapping concerns the account and region, not this stack, so the
# app is not run (it would want the stack's configuration first). With
# no app, the CLI takes the environment from its argument, whose
# unknown-account and unknown-region are the credentials' account and
# the configured region.
cdk-bootstrap: cdk-install
	$(CDK_ENV) $(CDK) bootstrap $(CDK_FLAGS) --app '' aws://unknown-account/unknown-region

deploy: build-zips cdk-install
	$(CDK_ENV) $(JSII_ENV) $(CDK) deploy $(CDK_FLAGS) $(CDK_CONTEXT) $(CDK_DEPLOY_FLAGS)

test-infra:
	cd infra && $(JSII_ENV) go test ./...

# A few calls through the Go client against any endpoint: create, read,
# update with If-Match, a list page, the caller's quota, deletes; one line
# per step, exit 1 at the first unexpected answer. TOKEN (or UDS_TOKEN in
# the environment) reaches the program in its environment, so the recipe
# does not print it. SMOKE_FLAGS passes more flags (-app, -timeout).
smoke: export UDS_TOKEN := $(or $(TOKEN),$(UDS_TOKEN))
smoke:
	@if [[ -z "$(ENDPOINT)" ]]; then echo 'make smoke: give ENDPOINT=<the stack'"'"'s ApiUrl output> [TOKEN=<a JWT>]' >&2; exit 2; fi
	go run ./cmd/uds-smoke -endpoint '$(ENDPOINT)' $(SMOKE_FLAGS)
