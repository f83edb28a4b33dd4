package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/client"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the API, the network, the input data or the AWS configuration failed
	exitUsage   = 2 // the command line is wrong
)

// errUsage marks a command line that is wrong; its text says how.
var errUsage = errors.New("usage")

// flag reads one of the command's flags by name.
func (e *env) flag(name string) string { return e.flags.Lookup(name).Value.String() }

// given reports whether the command line sets one of the command's flags.
func (e *env) given(name string) bool {
	set := false
	e.flags.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// maxLimit is the most items or entries a page of the API holds.
const maxLimit = 1000

// limit reads --limit: 0 (the server's default) when it is not given,
// else a page size the API takes. A number the API would refuse is the
// command line's fault, said before any request.
func (e *env) limit() (int, error) {
	if !e.given("limit") {
		return 0, nil
	}
	n, _ := strconv.Atoi(e.flag("limit"))
	if n < 1 || n > maxLimit {
		return 0, usageError("--limit must be from 1 to %d, got %s", maxLimit, e.flag("limit"))
	}
	return n, nil
}

// env is what a command works with: the client, its streams, and the
// progress line.
type env struct {
	ctx      context.Context
	c        *client.Client
	flags    *flag.FlagSet
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	progress *progress
}

// command is one subcommand: its arguments, what it does, and its flags.
type command struct {
	args  string // the positional arguments, for usage
	short string
	long  string                 // more help, for the command's usage
	flags func(fs *flag.FlagSet) // the command's own flags
	min   int                    // positional arguments required
	max   int
	run   func(e *env, args []string) error
}

// synopsis is the command line of the command called name, without its
// flags: "uds get APP NAMESPACE ID [SORTKEY]".
func (c command) synopsis(name string) string {
	if c.args == "" {
		return "uds " + name
	}
	return "uds " + name + " " + c.args
}

// takes says what positional arguments the command takes.
func (c command) takes() string {
	if c.args == "" {
		return "no arguments"
	}
	return c.args
}

// checkNotEmpty refuses an empty argument, which names no app, user,
// namespace, id or sort key: sent, its path would name another resource
// (an empty id, the namespace; an empty sort key, the key-value item).
func (c command) checkNotEmpty(args []string) error {
	names := strings.Fields(strings.NewReplacer("[", "", "]", "").Replace(c.args))
	for i, a := range args {
		if a == "" && i < len(names) {
			return usageError("%s is empty", names[i])
		}
	}
	return nil
}

// globals are the flags every command takes, before or after its name.
type globals struct {
	endpoint, token, region, subject, realtime string
	sigv4                                      bool
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.endpoint, "endpoint", envOr("UDS_ENDPOINT", "http://127.0.0.1:8080"), "the API's base URL (env UDS_ENDPOINT)")
	fs.StringVar(&g.token, "token", os.Getenv("UDS_TOKEN"), "a bearer token (JWT) for the data routes (env UDS_TOKEN, not sent with --sigv4)")
	fs.BoolVar(&g.sigv4, "sigv4", false, "sign requests with SigV4 and the default AWS credential chain (the admin routes of a deployed stack); not with --token")
	fs.StringVar(&g.region, "region", "", "the AWS region to sign for (default AWS_REGION or the profile's)")
	fs.StringVar(&g.realtime, "realtime-url", os.Getenv("UDS_REALTIME_URL"), "the WebSocket URL of a stack's realtime API, for uds watch (env UDS_REALTIME_URL; default: the endpoint's, ws(s)://.../rest/api/v1/realtime)")
	fs.StringVar(&g.subject, "subject", os.Getenv("UDS_SUBJECT"), "the caller's subject for a local server, which trusts it on a loopback address; deployed APIs refuse it (env UDS_SUBJECT)")
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// run is the whole command line: it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var g globals
	top := flag.NewFlagSet("uds", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	g.register(top)
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			mainUsage(stdout, top)
			return exitOK
		}
		fmt.Fprintf(stderr, "uds: %v\n\n", err)
		mainUsage(stderr, top)
		return exitUsage
	}
	if top.NArg() == 0 {
		mainUsage(stderr, top)
		return exitUsage
	}
	name := top.Arg(0)
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "uds: unknown command %q\n\n", name)
		mainUsage(stderr, top)
		return exitUsage
	}
	// The globals given before the command name stay in effect: they are
	// read before the command's flag set registers them again (which
	// resets them to their defaults) and set on it.
	given := map[string]string{}
	top.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() })
	fs := flag.NewFlagSet("uds "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	for k, v := range given {
		_ = fs.Set(k, v)
	}
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	positional, err := parseInterleaved(fs, top.Args()[1:])
	if errors.Is(err, flag.ErrHelp) {
		commandUsage(stdout, name, cmd, fs)
		return exitOK
	}
	if err == nil && (len(positional) < cmd.min || len(positional) > cmd.max) {
		err = usageError("%s takes %s", name, cmd.takes())
	}
	if err == nil {
		err = cmd.checkNotEmpty(positional)
	}
	if err == nil {
		err = g.check(fs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "uds %s: %v\n\n", name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		commandUsage(stderr, name, cmd, fs)
		return exitUsage
	}
	c, err := g.client(ctx)
	if err == nil {
		e := &env{ctx: ctx, c: c, flags: fs, stdin: stdin, stdout: stdout, stderr: stderr, progress: newProgress(stderr)}
		err = cmd.run(e, positional)
		e.progress.done()
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "uds %s: %v\n", name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return exitUsage
	}
	fmt.Fprintf(stderr, "uds %s: %v\n", name, err)
	return exitFailure
}

// parseInterleaved parses flags given before, between and after the
// positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// check refuses global flags that contradict each other. UDS_TOKEN in the
// environment is no contradiction of --sigv4: the flag chooses how this
// command authenticates, and the token is not sent.
func (g *globals) check(fs *flag.FlagSet) error {
	tokenGiven := false
	fs.Visit(func(f *flag.Flag) { tokenGiven = tokenGiven || f.Name == "token" })
	if tokenGiven && g.sigv4 {
		return usageError("--token and --sigv4 exclude each other: the data routes take a token, the admin routes SigV4")
	}
	return nil
}

// client builds the API client. A wrong endpoint is a usage error; AWS
// configuration that cannot be loaded is a failure of the environment,
// not of the command line.
func (g *globals) client(ctx context.Context) (*client.Client, error) {
	opts := []client.Option{client.WithUserAgent("uds-cli"), client.WithRealtimeURL(g.realtime)}
	if g.subject != "" {
		opts = append(opts, client.WithSubject(g.subject))
	}
	switch {
	case g.sigv4:
		sign, err := client.DefaultSigV4(ctx, g.region)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sign)
	case g.token != "":
		opts = append(opts, client.WithToken(g.token))
	}
	c, err := client.New(g.endpoint, opts...)
	if err != nil {
		return nil, usageError("%v", err)
	}
	return c, nil
}

func mainUsage(w io.Writer, top *flag.FlagSet) {
	fmt.Fprintln(w, "usage: uds [global flags] COMMAND [ARGS] [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, commands[n].short)
	}
	fmt.Fprintln(w, "\nglobal flags (before or after the command):")
	top.SetOutput(w)
	top.PrintDefaults()
	top.SetOutput(io.Discard)
	fmt.Fprintln(w, "\nRun `uds COMMAND --help` for a command's arguments and flags.")
	fmt.Fprintf(w, "A request answered 429 (over a rate limit: nothing was done) is sent again after its Retry-After\n"+
		"and up to half as long again, drawn at random, at most %d times and %d minutes of waiting in all;\n"+
		"then the command fails with the 429.\n", client.DefaultRetries, int(client.DefaultMaxRetryWait/time.Minute))
	fmt.Fprintln(w, "Exit status: 0 done, 1 the API, the network, the input data or the AWS configuration failed,")
	fmt.Fprintln(w, "2 the command line is wrong.")
}

func commandUsage(w io.Writer, name string, cmd command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s [flags]\n\n%s\n", cmd.synopsis(name), cmd.short)
	if cmd.long != "" {
		fmt.Fprintf(w, "\n%s\n", cmd.long)
	}
	fmt.Fprint(w, "\nflags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
