package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
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

// setPolicy changes a namespace's policy: it reads the policy, changes
// the parts its flags give, and sets the whole (changedPolicy), so that a
// part no flag names, the binary rule among them, is restated rather than
// dropped. With --clear it restores the defaults. A change into or out of
// private is announced first; the client waits until it settles and
// completes it, and this says so while it waits. A change of the indexes
// leaves a build, which this names with the command that does it.
func setPolicy(e *env, args []string) error {
	waiting := func(p client.Policy) {
		e.progress.note(fmt.Sprintf("the change to %s is announced; writes to %s wait until it completes at %s (in %s)",
			p.Pending.Access, args[1], p.Pending.SettlesAt.Format(time.RFC3339), time.Until(p.Pending.SettlesAt).Round(time.Second)))
	}
	if e.flag("clear") == "true" {
		for _, f := range policyFlags {
			if e.given(f) {
				return usageError("--clear takes no other flag: it restores every part's default (--%s given)", f)
			}
		}
		return e.c.DeletePolicy(e.ctx, args[0], args[1], waiting)
	}
	if !slices.ContainsFunc(policyFlags, e.given) {
		return usageError("give the parts to change (--access, --schema, --history-*, --index, --binary-*, --drop), or --clear")
	}
	current, err := e.c.Policy(e.ctx, args[0], args[1])
	if err != nil {
		return err
	}
	p, err := changedPolicy(e, current)
	if err != nil {
		return err
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

// policyFlags are set-policy's flags that change a part of the policy.
var policyFlags = []string{"access", "schema", "history-versions", "history-days", "index", "binary-types", "binary-max-bytes", "drop"}

// policyParts are the parts of a policy --drop removes.
var policyParts = []string{"schema", "history", "indexes", "binary"}

// partFlags are the flags that set each part --drop removes.
var partFlags = map[string][]string{"schema": {"schema"}, "history": {"history-versions", "history-days"}, "indexes": {"index"}, "binary": {"binary-types", "binary-max-bytes"}}

// changedPolicy is current with the parts set-policy's flags give
// changed, and the others as they stand. While a change into or out of
// private is under way, the access must be given: restating the one in
// effect would cancel the change, and restating the pending one would
// complete it, and neither is for this command to choose.
func changedPolicy(e *env, current client.Policy) (client.Policy, error) {
	p := client.Policy{Access: current.Access, Schema: current.Schema, History: current.History, Indexes: current.Indexes, Binary: current.Binary}
	if access := e.flag("access"); access != "" {
		p.Access = access
	} else if current.Pending != nil {
		return p, usageError("a change of the namespace to %s is under way: give --access %s to complete it, or --access %s to cancel it",
			current.Pending.Access, current.Pending.Access, current.Access)
	}
	if current.Pending != nil && p.Access == current.Pending.Access {
		// Completing the change restates the schema it sets.
		p.Schema = current.Pending.Schema
	}
	drop := map[string]bool{}
	for _, part := range strings.Split(e.flag("drop"), ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		if !slices.Contains(policyParts, part) {
			return p, usageError("--drop takes %s, not %q", strings.Join(policyParts, ", "), part)
		}
		drop[part] = true
	}
	for _, part := range policyParts {
		for _, f := range partFlags[part] {
			if drop[part] && e.given(f) {
				return p, usageError("--drop %s and --%s contradict each other", part, f)
			}
		}
	}
	if drop["schema"] {
		p.Schema = nil
	}
	if drop["history"] {
		p.History = nil
	}
	if drop["indexes"] {
		p.Indexes = nil
	}
	if drop["binary"] {
		p.Binary = nil
	}
	if file := e.flag("schema"); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return p, err
		}
		if !json.Valid(b) {
			return p, fmt.Errorf("the schema read from %s is not JSON", file)
		}
		p.Schema = b
	}
	// The bounds of the numbers are the server's to check: it names the
	// one passed.
	if e.given("history-versions") {
		versions, _ := strconv.Atoi(e.flag("history-versions"))
		switch {
		case versions == 0:
			p.History = nil
		case p.History != nil:
			h := *p.History
			h.Versions = versions
			p.History = &h
		default:
			p.History = &client.HistoryPolicy{Versions: versions}
		}
	}
	if e.given("history-days") {
		if p.History == nil {
			return p, usageError("--history-days needs --history-versions: the namespace keeps no history, so no version is kept to age")
		}
		h := *p.History
		h.Days, _ = strconv.Atoi(e.flag("history-days"))
		p.History = &h
	}
	if e.given("index") {
		p.Indexes = e.indexes()
	}
	if e.given("binary-types") {
		r := client.BinaryRule{}
		for _, t := range strings.Split(e.flag("binary-types"), ",") {
			if t = strings.TrimSpace(t); t != "" {
				r.ContentTypes = append(r.ContentTypes, t)
			}
		}
		if p.Binary != nil {
			r.MaxBytes = p.Binary.MaxBytes
		}
		p.Binary = &r
	}
	if e.given("binary-max-bytes") {
		if p.Binary == nil {
			return p, usageError("--binary-max-bytes needs --binary-types: the namespace has no binary rule to cap")
		}
		r := *p.Binary
		r.MaxBytes, _ = strconv.ParseInt(e.flag("binary-max-bytes"), 10, 64)
		p.Binary = &r
	}
	return p, nil
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
