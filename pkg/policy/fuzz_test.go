package policy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/policy"
	"github.com/udsproject/uds/pkg/uds"
)

// FuzzCheck compiles a schema and checks a document against it: neither
// may panic, a refused schema is a *uds.InvalidError and refused data a
// *uds.SchemaError.
func FuzzCheck(f *testing.F) {
	twenty, doc := twentyProperties()
	for _, seed := range []struct{ schema, data string }{
		{string(twenty), string(doc)},
		{`{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"integer"}}}}`, `{"name":"a","tags":[1,"x"]}`},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","maximum":10,"exclusiveMaximum":true,"multipleOf":0.5}`, `9.5`},
		{`{"$defs":{"n":{"type":"number","minimum":-1e1000001}},"type":"array","items":{"$ref":"#/$defs/n"},"uniqueItems":true}`, `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,1e1000001,10e1000000]`},
		{`{"minimum":0,"maximum":1e1000001,"multipleOf":3}`, `1e1000001`},
		{`{"exclusiveMinimum":1e-1000001,"exclusiveMaximum":0}`, `-1e-1000001`},
		{`{"type":"integer","const":0e1000001}`, `-0.0e-1000001`},
		{`{"enum":[1e1000001,1e-1000001],"multipleOf":1e-1000001}`, `1e1000001`},
		{`{"minLength":1e1000001,"maxItems":18446744073709551617}`, `"x"`},
		{`{"multipleOf":128e99999999999999999999999}`, `2e100000000000000000000005`},
		{`{"minimum":1e` + strings.Repeat("9", 40) + `}`, `1e-` + strings.Repeat("9", 41)},
		{`{"multipleOf":7}`, `7` + strings.Repeat("0", 300)},
	} {
		f.Add(seed.schema, seed.data)
	}
	f.Fuzz(func(t *testing.T, schema, data string) {
		s, err := policy.Compile(json.RawMessage(schema))
		if err != nil {
			var ie *uds.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("Compile(%q): %v (%T), want a *uds.InvalidError", schema, err, err)
			}
			return
		}
		// Check takes data that the API has checked to be JSON.
		if !json.Valid([]byte(data)) {
			return
		}
		if err := s.Check(json.RawMessage(data)); err != nil {
			var se *uds.SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("Check(%q) against %q: %v (%T), want nil or a *uds.SchemaError", data, schema, err, err)
			}
		}
	})
}

// FuzzNumbersAgreeWithBigRat checks the validator's exact decimals
// against big.Rat arithmetic on numbers small enough for it: every
// number keyword with bound m must judge x as the rationals do.
func FuzzNumbersAgreeWithBigRat(f *testing.F) {
	for _, seed := range [][2]string{
		{"0.1", "0.10"},
		{"1e-3", "0.001"},
		{"-0", "0"},
		{"128", "1e7"},
		{"0.0128", "1000"},
		{"3", "1e2"},
		{"1.5", "4.5e1"},
		{"7", "-14e0"},
		{"0.3", "0.9"},
		{"972783798187987123879878123.18878137", "972783798187987123879878123.188781371"},
		{"18446744073709551615", "18446744073709551600"},
		{"2.5E+2", "250"},
		{"-1.25e-2", "-0.0125"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, bound, data string) {
		m, ok1 := smallRat(bound)
		x, ok2 := smallRat(data)
		if !ok1 || !ok2 {
			return
		}
		c := x.Cmp(m)
		want := map[string]bool{
			`{"minimum":%s}`:          c >= 0,
			`{"maximum":%s}`:          c <= 0,
			`{"exclusiveMinimum":%s}`: c > 0,
			`{"exclusiveMaximum":%s}`: c < 0,
			`{"const":%s}`:            c == 0,
			`{"enum":[%s]}`:           c == 0,
		}
		if m.Sign() > 0 {
			want[`{"multipleOf":%s}`] = new(big.Rat).Quo(x, m).IsInt()
		}
		for keyword, valid := range want {
			schema := strings.Replace(keyword, "%s", bound, 1)
			s, err := policy.Compile(json.RawMessage(schema))
			if err != nil {
				t.Fatalf("Compile(%s): %v", schema, err)
			}
			if got := s.Check(json.RawMessage(data)) == nil; got != valid {
				t.Errorf("%s judged %s valid=%v; big.Rat says %v", schema, data, got, valid)
			}
		}
		integer, err := policy.Compile(json.RawMessage(`{"type":"integer"}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := integer.Check(json.RawMessage(data)) == nil; got != x.IsInt() {
			t.Errorf("type integer judged %s valid=%v; big.Rat says %v", data, got, x.IsInt())
		}
	})
}

// smallRat is s as a big.Rat when s is one JSON number of at most 60
// characters with an exponent of at most 3 digits: cheap for big.Rat.
func smallRat(s string) (*big.Rat, bool) {
	if len(s) > 60 {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || d.More() {
		return nil, false
	}
	n, ok := v.(json.Number)
	if !ok || string(n) != s {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(s[i+1:], "+-")) > 3 {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}
