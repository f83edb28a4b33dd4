package blob

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/udsproject/uds/internal/sameorigin"
)

// ServeLocal serves an S3-compatible engine (gofakes3) on ln for the local
// server and the tests, with the named bucket created if it is missing.
// With a dir every object is a file under it, so values outlive restarts;
// without one they are kept in memory, as DynamoDB Local keeps its tables
// without a --db-path. stop shuts it down, letting requests in hand finish
// until ctx ends. Until ServeLocal succeeds, ln is the caller's to close.
//
// The engine refuses what S3 would (localEngine): requests not signed
// with the credentials UDS's clients sign with against an engine, expired
// presigned GETs and forms, forms outside their policy; and it answers
// only its own Host and the pages of the allowed origins (as
// config.ParseOrigins spells them; none: no page's).
//
// The files are gofakes3's s3afero backend rather than records of one
// bbolt database (s3bolt): s3afero streams an upload to its file, where
// s3bolt reads every object whole into memory and bbolt holds no value
// past 2 GB, short of the 5 GB a large value may have. A person can also
// see the files.
func ServeLocal(ln net.Listener, dir, bucket string, allowedOrigins []string) (stop func(ctx context.Context) error, err error) {
	backend, err := localBackend(dir)
	if err != nil {
		return nil, err
	}
	exists, err := backend.BucketExists(bucket)
	if err == nil && !exists {
		err = backend.CreateBucket(bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("creating bucket %s: %w", bucket, err)
	}
	addr := ln.Addr().String()
	creds, err := engineCredentials("http://" + addr)
	if err != nil {
		return nil, err
	}
	engine := &localEngine{
		s3:      gofakes3.New(backend).Server(),
		backend: backend,
		guard:   sameorigin.New(addr, "", allowedOrigins),
		creds:   creds,
		signer:  v4.NewSigner(),
		now:     time.Now,
	}
	srv := &http.Server{Handler: engine, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	return func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		if servedErr := <-served; !errors.Is(servedErr, http.ErrServerClosed) {
			return servedErr
		}
		return err
	}, nil
}

// localBackend keeps the objects under dir, or in memory without one.
func localBackend(dir string) (gofakes3.Backend, error) {
	if dir == "" {
		return s3mem.New(), nil
	}
	fs, err := s3afero.FsPath(dir, s3afero.FsPathCreateAll)
	if err != nil {
		return nil, fmt.Errorf("the local S3 engine's directory: %w", err)
	}
	backend, err := s3afero.MultiBucket(fs)
	if err != nil {
		return nil, fmt.Errorf("the local S3 engine under %s: %w", dir, err)
	}
	return backend, nil
}
