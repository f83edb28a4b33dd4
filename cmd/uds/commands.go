package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/client"
	domain "github.com/udsproject/uds/pkg/uds"
)

// commands are the subcommands by name.
var commands = map[string]command{
	"get": {args: "APP NAMESPACE ID [SORTKEY]", short: "read an item (a list item with SORTKEY), or a kept version of it", min: 3, max: 4,
		long: `The item is written as JSON, a value of bytes in it as dataBase64 (a large one, kept in S3,
only as "large": true). --out writes the value itself, bytes as they are and JSON as its
text, to a file (and the item's fields, without the value, to standard output) or to
standard output (-); a large value is read from S3, with a progress bar on a terminal.`,
		flags: func(fs *flag.FlagSet) {
			fs.String("if-none-match", "", "answer nothing (exit 0, no output) if the item is still at this ETag")
			fs.Int64("version", 0, "read this version of the item, current or kept (see uds history)")
			fs.String("out", "", "write the item's value to this file, or - for standard output")
		},
		run: get},
	"create": {args: "APP NAMESPACE ID [SORTKEY]", short: "create an item; its data from --data or standard input", min: 3, max: 4,
		flags: writeFlags(false), run: write(false)},
	"put": {args: "APP NAMESPACE ID [SORTKEY]", short: "replace an item's data from --data or standard input, or store a file's bytes (--file)", min: 3, max: 4,
		long: `With --file the item's value is the file's bytes, of the type --content-type names (by
default the one its extension names, else application/octet-stream), and put creates
the item or replaces its value. Up to 350 KiB they go in one request; larger files, up
to 5 GB, are uploaded to S3, with a progress bar on a terminal (--if-match applies only
to the first).`,
		flags: writeFlags(true), run: write(true)},
	"patch": {args: "APP NAMESPACE ID [SORTKEY]", short: "change part of an item's data with a JSON Merge Patch, or a JSON Patch (--json-patch), from --data or standard input", min: 3, max: 4,
		long: `The patch applies to the item as it is when the write commits: concurrent patches of
different members need no --if-match to keep one another. A merge patch (RFC 7396) is a JSON
object of the members to change, null removing one; a JSON Patch (RFC 6902) is an array of
operations (add, remove, replace, move, copy, test), all applied or none. A test that fails
or a path that is missing is refused (409, naming the operation). The class name and expiry
stay the item's unless --class, --ttl or --expires-at set them.`,
		flags: func(fs *flag.FlagSet) {
			writeFlags(false)(fs)
			fs.Bool("json-patch", false, "the patch is a JSON Patch (RFC 6902), an array of operations (default: a JSON Merge Patch, RFC 7396)")
			fs.String("if-match", "", "patch only if the item is at this ETag")
		},
		run: patch},
	"history": {args: "APP NAMESPACE ID [SORTKEY]", short: "an item's versions, newest first (current, kept, delete markers), as NDJSON, every page",
		min: 3, max: 4, run: history},
	"restore": {args: "APP NAMESPACE ID [SORTKEY]", short: "write a kept version back as the item's current version, also after a delete", min: 3, max: 4,
		flags: func(fs *flag.FlagSet) {
			fs.Int64("version", 0, "the version to restore (required; see uds history)")
			fs.String("if-match", "", "restore only if the item is at this ETag")
		},
		run: restore},
	"rm-history": {args: "APP NAMESPACE ID [SORTKEY]", short: "drop an item's kept versions, releasing their bytes (the item stays)", min: 3, max: 4,
		run: removeHistory},
	"rm": {args: "APP NAMESPACE ID [SORTKEY]", short: "delete an item (nothing there is not an error)", min: 3, max: 4,
		flags: func(fs *flag.FlagSet) { fs.String("if-match", "", "delete only if the item is at this ETag") },
		run:   remove},
	"ls": {args: "APP NAMESPACE ID", short: "list a list's items, as NDJSON, every page", min: 3, max: 3,
		flags: func(fs *flag.FlagSet) {
			fs.String("start", "", "the first sort key (inclusive)")
			fs.String("end", "", "the sort key to stop before (exclusive)")
			fs.Bool("desc", false, "in descending order")
			fs.Int("limit", 0, "items per request, 1..1000 (default: the server's 100)")
		},
		run: list},
	"rm-list": {args: "APP NAMESPACE ID", short: "delete every item of a list", min: 3, max: 3, run: removeList},
	"quota":   {args: "APP [USER]", short: "your usage and limits in an app, or a user's (admin)", min: 1, max: 2, run: quota},
	"users":   {args: "APP", short: "the users storing data in an app, as NDJSON (admin)", min: 1, max: 1, run: users},
	"apps":    {args: "USER", short: "the apps a user stores data in, as NDJSON (admin)", min: 1, max: 1, run: apps},
	"registry": {short: "the registered apps, in the order of their names, as NDJSON (admin)", run: registry,
		long: `The registry gives apps names, unique whatever their case, for operators to find them by:
data paths keep the app's id (uds app-id NAME prints it). An app that has no name is not
listed, unless --held is given: then the apps that hold data and have no name follow, by id,
each with "registered": false (uds apps USER lists the apps a user stores data in). An app
registered, or holding data, a moment ago may take a second to be listed.`,
		flags: func(fs *flag.FlagSet) {
			fs.Bool("held", false, "also list the apps that hold data and have no name")
		}},
	"namespaces": {args: "APP", short: "an app's namespaces that have a policy or hold data, as NDJSON (admin)", min: 1, max: 1, run: namespaces,
		long: `Each namespace shows its policy, or the defaults where it has none ("policy": false), and
"heldSince", when it first held data. A namespace stays listed once it held an item, even
after its last item is deleted.`},
	"ls-namespace": {args: "APP NAMESPACE", short: "the keys of a namespace's items and list items, as NDJSON, every page (admin)", min: 2, max: 2,
		long: `Each key comes with its owner, size, updatedDate, and contentType and expiresAt where it has
them, owner by owner; --user keeps one owner's (in a private namespace, that caller's key
space).`,
		flags: func(fs *flag.FlagSet) {
			fs.String("user", "", "list this owner's items only")
		},
		run: lsNamespace},
	"app": {args: "APP", short: "an app's registration: its name, description and default limits per user (admin)", min: 1, max: 1, run: showApp},
	"app-id": {args: "NAME", short: "the id of the app registered under NAME, in any case (admin)", min: 1, max: 1, run: appID,
		long: `It prints the id alone, for the commands that take an APP: uds users "$(uds app-id fitness)".
A name no app has fails (exit 1).`},
	"register-app": {args: "APP", short: "register an app under a name, or change its name and description (admin)", min: 1, max: 1,
		long: `The flags give the whole registration: a register-app without --description removes the
app's description. A name another app holds, whatever its case, is refused (409, naming that
app); so is the name hmh, which a deployment with a created-content app (UDS_CREATED_CONTENT_APP)
keeps for it.`,
		flags: func(fs *flag.FlagSet) {
			fs.String("name", "", "the app's name: 1 to 100 characters (required)")
			fs.String("description", "", "one line about the app, up to 1000 bytes (default: none)")
		},
		run: registerApp},
	"unregister-app": {args: "APP", short: "remove an app's registration, freeing its name; its data, limits and policies stay (admin)", min: 1, max: 1,
		run: unregisterApp},
	"set-quota": {args: "APP [USER]", short: "set an app's default limits per user, or a user's override (admin)", min: 1, max: 2,
		flags: func(fs *flag.FlagSet) {
			fs.Int64("bytes", 0, "the byte limit: 0 (or not given) leaves it to the next level, -1 lifts it")
			fs.Int64("items", 0, "the item limit: 0 (or not given) leaves it to the next level, -1 lifts it")
			fs.Bool("clear", false, "remove USER's override (the app's defaults apply)")
		},
		run: setQuota},
	"rate-limits": {args: "APP [USER]", short: "an app's rate limits, or a user's override of the per-caller one (admin)", min: 1, max: 2,
		long: `An app's are {"applicationUuid", "perCaller", "perApp"}, a user's override
{"applicationUuid", "user", "perCaller"}; each limit {"requestsPerSecond", "burst"}, or
{"requestsPerSecond": -1} for no limit at that level, or null where none is set (the next
level applies: a user's override, then the app's per-caller limit, then the deployment's).`,
		run: rateLimits},
	"set-rate-limits": {args: "APP [USER]", short: "set an app's rate limits, or a user's override of the per-caller one, replacing what was set (admin)", min: 1, max: 2,
		long: `The flags give the whole resource, which the API's PUT replaces: a limit not given is
removed, not kept (uds set-rate-limits APP --per-caller 10/20 removes the app's per-app
limit). R/B is R requests a second with bursts of up to B; -1 sets no limit at this level,
in place of the next level's. A limit not set falls to the next level: a user's override,
then the app's per-caller limit, then the deployment's (UDS_RATE_PER_CALLER,
UDS_RATE_PER_APP). A request over a limit is answered 429 and does nothing; uds sends it
again after the Retry-After (see uds --help).`,
		flags: func(fs *flag.FlagSet) {
			fs.Var(&rateFlag{}, "per-caller", "each caller's limit, `R/B` (or -1 for none): the app's, or USER's override")
			fs.Var(&rateFlag{}, "per-app", "the limit of all the app's callers together, `R/B` (or -1 for none); not with USER")
			fs.Bool("clear", false, "remove the app's limits, or USER's override")
		},
		run: setRateLimits},
	"quota-mode": {args: "APP [strict|streamed]", short: "an app's quota mode, or set it (admin)", min: 1, max: 2,
		long: `It prints the mode alone on its line, after setting it when one is given. strict, the
default: every write charges its owner's usage in its own transaction, and a limit is never
passed. streamed: writes are plain conditional writes and usage is summed from the tables'
streams, so an owner can pass a limit by what it writes within the stream's lag. The limits
stay as set (uds set-quota). Functions cache the mode with the limits, for
UDS_LIMITS_CACHE_TTL (30 s).`,
		run: quotaMode},
	"recompute": {args: "APP USER", short: "rebuild a user's usage from the data and report the drift (admin)", min: 2, max: 2, run: recompute},
	"export": {args: "APP", short: "write every record of an app to standard output as NDJSON (admin)", min: 1, max: 1,
		flags: func(fs *flag.FlagSet) {
			fs.Bool("no-history", false, "leave out the versions namespaces' histories kept")
			fs.String("namespace", "", "export this namespace's records only")
		},
		run: export},
	"export-user": {args: "USER", short: "write everything a user stores, in every app, to a folder (admin)", min: 1, max: 1,
		long: `The folder (--out) gets apps.json, the user's usage in each app and the limits and rate
limit set for them there; APP.ndjson for each app, the user's records there as uds import
reads them (uds import APP --file DIR/APP.ndjson puts them back); and the bytes of each large
value under large/APP/NAMESPACE/ID[/SORTKEY]/vVERSION (-kept for a kept version), with a
progress bar on a terminal. Records of large values are in APP.ndjson too; an import leaves
them out: upload their bytes again with uds put --file.`,
		flags: func(fs *flag.FlagSet) {
			fs.String("out", "", "the folder to write to (required; created if missing)")
		},
		run: exportUser},
	"erase-user": {args: "USER", short: "erase everything a user stores, in every app, and print the receipt (admin)", min: 1, max: 1,
		long: `The erase refuses the user's writes from its start and removes nothing while it settles
(about a minute in a deployment), then removes their items, list items, uploads, large values, kept
versions, index entries and usage records with the limits set for them, app by app, and puts
one pseudonym in place of their name in the audit fields of what others own. The command sends
its steps until it is done, and prints the receipt: counts per app and kind, the end, until
when their writes stay refused (--hold-days after the end) and until when backups hold the
data. Interrupted, it goes on where the next run takes it. --status prints where an erase
stands, erasing nothing. Nothing brings the data back: uds export-user keeps a copy.`,
		flags: func(fs *flag.FlagSet) {
			fs.Bool("yes", false, "erase: required, as nothing undoes it")
			fs.Int("hold-days", 0, "keep refusing the user's writes this many days after the erase ends")
			fs.Bool("status", false, "print where the erase stands, or its receipt, erasing nothing")
		},
		run: eraseUser},
	"import": {args: "APP", short: "write NDJSON records (an export) into an app; exit 1 on conflicts (admin)", min: 1, max: 1,
		flags: func(fs *flag.FlagSet) {
			fs.String("file", "", "read the records from this file (default: standard input)")
		},
		run: importRecords},
	"policy": {args: "APP NAMESPACE", short: "a namespace's policy: access, schema, history, indexes, a change under way (admin)", min: 2, max: 2, run: policy},
	"set-policy": {args: "APP NAMESPACE", short: "change a namespace's policy, keeping what no flag changes; a change into or out of private waits until it completes (admin)", min: 2, max: 2,
		long: `The command reads the namespace's policy, changes the parts its flags give, and sets the
whole: what no flag names (the access, schema, history, indexes, binary rule) is restated as
it stands. --drop removes parts. --index replaces the declared indexes with those given: to
keep one, give it again as declared, which keeps its entries. New indexes answer queries
once built, and dropped ones' entries are removed, by uds build-indexes (the local server
also builds in the background).`,
		flags: func(fs *flag.FlagSet) {
			fs.String("access", "", "shared, private or owner-write (default: as it stands)")
			fs.String("schema", "", "a file holding the JSON Schema every write's data must match (default: as it stands)")
			fs.Int("history-versions", 0, "keep up to this many replaced versions of each item, 1..100, or 0 for none (default: as it stands)")
			fs.Int("history-days", 0, "keep each replaced version at most this many days, 1..3650, or 0 for no age limit (default: as it stands); needs a history")
			fs.Var(&indexFlag{}, "index", "declare an index `NAME:PATH:TYPE` (PATH a JSON Pointer into the items' data, /status, or empty for\nthe whole value; TYPE string or number); repeat for up to 5; replaces the declared ones (default: as they stand)")
			fs.String("binary-types", "", "the binary values' content `TYPES` the namespace takes, comma-separated: image/png,image/* (default: as it stands)")
			fs.Int64("binary-max-bytes", 0, "the largest binary value the namespace takes, in bytes, or 0 for the store's own limit (default: as it stands); needs a binary rule")
			fs.String("drop", "", "remove these `PARTS`, comma-separated: schema, history, indexes, binary")
			fs.Bool("clear", false, "restore the defaults: shared, no schema, no history, no indexes, no binary rule")
		},
		run: setPolicy},
	"build-indexes": {args: "APP NAMESPACE", short: "build a namespace's new indexes and remove its dropped ones' entries, step after step until done (admin)", min: 2, max: 2,
		long: `Each step is one request of some seconds; a progress line tells how far the build got.
After a change of the indexes, the build starts once the change has settled (about a minute
on a default deployment): the command waits until then. At the end it writes the policy.`,
		run: buildIndexes},
	"query": {args: "APP NAMESPACE", short: "the items one of a namespace's indexes selects, in its order, as NDJSON, every page", min: 2, max: 2,
		long: `Select by at most one of --eq, --prefix (a string index), or --from and --to (either
optional); no selection gives every item the index holds. A number index takes numbers in
JSON syntax (--from -1.5). Items are written as uds ls writes them. A query of an index
still building fails (409 Index not ready): uds build-indexes builds it.`,
		flags: func(fs *flag.FlagSet) {
			fs.String("index", "", "the index to query (required; uds policy lists the namespace's)")
			fs.String("eq", "", "the items whose value is this one")
			fs.String("prefix", "", "the items whose value starts with this string")
			fs.String("from", "", "the items whose value is this one or after it (inclusive)")
			fs.String("to", "", "the items whose value comes before this one (exclusive)")
			fs.Bool("desc", false, "in descending order")
			fs.Int("limit", 0, "items per request, 1..1000 (default: the server's 100)")
		},
		run: query},
	"changes": {args: "APP NAMESPACE", short: "a namespace's changes feed, as NDJSON: its items, then every change; --follow reads on as they come",
		min: 2, max: 2, long: changesLong, flags: changesFlags, run: changes},
	"watch": {args: "APP NAMESPACE [ID]", short: "a namespace's, a list's or an item's changes as they commit, as NDJSON, until Ctrl-C",
		min: 2, max: 3, long: watchLong, flags: watchFlags, run: watch},
	"strays":    {args: "APP NAMESPACE", short: "the namespace's items no data route reaches (in the key space its policy does not use), as NDJSON records (admin)", min: 2, max: 2, run: strays},
	"rm-strays": {args: "APP NAMESPACE", short: "remove the namespace's strays, releasing their usage (admin)", min: 2, max: 2, run: removeStrays},
	"console": {short: "serve the console page on localhost, its calls carried to --endpoint with this machine's credentials",
		long: consoleLong, flags: consoleFlags, run: runConsole},
}

// key builds an item key from positional arguments.
func key(args []string) client.Key {
	k := client.Key{App: args[0], Namespace: args[1], ID: args[2]}
	if len(args) > 3 {
		k.SortKey = args[3]
	}
	return k
}

func get(e *env, args []string) error {
	tag := e.flag("if-none-match")
	var it client.Item
	var err error
	switch {
	case e.given("version") && tag != "":
		return usageError("--version and --if-none-match exclude each other: a version, once written, does not change")
	case e.flag("out") != "":
		return getValue(e, key(args), e.flag("out"))
	case e.given("version"):
		it, err = e.c.GetVersion(e.ctx, key(args), e.version())
	case tag != "":
		it, err = e.c.Get(e.ctx, key(args), client.IfNoneMatch(tag))
	default:
		it, err = e.c.Get(e.ctx, key(args))
	}
	if err == nil {
		return e.writeJSON(it)
	}
	if isNotModified(err) {
		return nil
	}
	return err
}

func writeFlags(update bool) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		fs.String("data", "", "the JSON data, or @FILE to read it from a file (default: standard input)")
		fs.String("class", "", "the className to store beside the data")
		fs.Int("ttl", 0, "expire the item after this many seconds")
		fs.String("expires-at", "", "expire the item at this RFC 3339 instant")
		if update {
			fs.String("if-match", "", "write only if the item is at this ETag")
			fs.String("file", "", "store this file's bytes as the item's value (not with --data)")
			fs.String("content-type", "", "the type of --file's bytes (default: by its extension, else application/octet-stream)")
		}
	}
}

func write(update bool) func(e *env, args []string) error {
	return func(e *env, args []string) error {
		opts, err := e.writeOptions()
		if err != nil {
			return err
		}
		if update && e.given("file") {
			return putFile(e, key(args), opts)
		}
		if update && e.given("content-type") {
			return usageError("--content-type goes with --file")
		}
		data, err := e.readData()
		if err != nil {
			return err
		}
		var it client.Item
		if update {
			it, err = e.c.Update(e.ctx, key(args), data, opts...)
		} else {
			it, err = e.c.Create(e.ctx, key(args), data, opts...)
		}
		if err != nil {
			return err
		}
		return e.writeJSON(it)
	}
}

// patch sends the patch --data or standard input holds.
func patch(e *env, args []string) error {
	opts, err := e.writeOptions()
	if err != nil {
		return err
	}
	doc, err := e.readData()
	if err != nil {
		return err
	}
	var it client.Item
	if e.flag("json-patch") == "true" {
		it, err = e.c.Patch(e.ctx, key(args), doc, opts...)
	} else {
		it, err = e.c.MergePatch(e.ctx, key(args), doc, opts...)
	}
	if err != nil {
		return err
	}
	return e.writeJSON(it)
}

// writeOptions are the options of a write its flags give.
func (e *env) writeOptions() ([]client.CallOption, error) {
	var opts []client.CallOption
	if cn := e.flag("class"); cn != "" {
		opts = append(opts, client.ClassName(cn))
	}
	if e.given("ttl") {
		// Bounded before it becomes a duration, which a large count of
		// seconds would overflow into another expiry.
		ttl, _ := strconv.ParseInt(e.flag("ttl"), 10, 64)
		if most := int64(domain.MaxTTL / time.Second); ttl < 1 || ttl > most {
			return nil, usageError("--ttl must be from 1 to %d seconds (ten years), got %s", most, e.flag("ttl"))
		}
		opts = append(opts, client.TTL(time.Duration(ttl)*time.Second))
	}
	if at := e.flag("expires-at"); at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return nil, usageError("--expires-at %q is not an RFC 3339 instant", at)
		}
		opts = append(opts, client.ExpiresAt(t))
	}
	if e.flags.Lookup("if-match") != nil {
		if tag := e.flag("if-match"); tag != "" {
			opts = append(opts, client.IfMatch(tag))
		}
	}
	return opts, nil
}

// readData reads a write's data: --data's JSON, @FILE, or standard input
// without --data. JSON that --data itself holds is the command line's to
// get right (a usage error); a file's or standard input's is the input's.
func (e *env) readData() (json.RawMessage, error) {
	flagValue := e.flag("data")
	var b []byte
	var err error
	source := "standard input"
	switch {
	case e.given("data") && flagValue == "":
		return nil, usageError("--data is empty: give JSON, @FILE, or leave --data out to read standard input")
	case strings.HasPrefix(flagValue, "@"):
		source = flagValue[1:]
		b, err = os.ReadFile(source)
	case flagValue != "":
		if !json.Valid([]byte(flagValue)) {
			return nil, usageError("--data is not JSON")
		}
		return json.RawMessage(flagValue), nil
	default:
		b, err = io.ReadAll(e.stdin)
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("the data read from %s is not JSON", source)
	}
	return json.RawMessage(b), nil
}

func remove(e *env, args []string) error {
	var opts []client.CallOption
	if tag := e.flag("if-match"); tag != "" {
		opts = append(opts, client.IfMatch(tag))
	}
	return e.c.Delete(e.ctx, key(args), opts...)
}

func list(e *env, args []string) error {
	limit, err := e.limit()
	if err != nil {
		return err
	}
	q := client.ListQuery{
		Start: e.flag("start"), End: e.flag("end"),
		Descending: e.flag("desc") == "true", Limit: limit,
	}
	return writeItems(e, e.c.List(e.ctx, key(args), q))
}

// writeItems writes every item of a paged read (a list, a query) as
// NDJSON, counting them on the progress line.
func writeItems(e *env, items iter.Seq2[client.Item, error]) error {
	n := 0
	for it, err := range items {
		if err != nil {
			return err
		}
		if err := e.writeJSON(it); err != nil {
			return err
		}
		n++
		e.progress.count("listed", "items", n)
	}
	return nil
}

func removeList(e *env, args []string) error {
	e.progress.note("deleting the list's items (a large list takes several requests)")
	_, err := e.c.DeleteList(e.ctx, key(args))
	return err
}

func quota(e *env, args []string) error {
	var q client.Quota
	var err error
	if len(args) == 2 {
		q, err = e.c.UserQuota(e.ctx, args[0], args[1])
	} else {
		q, err = e.c.Quota(e.ctx, args[0])
	}
	if err != nil {
		return err
	}
	return e.writeJSON(q)
}

func users(e *env, args []string) error { return writeEach(e, e.c.AppUsers(e.ctx, args[0])) }

func apps(e *env, args []string) error { return writeEach(e, e.c.UserApps(e.ctx, args[0])) }

func namespaces(e *env, args []string) error { return writeEach(e, e.c.Namespaces(e.ctx, args[0])) }

func lsNamespace(e *env, args []string) error {
	return writeEach(e, e.c.NamespaceItems(e.ctx, args[0], args[1], e.flag("user")))
}

func setQuota(e *env, args []string) error {
	bytes, _ := strconv.ParseInt(e.flag("bytes"), 10, 64)
	items, _ := strconv.ParseInt(e.flag("items"), 10, 64)
	l := client.Limits{LimitBytes: bytes, LimitItems: items}
	clear := e.flag("clear") == "true"
	// Both limits are always sent, so a command without either would
	// quietly hand both to the next level.
	limitGiven := e.given("bytes") || e.given("items")
	switch {
	case clear && limitGiven:
		return usageError("--clear removes USER's override: give it without --bytes and --items")
	case len(args) == 1 && clear:
		return usageError("--clear takes a USER: an app's defaults are set, not cleared")
	case !clear && !limitGiven:
		return usageError("give --bytes, --items or both (0 leaves a limit to the next level, -1 lifts it)")
	case len(args) == 1:
		stored, err := e.c.SetAppLimits(e.ctx, args[0], l)
		if err != nil {
			return err
		}
		return e.writeJSON(stored)
	case clear:
		return e.c.ClearUserLimits(e.ctx, args[0], args[1])
	}
	q, err := e.c.SetUserLimits(e.ctx, args[0], args[1], l)
	if err != nil {
		return err
	}
	return e.writeJSON(q)
}

func recompute(e *env, args []string) error {
	r, err := e.c.Recompute(e.ctx, args[0], args[1])
	if err != nil {
		return err
	}
	if !r.Applied {
		fmt.Fprintf(e.stderr, "uds recompute: not applied: the user wrote too recently; ask again in %v\n", r.RetryAfter)
	}
	return e.writeJSON(r)
}

func export(e *env, args []string) error {
	var opts []client.ExportOption
	if e.flag("no-history") == "true" {
		opts = append(opts, client.WithoutHistory())
	}
	if ns := e.flag("namespace"); ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	n := 0
	for rec, err := range e.c.Export(e.ctx, args[0], opts...) {
		if err != nil {
			return err
		}
		if err := e.writeJSON(rec); err != nil {
			return err
		}
		n++
		e.progress.count("exported", "records", n)
	}
	e.progress.final(fmt.Sprintf("exported %d records", n))
	return nil
}
