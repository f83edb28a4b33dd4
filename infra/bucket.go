package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
)

// envBucket is the variable that names the bucket for large values to
// the functions; unset, they refuse large values as not configured.
const envBucket = "UDS_BUCKET"

// The bucket's layout as the functions use it: an upload lands at
// uploads/{applicationUuid}/{uploadId} with the pending tag of its
// presigned POST, and its commit copies it, untagged, to
// values/{applicationUuid}/{uploadId}, which no POST names.
const (
	uploadsPrefix   = "uploads/"
	valuesPrefix    = "values/"
	pendingTagKey   = "uds-pending"
	pendingTagValue = "1"
)

// abandonedUploadDays is how long an upload that was never committed
// stays in the bucket. Its presigned POST is valid for 15 minutes and a
// commit follows the upload at once (from the client, or from the
// bucket's event), so two days only leave room for retries and for
// someone to look at a failure.
const abandonedUploadDays = 2

// incompleteMultipartDays is how long the parts of a multipart upload
// nobody completed are kept. UDS makes no multipart uploads (a presigned
// POST is one request), so any are stray and their parts only cost.
const incompleteMultipartDays = 1

// Bucket names: S3 takes 3 to 63 lower-case letters, digits, dots and
// hyphens, beginning and ending with a letter or digit. The default name
// ends in the account ID (12 digits) and the region, whose longest codes
// (ap-southeast-5, eusc-de-east-1) have 14 characters.
const (
	maxBucketNameLength = 63
	accountIDLength     = 12
	maxRegionLength     = 14
)

var bucketNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// defaultBucketPrefix is the default bucket name before the account and
// region: the stack's name in lower case (a stack name is letters, digits
// and hyphens) and "-values-".
func defaultBucketPrefix(stackName string) string {
	return strings.ToLower(stackName) + "-values-"
}

// validBucketName reports a bucket name S3 would refuse: a configured
// one, or the default one when the stack's name leaves too little room
// for the account and the region.
func (p *UdsStackProps) validBucketName() []error {
	if p.BucketName != "" {
		if !bucketNamePattern.MatchString(p.BucketName) || strings.Contains(p.BucketName, "..") {
			return []error{fmt.Errorf("context %s: %q is not a bucket name: want 3 to 63 lower-case letters, digits, dots and hyphens, "+
				"beginning and ending with a letter or digit", ctxBucketName, p.BucketName)}
		}
		return nil
	}
	if p.StackName == nil {
		return nil
	}
	prefix := defaultBucketPrefix(*p.StackName)
	if len(prefix)+accountIDLength+1+maxRegionLength > maxBucketNameLength {
		return []error{fmt.Errorf("the default bucket name %s<account>-<region> may be longer than the %d characters S3 allows: "+
			"set context %s", prefix, maxBucketNameLength, ctxBucketName)}
	}
	return nil
}

// bucketNameOf is the bucket's physical name: the configured one, or
// the stack's name in lower case, "-values-", the account and the region
// (udsstack-values-123456789012-eu-west-1), unique to the stack wherever
// it is deployed.
//
// The name is set rather than left to CloudFormation because the bucket's
// notification of the expiry function needs the function's permission to
// exist first, and that permission names the bucket: with a generated
// name it could only name it by referring to the bucket, a circular
// dependency. For the same reason the grants and UDS_BUCKET name the
// bucket by this name and never refer to the bucket resource: the
// functions depend on their roles' policies, and the bucket on the expiry
// function. (Synth refuses a template with a circular dependency, so a
// reference to the bucket that crept in would fail the tests.)
func bucketNameOf(stack awscdk.Stack, props *UdsStackProps) *string {
	if props.BucketName != "" {
		return jsii.String(props.BucketName)
	}
	return awscdk.Fn_Join(jsii.String(""), jsii.Strings(
		defaultBucketPrefix(*stack.StackName()), *awscdk.Aws_ACCOUNT_ID(), "-", *awscdk.Aws_REGION()))
}

// importedBucketWarning is what synth says about a stack that adopts a
// bucket: the stack configures nothing on a bucket it does not own.
const importedBucketWarning = "The bucket for large values is imported (importExistingBucket=true): the stack leaves its " +
	"configuration alone. A bucket an earlier UDS stack made keeps that stack's lifecycle rules and CORS, but its " +
	"ObjectCreated notification still names that stack's expiry function. Point the notification (prefix uploads/, " +
	"s3:ObjectCreated:*) at this stack's expiry function, which S3 may already invoke; until then uploads are " +
	"committed only when clients call POST {item}?commit."

// defineBucket creates the bucket for large values, or references an
// existing one, and lets the functions and S3 use it as objectAccess and
// the expiry function's notification need.
//
// The bucket is private (all public access blocked, owner-enforced object
// ownership so that no ACL grants anything), encrypted with S3-managed
// keys (the tables use AWS-owned keys; no key of the stack's own to
// manage), reachable over TLS only, and unversioned: UDS keeps versions in
// its history table, and an overwritten or deleted upload must be gone,
// not kept as a noncurrent version that costs storage nobody accounts for.
// Like the tables it is retained when the stack is deleted or the
// resource replaced, and a later stack can adopt it (importExistingBucket).
func (s *UdsStack) defineBucket(props *UdsStackProps) {
	expiry := s.Functions[fnExpiry]

	// S3 checks that it may invoke the function when the notification is
	// set, so the permission comes before the bucket. It is made for an
	// imported bucket too, so that pointing that bucket's notification at
	// this stack's function is all there is to do.
	permission := awslambda.NewCfnPermission(s.Stack, jsii.String("BucketUploadsPermission"), &awslambda.CfnPermissionProps{
		Action:        jsii.String("lambda:InvokeFunction"),
		FunctionName:  expiry.FunctionArn(),
		Principal:     jsii.String("s3.amazonaws.com"),
		SourceArn:     s.bucketArn,
		SourceAccount: awscdk.Aws_ACCOUNT_ID(),
	})

	if props.ImportBucket {
		s.Bucket = awss3.Bucket_FromBucketName(s.Stack, jsii.String("Bucket"), s.BucketName)
		awscdk.Annotations_Of(s.Bucket).AddWarningV2(jsii.String("uds:importedBucket"), jsii.String(importedBucketWarning))
	} else {
		bucket := awss3.NewBucket(s.Stack, jsii.String("Bucket"), s.bucketUnderKey(&awss3.BucketProps{
			BucketName:        s.BucketName,
			BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
			Encryption:        awss3.BucketEncryption_S3_MANAGED,
			EnforceSSL:        jsii.Bool(true),
			ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
			Versioned:         jsii.Bool(false),
			RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
			Cors:              bucketCORS(props.CORSOrigins),
			LifecycleRules: &[]*awss3.LifecycleRule{
				// An upload is tagged pending until committed; one
				// still pending after abandonedUploadDays was
				// abandoned (its quota reservation has lapsed long
				// before). A committed upload has no tag and stays.
				{
					Id:         jsii.String("AbandonedUploads"),
					Prefix:     jsii.String(uploadsPrefix),
					TagFilters: &map[string]any{pendingTagKey: pendingTagValue},
					Expiration: awscdk.Duration_Days(jsii.Number(abandonedUploadDays)),
				},
				// S3 refuses a rule that aborts multipart uploads
				// and filters on tags, hence a rule of its own.
				{
					Id:                                  jsii.String("IncompleteMultipartUploads"),
					AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(incompleteMultipartDays)),
				},
			},
		}))
		// Every new upload invokes the expiry function, which commits
		// it as POST {item}?commit would: a client that uploads and
		// never calls commit still gets its value stored. The
		// notification is the bucket's own property, not the CDK's
		// custom resource, which would add a function of its own with
		// a managed policy and a grant on every bucket.
		cfn := bucket.Node().DefaultChild().(awss3.CfnBucket)
		cfn.SetNotificationConfiguration(&awss3.CfnBucket_NotificationConfigurationProperty{
			LambdaConfigurations: []any{&awss3.CfnBucket_LambdaConfigurationProperty{
				Event:    jsii.String("s3:ObjectCreated:*"),
				Function: expiry.FunctionArn(),
				Filter: &awss3.CfnBucket_NotificationFilterProperty{
					S3Key: &awss3.CfnBucket_S3KeyFilterProperty{
						Rules: []any{&awss3.CfnBucket_FilterRuleProperty{Name: jsii.String("prefix"), Value: jsii.String(uploadsPrefix)}},
					},
				},
			}},
		})
		bucket.Node().AddDependency(permission)
		s.Bucket = bucket
	}

	for _, f := range functionSpecs {
		access := objectAccess[f.Name]
		if len(access) == 0 {
			continue
		}
		role := s.Roles[f.Name]
		// In a fixed order, so the template is stable from one synth
		// to the next.
		for _, prefix := range slices.Sorted(maps.Keys(access)) {
			objects := awscdk.Fn_Join(jsii.String(""), jsii.Strings(*s.bucketArn, "/"+prefix+"*"))
			role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings(access[prefix]...),
				Resources: jsii.Strings(*objects),
			}))
		}
		// Without ListBucket S3 answers a read of a missing object 403
		// rather than 404, and the functions could not tell an upload
		// that never arrived (or was discarded) from a refusal. It
		// lists keys only, which are upload IDs.
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:ListBucket"),
			Resources: jsii.Strings(*s.bucketArn),
		}))
	}

	awscdk.NewCfnOutput(s.Stack, jsii.String("BucketName"), &awscdk.CfnOutputProps{
		Description: jsii.String("Name of the bucket for large values (" + envBucket + ")"),
		Value:       s.BucketName,
	})
}

// bucketCORS lets the API's browser origins upload with the presigned
// POST and read what the API redirects them to; no origins mean no CORS,
// as for the API.
//
// Reads allow any origin. A browser that follows the API's redirect to a
// presigned GET sends the bucket "Origin: null" (a cross-origin request
// redirected to a third origin is tainted), which no list of origins
// matches. Allowing any origin gives nobody anything: the bucket is
// private, every read needs a presigned URL, and S3 takes no cookies that
// a page could ride on.
func bucketCORS(origins []string) *[]*awss3.CorsRule {
	if len(origins) == 0 {
		return nil
	}
	maxAge := jsii.Number(3600)
	return &[]*awss3.CorsRule{
		{
			Id:             jsii.String("Uploads"),
			AllowedMethods: &[]awss3.HttpMethods{awss3.HttpMethods_POST},
			AllowedOrigins: jsii.Strings(origins...),
			ExposedHeaders: jsii.Strings("ETag", "Location"),
			MaxAge:         maxAge,
		},
		{
			Id:             jsii.String("Reads"),
			AllowedMethods: &[]awss3.HttpMethods{awss3.HttpMethods_GET, awss3.HttpMethods_HEAD},
			AllowedOrigins: jsii.Strings("*"),
			// The headers of the request the API redirected, which a
			// script may have set for the API.
			AllowedHeaders: jsii.Strings("Range", "If-Match", "If-None-Match"),
			ExposedHeaders: jsii.Strings("ETag", "Content-Range", "Accept-Ranges"),
			MaxAge:         maxAge,
		},
	}
}
