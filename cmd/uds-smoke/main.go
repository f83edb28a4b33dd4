// Command uds-smoke checks a UDS deployment end to end through the Go client
// (pkg/client), as `make smoke ENDPOINT=... [TOKEN=...]` runs it:
//
//	uds-smoke -endpoint URL [-token JWT] [-app UUID] [-timeout 1m]
//
// It creates an item under a fresh random key, reads it back, updates it
// with If-Match, appends a list item and reads the list page, reads the
// caller's quota, deletes both items and checks that the item is gone. It
// prints one line per step and exits 1 at the first answer a working
// deployment would not give, after deleting what it created.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
