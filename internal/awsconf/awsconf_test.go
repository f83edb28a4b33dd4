package awsconf_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/udsproject/uds/internal/awsconf"
)

func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		name, endpoint, region, keyID string
		wantRegion, wantKeyID         string
	}{
		{name: "an engine, nothing configured: placeholders", endpoint: "http://127.0.0.1:8000",
			wantRegion: "us-east-1", wantKeyID: "local"},
		{name: "an engine, credentials configured: those", endpoint: "http://127.0.0.1:8000", region: "eu-west-1", keyID: "AKIDEXAMPLE",
			wantRegion: "eu-west-1", wantKeyID: "AKIDEXAMPLE"},
		{name: "AWS, a region configured", region: "ap-southeast-2", keyID: "AKIDEXAMPLE",
			wantRegion: "ap-southeast-2", wantKeyID: "AKIDEXAMPLE"},
		{name: "AWS, no region configured", keyID: "AKIDEXAMPLE",
			wantRegion: "us-east-1", wantKeyID: "AKIDEXAMPLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Only the environment of the case: no profile files of the
			// machine's.
			none := filepath.Join(t.TempDir(), "none")
			t.Setenv("AWS_CONFIG_FILE", none)
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
			t.Setenv("AWS_PROFILE", "")
			t.Setenv("AWS_DEFAULT_REGION", "")
			t.Setenv("AWS_SESSION_TOKEN", "")
			t.Setenv("AWS_REGION", tc.region)
			t.Setenv("AWS_ACCESS_KEY_ID", tc.keyID)
			t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
			ctx := context.Background()
			cfg, err := awsconf.Load(ctx, tc.endpoint)
			if err != nil {
				t.Fatal(err)
			}
			creds, err := cfg.Credentials.Retrieve(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Region != tc.wantRegion || creds.AccessKeyID != tc.wantKeyID {
				t.Errorf("region %q, key %q; want %q, %q", cfg.Region, creds.AccessKeyID, tc.wantRegion, tc.wantKeyID)
			}
		})
	}
}
