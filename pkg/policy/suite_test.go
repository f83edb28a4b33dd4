package policy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/policy"
	"github.com/udsproject/uds/pkg/uds"
)

// suiteDir holds the official JSON-Schema-Test-Suite's tests for the
// drafts UDS accepts (testdata/JSON-Schema-Test-Suite/README.md says which
// commit).
const suiteDir = "testdata/JSON-Schema-Test-Suite/tests"

// knownFailuresFile lists the suite's tests that UDS fails, each with the
// reason.
const knownFailuresFile = "testdata/suite-known-failures.json"

// suiteDrafts are the suite's directories for the drafts UDS accepts, and
// the $schema that selects each (UDS defaults to 2020-12; the suite's
// draft 4 to 7 schemas name no draft).
var suiteDrafts = []struct{ dir, metaschema string }{
	{"draft4", "http://json-schema.org/draft-04/schema#"},
	{"draft6", "http://json-schema.org/draft-06/schema#"},
	{"draft7", "http://json-schema.org/draft-07/schema#"},
	{"draft2019-09", "https://json-schema.org/draft/2019-09/schema"},
	{"draft2020-12", "https://json-schema.org/draft/2020-12/schema"},
}

// suiteOptional are the optional files that run besides the required
// ones: those about numbers. The other optional files test behaviour
// the specifications leave to implementations (format assertion, the
// ECMA-262 regular expression dialect, unknown keywords, remote
// metaschemas); UDS's choices there are documented, not measured against
// the suite.
var suiteOptional = []string{"optional/bignum.json", "optional/float-overflow.json"}

type suiteCase struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// knownFailure names one test of the suite, by file (under suiteDir),
// case description and test description, and says why UDS fails it.
type knownFailure struct {
	File   string `json:"file"`
	Case   string `json:"case"`
	Test   string `json:"test"`
	Reason string `json:"reason"`
}

type suiteKey struct{ file, kase, test string }

// TestJSONSchemaTestSuite runs the official test suite through
// policy.Compile and Check, as UDS validates namespace data. UDS refuses
// remote references (and so remote metaschemas) and takes only a JSON
// object as a schema, so the suite's tests that need those fail by
// design; they and any other failure are listed in knownFailuresFile with
// a reason. The test fails on a failure that is not listed and on a
// listed failure that passes, so the list stays true.
func TestJSONSchemaTestSuite(t *testing.T) {
	if _, err := os.Stat(suiteDir); err != nil {
		t.Fatalf("the JSON Schema test suite is missing: %v", err)
	}
	known := map[suiteKey]string{}
	raw, err := os.ReadFile(knownFailuresFile)
	if err != nil {
		t.Fatal(err)
	}
	var list []knownFailure
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("%s: %v", knownFailuresFile, err)
	}
	for _, k := range list {
		key := suiteKey{k.File, k.Case, k.Test}
		if _, dup := known[key]; dup || k.Reason == "" {
			t.Fatalf("%s: %+v is listed twice or without a reason", knownFailuresFile, k)
		}
		known[key] = k.Reason
	}

	seen := map[suiteKey]bool{}
	var passed, failed int
	for _, d := range suiteDrafts {
		files, err := filepath.Glob(filepath.Join(suiteDir, d.dir, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no tests for %s under %s: %v", d.dir, suiteDir, err)
		}
		for _, o := range suiteOptional {
			files = append(files, filepath.Join(suiteDir, d.dir, o))
		}
		for _, path := range files {
			file := filepath.ToSlash(strings.TrimPrefix(path, suiteDir+string(filepath.Separator)))
			for _, c := range readSuiteFile(t, path) {
				outcomes := runSuiteCase(d.metaschema, c)
				for i, test := range c.Tests {
					key := suiteKey{file, c.Description, test.Description}
					if seen[key] {
						t.Fatalf("%s: %q / %q occurs twice: known failures could not tell them apart", file, c.Description, test.Description)
					}
					seen[key] = true
					got := outcomes[i]
					reason, listed := known[key]
					switch {
					case got.pass(test.Valid) && listed:
						t.Errorf("%s: %q / %q passes now; remove it from %s (it was listed because: %s)", file, c.Description, test.Description, knownFailuresFile, reason)
					case !got.pass(test.Valid) && !listed:
						t.Errorf("%s: %q / %q: want valid=%v, got %s", file, c.Description, test.Description, test.Valid, got)
					}
					if got.pass(test.Valid) {
						passed++
					} else {
						failed++
					}
				}
			}
		}
	}
	for key := range known {
		if !seen[key] {
			t.Errorf("%s lists %q / %q / %q, which the suite does not have", knownFailuresFile, key.file, key.kase, key.test)
		}
	}
	t.Logf("%d tests passed, %d failed as listed", passed, failed)
}

func readSuiteFile(t *testing.T, path string) []suiteCase {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []suiteCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cases
}

// suiteOutcome is what UDS made of one test: the schema refused, the data
// valid or invalid, or an error of another kind (always a failure).
type suiteOutcome struct {
	refused  error
	valid    bool
	unwanted error
}

func (o suiteOutcome) pass(valid bool) bool {
	return o.refused == nil && o.unwanted == nil && o.valid == valid
}

func (o suiteOutcome) String() string {
	switch {
	case o.refused != nil:
		return "schema refused: " + o.refused.Error()
	case o.unwanted != nil:
		return fmt.Sprintf("an error that is no *uds.SchemaError: %v", o.unwanted)
	default:
		return fmt.Sprintf("valid=%v", o.valid)
	}
}

// runSuiteCase compiles the case's schema, naming the draft unless it
// names one itself, and checks each test's data: one outcome per test. A
// panic fails the whole test run, as it would fail a UDS request.
func runSuiteCase(metaschema string, c suiteCase) []suiteOutcome {
	out := make([]suiteOutcome, len(c.Tests))
	s, err := policy.Compile(withDraft(c.Schema, metaschema))
	if err != nil {
		for i := range out {
			out[i].refused = err
		}
		return out
	}
	for i, test := range c.Tests {
		err := s.Check(test.Data)
		var se *uds.SchemaError
		switch {
		case err == nil:
			out[i].valid = true
		case !errors.As(err, &se):
			out[i].unwanted = err
		}
	}
	return out
}

// withDraft adds "$schema" to an object schema that has none, as a UDS
// administrator selects the draft.
func withDraft(schema json.RawMessage, metaschema string) json.RawMessage {
	var members map[string]json.RawMessage
	if json.Unmarshal(schema, &members) != nil {
		return schema // a boolean schema: refused either way
	}
	if _, ok := members["$schema"]; ok {
		return schema
	}
	head := fmt.Sprintf(`{"$schema":%q`, metaschema)
	body := bytes.TrimSpace(schema)[1:] // after the opening brace
	if len(members) > 0 {
		head += ","
	}
	return json.RawMessage(head + string(body))
}
