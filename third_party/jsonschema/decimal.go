package jsonschema

// UDS patch: this file is new. Numbers are exact decimals of any size.
//
// Upstream turned every number into a big.Rat with Rat.SetString, which
// fails past an exponent of a million (the nil result was dereferenced:
// a panic, or a schema keyword silently dropped) and takes time and memory
// that grow with the exponent and quadratically with the digits. A
// Decimal keeps the digits as text and the exponent as an integer of any
// size, so that comparisons, equality, hashing, integer-ness and
// multipleOf are exact and take time linear in the text (multipleOf: in
// the data's digits times the divisor's).

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// Decimal is a JSON number, exactly: (-1)^neg × coef × 10^exp.
type Decimal struct {
	// text is the number as written, for messages.
	text string
	neg  bool
	// coef holds the significant digits: no leading or trailing zeros,
	// "" for zero (which is never negative and has exponent 0).
	coef string
	exp  bigInt
}

// errNotNumber is a value of a Go number type that is no JSON number
// (NaN, an infinity) or a json.Number that is not one.
var errNotNumber = errors.New("not a JSON number")

// parseDecimal reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func parseDecimal(text string) (*Decimal, error) {
	s := text
	d := &Decimal{text: text}
	if strings.HasPrefix(s, "-") {
		d.neg = true
		s = s[1:]
	}
	intEnd := digitsEnd(s)
	intPart := s[:intEnd]
	if intPart == "" || (intPart[0] == '0' && len(intPart) > 1) {
		return nil, errNotNumber
	}
	s = s[intEnd:]
	var frac string
	if strings.HasPrefix(s, ".") {
		n := digitsEnd(s[1:])
		if n == 0 {
			return nil, errNotNumber
		}
		frac, s = s[1:1+n], s[1+n:]
	}
	exp := bigInt{}
	if s != "" {
		if s[0] != 'e' && s[0] != 'E' {
			return nil, errNotNumber
		}
		s = s[1:]
		expNeg := false
		if s != "" && (s[0] == '+' || s[0] == '-') {
			expNeg = s[0] == '-'
			s = s[1:]
		}
		if s == "" || digitsEnd(s) != len(s) {
			return nil, errNotNumber
		}
		exp = parseBigInt(expNeg, s)
	}

	// The value is intPart.frac × 10^exp = (intPart frac) × 10^(exp - len(frac)).
	coef := intPart
	if frac != "" {
		coef = intPart + frac
	}
	coef = strings.TrimLeft(coef, "0")
	trimmed := strings.TrimRight(coef, "0")
	if trimmed == "" {
		return &Decimal{text: text}, nil
	}
	d.coef = trimmed
	d.exp = exp.add(int64(len(coef)-len(trimmed)) - int64(len(frac)))
	return d, nil
}

// digitsEnd is the length of the run of ASCII digits s starts with.
func digitsEnd(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return i
		}
	}
	return len(s)
}

// toDecimal reads a number of the instance or schema: a json.Number (what
// UnmarshalJSON yields) or a Go number, as fmt prints it.
func toDecimal(v any) (*Decimal, error) {
	if n, ok := v.(json.Number); ok {
		return parseDecimal(string(n))
	}
	return parseDecimal(fmt.Sprint(v))
}

// String is the number as written, shortened past 40 characters.
func (d *Decimal) String() string {
	return abbreviate(d.text)
}

// abbreviate shortens a number's text past 40 characters, so that a
// message quoting a number of a million digits stays short.
func abbreviate(text string) string {
	if len(text) <= 40 {
		return text
	}
	return fmt.Sprintf("%s…%s (%d characters)", strings.ToValidUTF8(text[:24], ""), strings.ToValidUTF8(text[len(text)-12:], ""), len(text))
}

// InvalidNumberError is a number keyword of a schema that the validator
// cannot use: compiling the schema fails rather than drop the keyword.
type InvalidNumberError struct {
	URL    string // the keyword's location
	Value  string // the number, abbreviated
	Reason string
}

func (e *InvalidNumberError) Error() string {
	return fmt.Sprintf("%s at %q %s", e.Value, e.URL, e.Reason)
}

// sign is -1, 0 or +1.
func (d *Decimal) sign() int {
	switch {
	case d.coef == "":
		return 0
	case d.neg:
		return -1
	default:
		return 1
	}
}

// isInt tells whether d is an integer: with the coefficient's trailing
// zeros moved into the exponent, whether the exponent is not negative.
func (d *Decimal) isInt() bool {
	return d.exp.sign() >= 0
}

// cmp compares d and e: -1, 0 or +1.
func (d *Decimal) cmp(e *Decimal) int {
	ds, es := d.sign(), e.sign()
	if ds != es {
		return cmpInt(ds, es)
	}
	if ds == 0 {
		return 0
	}
	return ds * cmpAbs(d, e)
}

// cmpAbs compares |d| and |e|, both non-zero. |d| lies in
// [10^(a-1), 10^a) for a = exp + len(coef), its count of integer digits
// (or minus its leading fractional zeros); where those agree, the
// coefficients decide, compared as digit strings (they have no trailing
// zeros, so a prefix is the smaller).
func cmpAbs(d, e *Decimal) int {
	if c := d.exp.add(int64(len(d.coef))).cmp(e.exp.add(int64(len(e.coef)))); c != 0 {
		return c
	}
	return strings.Compare(d.coef, e.coef)
}

func (d *Decimal) equal(e *Decimal) bool {
	return d.neg == e.neg && d.coef == e.coef && d.exp.cmp(e.exp) == 0
}

// canonical writes what equal compares, for hashing.
func (d *Decimal) canonical(w interface{ WriteString(string) (int, error) }) {
	if d.neg {
		_, _ = w.WriteString("-")
	}
	_, _ = w.WriteString(d.coef)
	_, _ = w.WriteString("e")
	_, _ = w.WriteString(d.exp.String())
}

// toInt is d as an int, clamped to the int range: what the count
// keywords (minLength, maxItems, ...) need, since no count reaches
// math.MaxInt. d must be an integer.
func (d *Decimal) toInt() int {
	if d.coef == "" {
		return 0
	}
	// Past 18 digits the value is beyond any count; within them it fits
	// an int64.
	if d.exp.add(int64(len(d.coef))).cmp(bigInt{small: 18}) > 0 {
		if d.neg {
			return math.MinInt
		}
		return math.MaxInt
	}
	n, _ := strconv.ParseInt(d.coef+strings.Repeat("0", int(d.exp.small)), 10, 64)
	if d.neg {
		n = -n
	}
	return int(max(min(n, math.MaxInt), math.MinInt))
}

// divisor is a multipleOf value m = b × 10^q prepared for exact checks: b
// = 2^twos × 5^fives × rest, with rest prime to 10.
type divisor struct {
	q           bigInt
	twos, fives int64
	rest        *big.Int
}

// newDivisor prepares m, which is positive. b's digits come from the
// schema, so converting them is bounded by its size.
func newDivisor(m *Decimal) *divisor {
	b, _ := new(big.Int).SetString(m.coef, 10)
	div := &divisor{q: m.exp}
	div.twos = int64(b.TrailingZeroBits())
	b.Rsh(b, uint(div.twos))
	// Divide by 5^27, the largest power of 5 in a word, while it divides,
	// then by single 5s: a division per 19 digits at most.
	quo, rem := new(big.Int), new(big.Int)
	for _, f := range []struct {
		p *big.Int
		n int64
	}{{big.NewInt(7_450_580_596_923_828_125), 27}, {big.NewInt(5), 1}} {
		for {
			quo.QuoRem(b, f.p, rem)
			if rem.Sign() != 0 {
				break
			}
			b, quo = quo, b
			div.fives += f.n
		}
	}
	div.rest = b
	return div
}

// divides tells whether x / m is an integer. With x = a × 10^p (a without
// trailing zeros) and k = p - q, x / m = a × 10^k / (2^twos × 5^fives ×
// rest), an integer exactly when rest divides a (rest is prime to 10) and
// the factors 2 and 5 of a × 10^k cover twos and fives. For k < 0 that
// needs a divisible by 10, which a without trailing zeros is not (zero
// aside, a multiple of everything): x is then no multiple. For k >= 0 it
// needs a divisible by g = rest × 2^max(twos-k, 0) × 5^max(fives-k, 0).
// The sign of x does not matter. Nothing here raises 10 to k, which may
// have a million digits.
func (div *divisor) divides(x *Decimal) bool {
	if x.coef == "" {
		return true
	}
	if x.exp.cmp(div.q) < 0 {
		return false
	}
	g := div.rest
	if twos, fives := div.shortfall(x.exp, div.twos), div.shortfall(x.exp, div.fives); twos > 0 || fives > 0 {
		g = new(big.Int).Lsh(div.rest, uint(twos))
		g.Mul(g, new(big.Int).Exp(big.NewInt(5), big.NewInt(fives), nil))
	}
	return dividesDigits(x.coef, g)
}

// shortfall is max(n - k, 0) for k = p - q >= 0: how many of the
// divisor's n factors 2 (or 5) 10^k leaves to a.
func (div *divisor) shortfall(p bigInt, n int64) int64 {
	if p.cmp(div.q.add(n)) >= 0 {
		return 0
	}
	// 0 <= p - q < n.
	return n - p.sub(div.q)
}

// dividesDigits tells whether g (positive) divides the value of the
// decimal digits. It reads them 19 at a time by Horner's rule, keeping the
// remainder below g, so it takes time linear in the digits times g's
// length and never builds the whole value.
func dividesDigits(digits string, g *big.Int) bool {
	if g.IsUint64() {
		m := g.Uint64()
		var r uint64
		for len(digits) > 0 {
			n := min(len(digits), 19)
			chunk, _ := strconv.ParseUint(digits[:n], 10, 64)
			digits = digits[n:]
			// r × 10^n + chunk modulo m: r < m keeps the product's
			// high word below m, as Div64 needs.
			hi, lo := bits.Mul64(r, pow10[n])
			_, r = bits.Div64(hi, lo, m)
			sum, carry := bits.Add64(r, chunk%m, 0)
			if carry != 0 || sum >= m {
				sum -= m
			}
			r = sum
		}
		return r == 0
	}
	r, t, q, w := new(big.Int), new(big.Int), new(big.Int), new(big.Int)
	for len(digits) > 0 {
		n := min(len(digits), 19)
		chunk, _ := strconv.ParseUint(digits[:n], 10, 64)
		digits = digits[n:]
		t.Mul(r, w.SetUint64(pow10[n]))
		t.Add(t, w.SetUint64(chunk))
		q.QuoRem(t, g, r)
	}
	return r.Sign() == 0
}

// pow10[n] is 10^n, for n up to 19 (the most a uint64 holds).
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// bigInt is an integer of any size, as a JSON exponent may be: small when
// |v| < 10^18, otherwise the sign and the decimal digits of the magnitude
// (more than 18, no leading zeros). Each value has one form. Only what
// exponents need is here: adding an int64 of magnitude below 10^18 and
// comparing, both linear in the digits, so an exponent of a million digits
// costs microseconds where converting it to a big.Int would take seconds.
type bigInt struct {
	small int64
	neg   bool
	large string
}

const smallLimit = 1_000_000_000_000_000_000 // 10^18

func parseBigInt(neg bool, digits string) bigInt {
	digits = strings.TrimLeft(digits, "0")
	if len(digits) > 18 {
		return bigInt{neg: neg, large: digits}
	}
	n, _ := strconv.ParseInt("0"+digits, 10, 64)
	if neg {
		n = -n
	}
	return bigInt{small: n}
}

func (x bigInt) sign() int {
	switch {
	case x.large != "" && x.neg:
		return -1
	case x.large != "":
		return 1
	default:
		return cmpInt(x.small, 0)
	}
}

// add is x + n, for |n| < 10^18.
func (x bigInt) add(n int64) bigInt {
	if x.large == "" {
		// |x.small + n| < 2 × 10^18 fits an int64.
		s := x.small + n
		if s > -smallLimit && s < smallLimit {
			return bigInt{small: s}
		}
		return bigInt{neg: s < 0, large: strconv.FormatUint(absInt(s), 10)}
	}
	if n == 0 {
		return x
	}
	// |x| >= 10^18 > |n|: the sign stays x's.
	var mag string
	if (n < 0) == x.neg {
		mag = addMagnitude(x.large, absInt(n))
	} else {
		mag = subMagnitude(x.large, absInt(n))
	}
	return parseBigInt(x.neg, mag)
}

// sub is x - y, for a difference below 10^18 in magnitude, which callers
// know from comparisons.
func (x bigInt) sub(y bigInt) int64 {
	switch {
	case y.large == "":
		return x.add(-y.small).small
	case x.large == "":
		return -y.add(-x.small).small
	}
	// Both large and of one sign. The difference of the magnitudes is
	// that of their last 19 digits modulo 10^19, and being below 10^18
	// it is the residue nearest zero.
	const mod = 10 * smallLimit
	xt, _ := strconv.ParseUint(x.large[len(x.large)-19:], 10, 64)
	yt, _ := strconv.ParseUint(y.large[len(y.large)-19:], 10, 64)
	u := xt - yt
	if xt < yt {
		u = mod - (yt - xt)
	}
	var d int64
	if u < mod/2 {
		d = int64(u)
	} else {
		d = -int64(mod - u)
	}
	if x.neg {
		return -d
	}
	return d
}

func (x bigInt) cmp(y bigInt) int {
	xs, ys := x.sign(), y.sign()
	if xs != ys {
		return cmpInt(xs, ys)
	}
	if x.large == "" && y.large == "" {
		return cmpInt(x.small, y.small)
	}
	// Same sign, at least one large: the larger magnitude is the longer
	// digit string, or the greater of two of one length.
	var c int
	switch {
	case x.large == "":
		c = -1
	case y.large == "":
		c = 1
	case len(x.large) != len(y.large):
		c = cmpInt(len(x.large), len(y.large))
	default:
		c = strings.Compare(x.large, y.large)
	}
	return c * xs
}

func (x bigInt) String() string {
	switch {
	case x.large == "":
		return strconv.FormatInt(x.small, 10)
	case x.neg:
		return "-" + x.large
	default:
		return x.large
	}
}

// addMagnitude is the digits of digits + n.
func addMagnitude(digits string, n uint64) string {
	b := []byte(digits)
	for i := len(b) - 1; i >= 0 && n > 0; i-- {
		n += uint64(b[i] - '0')
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if n > 0 {
		return strconv.FormatUint(n, 10) + string(b)
	}
	return string(b)
}

// subMagnitude is the digits of digits - n, for a value of digits above n.
func subMagnitude(digits string, n uint64) string {
	b := []byte(digits)
	borrow := uint64(0)
	for i := len(b) - 1; i >= 0 && (n > 0 || borrow > 0); i-- {
		sub := n%10 + borrow
		n /= 10
		d := uint64(b[i] - '0')
		if d < sub {
			d += 10
			borrow = 1
		} else {
			borrow = 0
		}
		b[i] = byte('0' + d - sub)
	}
	return strings.TrimLeft(string(b), "0")
}

func absInt(n int64) uint64 {
	if n < 0 {
		return uint64(-n)
	}
	return uint64(n)
}

func cmpInt[T int | int64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	default:
		return 0
	}
}
