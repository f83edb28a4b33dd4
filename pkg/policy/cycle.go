package policy

import (
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/udsproject/uds/pkg/uds"
)

// CheckApplies refuses a schema that some value could never be validated
// against: one whose references and in-place keywords (allOf, anyOf,
// oneOf, not, if, then, else, dependentSchemas) lead back to a schema
// without moving into the value, which the validator stops as a
// reference cycle, refusing the value with no violation to show. A
// policy's schema is checked so when it is set; a schema stored before is
// only compiled, so that its namespace answers as it did.
func (s *Schema) CheckApplies() error {
	if at := inPlaceCycle(s.compiled); at != "" {
		return uds.Invalid("schema", "applies %s to the value it is applying to, without end ($ref, allOf, anyOf, oneOf, not, if, then, else or dependentSchemas lead back to it at the same place in the data): no value could be validated there", at)
	}
	return nil
}

// inPlaceCycle returns the location of a schema reachable from root that
// applies itself to the same place in the value through in-place
// keywords alone, or "" when there is none.
func inPlaceCycle(root *jsonschema.Schema) string {
	const (
		unseen = iota
		open   // on the path of in-place keywords being followed
		done
	)
	state := map[*jsonschema.Schema]int{}
	var cycleAt func(s *jsonschema.Schema) string
	cycleAt = func(s *jsonschema.Schema) string {
		switch state[s] {
		case open:
			return s.Location
		case done:
			return ""
		}
		state[s] = open
		for _, next := range inPlace(s) {
			if at := cycleAt(next); at != "" {
				return at
			}
		}
		state[s] = done
		return ""
	}
	// Every schema reachable from the root is the start of a path: a
	// value reaches it through the keywords that move into the value.
	seen := map[*jsonschema.Schema]bool{root: true}
	for queue := []*jsonschema.Schema{root}; len(queue) > 0; queue = queue[1:] {
		s := queue[0]
		if at := cycleAt(s); at != "" {
			return strings.TrimPrefix(at, resourceURL)
		}
		for _, next := range append(inPlace(s), inValue(s)...) {
			if !seen[next] {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	return ""
}

// inPlace are the schemas s applies to the same place in the value.
func inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(append(append(out, s.AllOf...), s.AnyOf...), s.OneOf...)
	for _, d := range s.DependentSchemas {
		out = append(out, d)
	}
	for _, d := range s.Dependencies {
		out = append(out, schemaOf(d))
	}
	return present(out)
}

// inValue are the schemas s applies to members, elements, names or the
// decoded content of the value.
func inValue(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema,
		schemaOf(s.AdditionalProperties), schemaOf(s.AdditionalItems)}
	for _, p := range s.Properties {
		out = append(out, p)
	}
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		out = append(out, items)
	case []*jsonschema.Schema:
		out = append(out, items...)
	}
	return present(append(out, s.PrefixItems...))
}

// schemaOf is v if it is a schema (a keyword that also takes a boolean or
// a list of names), else nil.
func schemaOf(v any) *jsonschema.Schema {
	s, _ := v.(*jsonschema.Schema)
	return s
}

// present leaves out the nil schemas of keywords a schema does not use.
func present(ss []*jsonschema.Schema) []*jsonschema.Schema {
	out := ss[:0]
	for _, s := range ss {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}
