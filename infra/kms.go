package main

import (
	"fmt"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// A deployment that must hold its data under a key of its own (a school's
// policy, an auditor's) sets the context value kmsKey: "create" makes a
// customer-managed key in the stack, a key's ARN names one the account
// already has. Every table (and so its stream), the bucket, the queues and
// the log groups are then encrypted under it, and each function's role may
// use it. Without it, the stack keeps the default: AWS-owned keys for the
// tables and queues, S3-managed keys for the bucket, CloudWatch Logs' own
// encryption for the log groups, at no charge.

// kmsKeyCreate is the kmsKey value that makes the stack create its key.
const kmsKeyCreate = "create"

// kmsKeyArn is what an imported key's ARN looks like: a key, not an alias,
// since grants and key policies name keys.
var kmsKeyArn = regexp.MustCompile(`^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$`)

// validKMSKey checks the kmsKey context value.
func validKMSKey(v string) error {
	if v == "" || v == kmsKeyCreate || kmsKeyArn.MatchString(v) {
		return nil
	}
	return fmt.Errorf("context %s: want %q or the ARN of a KMS key (arn:aws:kms:REGION:ACCOUNT:key/ID), got %q", ctxKMSKey, kmsKeyCreate, v)
}

// defineKey is the key the props name: created, imported by its ARN, or nil
// for the default encryption.
//
// A created key rotates yearly and is retained with the stack, like the
// tables whose data it encrypts: deleting it would make them unreadable. Its
// policy is KMS's default for the account (IAM policies grant its use, as
// the functions' roles get below), and lets CloudWatch Logs use it for this
// account's log groups in the stack's region, which Logs needs to encrypt
// them. An imported key's policy is its owner's: it must allow the same
// (docs/deploying.md, "Your own KMS key").
func defineKey(stack awscdk.Stack, props *UdsStackProps) awskms.IKey {
	switch props.KMSKey {
	case "":
		return nil
	case kmsKeyCreate:
		key := awskms.NewKey(stack, jsii.String("DataKey"), &awskms.KeyProps{
			Description:       jsii.String("UDS: encrypts the tables and their streams, the bucket, the queues and the log groups"),
			EnableKeyRotation: jsii.Bool(true),
			RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		})
		region, account := *awscdk.Aws_REGION(), *awscdk.Aws_ACCOUNT_ID()
		key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("CloudWatchLogsEncryptsTheLogGroups"),
			Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("logs."+region+".amazonaws.com"), nil)},
			Actions:    jsii.Strings("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"),
			Resources:  jsii.Strings("*"),
			Conditions: &map[string]any{
				"ArnLike": map[string]any{"kms:EncryptionContext:aws:logs:arn": "arn:" + *awscdk.Aws_PARTITION() + ":logs:" + region + ":" + account + ":log-group:*"},
			},
		}), jsii.Bool(false))
		return key
	default:
		return awskms.Key_FromKeyArn(stack, jsii.String("DataKey"), jsii.String(props.KMSKey))
	}
}

// grantKey lets every function's role encrypt and decrypt with the key:
// they read and write the tables, their streams and the bucket (a
// presigned upload or download is the signing role's request), and send
// to and receive from the queues.
func (s *UdsStack) grantKey() {
	if s.Key == nil {
		return
	}
	for _, f := range functionSpecs {
		s.Key.GrantEncryptDecrypt(s.Roles[f.Name])
	}
}

// tableUnderKey puts a table the stack creates, and with it its stream, on
// the key, where there is one; without, DynamoDB's default (an AWS-owned
// key) stays, and the template says nothing of it.
func tableUnderKey(p *awsdynamodb.TableProps, key awskms.IKey) *awsdynamodb.TableProps {
	if key != nil {
		p.Encryption, p.EncryptionKey = awsdynamodb.TableEncryption_CUSTOMER_MANAGED, key
	}
	return p
}

// underKey puts a queue on the key, where there is one.
func (s *UdsStack) underKey(p *awssqs.QueueProps) *awssqs.QueueProps {
	if s.Key != nil {
		p.Encryption, p.EncryptionMasterKey = awssqs.QueueEncryption_KMS, s.Key
	}
	return p
}

// bucketUnderKey puts the bucket on the key, where there is one. S3 then
// asks KMS for a data key per bucket and period (a bucket key) rather
// than per object.
func (s *UdsStack) bucketUnderKey(p *awss3.BucketProps) *awss3.BucketProps {
	if s.Key != nil {
		p.Encryption, p.EncryptionKey, p.BucketKeyEnabled = awss3.BucketEncryption_KMS, s.Key, jsii.Bool(true)
	}
	return p
}
