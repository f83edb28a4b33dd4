package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/udsproject/uds/pkg/client"
)

// Namespace policies and the repair of a namespace's strays (admin).

func policy(e *env, args []string) error {
	p, err := e.c.Policy(e.ctx, args[0], args[1])
	if err != nil {
		return err
	}
	return e.writeJSON(p)
}

// setPolicy sets a namespace's whole policy (what a flag does not give is
// left at its default: no schema, no history, no indexes), or with --clear
// restores the defaults. A change into or out of private is announced
// first; the client waits until it settles and completes it, and this
// says so while it waits. A change of the indexes leaves a build, which
// this names with the command that does it.
func setPolicy(e *env, args []string) error {
	waiting := func(p client.Policy) {
		e.progress.note(fmt.Sprintf("the change to %s is announced; writes to %s wait until it completes at %s (in %s)",
			p.Pending.Access, args[1], p.Pending.SettlesAt.Format(time.RFC3339), time.Until(p.Pending.SettlesAt).Round(time.Second)))
	}
	versions, _ := strconv.Atoi(e.flag("history-versions"))
	days, _ := strconv.Atoi(e.flag("history-days"))
	if e.flag("clear") == "true" {
		if e.flag("access") != "" || e.flag("schema") != "" || versions != 0 || days != 0 || e.given("index") {
			return usageError("--clear takes no --access, --schema, --history-* or --index flag")
		}
		return e.c.DeletePolicy(e.ctx, args[0], args[1], waiting)
	}
	p := client.Policy{Access: e.flag("access"), Indexes: e.indexes()}
	if p.Access == "" {
		return usageError("--access is required: shared, private or owner-write (or --clear)")
	}
	switch {
	case days != 0 && versions == 0:
		return usageError("--history-days needs --history-versions: without history no version is kept to age")
	case versions != 0:
		// The bounds are the server's to check: it names the one passed.
		p.History = &client.HistoryPolicy{Versions: versions, Days: days}
	}
	if file := e.flag("schema"); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if !json.Valid(b) {
			return usageError("%s is not JSON", file)
		}
		p.Schema = b
	}
	out, err := e.c.SetPolicy(e.ctx, args[0], args[1], p, waiting)
	if err != nil {
		return err
	}
	if out.IndexBuild != nil {
		e.progress.note(fmt.Sprintf("%s; uds build-indexes %s %s runs the build to its end", describeBuild(out, time.Now()), args[0], args[1]))
	}
	return e.writeJSON(out)
}

func strays(e *env, args []string) error {
	n := 0
	for rec, err := range e.c.Strays(e.ctx, args[0], args[1]) {
		if err != nil {
			return err
		}
		if err := e.writeJSON(rec); err != nil {
			return err
		}
		n++
		e.progress.count("listed", "strays", n)
	}
	e.progress.final(fmt.Sprintf("listed %d strays", n))
	return nil
}

func removeStrays(e *env, args []string) error {
	e.progress.note("removing the namespace's strays (many take several requests)")
	n, err := e.c.RemoveStrays(e.ctx, args[0], args[1])
	if err != nil {
		return err
	}
	e.progress.final(fmt.Sprintf("removed %d strays", n))
	return nil
}
