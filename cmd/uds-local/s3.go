package main

import (
	"context"
	"fmt"
	"net"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/config"
)

// serveS3 serves the local S3 engine on cfg.S3ListenAddr with its objects
// under dir (in memory when empty), and points cfg at it (bucket uds-local), so that large values
// work locally with nothing set. When the environment names a bucket or an
// endpoint, the server uses those and nothing is served. stop ends the
// engine; it does nothing when none was started.
func serveS3(cfg *config.Config, dir string) (stop func(context.Context) error, err error) {
	if cfg.Bucket != "" || cfg.S3Endpoint != "" {
		return func(context.Context) error { return nil }, nil
	}
	ln, err := net.Listen("tcp", cfg.S3ListenAddr)
	if err != nil {
		return nil, listenError{config.EnvS3ListenAddr, fmt.Errorf("the local S3 engine: %w", err)}
	}
	if stop, err = blob.ServeLocal(ln, dir, config.LocalBucket, cfg.AllowedOrigins); err != nil {
		ln.Close()
		return nil, err
	}
	cfg.Bucket, cfg.S3Endpoint = config.LocalBucket, "http://"+reachable(ln.Addr())
	return stop, nil
}

// bucketAttr says in the startup line where large values go.
func bucketAttr(cfg config.Config) string {
	switch {
	case cfg.Bucket == "":
		return "none: large values are refused (" + config.EnvBucket + " names one)"
	case cfg.S3Endpoint == "":
		return "s3://" + cfg.Bucket
	}
	return "s3://" + cfg.Bucket + " at " + cfg.S3Endpoint
}

// listenError is an address that could not be listened on, with the
// variable that sets it, for the hint when it is in use.
type listenError struct {
	variable string
	err      error
}

func (e listenError) Error() string { return e.err.Error() }
func (e listenError) Unwrap() error { return e.err }
