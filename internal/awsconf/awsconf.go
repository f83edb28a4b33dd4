// Package awsconf loads the AWS configuration that UDS's clients (the
// DynamoDB one, the S3 one) start from, the same for both: on AWS the
// default chain as it is, and against a local engine no account needed.
package awsconf

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Load is the default AWS configuration chain, in us-east-1 where no
// region is configured. With an endpoint (a local or compatible engine,
// which accepts any credentials) it signs with placeholder credentials
// where the environment has none, so make run and the tests need no AWS
// account.
func Load(ctx context.Context, endpoint string) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		opts = append(opts, awsconfig.WithRegion("us-east-1"))
	}
	if endpoint != "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	return awsconfig.LoadDefaultConfig(ctx, opts...)
}
