package jsonpatch

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
)

// equalJSON reports whether two valid JSON texts are the same value, as
// RFC 6902's test operation compares them (section 4.6): objects with the
// same members in any order, arrays element by element, strings by their
// characters (escapes decoded), and numbers by their value, exactly
// (1, 1.0 and 10e-1 are equal; no float64 rounding makes two different
// numbers equal).
func equalJSON(a, b []byte) bool {
	va, err := decodeValue(a)
	if err != nil {
		return false
	}
	vb, err := decodeValue(b)
	if err != nil {
		return false
	}
	return valuesEqual(va, vb)
}

func decodeValue(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func valuesEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !valuesEqual(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !valuesEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		return ok && numbersEqual(string(a), string(b))
	case string:
		b, ok := b.(string)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case nil:
		return b == nil
	}
	return false
}

// numbersEqual compares two JSON numbers by their exact values.
func numbersEqual(a, b string) bool {
	return a == b || normalNumber(a) == normalNumber(b)
}

// normalNumber writes a JSON number as sign, significant digits without
// leading or trailing zeros, and the exponent that goes with them, so
// that two numbers are equal when these are. Zero is "0" whatever its
// sign.
func normalNumber(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	e := new(big.Int)
	if exp != "" {
		e.SetString(strings.TrimPrefix(exp, "+"), 10)
	}
	e.Sub(e, big.NewInt(int64(len(frac))))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	e.Add(e, big.NewInt(int64(len(digits)-len(trimmed))))
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + e.String()
}
