package main

// The domain package goes by another name here: this package's tests call
// the command line they run uds.
import domain "github.com/udsproject/uds/pkg/uds"

// An app's quota mode (admin): how its owners' usage is kept.

// quotaMode prints an app's quota mode alone on its line, after setting
// it when a mode is given: the server judges the mode, and names it when
// it refuses one.
func quotaMode(e *env, args []string) error {
	var mode domain.QuotaMode
	var err error
	if len(args) == 2 {
		mode, err = e.c.SetQuotaMode(e.ctx, args[0], domain.QuotaMode(args[1]))
	} else {
		mode, err = e.c.QuotaMode(e.ctx, args[0])
	}
	if err != nil {
		return err
	}
	_, err = e.stdout.Write([]byte(string(mode) + "\n"))
	return err
}
