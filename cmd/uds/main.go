// Command uds is the UDS command line: items (JSON, or a file's bytes), lists, quotas, rate limits and admin calls,
// and an app's export and import, over the Go client (pkg/client).
//
//	uds [--endpoint URL] [--token JWT | --sigv4] COMMAND [ARGS]
//
// Run `uds --help` for the commands, `uds COMMAND --help` for one.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
