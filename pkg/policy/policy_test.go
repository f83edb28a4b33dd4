package policy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/udsproject/uds/pkg/policy"
	"github.com/udsproject/uds/pkg/uds"
)

// TestFirstCompilesAreChecked runs first in this package: the metaschemas
// are compiled on first use (third_party/jsonschema), and schemas
// compiled concurrently with that first use must still be checked
// against them.
func TestFirstCompilesAreChecked(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = policy.Compile(json.RawMessage(`{"type":12}`))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, uds.ErrInvalid) {
			t.Errorf("compile %d of an invalid schema: %v", i, err)
		}
	}
}

func TestDraft(t *testing.T) {
	for _, c := range []struct {
		metaschema, want string
		ok               bool
	}{
		{"https://json-schema.org/draft/2020-12/schema", "2020-12", true},
		{"http://json-schema.org/draft/2020-12/schema#", "2020-12", true},
		{"https://json-schema.org/draft/2019-09/schema", "2019-09", true},
		{"http://json-schema.org/draft-07/schema#", "7", true},
		{"https://json-schema.org/draft-07/schema", "7", true},
		{"http://json-schema.org/draft-06/schema#", "6", true},
		{"http://json-schema.org/draft-04/schema#", "4", true},
		{"http://json-schema.org/draft-03/schema#", "", false},
		{"http://json-schema.org/schema#", "", false},
		{"json-schema.org/draft-07/schema", "", false},
		{"https://example.com/draft-07/schema", "", false},
	} {
		t.Run(c.metaschema, func(t *testing.T) {
			got, ok := policy.Draft(c.metaschema)
			if got != c.want || ok != c.ok {
				t.Errorf("Draft = %q, %v; want %q, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	s, err := policy.Compile(json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"integer"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(json.RawMessage(`{"name":"a","tags":[1,2]}`)); err != nil {
		t.Errorf("valid data refused: %v", err)
	}
	err = s.Check(json.RawMessage(`{"tags":[1,"x"]}`))
	var se *uds.SchemaError
	if !errors.As(err, &se) || !errors.Is(err, uds.ErrSchema) {
		t.Fatalf("got %v, want a *uds.SchemaError", err)
	}
	got := map[string]string{}
	for _, v := range se.Violations {
		got[v.InstanceLocation] = v.KeywordLocation
		if v.Message == "" {
			t.Errorf("violation without a message: %+v", v)
		}
	}
	if got[""] != "/required" || got["/tags/1"] != "/properties/tags/items/type" {
		t.Errorf("violations %+v", se.Violations)
	}
}

func TestCheckCapsViolations(t *testing.T) {
	s, err := policy.Compile(json.RawMessage(`{"type":"array","items":{"type":"string"}}`))
	if err != nil {
		t.Fatal(err)
	}
	data := "[" + strings.TrimSuffix(strings.Repeat("1,", 100), ",") + "]"
	var se *uds.SchemaError
	if !errors.As(s.Check(json.RawMessage(data)), &se) {
		t.Fatal("100 wrong items accepted")
	}
	if n := len(se.Violations); n != policy.MaxViolations+1 || !strings.Contains(se.Violations[n-1].Message, "left out") {
		t.Errorf("%d violations, the last %+v; want %d and a note", n, se.Violations[n-1], policy.MaxViolations)
	}
}

func TestCacheCompilesOnce(t *testing.T) {
	var c policy.Cache
	raw := json.RawMessage(`{"type":"integer"}`)
	a, err := c.Schema(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Schema(json.RawMessage(`{"type":"integer"}`))
	if a != b {
		t.Error("the same schema text was compiled twice")
	}
	if other, _ := c.Schema(json.RawMessage(`{"type":"string"}`)); other == a {
		t.Error("another schema got the first one's compiled form")
	}
	if _, err := c.Schema(json.RawMessage(`{"$ref":"https://example.com/x.json"}`)); !errors.Is(err, uds.ErrInvalid) {
		t.Errorf("remote reference: %v", err)
	}
}

// twentyProperties is a schema of 20 typed properties and a 1 KB document
// that matches it: what the issue names as the validation cost to measure.
func twentyProperties() (schema, doc json.RawMessage) {
	props := make([]string, 20)
	fields := make([]string, 20)
	for i := range props {
		switch i % 4 {
		case 0:
			props[i] = fmt.Sprintf(`"s%d":{"type":"string","maxLength":200}`, i)
			fields[i] = fmt.Sprintf(`"s%d":%q`, i, strings.Repeat("x", 150))
		case 1:
			props[i] = fmt.Sprintf(`"s%d":{"type":"integer","minimum":0}`, i)
			fields[i] = fmt.Sprintf(`"s%d":%d`, i, 1000+i)
		case 2:
			props[i] = fmt.Sprintf(`"s%d":{"type":"array","items":{"type":"number"}}`, i)
			fields[i] = fmt.Sprintf(`"s%d":[1.5,2.5,3.5,4.5]`, i)
		default:
			props[i] = fmt.Sprintf(`"s%d":{"enum":["red","green","blue"]}`, i)
			fields[i] = fmt.Sprintf(`"s%d":"green"`, i)
		}
	}
	schema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["s0","s1"],"properties":{` + strings.Join(props, ",") + `}}`)
	doc = json.RawMessage(`{` + strings.Join(fields, ",") + `}`)
	if len(doc) < 1000 || len(doc) > 1100 {
		panic(fmt.Sprintf("the document takes %d bytes, not about 1 KB", len(doc)))
	}
	return schema, doc
}

func BenchmarkCheck1KBTwentyProperties(b *testing.B) {
	schema, doc := twentyProperties()
	s, err := policy.Compile(schema)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Check(doc); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Check(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompileTwentyProperties(b *testing.B) {
	schema, _ := twentyProperties()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := policy.Compile(schema); err != nil {
			b.Fatal(err)
		}
	}
}

// A schema whose references and in-place keywords lead back to where
// they started, at the same place in the value, is refused when the
// policy is set: the validator would stop every value reaching it as a
// reference cycle, with no violation to show. Recursion that moves into
// the value (a tree's children) is what references are for.
func TestCheckAppliesRefusesInPlaceCycles(t *testing.T) {
	for _, tc := range []struct {
		name, schema, at string
	}{
		{"a definition referring to itself", `{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, "#/$defs/a"},
		{"the root referring to itself", `{"type":"object","$ref":"#"}`, "#"},
		{"a property referring to itself", `{"properties":{"x":{"$ref":"#/properties/x"}}}`, "#/properties/x"},
		{"through allOf and anyOf", `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"$ref":"#/$defs/a"}]}},"items":{"$ref":"#/$defs/a"}}`, "#/$defs/"},
		{"through not and if", `{"$defs":{"a":{"not":{"if":{"$ref":"#/$defs/a"}}}},"additionalProperties":{"$ref":"#/$defs/a"}}`, "#/$defs/a"},
		{"through dependentSchemas", `{"dependentSchemas":{"k":{"$ref":"#"}}}`, "#"},
		{"in draft 4's dependencies", `{"$schema":"http://json-schema.org/draft-04/schema#","dependencies":{"k":{"$ref":"#"}}}`, "#"},
		{"a tree", `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`, ""},
		{"a linked list through $defs", `{"$defs":{"node":{"properties":{"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"}`, ""},
		{"a definition used twice", `{"$defs":{"n":{"type":"integer"}},"allOf":[{"$ref":"#/$defs/n"},{"not":{"$ref":"#/$defs/n"}}]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := policy.Compile(json.RawMessage(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			err = s.CheckApplies()
			var invalid *uds.InvalidError
			switch {
			case tc.at == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.at == "":
			case !errors.As(err, &invalid) || invalid.Field != "schema" || !strings.Contains(invalid.Reason, tc.at):
				t.Fatalf("answered %v, want the schema refused at %s", err, tc.at)
			}
			// The check agrees with the validator: a schema it refuses
			// refuses a value that reaches the cycle.
			if tc.at == "" {
				return
			}
			refused := 0
			for _, v := range []string{`null`, `{"x":1,"k":1,"y":{}}`, `[1]`} {
				if s.Check(json.RawMessage(v)) != nil {
					refused++
				}
			}
			if refused == 0 {
				t.Fatalf("the validator refuses none of the values")
			}
		})
	}
}
