package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/udsproject/uds/pkg/client"
)

// A namespace's changes feed (docs/changes.md), written as NDJSON: read up
// to date once, or followed until Ctrl-C.

const changesLong = `Each entry is one line of JSON, in the order to apply them: an item as uds get writes it
(without its ETag), or the tombstone of an item that is gone, {"applicationUuid",
"namespace", "id", "sortKey", "version", "updatedDate", "deleted": true}. Without --cursor
the feed starts with the namespace's items as they are, then every change after; a replica
that applies every line in order (an item replaces what it holds under its key, a tombstone
removes the key) holds the namespace's items. A write shows in the feed some seconds after
it is made (the stream's delay and 2 s; docs/changes.md).

When the command ends, its last line on standard error is "cursor CURSOR": give it as
--cursor to read on from there. --follow reads on until Ctrl-C, asking again after 1 s
while nothing changes, then after twice as long each time up to 30 s, and after 1 s again
once something changed. A cursor the feed no longer continues (older than 30 days, or
taken before the namespace changed into or out of private) fails with 410: read again
from the beginning into an empty replica. With --follow the command does that itself: it
says so on standard error and writes {"resync": true} on standard output before the
namespace's items, where a replica must be emptied.`

func changesFlags(fs *flag.FlagSet) {
	fs.String("cursor", "", "read on from this cursor, the last one a read of the feed gave (default: from the beginning)")
	fs.Int("limit", 0, "entries per request, 1..1000 (default: the server's 100)")
	fs.Bool("follow", false, "read on as changes come, until Ctrl-C")
}

// waits are the waits between reads of a followed feed: first after a
// read that brought changes, doubling while none come, up to most.
type waits struct{ first, most time.Duration }

// followWaits are --follow's waits; a variable so that the tests follow a
// feed in less time.
var followWaits = waits{first: time.Second, most: 30 * time.Second}

// next is the wait before the next read, after a wait of last (0 before
// the first) and a read that brought changes or not.
func (w waits) next(last time.Duration, changed bool) time.Duration {
	if changed || last == 0 {
		return w.first
	}
	return min(2*last, w.most)
}

func changes(e *env, args []string) error {
	app, namespace := args[0], args[1]
	limit, err := e.limit()
	if err != nil {
		return err
	}
	follow := e.flag("follow") == "true"
	cursor := e.flag("cursor")
	// The cursor reached is told however the command ends, so that a
	// reader stopped by Ctrl-C or a failure reads on from there.
	defer func() {
		if cursor != "" {
			fmt.Fprintf(e.stderr, "cursor %s\n", cursor)
		}
	}()
	var wait time.Duration
	for {
		changed, err := readChanges(e, app, namespace, limit, &cursor)
		switch {
		case errors.Is(err, client.ErrCursorExpired) && follow:
			fmt.Fprintf(e.stderr, "uds changes: %v\nuds changes: reading the feed again from the beginning: a replica must be emptied\n", err)
			if err := e.writeJSON(map[string]bool{"resync": true}); err != nil {
				return err
			}
			cursor, wait = "", 0
			continue
		case errors.Is(err, client.ErrCursorExpired):
			// The cursor is of no use any more: it is not told.
			cursor = ""
			return fmt.Errorf("%w (read it again from the beginning, without --cursor, into an empty replica)", err)
		case follow && e.ctx.Err() != nil:
			// Ctrl-C is how a followed feed ends: the lines written so
			// far and the cursor stand.
			return nil
		case err != nil || !follow:
			return err
		}
		wait = followWaits.next(wait, changed)
		select {
		case <-e.ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// readChanges writes the entries of the feed's pages from *cursor until
// one is up to date, moving *cursor past each page written, and reports
// whether any page held an entry.
func readChanges(e *env, app, namespace string, limit int, cursor *string) (bool, error) {
	changed := false
	for p, err := range e.c.Changes(e.ctx, app, namespace, *cursor, limit) {
		if err != nil {
			return changed, err
		}
		for _, ch := range p.Changes {
			if err := e.writeJSON(ch); err != nil {
				return changed, err
			}
		}
		changed = changed || len(p.Changes) > 0
		*cursor = p.Cursor
	}
	return changed, nil
}
