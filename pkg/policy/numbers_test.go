package policy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/policy"
	"github.com/udsproject/uds/pkg/uds"
)

// outcome is what policy.Compile and Check make of a schema and a
// document.
type outcome string

const (
	valid     outcome = "valid"      // compiled, data accepted
	invalid   outcome = "invalid"    // compiled, data refused with a *uds.SchemaError
	badSchema outcome = "bad schema" // Compile refused with a *uds.InvalidError
)

// run compiles schema and checks data against it; a panic anywhere fails
// the test with the panic's value rather than ending the test binary.
func run(t *testing.T, schema, data string) (got outcome) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v", r)
		}
	}()
	s, err := policy.Compile(json.RawMessage(schema))
	if err != nil {
		var ie *uds.InvalidError
		if !errors.As(err, &ie) || ie.Field != "schema" {
			t.Fatalf("Compile: %v (%T), want a *uds.InvalidError for the field schema", err, err)
		}
		return badSchema
	}
	err = s.Check(json.RawMessage(data))
	if err == nil {
		return valid
	}
	var se *uds.SchemaError
	if !errors.As(err, &se) || len(se.Violations) == 0 {
		t.Fatalf("Check: %v (%T), want nil or a *uds.SchemaError with violations", err, err)
	}
	return invalid
}

// Numbers past what math/big parses (an exponent beyond a million), and
// numbers with very many digits, in data and in schema keywords.
var (
	// hugeExp is an exponent of 100,000 digits: no int64 holds it.
	hugeExp = strings.Repeat("9", 100_000)
	// schemaExp is an exponent of 50,000 digits, which a schema has room
	// for.
	schemaExp = strings.Repeat("9", 50_000)
	// longInt is 10^400000, written out: 400,001 digits.
	longInt = "1" + strings.Repeat("0", 400_000)
	// longFraction is 10^-400000, written out.
	longFraction = "0." + strings.Repeat("0", 399_999) + "1"
)

func TestHostileNumbers(t *testing.T) {
	for _, c := range []struct {
		name, schema, data string
		want               outcome
	}{
		// minimum and maximum, data beyond math/big.
		{"minimum/huge", `{"minimum":0}`, `1e1000001`, valid},
		{"minimum/huge negative", `{"minimum":0}`, `-1e1000001`, invalid},
		{"minimum/tiny", `{"minimum":0}`, `1e-1000001`, valid},
		{"minimum/tiny negative", `{"minimum":0}`, `-1e-1000001`, invalid},
		{"minimum/zero with a huge exponent", `{"minimum":0}`, `0e1000001`, valid},
		{"minimum/negative zero with a huge exponent", `{"minimum":0}`, `-0.0e-1000001`, valid},
		{"minimum/huge against huge", `{"minimum":1e1000001}`, `1e1000000`, invalid},
		{"minimum/huge equal written otherwise", `{"minimum":1e1000001}`, `0.1e1000002`, valid},
		{"minimum/tiny bound", `{"minimum":1e-1000001}`, `0`, invalid},
		{"minimum/tiny bound equal", `{"minimum":1e-1000001}`, `10e-1000002`, valid},
		{"minimum/tiny bound below", `{"minimum":1e-1000001}`, `9e-1000002`, invalid},
		{"minimum/huge exponent text", `{"minimum":0}`, `1e` + hugeExp, valid},
		{"minimum/huge negative exponent text", `{"minimum":0}`, `-1e` + hugeExp, invalid},
		{"minimum/huge exponent texts compared", `{"minimum":1e5555555555555555555555555}`, `1e5555555555555555555555554`, invalid},
		{"minimum/huge exponent texts compared above", `{"minimum":1e5555555555555555555555555}`, `0.1e5555555555555555555555556`, valid},
		{"minimum/long integer", `{"minimum":1e400000}`, longInt, valid},
		{"minimum/long integer plus one", `{"minimum":1e400000}`, longInt[:len(longInt)-1] + "1", valid},
		{"minimum/long fraction", `{"minimum":1e-400000}`, longFraction, valid},
		{"minimum/long fraction below", `{"minimum":1.0000000000000000000001e-400000}`, longFraction, invalid},
		{"maximum/huge", `{"maximum":0}`, `1e1000001`, invalid},
		{"maximum/huge negative", `{"maximum":0}`, `-1e1000001`, valid},
		{"maximum/tiny", `{"maximum":0}`, `1e-1000001`, invalid},
		{"maximum/zero with a huge exponent", `{"maximum":0}`, `0e1000001`, valid},
		{"maximum/huge bound", `{"maximum":1e1000001}`, `1e1000001`, valid},
		{"maximum/huge bound exceeded", `{"maximum":1e1000001}`, `1.0000000001e1000001`, invalid},
		{"maximum/huge bound exceeded by digits", `{"maximum":1e1000001}`, `99e1000000`, invalid},
		{"maximum/long integer", `{"maximum":1e400000}`, longInt + ".5", invalid},
		{"maximum/negative long integers", `{"maximum":-1e400000}`, "-" + longInt[:len(longInt)-1] + "1", valid},
		{"maximum/huge exponent text", `{"maximum":1e1000001}`, `1e` + hugeExp, invalid},
		{"maximum/huge negative exponent text", `{"maximum":1e-1000001}`, `1e-` + hugeExp, valid},

		// exclusiveMinimum and exclusiveMaximum.
		{"exclusiveMinimum/tiny", `{"exclusiveMinimum":0}`, `1e-1000001`, valid},
		{"exclusiveMinimum/zero with a huge exponent", `{"exclusiveMinimum":0}`, `0e1000001`, invalid},
		{"exclusiveMinimum/tiny negative", `{"exclusiveMinimum":0}`, `-1e-1000001`, invalid},
		{"exclusiveMinimum/huge bound equal", `{"exclusiveMinimum":1e1000001}`, `10e1000000`, invalid},
		{"exclusiveMinimum/huge exponent text", `{"exclusiveMinimum":0}`, `1e-` + hugeExp, valid},
		{"exclusiveMaximum/tiny negative", `{"exclusiveMaximum":0}`, `-1e-1000001`, valid},
		{"exclusiveMaximum/zero with a tiny exponent", `{"exclusiveMaximum":0}`, `0e-1000001`, invalid},
		{"exclusiveMaximum/huge", `{"exclusiveMaximum":0}`, `1e1000001`, invalid},
		{"exclusiveMaximum/huge negative bound equal", `{"exclusiveMaximum":-1e1000001}`, `-1e1000001`, invalid},
		{"exclusiveMaximum/huge negative bound below", `{"exclusiveMaximum":-1e1000001}`, `-1.1e1000001`, valid},
		{"exclusiveMaximum/draft 4 boolean", `{"$schema":"http://json-schema.org/draft-04/schema#","maximum":1e1000001,"exclusiveMaximum":true}`, `1e1000001`, invalid},
		{"exclusiveMaximum/draft 4 boolean below", `{"$schema":"http://json-schema.org/draft-04/schema#","maximum":1e1000001,"exclusiveMaximum":true}`, `9.99e1000000`, valid},
		{"exclusiveMinimum/draft 4 boolean", `{"$schema":"http://json-schema.org/draft-04/schema#","minimum":-1e-1000001,"exclusiveMinimum":true}`, `-1e-1000001`, invalid},

		// multipleOf.
		{"multipleOf/2 of huge", `{"multipleOf":2}`, `1e1000001`, valid},
		{"multipleOf/2 of huge negative", `{"multipleOf":2}`, `-1e1000001`, valid},
		{"multipleOf/2 of tiny", `{"multipleOf":2}`, `1e-1000001`, invalid},
		{"multipleOf/2 of zero with a huge exponent", `{"multipleOf":2}`, `0e1000001`, valid},
		{"multipleOf/2 of zero with a tiny exponent", `{"multipleOf":2}`, `-0e-1000001`, valid},
		{"multipleOf/3 of a power of ten", `{"multipleOf":3}`, `1e1000001`, invalid},
		{"multipleOf/3 of three times a power of ten", `{"multipleOf":3}`, `3e1000001`, valid},
		{"multipleOf/1.5 of huge", `{"multipleOf":1.5}`, `4.5e1000001`, valid},
		{"multipleOf/0.5 of tiny", `{"multipleOf":0.5}`, `5e-1000001`, invalid},
		{"multipleOf/tiny of one", `{"multipleOf":1e-1000001}`, `1`, valid},
		{"multipleOf/tiny of tinier", `{"multipleOf":1e-1000001}`, `1e-1000002`, invalid},
		{"multipleOf/tiny of seven tiny", `{"multipleOf":1e-1000001}`, `7e-1000001`, valid},
		{"multipleOf/huge of itself", `{"multipleOf":1e1000001}`, `1e1000001`, valid},
		{"multipleOf/huge of a tenth of it", `{"multipleOf":1e1000001}`, `1e1000000`, invalid},
		{"multipleOf/huge of zero", `{"multipleOf":1e1000001}`, `0`, valid},
		{"multipleOf/128 of a power of ten", `{"multipleOf":128}`, `1e7`, valid},
		{"multipleOf/128 of a smaller power of ten", `{"multipleOf":128}`, `1e6`, invalid},
		{"multipleOf/0.0128 of 1000", `{"multipleOf":0.0128}`, `1000`, valid},
		{"multipleOf/0.0128 of 100", `{"multipleOf":0.0128}`, `100`, invalid},
		{"multipleOf/7 of a long integer", `{"multipleOf":7}`, "7" + longInt[1:], valid},
		{"multipleOf/7 of a long power of ten", `{"multipleOf":7}`, longInt, invalid},
		{"multipleOf/long fraction", `{"multipleOf":1e-400000}`, longFraction, valid},
		{"multipleOf/huge exponent text", `{"multipleOf":2}`, `1e` + hugeExp, valid},
		{"multipleOf/huge negative exponent text", `{"multipleOf":2}`, `1e-` + hugeExp, invalid},
		{"multipleOf/big divisor", `{"multipleOf":123456789012345678901234567890}`, `246913578024691357802469135780e1000001`, valid},
		{"multipleOf/big divisor not dividing", `{"multipleOf":123456789012345678901234567890}`, `246913578024691357802469135781e1000001`, invalid},

		// type integer.
		{"integer/huge", `{"type":"integer"}`, `1e1000001`, valid},
		{"integer/huge with a fraction", `{"type":"integer"}`, `1.5e1000001`, valid},
		{"integer/huge negative", `{"type":"integer"}`, `-1e1000001`, valid},
		{"integer/tiny", `{"type":"integer"}`, `1e-1000001`, invalid},
		{"integer/zero with a tiny exponent", `{"type":"integer"}`, `0e-1000001`, valid},
		{"integer/long integer", `{"type":"integer"}`, longInt + ".000", valid},
		{"integer/long fraction", `{"type":"integer"}`, longFraction, invalid},
		{"integer/huge exponent text", `{"type":"integer"}`, `1e` + hugeExp, valid},
		{"integer/huge negative exponent text", `{"type":"integer"}`, `1e-` + hugeExp, invalid},

		// const, enum and uniqueItems compare numbers by value.
		{"const/huge written otherwise", `{"const":1e1000001}`, `10e1000000`, valid},
		{"const/huge with a fraction", `{"const":1e1000001}`, `1.0e1000001`, valid},
		{"const/a tenth of huge", `{"const":1e1000001}`, `1e1000000`, invalid},
		{"const/tiny", `{"const":1e-1000001}`, `0.1e-1000000`, valid},
		{"const/zeros", `{"const":0e1000001}`, `-0.0e-1000001`, valid},
		{"const/long integer", `{"const":1e400000}`, longInt, valid},
		{"const/huge exponent text", `{"const":1e` + schemaExp + `}`, `10e` + schemaExp[:len(schemaExp)-1] + `8`, valid},
		{"enum/huge", `{"enum":[1e1000001,2]}`, `100e999999`, valid},
		{"enum/not listed", `{"enum":[1e1000001,2]}`, `3`, invalid},
		{"uniqueItems/few equal", `{"uniqueItems":true}`, `[1e1000001,10e1000000]`, invalid},
		{"uniqueItems/few distinct", `{"uniqueItems":true}`, `[1e1000001,1e1000000,1e-1000001,0e1000001]`, valid},
		{"uniqueItems/many equal", `{"uniqueItems":true}`, manyItems(`1e1000001`, `10e1000000`), invalid},
		{"uniqueItems/many equal zeros", `{"uniqueItems":true}`, manyItems(`0e1000001`, `-0e-1000001`), invalid},
		{"uniqueItems/many distinct", `{"uniqueItems":true}`, manyItems(`1e1000001`, `1e-1000001`), valid},
		{"uniqueItems/many in arrays", `{"uniqueItems":true}`, manyItems(`[1e1000001]`, `[1.0e1000001]`), invalid},
		{"const/a number is not its text", `{"const":"1"}`, `1`, invalid},
		{"uniqueItems/a number is not its text", `{"uniqueItems":true}`, `["1",1]`, valid},

		// Exponents around 10^18, where they stop fitting an int64 and
		// are kept as digits, and sums and differences cross over.
		{"exponents/equal across the boundary", `{"const":1e1000000000000000000}`, `10e999999999999999999`, valid},
		{"exponents/equal back across the boundary", `{"const":1e999999999999999999}`, `0.1e1000000000000000000`, valid},
		{"exponents/ordered across the boundary", `{"minimum":1e1000000000000000000}`, `9.99e999999999999999999`, invalid},
		{"exponents/negative across the boundary", `{"const":1e-1000000000000000000}`, `0.1e-999999999999999999`, valid},
		{"exponents/ordered negative", `{"exclusiveMaximum":1e-1000000000000000000}`, `9e-1000000000000000001`, valid},
		{"exponents/integer at the boundary", `{"type":"integer"}`, `1234e-1000000000000000000`, invalid},
		{"exponents/integer back at the boundary", `{"type":"integer"}`, `1000000000000000000000e-1000000000000000000`, invalid},
		{"multipleOf/large exponents far enough apart", `{"multipleOf":128e1000000000000000000}`, `1e1000000000000000007`, valid},
		{"multipleOf/large exponents one short", `{"multipleOf":128e1000000000000000000}`, `1e1000000000000000006`, invalid},
		{"multipleOf/large exponents one short, made up", `{"multipleOf":128e1000000000000000000}`, `2e1000000000000000006`, valid},
		{"multipleOf/large negative exponents", `{"multipleOf":128e-1000000000000000007}`, `1e-1000000000000000000`, valid},
		{"multipleOf/large negative exponents one short", `{"multipleOf":128e-1000000000000000007}`, `1e-1000000000000000001`, invalid},
		{"multipleOf/large negative exponents one short, made up", `{"multipleOf":128e-1000000000000000007}`, `2e-1000000000000000001`, valid},
		{"multipleOf/exponents across the boundary", `{"multipleOf":128e999999999999999999}`, `1e1000000000000000006`, valid},
		{"multipleOf/exponents across the boundary one short", `{"multipleOf":128e999999999999999999}`, `1e1000000000000000005`, invalid},
		{"multipleOf/exponents across a carry", `{"multipleOf":128e99999999999999999999999}`, `1e100000000000000000000006`, valid},
		{"multipleOf/exponents across a carry one short", `{"multipleOf":128e99999999999999999999999}`, `1e100000000000000000000005`, invalid},
		{"multipleOf/exponents across a carry one short, made up", `{"multipleOf":128e99999999999999999999999}`, `2e100000000000000000000005`, valid},
		{"multipleOf/fives across a carry", `{"multipleOf":625e99999999999999999999999}`, `1e100000000000000000000003`, valid},
		{"multipleOf/fives across a carry one short", `{"multipleOf":625e99999999999999999999999}`, `1e100000000000000000000002`, invalid},
		{"multipleOf/fives across a carry one short, made up", `{"multipleOf":625e99999999999999999999999}`, `5e100000000000000000000002`, valid},
		{"multipleOf/twos in a fraction", `{"multipleOf":0.0016e99999999999999999999999}`, `1e99999999999999999999999`, valid},
		{"multipleOf/twos in a fraction one short", `{"multipleOf":0.0016e99999999999999999999999}`, `1e99999999999999999999998`, invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := run(t, c.schema, c.data); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

// manyItems is an array of the integers 0 to 20 and then a and b: more
// than the 20 items past which uniqueItems compares hashes.
func manyItems(a, b string) string {
	items := make([]string, 0, 23)
	for i := range 21 {
		items = append(items, fmt.Sprint(i))
	}
	return "[" + strings.Join(append(items, a, b), ",") + "]"
}

// TestHostileSchemaKeywords covers keyword values beyond math/big: each
// is either compiled exactly or refused when the schema is compiled, and
// never dropped.
func TestHostileSchemaKeywords(t *testing.T) {
	for _, c := range []struct {
		name, schema, data string
		want               outcome
	}{
		{"minLength huge", `{"minLength":1e1000001}`, `"abc"`, invalid},
		{"maxLength huge", `{"maxLength":1e1000001}`, `"abc"`, valid},
		{"maxItems past int64", `{"maxItems":18446744073709551617}`, `[1,2]`, valid},
		{"minItems past int64", `{"minItems":18446744073709551617}`, `[1,2]`, invalid},
		{"maxProperties huge exponent text", `{"maxProperties":1e` + schemaExp + `}`, `{"a":1}`, valid},
		{"minContains huge", `{"contains":{"type":"integer"},"minContains":1e1000001}`, `[1]`, invalid},
		{"maxLength integral with a fraction", `{"maxLength":2.0}`, `"abc"`, invalid},
		{"maxLength of 18 digits", `{"maxLength":999999999999999999}`, `"abc"`, valid},
		{"minLength of 18 digits", `{"minLength":999999999999999999}`, `"abc"`, invalid},
		{"maxLength of 19 digits", `{"maxLength":1e18}`, `"abc"`, valid},
		{"maxLength small with an exponent", `{"maxLength":0.02e2}`, `"abc"`, invalid},
		{"minItems tiny", `{"minItems":1e-1000001}`, `[]`, badSchema},
		{"minLength huge negative", `{"minLength":-1e1000001}`, `""`, badSchema},
		{"multipleOf zero with a huge exponent", `{"multipleOf":0e1000001}`, `1`, badSchema},
		{"multipleOf huge negative", `{"multipleOf":-1e1000001}`, `1`, badSchema},
		{"minimum huge exponent text", `{"minimum":1e` + schemaExp + `}`, `1e1000001`, invalid},
		{"maximum huge negative exponent text", `{"maximum":-1e-` + schemaExp + `}`, `0`, invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := run(t, c.schema, c.data); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

// TestViolationQuotesNumbersShort: a refusal of a number of a million
// digits names the keyword and the number by its ends and length, so the
// 422 stays small.
func TestViolationQuotesNumbersShort(t *testing.T) {
	s, err := policy.Compile(json.RawMessage(`{"maximum":1e1000001}`))
	if err != nil {
		t.Fatal(err)
	}
	var se *uds.SchemaError
	if !errors.As(s.Check(json.RawMessage(longInt+"e1000001")), &se) || len(se.Violations) != 1 {
		t.Fatalf("10^400000e1000001 accepted under maximum 1e1000001, or refused otherwise: %v", se)
	}
	v := se.Violations[0]
	if want := "maximum: got 100000000000000000000000…0000e1000001 (400009 characters), want 1e1000001"; v.Message != want || v.KeywordLocation != "/maximum" {
		t.Errorf("violation %+v; want the message %q at /maximum", v, want)
	}
}

// hostileBodies are data of about uds.MaxDataBytes made of one number
// (or many) and schemas that make the validator look at every digit.
func hostileBodies() []struct{ name, schema, data string } {
	const n = uds.MaxDataBytes - 16
	digits := strings.Repeat("7", n)
	numeric := `{"type":"integer","minimum":0,"maximum":1e1000001,"multipleOf":7}`
	var many strings.Builder
	many.WriteString("[")
	for i := 0; many.Len() < n; i++ {
		fmt.Fprintf(&many, "%de1000001,", i+1)
	}
	return []struct{ name, schema, data string }{
		{"integer digits", numeric, digits},
		{"fraction digits", numeric, "0." + digits},
		{"exponent digits", numeric, "1e" + digits},
		{"negative exponent digits", numeric, "1e-" + digits},
		{"digits and a two-word divisor", `{"multipleOf":123456789012345678901234567890}`, digits},
		{"digits and a long bound", `{"minimum":0.` + strings.Repeat("7", 60_000) + `8}`, "0." + digits},
		{"many huge numbers unique", `{"uniqueItems":true}`, strings.TrimSuffix(many.String(), ",") + "]"},
	}
}

// TestHostileNumbersCost bounds what checking a body of hostile numbers
// costs by a multiple of decoding it (which Check does first), so the
// bound follows the machine's speed: every number operation must stay
// linear in the text. Converting a million digits to a big.Int or
// big.Rat, as the validator once did, takes a thousand times longer.
func TestHostileNumbersCost(t *testing.T) {
	const factor = 20
	for _, c := range hostileBodies() {
		t.Run(c.name, func(t *testing.T) {
			s, err := policy.Compile(json.RawMessage(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			data := json.RawMessage(c.data)
			decode := fastest(func() {
				var v any
				d := json.NewDecoder(bytes.NewReader(data))
				d.UseNumber()
				if err := d.Decode(&v); err != nil {
					t.Fatal(err)
				}
			})
			check := fastest(func() {
				if err := s.Check(data); err != nil && !errors.Is(err, uds.ErrSchema) {
					t.Fatal(err)
				}
			})
			t.Logf("checking took %v, decoding %v", check, decode)
			if check > factor*decode {
				t.Errorf("checking took %v, more than %d times decoding (%v)", check, factor, decode)
			}
		})
	}
}

// fastest is the shortest of three runs of f, the one least disturbed by
// whatever else the machine does.
func fastest(f func()) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range 3 {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

func BenchmarkCheckHostileNumbers(b *testing.B) {
	bodies := hostileBodies()
	// The worst case within the limits: a divisor of 60,000 digits (near
	// MaxSchemaBytes) prime to 10, and a megabyte of digits to divide.
	bodies = append(bodies, struct{ name, schema, data string }{
		"digits and a 60,000-digit divisor",
		`{"multipleOf":` + strings.Repeat("7", 60_000) + `}`,
		strings.Repeat("7", uds.MaxDataBytes-16),
	})
	for _, c := range bodies {
		b.Run(c.name, func(b *testing.B) {
			s, err := policy.Compile(json.RawMessage(c.schema))
			if err != nil {
				b.Fatal(err)
			}
			data := json.RawMessage(c.data)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := s.Check(data); err != nil && !errors.Is(err, uds.ErrSchema) {
					b.Fatal(err)
				}
			}
		})
	}
}
