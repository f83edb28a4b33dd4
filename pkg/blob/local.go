package blob

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// ServeLocal serves an S3-compatible engine (gofakes3) on ln for the local
// server and the tests, with the named bucket created if it is missing.
// With a dir every object is a file under it, so values outlive restarts;
// without one they are kept in memory, as DynamoDB Local keeps its tables
// without a --db-path. stop shuts it down, letting requests in hand finish
// until ctx ends. Until ServeLocal succeeds, ln is the caller's to close.
//
// The engine takes any signature and ignores a POST's policy: see
// TestLocalEngineDoesNotEnforcePolicy.
//
// The files are gofakes3's s3afero backend rather than records of one
// bbolt database (s3bolt): s3afero streams an upload to its file, where
// s3bolt reads every object whole into memory and bbolt holds no value
// past 2 GB, short of the 5 GB a large value may have. A person can also
// see the files.
func ServeLocal(ln net.Listener, dir, bucket string) (stop func(ctx context.Context) error, err error) {
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
	srv := &http.Server{Handler: gofakes3.New(backend).Server(), ReadHeaderTimeout: 10 * time.Second}
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
