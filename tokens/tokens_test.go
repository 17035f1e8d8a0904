package tokens_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/tokens"
)

func TestParseCorpusTokens(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "checks", "testdata", "corpus", "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tokens.Parse(raw)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got, want := len(s.Colors), 13; got != want {
		t.Errorf("colours = %d; want %d", got, want)
	}
	if got, want := len(s.Spacing), 8; got != want {
		t.Errorf("spacing = %d; want %d", got, want)
	}
	if got, want := len(s.FontSizes), 10; got != want { // 9 sizes + the typography token's size
		t.Errorf("font sizes = %d; want %d", got, want)
	}
	if got, want := len(s.Radii), 3; got != want {
		t.Errorf("radii = %d; want %d", got, want)
	}
	if got, want := len(s.Breakpoints), 2; got != want {
		t.Errorf("breakpoints = %d; want %d", got, want)
	}
	if !s.HasFamily("brand sans") || !s.HasFamily(`"Brand Mono"`) || s.HasFamily("Georgia") {
		t.Errorf("HasFamily wrong for %+v", s.FontFamilies)
	}
	// The alias {color.surface} resolves to white.
	for _, c := range s.Colors {
		if c.Name == "color.on-primary" && c.Color.Hex() != "#ffffff" {
			t.Errorf("alias color.on-primary = %s; want #ffffff", c.Color.Hex())
		}
	}
	// {value: 3, unit: rem} is 48 px.
	found := false
	for _, d := range s.FontSizes {
		found = found || d.Name == "font.size.5xl" && d.Px == 48
	}
	if !found {
		t.Errorf("font.size.5xl (3rem) missing from %+v", s.FontSizes)
	}
	near, d, ok := s.NearestColor(tokens.Color{R: 0x26, G: 0x63, B: 0xeb, A: 1})
	if !ok || near.Name != "color.primary" || d > 1 {
		t.Errorf("NearestColor = %v %v %v; want color.primary within ΔE 1", near, d, ok)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"NotJSON", `{`, "not valid JSON"},
		{"NotObject", `[1,2]`, "JSON object"},
		{"Trailing", `{"a":{"$type":"color","$value":"#fff"}} {}`, "after its JSON"},
		{"Empty", `{}`, "no colour"},
		{"BadColour", `{"c":{"$type":"color","$value":"nope"}}`, "not a CSS colour"},
		{"BadDimension", `{"space":{"s":{"$type":"dimension","$value":"4vw"}}}`, "not a px or rem"},
		{"MissingAlias", `{"c":{"$type":"color","$value":"{color.nope}"}}`, "names no token"},
		{"Cycle", `{"a":{"$type":"color","$value":"{b}"},"b":{"$type":"color","$value":"{a}"}}`, "cycle"},
		{"DottedName", `{"a.b":{"$type":"color","$value":"#fff"}}`, "contains"},
		{"Scalar", `{"a":1}`, "neither a token nor a group"},
		{"BadFamily", `{"f":{"$type":"fontFamily","$value":[1]}}`, "strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tokens.Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%s) succeeded; want an error containing %q", tt.in, tt.want)
			}
			if !fault.Is(err, fault.InvalidArgument) {
				t.Errorf("error %v is not INVALID_ARGUMENT", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestParseDeepNesting(t *testing.T) {
	t.Parallel()
	in := strings.Repeat(`{"g":`, 100) + `{"$type":"color","$value":"#fff"}` + strings.Repeat(`}`, 100)
	if _, err := tokens.Parse([]byte(in)); !fault.Is(err, fault.InvalidArgument) {
		t.Errorf("deep nesting: err = %v; want INVALID_ARGUMENT", err)
	}
}

func TestParseColorObjectAndTypography(t *testing.T) {
	t.Parallel()
	s, err := tokens.Parse([]byte(`{
	  "brand": {"$type": "color", "$value": {"colorSpace": "srgb", "components": [0, 0.5, 1], "alpha": 0.5}},
	  "type": {"heading": {"$type": "typography", "$value": {"fontFamily": "Inter, sans-serif", "fontSize": {"value": 24, "unit": "px"}}}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Colors) != 1 || s.Colors[0].Color.A != 0.5 || s.Colors[0].Color.Hex() != "#0080ff" {
		t.Errorf("colour object = %+v", s.Colors)
	}
	if !s.HasFamily("Inter") || len(s.FontSizes) != 1 || s.FontSizes[0].Px != 24 {
		t.Errorf("typography = %+v %+v", s.FontFamilies, s.FontSizes)
	}
}

func TestFromCustomProperties(t *testing.T) {
	t.Parallel()
	s := tokens.FromCustomProperties(map[string]string{
		"--color-primary": "#2563eb",
		"--bg":            "rgb(255, 255, 255)",
		"--space-4":       "16px",
		"--space-6":       "1.5rem",
		"--font-size-lg":  "18px",
		"--font-body":     `"Brand Sans", sans-serif`,
		"--radius-md":     "8px",
		"--breakpoint-md": "768px",
		"--shadow-md":     "0 1px 2px black",
		"--z-modal":       "100",
	})
	if s == nil {
		t.Fatal("FromCustomProperties = nil")
	}
	if len(s.Colors) != 2 || len(s.Spacing) != 2 || len(s.FontSizes) != 1 || len(s.FontFamilies) != 1 || len(s.Radii) != 1 || len(s.Breakpoints) != 1 {
		t.Errorf("set = %+v", s)
	}
	if s.Spacing[1].Px != 24 {
		t.Errorf("--space-6 = %v px; want 24", s.Spacing[1].Px)
	}
	if got := tokens.FromCustomProperties(map[string]string{"--z-modal": "100", "--shadow": "none"}); got != nil {
		t.Errorf("nothing usable gave %+v; want nil", got)
	}
	if got := tokens.FromCustomProperties(nil); got != nil {
		t.Errorf("nil map gave %+v; want nil", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"c":{"$type":"color","$value":"#fff"}}`,
		`{"g":{"$type":"dimension","s":{"$value":"4px"},"t":{"$value":"{g.s}"}}}`,
		`{"a":{"$type":"color","$value":"{b}"},"b":{"$type":"color","$value":"{a}"}}`,
		`{"t":{"$type":"typography","$value":{"fontFamily":["A","B"],"fontSize":"1rem"}}}`,
		`{"c":{"$type":"color","$value":{"colorSpace":"srgb","components":[1e308,-1,0.5]}}}`,
		`{"d":{"$type":"dimension","$value":{"value":1e400,"unit":"px"}}}`,
		`{"x":{"$value":"{x}"}}`,
		`[]`, `null`, `"str"`, `{"$type":"color"}`, `{"a":{"b":{"c":{}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := tokens.Parse(data)
		if err != nil {
			if _, ok := fault.As(err); !ok {
				t.Fatalf("Parse error %v is not a fault error", err)
			}
			return
		}
		if s == nil {
			t.Fatal("Parse returned nil set and nil error")
		}
	})
}
