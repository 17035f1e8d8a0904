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

func TestFromUses(t *testing.T) {
	t.Parallel()
	s := tokens.FromUses([]tokens.Use{
		{Name: "--muted", Value: "#666", Roles: []string{tokens.RoleText}},
		{Name: "--bg", Value: "rgb(255, 255, 255)", Roles: []string{tokens.RoleBackground, tokens.RoleText}},
		{Name: "--line", Value: "#ddd", Roles: []string{tokens.RoleBorder}},
		{Name: "--s1", Value: "0.4rem", Roles: []string{tokens.RoleSpacing}},
		{Name: "--s2", Value: "0.8rem", Roles: []string{tokens.RoleSpacing}},
		{Name: "--s3", Value: "16px", Roles: []string{tokens.RoleSpacing}},
		// Its name says size, its use says width: not a spacing step.
		{Name: "--sidebar-resize-indicator-width", Value: "8px", Roles: nil},
		// One font size is not a type scale.
		{Name: "--code-font-size", Value: "0.875em", Roles: []string{tokens.RoleFontSize}},
		{Name: "--body", Value: `"Brand Sans", sans-serif`, Roles: []string{tokens.RoleFontFamily}},
		{Name: "--channels", Value: "33, 37, 41", Roles: []string{tokens.RoleText}},
		// A palette colour no rule uses: a colour token for no role.
		{Name: "--purple", Value: "#9333ea"},
	}, 10)
	if s == nil {
		t.Fatal("FromUses = nil")
	}
	if len(s.Colors) != 4 || len(s.Spacing) != 3 || s.FontSizes != nil || len(s.FontFamilies) != 1 {
		t.Fatalf("set = %+v", s)
	}
	if s.Spacing[0].Px != 4 || s.Spacing[1].Px != 8 {
		t.Errorf("rem at a 10 px root: %+v", s.Spacing)
	}
	var text []string
	for _, c := range s.ColorsFor(tokens.RoleText) {
		text = append(text, c.Name)
	}
	if strings.Join(text, ",") != "--bg,--muted" {
		t.Errorf("text colours = %v; want --bg and --muted (the border token is not one)", text)
	}
	if got := tokens.FromUses([]tokens.Use{{Name: "--only", Value: "#123456", Roles: []string{tokens.RoleText}}}, 16); got != nil {
		t.Errorf("one colour gave %+v; want nil (no token system)", got)
	}
	if got := tokens.FromUses(nil, 0); got != nil {
		t.Errorf("nil uses gave %+v; want nil", got)
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
