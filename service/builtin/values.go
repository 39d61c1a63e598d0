package builtin

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// Value is a value stored as it arrived. It renders in JSON (HTTP queries)
// as itself when it is JSON, as a string when it is UTF-8 text, and as a
// base64 string otherwise.
type Value []byte

// MarshalJSON renders v as described on Value.
func (v Value) MarshalJSON() ([]byte, error) {
	switch {
	case len(v) > 0 && json.Valid(v):
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case utf8.Valid(v):
		return json.Marshal(string(v))
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(v))
}

type valueCodec struct{}

func (valueCodec) Encode(v Value) ([]byte, error) { return v, nil }
func (valueCodec) Decode(b []byte) (Value, error) { return Value(b), nil }

// Decimal is an exact decimal number in canonical form: an optional minus
// sign, digits, and a fraction only when it has digits ("12", "-0.50").
// It renders in JSON as a number.
type Decimal string

// MarshalJSON renders d as a JSON number.
func (d Decimal) MarshalJSON() ([]byte, error) {
	if d == "" {
		return []byte("0"), nil
	}
	return []byte(d), nil
}

// Bounds that keep a hostile number from costing memory or time: a
// 1e999999999 would be a billion digits.
const (
	maxNumberLen = 100
	maxExponent  = 100
)

var numberRE = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)([eE]([+-]?\d+))?$`)

// parseDecimal reads a decimal number ("12", "-0.5", "+.5", "1.5e3") as an
// exact rational and the number of fraction digits it needs.
func parseDecimal(s string) (*big.Rat, int, error) {
	if len(s) > maxNumberLen {
		return nil, 0, fmt.Errorf("number of %d characters: at most %d are accepted", len(s), maxNumberLen)
	}
	m := numberRE.FindStringSubmatch(s)
	if m == nil {
		return nil, 0, fmt.Errorf("%s is not a decimal number", quote(s))
	}
	scale := 0
	if i := bytes.IndexByte([]byte(m[1]), '.'); i >= 0 {
		scale = len(m[1]) - i - 1
	}
	if m[4] != "" {
		exp, err := strconv.Atoi(m[4])
		if err != nil || exp > maxExponent || exp < -maxExponent {
			return nil, 0, fmt.Errorf("%s: exponent beyond ±%d", quote(s), maxExponent)
		}
		scale -= exp
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, 0, fmt.Errorf("%s is not a decimal number", quote(s))
	}
	return r, max(scale, 0), nil
}

// canonical returns s in Decimal's canonical form.
func canonical(s string) (Decimal, error) {
	r, scale, err := parseDecimal(s)
	if err != nil {
		return "", err
	}
	return Decimal(r.FloatString(scale)), nil
}

// Add returns the exact sum of a and b, with as many fraction digits as
// the longer of the two.
func Add(a, b Decimal) (Decimal, error) {
	ra, sa, err := parseDecimal(string(a))
	if err != nil {
		return "", err
	}
	rb, sb, err := parseDecimal(string(b))
	if err != nil {
		return "", err
	}
	// A sum of decimals with at most s fraction digits has at most s:
	// FloatString is exact here.
	return Decimal(ra.Add(ra, rb).FloatString(max(sa, sb))), nil
}

type decimalCodec struct{}

func (decimalCodec) Encode(d Decimal) ([]byte, error) { return []byte(d), nil }
func (decimalCodec) Decode(b []byte) (Decimal, error) { return Decimal(b), nil }

// numberCodec decodes the number a sum processor adds: the value itself,
// or a top-level field of a JSON object.
type numberCodec struct{ field string }

func (c numberCodec) Encode(d Decimal) ([]byte, error) {
	if c.field == "" {
		return []byte(d), nil
	}
	return json.Marshal(map[string]json.RawMessage{c.field: json.RawMessage(d.mustJSON())})
}

func (d Decimal) mustJSON() []byte { b, _ := d.MarshalJSON(); return b }

func (c numberCodec) Decode(b []byte) (Decimal, error) {
	if c.field == "" {
		return canonical(string(bytes.TrimSpace(b)))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return "", fmt.Errorf("value is not a JSON object (processor.sum.field=%s): %s", c.field, quote(string(b)))
	}
	raw, ok := obj[c.field]
	if !ok {
		return "", fmt.Errorf("JSON value has no field %q (processor.sum.field)", c.field)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("field %q: %w", c.field, err)
		}
		raw = []byte(s)
	}
	d, err := canonical(string(raw))
	if err != nil {
		return "", fmt.Errorf("field %q: %w", c.field, err)
	}
	return d, nil
}

// quote quotes s for an error message, truncated to 64 bytes.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
