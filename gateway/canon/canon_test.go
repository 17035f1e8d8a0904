package canon

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"b":2,"a":1}`:                                 `{"a":1,"b":2}`,
		` [ 1.0 , 1e2, -0, 0.5e-7, 1e21 ] `:             `[1,100,0,5e-08,1e+21]`,
		`{"é":1,"z":2,"a":{"d":null,"c":[true,false]}}`: `{"a":{"c":[true,false],"d":null},"z":2,"é":1}`,
		`"<tag>&\u2028\u0001\t"`:                        "\"<tag>&\u2028\\u0001\\t\"",
		`"\ud800"`:                                      "\"\ufffd\"",
	} {
		got, err := Canonicalize([]byte(in))
		if err != nil {
			t.Errorf("Canonicalize(%s): %v", in, err)
			continue
		}
		if string(got) != want {
			t.Errorf("Canonicalize(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		`{"a":1,"a":2}`, `{"a":1} 2`, `{`, "\"\xff\"", "", `[1,]`, `1e999`,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	} {
		if _, err := Canonicalize([]byte(bad)); err == nil {
			t.Errorf("Canonicalize(%q) accepted it", bad)
		}
	}
	if _, err := Canonicalize([]byte(strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth))); err != nil {
		t.Errorf("nesting at the limit refused: %v", err)
	}
}

// FuzzCanonicalize checks that canonical output is valid JSON, a fixed point,
// and agrees with encoding/json on the value.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":[1,2,{"c":null}],"a":"x"}`, `1.5e300`, `"\u00e9\n"`, `[]`, `{}`, `-0.0`, `123456789012345678901234567890`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Canonicalize(in)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form of %q is not JSON: %q", in, c)
		}
		c2, err := Canonicalize(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("not a fixed point: %q → %q (%v)", c, c2, err)
		}
	})
}
