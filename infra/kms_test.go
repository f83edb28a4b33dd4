package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/schema"
)

// TestKMSKey synthesizes the stack with its own key, created and imported,
// and without one: with a key, every table, the bucket, every queue and
// every log group is encrypted under it and every function's role may
// encrypt and decrypt with it; without one, nothing names a key and no
// role may use KMS. A created key rotates, is retained and lets CloudWatch
// Logs use it for the account's log groups only.
func TestKMSKey(t *testing.T) {
	const imported = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	for _, tc := range []struct {
		name, kmsKey string
		// key is the key's ARN as the template renders it; "" for none.
		// A created key's is found in the template.
		key string
	}{
		{"AWS's own keys", "", ""},
		{"a key the stack creates", kmsKeyCreate, "the created key's"},
		{"an imported key", imported, imported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := public()
			if tc.kmsKey != "" {
				ctx[ctxKMSKey] = tc.kmsKey
			}
			s := synth(t, ctx)
			keys := s.ofType("AWS::KMS::Key")
			if created := tc.kmsKey == kmsKeyCreate; created != (len(keys) == 1) || len(keys) > 1 {
				t.Fatalf("KMS keys in the template: %v", keys)
			}
			if len(keys) == 1 {
				checkCreatedKey(t, s.resources[keys[0]])
				tc.key = "${" + keys[0] + ".Arn}"
			}
			tables := s.ofType("AWS::DynamoDB::Table")
			if len(tables) != len(schema.Tables)+1 {
				t.Fatalf("%d tables, want %d", len(tables), len(schema.Tables)+1)
			}
			for _, id := range tables {
				sse, _ := s.resources[id].Properties["SSESpecification"].(map[string]any)
				if tc.key == "" {
					if sse != nil {
						t.Errorf("table %s: SSESpecification %v, want DynamoDB's default", id, sse)
					}
					continue
				}
				if sse["SSEEnabled"] != true || sse["SSEType"] != "KMS" || flatten(sse["KMSMasterKeyId"]) != tc.key {
					t.Errorf("table %s: SSESpecification %v, want KMS under %s", id, sse, tc.key)
				}
			}
			for _, id := range s.ofType("AWS::S3::Bucket") {
				rule := asList(s.resources[id].Properties["BucketEncryption"].(map[string]any)["ServerSideEncryptionConfiguration"])[0].(map[string]any)
				byDefault := rule["ServerSideEncryptionByDefault"].(map[string]any)
				if tc.key == "" {
					checkEqual(t, "bucket encryption", byDefault, map[string]any{"SSEAlgorithm": "AES256"})
					continue
				}
				if byDefault["SSEAlgorithm"] != "aws:kms" || flatten(byDefault["KMSMasterKeyID"]) != tc.key || rule["BucketKeyEnabled"] != true {
					t.Errorf("bucket encryption %v, want aws:kms under %s with a bucket key", rule, tc.key)
				}
			}
			for _, kind := range []struct{ typ, property string }{{"AWS::SQS::Queue", "KmsMasterKeyId"}, {"AWS::Logs::LogGroup", "KmsKeyId"}} {
				ids := s.ofType(kind.typ)
				if len(ids) == 0 {
					t.Fatalf("no %s", kind.typ)
				}
				for _, id := range ids {
					got := ""
					if v, ok := s.resources[id].Properties[kind.property]; ok {
						got = flatten(v)
					}
					if got != tc.key {
						t.Errorf("%s %s: %s %q, want %q", kind.typ, id, kind.property, got, tc.key)
					}
				}
			}
			for _, f := range functionSpecs {
				var kms []map[string]any
				for _, st := range s.statements(t, f.Name) {
					if slices.ContainsFunc(asStrings(st["Action"]), func(a string) bool { return strings.HasPrefix(a, "kms:") }) {
						kms = append(kms, st)
					}
				}
				switch {
				case tc.key == "" && len(kms) > 0:
					t.Errorf("%s may use KMS without a key: %v", f.Name, kms)
				case tc.key != "" && (len(kms) != 1 || !slices.Equal(asStrings(kms[0]["Resource"]), []string{tc.key}) ||
					!containsAll(asStrings(kms[0]["Action"]), "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*")):
					t.Errorf("%s's KMS statements %v, want encrypt and decrypt with %s", f.Name, kms, tc.key)
				}
			}
		})
	}
}

// checkCreatedKey checks a key the stack creates: it rotates, outlives
// the stack, and CloudWatch Logs may use it for this account's log groups
// in the stack's region only.
func checkCreatedKey(t *testing.T, r resource) {
	t.Helper()
	if r.Properties["EnableKeyRotation"] != true || r.DeletionPolicy != "Retain" {
		t.Errorf("the key: rotation %v, deletion policy %q", r.Properties["EnableKeyRotation"], r.DeletionPolicy)
	}
	var logs map[string]any
	for _, st := range asList(r.Properties["KeyPolicy"].(map[string]any)["Statement"]) {
		if st := st.(map[string]any); st["Sid"] == "CloudWatchLogsEncryptsTheLogGroups" {
			logs = st
		}
	}
	if logs == nil {
		t.Fatal("the key's policy does not let CloudWatch Logs use it")
	}
	principal := flatten(logs["Principal"].(map[string]any)["Service"])
	condition := flatten(logs["Condition"].(map[string]any)["ArnLike"].(map[string]any)["kms:EncryptionContext:aws:logs:arn"])
	if principal != "logs.${AWS::Region}.amazonaws.com" || condition != "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:*" {
		t.Errorf("CloudWatch Logs' use of the key: principal %s, condition %s", principal, condition)
	}
}

func containsAll(got []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}
