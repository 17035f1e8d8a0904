// Package canon decodes JSON strictly and encodes it canonically, for the
// gates that hash tool definitions (pin) and judge call arguments (policy).
//
// Canonical form: object keys sorted by their UTF-8 bytes at every depth,
// no insignificant whitespace, strings with only the escapes JSON requires
// (", \, and control characters as \b \f \n \r \t or \u00XX; everything else,
// non-ASCII included, written as raw UTF-8), numbers in their shortest
// float64 form (integers without an exponent up to 1e21, as JavaScript
// prints them), literals true, false and null.
//
// Invariants: Decode refuses duplicate object keys (two parsers that keep
// different duplicates would let a policy check see one value and the
// upstream another), invalid UTF-8, nesting deeper than MaxDepth and
// trailing data; for any value Decode returns, Append(Decode(x)) is a fixed
// point of Decode then Append.
package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// MaxDepth bounds nesting of arrays and objects.
const MaxDepth = 64

// Decode parses data into nil, bool, json.Number, string, []any or
// map[string]any.
func Decode(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("canon: invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) != 0 {
		return nil, errors.New("canon: trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= MaxDepth {
			return nil, fmt.Errorf("canon: nesting deeper than %d", MaxDepth)
		}
		if t == '[' {
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		obj := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("canon: %w", err)
			}
			k := kt.(string)
			if _, dup := obj[k]; dup {
				return nil, fmt.Errorf("canon: duplicate object key %q", truncate(k))
			}
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			obj[k] = v
		}
		_, err := dec.Token()
		return obj, err
	default:
		return t, nil // nil, bool, json.Number, string
	}
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Canonicalize decodes data and returns its canonical encoding.
func Canonicalize(data []byte) ([]byte, error) {
	v, err := Decode(data)
	if err != nil {
		return nil, err
	}
	return Append(nil, v)
}

// Append appends the canonical encoding of v (a value Decode returns; also
// float64, int, int64) to dst.
func Append(dst []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, t), nil
	case string:
		return AppendString(dst, t), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return nil, fmt.Errorf("canon: number %q out of range", truncate(string(t)))
		}
		return AppendFloat(dst, f)
	case float64:
		return AppendFloat(dst, t)
	case int:
		return AppendFloat(dst, float64(t))
	case int64:
		return AppendFloat(dst, float64(t))
	case []any:
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = Append(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go compares strings bytewise: UTF-8 byte order
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = Append(dst, t[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	return nil, fmt.Errorf("canon: cannot encode %T", v)
}

// AppendFloat appends f in its shortest round-tripping form: integers below
// 1e21 in plain decimal, others in exponent form.
func AppendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errors.New("canon: non-finite number")
	}
	if f == 0 {
		return append(dst, '0'), nil // -0 too
	}
	if a := math.Abs(f); a < 1e21 && a >= 1e-6 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	return strconv.AppendFloat(dst, f, 'e', -1, 64), nil
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string with only the required escapes.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c >= 0x20:
			dst = append(dst, c)
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	return append(dst, '"')
}
