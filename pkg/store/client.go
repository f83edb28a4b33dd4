package store

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// NewClient builds a DynamoDB client from the standard AWS configuration
// chain. A non-empty endpoint points it at DynamoDB Local or another
// compatible engine; such engines accept any credentials, so placeholders
// are used when the environment has none. optFns adjust the client's
// options last (benchmarks replace its HTTP transport).
func NewClient(ctx context.Context, endpoint string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		opts = append(opts, awsconfig.WithRegion("us-east-1"))
	}
	if endpoint != "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			// DynamoDB Local's CRC32 response header does not always
			// match its (re-encoded) body; the SDK would only warn.
			o.DisableValidateResponseChecksum = true
		}
	}}, optFns...)...), nil
}
