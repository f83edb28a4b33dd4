// Package policy compiles the JSON Schemas of namespace policies and checks
// data against them. It uses github.com/santhosh-tekuri/jsonschema/v6,
// patched in third_party/jsonschema; TestJSONSchemaTestSuite runs the
// official JSON Schema test suite through Compile and Check for every
// draft UDS accepts.
package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/udsproject/uds/pkg/uds"
)

// MaxSchemaBytes bounds a policy's schema (compacted JSON).
const MaxSchemaBytes = 64 << 10

// MaxViolations bounds the violations a refusal lists; past it the list
// ends with a note of how many were left out.
const MaxViolations = 20

// drafts are the $schema values UDS accepts, without scheme and empty
// fragment (either scheme and either form are accepted), and the names
// error messages give them.
var drafts = map[string]string{
	"json-schema.org/draft/2020-12/schema": "2020-12",
	"json-schema.org/draft/2019-09/schema": "2019-09",
	"json-schema.org/draft-07/schema":      "7",
	"json-schema.org/draft-06/schema":      "6",
	"json-schema.org/draft-04/schema":      "4",
}

// Draft names the draft a $schema value selects: false for one UDS does
// not accept.
func Draft(metaschema string) (string, bool) {
	u := strings.TrimSuffix(metaschema, "#")
	u, ok := strings.CutPrefix(u, "https://")
	if !ok {
		u, ok = strings.CutPrefix(u, "http://")
	}
	name, known := drafts[u]
	if !ok || !known {
		return "", false
	}
	return name, true
}

// resourceURL names the schema being compiled: references relative to it
// resolve under a host that does not exist, and so are refused like any
// other reference outside the schema.
const resourceURL = "https://schema.uds.invalid/namespace.json"

// Schema is a compiled JSON Schema.
type Schema struct {
	compiled *jsonschema.Schema
}

// Compile checks and compiles a policy's schema: a JSON object of at most
// MaxSchemaBytes, draft 2020-12 unless its $schema names 2019-09, 7, 6 or
// 4, without references outside itself. What is wrong is an
// *uds.InvalidError for the field "schema".
func Compile(raw json.RawMessage) (*Schema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, uds.Invalid("schema", "takes %d bytes; at most %d are allowed", len(raw), MaxSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, uds.Invalid("schema", "is not JSON: %v", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, uds.Invalid("schema", "must be a JSON object (a JSON Schema) or null")
	}
	if v, ok := obj["$schema"]; ok {
		name, _ := v.(string)
		if _, known := Draft(name); !known {
			return nil, uds.Invalid("schema", "$schema %q names no supported draft; use https://json-schema.org/draft/2020-12/schema, .../draft/2019-09/schema, http://json-schema.org/draft-07/schema#, .../draft-06/schema# or .../draft-04/schema#", fmt.Sprint(v))
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseRemote{})
	if err := c.AddResource(resourceURL, doc); err != nil {
		return nil, uds.Invalid("schema", "%v", err)
	}
	compiled, err := c.Compile(resourceURL)
	if err != nil {
		var remote *jsonschema.LoadURLError
		if errors.As(err, &remote) {
			return nil, uds.Invalid("schema", "refers to %s, outside the schema; remote references are not allowed (put the definitions under $defs)", remote.URL)
		}
		return nil, uds.Invalid("schema", "is not a valid JSON Schema: %v", err)
	}
	return &Schema{compiled: compiled}, nil
}

// refuseRemote is the loader of schema resources: UDS never fetches or
// reads anything a schema refers to.
type refuseRemote struct{}

func (refuseRemote) Load(string) (any, error) {
	return nil, errors.New("remote references are not allowed")
}

// Check validates data, JSON that was already checked to be well formed,
// against the schema: nil or a *uds.SchemaError.
func (s *Schema) Check(data json.RawMessage) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &uds.SchemaError{Violations: []uds.Violation{{Message: "data is not JSON: " + err.Error()}}}
	}
	err = s.compiled.Validate(doc)
	var invalid *jsonschema.ValidationError
	if !errors.As(err, &invalid) {
		return err
	}
	var out []uds.Violation
	for _, u := range invalid.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		if len(out) == MaxViolations {
			out = append(out, uds.Violation{Message: "more violations were left out"})
			break
		}
		out = append(out, uds.Violation{InstanceLocation: u.InstanceLocation, KeywordLocation: u.KeywordLocation, Message: u.Error.String()})
	}
	return &uds.SchemaError{Violations: out}
}

// maxCached bounds the compiled schemas a Cache keeps; past it, it starts
// over.
const maxCached = 1000

// Cache keeps compiled schemas by their text, so that a container compiles
// each policy's schema once, whichever request meets it first.
type Cache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*Schema
}

// Schema returns the compiled form of raw, compiling it on first use.
func (c *Cache) Schema(raw json.RawMessage) (*Schema, error) {
	sum := sha256.Sum256(raw)
	c.mu.Lock()
	s, ok := c.m[sum]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := Compile(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[[sha256.Size]byte]*Schema{}
	}
	c.m[sum] = s
	c.mu.Unlock()
	return s, nil
}
