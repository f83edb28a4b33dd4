package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// exampleSources are the documents whose sh blocks are examples to run
// against make run's server, in this order, in one shell: later examples
// use what earlier ones stored, so this is the order of the README's map
// of the guides. A source names the "## " sections whose blocks run, or
// none for every sh block of the file; the README's first request must
// be among them.
var exampleSources = []exampleSource{
	{"README.md", []string{"A first request", "The command line"}},
	{"docs/local-server.md", nil},
	{"docs/items-and-lists.md", nil},
	{"docs/patch.md", nil},
	{"docs/quotas.md", nil},
	{"docs/app-registry.md", nil},
	{"docs/policies.md", nil},
	{"docs/history.md", nil},
	{"docs/queries.md", nil},
	{"docs/changes.md", nil},
	{"docs/realtime.md", nil},
	{"docs/binary-values.md", nil},
	{"docs/rate-limits.md", nil},
	{"docs/browsing-data.md", nil},
	{"docs/console.md", nil},
	{"docs/export-and-migration.md", []string{"Export and import", "Seed 000's data families"}},
	{"docs/personal-data.md", nil},
	{"docs/client-and-cli.md", nil},
}

// exampleSource is a document, by its path in the repository, and the
// sections of it whose sh blocks run (none: all of them).
type exampleSource struct {
	path     string
	sections []string
}

// readmeAddr is the server the README's examples name; the test's server
// listens on a free port instead.
const readmeAddr = "http://127.0.0.1:8080"

// TestREADMEExamples runs the examples of the README and the guides as
// pasted, in order, in one bash, from the repository's root as a person
// would, against the local server binary on fresh tables, and checks that
// every curl answers the status its comment gives and that the examples
// left no file in the repository (they write under a temporary folder).
// It also checks what a
// person sees of the server: a readable line per request and no EMF
// records, a second server on the same address failing without saying it
// listens, and Ctrl-C stopping the server with status 0.
func TestREADMEExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "awk", "tee", "cmp", "node", "make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH, and the README's examples need it: install it (Debian's base has curl)", tool)
		}
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script, commands, err := readmeExamples(repo, exampleSources)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "uds-local")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The tables have streams, as make run's: the changes feed's guide
	// shows an update and a delete reaching the feed.
	tables := storetest.NewStreamedTables(t)
	env := append(cleanEnv(os.Environ()),
		config.EnvDynamoDBEndpoint+"="+os.Getenv(config.EnvDynamoDBEndpoint),
		schema.Data.EnvVar+"="+tables.Data, schema.List.EnvVar+"="+tables.List, schema.Usage.EnvVar+"="+tables.Usage,
		schema.Apps.EnvVar+"="+tables.Apps, schema.Namespaces.EnvVar+"="+tables.Namespaces, schema.History.EnvVar+"="+tables.History,
		schema.IndexEntries.EnvVar+"="+tables.Index, schema.Changes.EnvVar+"="+tables.Changes,
		// The local S3 engine on a free port too, so that a make run
		// beside the test keeps its own.
		config.EnvS3ListenAddr+"=127.0.0.1:0")
	srv := startServer(t, bin, with(env, config.EnvListenAddr+"=127.0.0.1:0"))
	root := strings.TrimSuffix(srv.waitListening(t), httpapi.BasePath)

	t.Run("examples", func(t *testing.T) {
		before := repoStatus(t, repo)
		runExamples(t, repo, dir, strings.ReplaceAll(script, readmeAddr, root), commands, root)
		if after := repoStatus(t, repo); after != before {
			t.Errorf("the examples changed the repository's untracked or ignored files (git status --porcelain --ignored): before\n%s\nafter\n%s\nthey must write only under a temporary folder (T=$(mktemp -d))", before, after)
		}
		lines := withoutBanner(srv.output())
		if strings.Contains(lines, `"_aws"`) {
			t.Errorf("EMF records without %s=1:\n%s", config.EnvEMF, lines)
		}
		requests := 0
		for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
			if !strings.HasPrefix(line, "time=") {
				t.Errorf("not a log line: %q", line)
			}
			if strings.Contains(line, " msg=request ") {
				requests++
			}
		}
		if requests < len(commands) {
			t.Errorf("%d request lines for %d curl commands and the uds session:\n%s", requests, len(commands), lines)
		}
	})

	t.Run("address in use", func(t *testing.T) {
		addr := strings.TrimPrefix(root, "http://")
		second := exec.Command(bin)
		second.Env = with(env, config.EnvListenAddr+"="+addr)
		out, err := second.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("a second server on %s: %v, want exit status 1\n%s", addr, err, out)
		}
		if !bytes.Contains(out, []byte("level=ERROR")) || !bytes.Contains(out, []byte("address already in use")) || bytes.Contains(out, []byte("listening")) {
			t.Errorf("a second server on %s printed:\n%s", addr, out)
		}
	})

	t.Run("Ctrl-C", func(t *testing.T) {
		if err := srv.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if err := srv.wait(); err != nil {
			t.Fatalf("after SIGINT: %v, want exit status 0\n%s", err, srv.output())
		}
		if out := strings.TrimSpace(srv.output()); !strings.HasSuffix(out, `msg="UDS stopped"`) {
			t.Errorf("the last line is not UDS stopped:\n%s", out)
		}
	})
}

// cleanEnv drops the UDS variables of the test's environment, so the
// server and the examples see only what the test sets, and those of a make
// running the tests, which a person's shell does not have.
func cleanEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "UDS_"), name == "MAKEFLAGS", name == "MFLAGS", name == "MAKELEVEL":
		default:
			out = append(out, kv)
		}
	}
	return out
}

// with returns env and more, in a slice of its own.
func with(env []string, more ...string) []string {
	return append(append([]string(nil), env...), more...)
}

// repoStatus is git's list of the repository's untracked and ignored
// files (bin/, .data/ ...), so that a file an example writes shows whether
// or not .gitignore names it. Changes to tracked files are left out: a
// person may edit the documents while the test runs.
func repoStatus(t *testing.T, repo string) string {
	out, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--ignored").Output()
	if err != nil {
		t.Fatalf("git status in %s: %v", repo, err)
	}
	var files strings.Builder
	for _, line := range strings.SplitAfter(string(out), "\n") {
		// bin/ is where make uds builds the command line, as the README
		// says, and the examples run it: it is their one place in the
		// repository.
		if line == "!! bin/\n" {
			continue
		}
		if strings.HasPrefix(line, "?? ") || strings.HasPrefix(line, "!! ") {
			files.WriteString(line)
		}
	}
	return files.String()
}

// runExamples runs the examples' script in the repository's root, as a
// person pasting them would (make uds builds bin/uds there), keeping its
// own files in dir, and checks each curl's status against its command's.
func runExamples(t *testing.T, repo, dir, script string, commands []readmeCommand, root string) {
	statuses := filepath.Join(dir, "statuses")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", examplesPrelude+script)
	sh.Dir = repo
	sh.Env = append(cleanEnv(os.Environ()), "UDS_ENDPOINT="+root,
		"README_STATUSES="+statuses, "README_REPO="+repo)
	out, runErr := sh.CombinedOutput()
	recorded, _ := os.ReadFile(statuses)
	got := strings.Fields(string(recorded))
	for i, c := range commands {
		switch {
		case i >= len(got):
			t.Fatalf("%s:%d never ran (%v):\n%s\n-- output:\n%s", c.file, c.line, runErr, c.text, out)
		case got[i] != strconv.Itoa(c.status):
			t.Errorf("%s:%d answered %s, its comment says %d:\n%s", c.file, c.line, got[i], c.status, c.text)
		}
	}
	if len(got) != len(commands) {
		t.Errorf("%d curl requests ran, the examples have %d curl commands", len(got), len(commands))
	}
	if runErr != nil {
		t.Fatalf("the examples failed: %v\n%s", runErr, out)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// examplesPrelude runs before the examples: a command that fails stops
// them; curl records each answer's status (the last of its headers, after
// any 100 Continue) in README_STATUSES, whatever its flags print; make
// runs in the repository.
const examplesPrelude = `set -eo pipefail
curl() {
  local headers status=0
  headers=$(mktemp)
  command curl -D "$headers" "$@" || status=$?
  awk '/^HTTP\// { s = $2 } END { print (s == "" ? "none" : s) }' "$headers" >>"$README_STATUSES"
  rm -f "$headers"
  return "$status"
}
make() { command make --no-print-directory -C "$README_REPO" "$@"; }
`

// readmeCommand is one curl command of the examples and the status its
// comment gives.
type readmeCommand struct {
	file   string // the document's path in the repository
	line   int
	text   string
	status int
}

// readmeExamples returns the sh blocks of sources, read under repo, as one
// script, and its curl commands in order, each with the status of its
// trailing comment or, without one, of the comment lines above it: the
// first three digits after ": " (as in "# 1. Create a value: 201 (409 if
// the key exists)").
func readmeExamples(repo string, sources []exampleSource) (string, []readmeCommand, error) {
	var script strings.Builder
	var commands []readmeCommand
	for _, src := range sources {
		blocks, err := src.blocks(repo)
		if err != nil {
			return "", nil, err
		}
		for _, b := range blocks {
			cs, err := curlCommands(b.text, b.line)
			if err != nil {
				return "", nil, fmt.Errorf("%s: %w", src.path, err)
			}
			for i := range cs {
				cs[i].file = src.path
			}
			commands = append(commands, cs...)
			script.WriteString(b.text)
		}
	}
	return script.String(), commands, nil
}

// blocks returns the source's sh blocks that run, in order.
func (src exampleSource) blocks(repo string) ([]readmeBlock, error) {
	doc, err := os.ReadFile(filepath.Join(repo, src.path))
	if err != nil {
		return nil, err
	}
	sections := src.sections
	if len(sections) == 0 {
		sections = []string{""}
	}
	var out []readmeBlock
	for _, section := range sections {
		blocks, err := shBlocks(string(doc), section)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.path, err)
		}
		out = append(out, blocks...)
	}
	return out, nil
}

type readmeBlock struct {
	line   int // of the block's first line in its document
	text   string
	indent string // the spaces before its opening fence
}

// shBlocks returns the sh blocks of one "## " section of a document, or of
// the whole document when section is "".
func shBlocks(doc, section string) ([]readmeBlock, error) {
	lines := strings.SplitAfter(doc, "\n")
	var blocks []readmeBlock
	in, found := section == "", section == ""
	var b *readmeBlock
	for i, l := range lines {
		trimmed := strings.TrimRight(l, "\n")
		switch {
		case b != nil && strings.TrimSpace(trimmed) == "```":
			blocks = append(blocks, *b)
			b = nil
		case b != nil:
			// A block inside a list item is indented as its item: the
			// shell reads it as well without.
			b.text += strings.TrimPrefix(l, b.indent)
		case section != "" && strings.HasPrefix(trimmed, "## "):
			in = trimmed == "## "+section
			found = found || in
		case in && strings.TrimSpace(trimmed) == "```sh":
			b = &readmeBlock{line: i + 2, indent: trimmed[:strings.Index(trimmed, "`")]}
		}
	}
	if !found || len(blocks) == 0 {
		if section == "" {
			return nil, errors.New("no sh block")
		}
		return nil, fmt.Errorf("no sh block under %q", "## "+section)
	}
	return blocks, nil
}

// TestEveryCurlExampleRuns checks that every sh block of the README and
// the guides that sends a request is among the examples TestREADMEExamples
// runs: a guide added without its place in exampleSources, or a section
// left out of a source's list, would otherwise show requests no test
// makes.
func TestEveryCurlExampleRuns(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	run := map[string]bool{}
	for _, src := range exampleSources {
		blocks, err := src.blocks(repo)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			run[fmt.Sprintf("%s:%d", src.path, b.line)] = true
		}
	}
	guides, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append([]string{filepath.Join(repo, "README.md")}, guides...) {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, path)
		blocks, _ := shBlocks(string(doc), "")
		for _, b := range blocks {
			if curlWord.MatchString(b.text) && !run[fmt.Sprintf("%s:%d", rel, b.line)] {
				t.Errorf("%s line %d: a block of requests that no test runs; add its document or section to exampleSources", rel, b.line)
			}
		}
	}
}

var (
	statusInComment = regexp.MustCompile(`: ([1-5][0-9][0-9])\b`)
	curlWord        = regexp.MustCompile(`(^|[\s(|;&])curl\s`)
)

// curlCommands splits a block into shell commands, as far as the examples
// need: quotes (a JSON body may span lines), backslash continuations and
// comments. Each curl command must have a status in its comments, and
// one curl a command, so that their order is the order they run in.
func curlCommands(block string, firstLine int) ([]readmeCommand, error) {
	var out []readmeCommand
	heading := ""            // the comment lines above the command
	var text, comment string // the command so far and its trailing comment
	var quote byte           // the open quote, if any
	start, line := 0, firstLine
	inHeading := false
	for _, l := range strings.SplitAfter(block, "\n") {
		if text == "" && quote == 0 {
			start = line
			if c, ok := strings.CutPrefix(strings.TrimSpace(l), "#"); ok {
				if !inHeading {
					heading = ""
				}
				heading += c + " "
				inHeading = true
				line++
				continue
			}
			inHeading = false
		}
		continued := false
		for i := 0; i < len(l); i++ {
			ch := l[i]
			switch {
			case quote == '\'':
				if ch == '\'' {
					quote = 0
				}
			case ch == '\\' && i+1 < len(l):
				if l[i+1] == '\n' && quote == 0 {
					continued = true
				}
				text += l[i : i+2]
				i++
				continue
			case quote == '"':
				if ch == '"' {
					quote = 0
				}
			case ch == '\'' || ch == '"':
				quote = ch
			case ch == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
				comment = l[i:]
				i = len(l)
				continue
			}
			text += string(ch)
		}
		line++
		if quote != 0 || continued {
			continue
		}
		if strings.TrimSpace(text) != "" {
			if n := len(curlWord.FindAllString(text, -1)); n > 1 {
				return nil, fmt.Errorf("line %d: %d curl commands on one line; give each its own line and status", start, n)
			} else if n == 1 {
				m := statusInComment.FindStringSubmatch(comment)
				if m == nil {
					m = statusInComment.FindStringSubmatch(heading)
				}
				if m == nil {
					return nil, fmt.Errorf("line %d: no status for this curl command in its comment or the comment above (\"...: 200\")", start)
				}
				status, _ := strconv.Atoi(m[1])
				out = append(out, readmeCommand{line: start, text: strings.TrimSpace(text), status: status})
			}
		}
		text, comment = "", ""
	}
	return out, nil
}

// localServer is the local server binary, running.
type localServer struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
	// exited is closed when the process has ended, with its error in err.
	exited chan struct{}
	err    error
}

func startServer(t *testing.T, bin string, env []string) *localServer {
	s := &localServer{cmd: exec.Command(bin), exited: make(chan struct{})}
	s.cmd.Env = env
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = s.cmd.Stdout
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.mu.Lock()
			s.out.Write(sc.Bytes())
			s.out.WriteByte('\n')
			s.mu.Unlock()
		}
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	return s
}

func (s *localServer) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func (s *localServer) wait() error {
	select {
	case <-s.exited:
		return s.err
	case <-time.After(time.Minute):
		return errors.New("still running a minute later")
	}
}

var listening = regexp.MustCompile(`msg="UDS listening" url=(\S+)`)

// waitListening returns the API's base URL from the startup line.
func (s *localServer) waitListening(t *testing.T) string {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if m := listening.FindStringSubmatch(s.output()); m != nil {
			return m[1]
		}
		select {
		case <-s.exited:
			t.Fatalf("the server ended (%v) without saying it listens:\n%s", s.err, s.output())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("the server never said it listens:\n%s", s.output())
	return ""
}

func TestCurlCommands(t *testing.T) {
	type cmd struct{ line, status int }
	for _, tc := range []struct {
		name, block string
		want        []cmd
		wantErr     string
	}{
		{name: "the status of the comment above",
			block: "# 1. Create: 201 (409 if it exists)\ncurl -i -X POST $B/x -d '{}'\n",
			want:  []cmd{{11, 201}}},
		{name: "a trailing status wins",
			block: "# Admin: 200\ncurl -s $B/a   # listing: 200\ncurl -i -X DELETE $B/b   # clear it: 204\n",
			want:  []cmd{{11, 200}, {12, 204}}},
		{name: "the comment above holds across blank lines and other commands",
			block: "# Read: 200\nX=1\n\ncurl -s $B/a\n",
			want:  []cmd{{13, 200}}},
		{name: "a comment of two lines",
			block: "# 8. Read a list: 200; limit\n#    1..1000\ncurl -s $B/a\n",
			want:  []cmd{{12, 200}}},
		{name: "a body across lines, with a # and a : 404 inside",
			block: "# Batch: 200\ncurl -s $B/batch -d '{\"ops\": [\n  {\"path\": \"a#b: 404\"}]}'\ncurl -s $B/c # next: 201\n",
			want:  []cmd{{11, 200}, {13, 201}}},
		{name: "a continued line",
			block: "# Update: 200\ncurl -i -X PUT $B/a -H \"If-Match: $ETAG\" \\\n     -d '{}'\n",
			want:  []cmd{{11, 200}}},
		{name: "curl inside a command substitution",
			block: "# Create: 201\nCREATED=$(curl -si -X POST $B/a -d '{}')\necho \"$CREATED\" | tr -d '\\r' # not a curl: 400\n",
			want:  []cmd{{11, 201}}},
		{name: "a curl without a status", block: "# Read it\ncurl -s $B/a\n", wantErr: "no status"},
		{name: "two curls on one line", block: "# Copy: 200\ncurl -s $B/a | curl -s -X POST $B/b -d @-\n", wantErr: "2 curl commands"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := curlCommands(tc.block, 10)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var lines []cmd
			for _, c := range got {
				lines = append(lines, cmd{c.line, c.status})
			}
			if fmt.Sprint(lines) != fmt.Sprint(tc.want) {
				t.Errorf("commands (line, status) %v, want %v", lines, tc.want)
			}
		})
	}
}
