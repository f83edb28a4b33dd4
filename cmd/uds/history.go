package main

import (
	"fmt"
	"strconv"

	"github.com/udsproject/uds/pkg/client"
)

// An item's version history: its versions listed, one restored, the kept
// ones dropped (get --version reads one).

// version reads the command's --version. The API judges the number (an
// imported item may be at version 0; a negative one is a 400).
func (e *env) version() int64 {
	v, _ := strconv.ParseInt(e.flag("version"), 10, 64)
	return v
}

func history(e *env, args []string) error { return writeEach(e, e.c.History(e.ctx, key(args))) }

func restore(e *env, args []string) error {
	if !e.given("version") {
		return usageError("--version is required: the version to restore (uds history lists them)")
	}
	var opts []client.CallOption
	if tag := e.flag("if-match"); tag != "" {
		opts = append(opts, client.IfMatch(tag))
	}
	it, err := e.c.Restore(e.ctx, key(args), e.version(), opts...)
	if err != nil {
		return err
	}
	return e.writeJSON(it)
}

func removeHistory(e *env, args []string) error {
	n, err := e.c.DropHistory(e.ctx, key(args))
	if err != nil {
		return err
	}
	e.progress.final(fmt.Sprintf("removed %d versions", n))
	return nil
}
