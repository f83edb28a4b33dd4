package main

import (
	"flag"
	"fmt"

	"github.com/udsproject/uds/pkg/client"
)

// A subscription to a namespace, a list or an item (docs/realtime.md),
// written as NDJSON as its changes come, until Ctrl-C.

const watchLong = `Each change is one line of JSON as it commits, as uds changes writes the feed's entries:
an item as uds get writes it (without its ETag), or the tombstone of an item that is gone.
With ID, one item or one list (with --sort-key, one list item); without it, the namespace.
Without --cursor the lines start with the changes made from now on; --cursor C goes on after
a cursor uds changes or uds watch gave, and --cursor '' starts from the beginning (the items
as they are, then every change). A lost connection is made again, and the changes go on
from the last one written, by themselves; an item may be written twice at the same version.

When the command ends, its last line on standard error is "cursor CURSOR": give it as
--cursor to go on from there. A cursor older than the feed keeps (30 days), or taken before
the namespace changed into or out of private, starts the changes again from the beginning:
the command says so on standard error and writes {"resync": true} on standard output before
the items, where a replica must be emptied.`

func watchFlags(fs *flag.FlagSet) {
	fs.String("sort-key", "", "with ID, watch this list item only")
	fs.String("cursor", "", "go on after this cursor, the last one uds watch or uds changes gave; '' for the beginning (default: from now on)")
}

func watch(e *env, args []string) error {
	req := client.SubscribeRequest{App: args[0], Namespace: args[1], SortKey: e.flag("sort-key")}
	if len(args) > 2 {
		req.Key = args[2]
	}
	if req.SortKey != "" && req.Key == "" {
		return usageError("--sort-key names a list item: give the list's ID too")
	}
	// The cursor reached is told however the command ends, so that a
	// watcher stopped by Ctrl-C or a failure goes on from there.
	cursor := e.flag("cursor")
	// A --cursor given empty is the beginning, as the protocol's "": the
	// flag's absence, not its value, means from now on.
	if e.given("cursor") {
		req.Cursor = &cursor
	}
	defer func() {
		if cursor != "" {
			fmt.Fprintf(e.stderr, "cursor %s\n", cursor)
		}
	}()
	for ch, err := range e.c.Subscribe(e.ctx, req) {
		switch {
		case err != nil && e.ctx.Err() != nil:
			// Ctrl-C is how a watch ends: the lines written so far and
			// the cursor stand.
			return nil
		case err != nil:
			return err
		case ch.Resync:
			cursor = ""
			fmt.Fprintln(e.stderr, "uds watch: the cursor no longer holds: reading the namespace again from the beginning: a replica must be emptied")
			if err := e.writeJSON(map[string]bool{"resync": true}); err != nil {
				return err
			}
			continue
		}
		if err := e.writeJSON(ch.Change); err != nil {
			return err
		}
		cursor = ch.Cursor
	}
	return nil
}
