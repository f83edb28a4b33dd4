package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/uds"
)

// TestServeS3: with nothing set the local server serves its own S3 engine
// and points the configuration at it; a bucket or an endpoint in the
// environment is used as it is.
func TestServeS3(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name       string
		cfg        config.Config
		wantServed bool
		wantAttr   string
		wantErr    error
	}{
		{name: "nothing set: the local engine and its bucket", cfg: config.Config{S3ListenAddr: "127.0.0.1:0"},
			wantServed: true, wantAttr: "s3://uds-local at http://127.0.0.1:"},
		{name: "a bucket on AWS", cfg: config.Config{Bucket: "uds-values", S3ListenAddr: "127.0.0.1:0"},
			wantAttr: "s3://uds-values"},
		{name: "an engine of one's own", cfg: config.Config{Bucket: "b", S3Endpoint: "http://127.0.0.1:4568", S3ListenAddr: "127.0.0.1:0"},
			wantAttr: "s3://b at http://127.0.0.1:4568"},
		{name: "an endpoint without a bucket: none", cfg: config.Config{S3Endpoint: "http://127.0.0.1:4568", S3ListenAddr: "127.0.0.1:0"},
			wantAttr: "none: large values are refused"},
		{name: "the address in use", cfg: config.Config{S3ListenAddr: taken.Addr().String()}, wantErr: syscall.EADDRINUSE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			stop, err := serveS3(&cfg, t.TempDir())
			if tc.wantErr != nil {
				var listen listenError
				if !errors.Is(err, tc.wantErr) || !errors.As(err, &listen) || listen.variable != config.EnvS3ListenAddr {
					t.Fatalf("error %v, want %v naming %s", err, tc.wantErr, config.EnvS3ListenAddr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			defer func() {
				if err := stop(ctx); err != nil {
					t.Errorf("stop: %v", err)
				}
			}()
			if attr := bucketAttr(cfg); !strings.HasPrefix(attr, tc.wantAttr) {
				t.Errorf("startup line's bucket %q, want %s...", attr, tc.wantAttr)
			}
			if !tc.wantServed {
				if cfg.Bucket != tc.cfg.Bucket || cfg.S3Endpoint != tc.cfg.S3Endpoint {
					t.Errorf("bucket and endpoint changed to %q, %q", cfg.Bucket, cfg.S3Endpoint)
				}
				return
			}
			// The engine takes an upload through the bucket the server
			// would make of the configuration.
			b, err := blob.FromConfig(ctx, cfg.Bucket, cfg.S3Endpoint)
			if err != nil {
				t.Fatal(err)
			}
			key := blob.UploadKey(uds.ObjectName("app", "0123456789abcdef0123456789abcdef"))
			up, err := b.PresignUpload(ctx, key, "image/gif", 3, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			blobtest.Post(t, up, []byte("GIF")).Body.Close()
			if obj, err := b.Head(ctx, key); err != nil || obj != (blob.Object{Size: 3, ContentType: "image/gif"}) {
				t.Errorf("Head: %+v, %v", obj, err)
			}
		})
	}
}
