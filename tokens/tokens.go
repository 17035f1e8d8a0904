// Package tokens reads a design system's tokens (W3C DTCG JSON, or the
// custom properties a page's own rules use, by what they are used for) into a
// Set the design checks compare against, and
// holds the colour math those checks need (CSS colour parsing, WCAG contrast,
// CIEDE2000 ΔE).
//
// Invariants: parsing never panics on hostile input and fails with a typed
// fault error (INVALID_ARGUMENT) that quotes where; every length in a Set is
// in CSS pixels (rem and em count 16 px in a file, the page's root size on a
// page); a Set is not modified after it is
// built, so it is safe for concurrent use.
package tokens

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/fault"
)

// Set is a design system's tokens. Each list is sorted by name.
type Set struct {
	Colors       []ColorToken
	Spacing      []Dimension
	FontFamilies []FontFamily
	FontSizes    []Dimension
	Radii        []Dimension
	Breakpoints  []Dimension
}

// ColorToken is one named colour. Roles says what the page uses it for
// (RoleText, RoleBackground, ...); nil means any role (a token file).
type ColorToken struct {
	Name  string
	Color Color
	Roles []string
}

// Dimension is one named length in CSS pixels.
type Dimension struct {
	Name string
	Px   float64
}

// FontFamily is one named font stack, families in preference order.
type FontFamily struct {
	Name     string
	Families []string
}

// Limits that keep hostile token files bounded.
const (
	maxFileBytes = 4 << 20
	maxDepth     = 32
	maxTokens    = 10000
	maxAliasHops = 16
)

// Parse reads a W3C Design Tokens Community Group file: nested groups, tokens
// with $value and $type ($type inherited from groups), aliases "{a.b.c}" and
// the composite typography type. Colour, dimension, fontFamily and
// typography tokens are kept; others are ignored. Dimensions are sorted into
// spacing, font sizes, radii and breakpoints by their group path. An empty
// result is an error: a token file with nothing usable would silently turn
// every token check off.
func Parse(data []byte) (*Set, error) {
	if len(data) > maxFileBytes {
		return nil, fault.New(fault.InvalidArgument, "token file is %d bytes; the limit is %d", len(data), maxFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fault.Wrap(err, fault.InvalidArgument, "token file is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fault.New(fault.InvalidArgument, "token file has data after its JSON object")
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, fault.New(fault.InvalidArgument, "token file must be a JSON object of token groups")
	}
	p := &parser{raw: map[string]rawToken{}}
	if err := p.walk(obj, nil, "", 0); err != nil {
		return nil, err
	}
	set := &Set{}
	names := make([]string, 0, len(p.raw))
	for n := range p.raw {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t := p.raw[name]
		v, err := p.resolve(t.value, 0)
		if err != nil {
			return nil, fault.Wrap(err, fault.InvalidArgument, "token %q: %v", name, err)
		}
		typ := t.typ
		if err := set.add(name, typ, v); err != nil {
			return nil, fault.Wrap(err, fault.InvalidArgument, "token %q: %v", name, err)
		}
	}
	if set.empty() {
		return nil, fault.New(fault.InvalidArgument, "token file has no colour, dimension or font family tokens")
	}
	set.sort()
	return set, nil
}

type rawToken struct {
	typ   string
	value any
}

type parser struct {
	raw map[string]rawToken
}

type parseError string

func (e parseError) Error() string { return string(e) }

func (p *parser) walk(group map[string]any, path []string, inherited string, depth int) error {
	if depth > maxDepth {
		return fault.New(fault.InvalidArgument, "token groups nest deeper than %d at %q", maxDepth, strings.Join(path, "."))
	}
	if t, ok := group["$type"].(string); ok {
		inherited = t
	}
	keys := make([]string, 0, len(group))
	for k := range group {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "$") {
			continue
		}
		if strings.ContainsAny(k, "{}.") {
			return fault.New(fault.InvalidArgument, "token name %q at %q contains '{', '}' or '.'", k, strings.Join(path, "."))
		}
		child, ok := group[k].(map[string]any)
		if !ok {
			return fault.New(fault.InvalidArgument, "%q is neither a token nor a group", strings.Join(append(path, k), "."))
		}
		childPath := append(append([]string(nil), path...), k)
		if v, isToken := child["$value"]; isToken {
			typ := inherited
			if t, ok := child["$type"].(string); ok {
				typ = t
			}
			if len(p.raw) >= maxTokens {
				return fault.New(fault.InvalidArgument, "token file has more than %d tokens", maxTokens)
			}
			p.raw[strings.Join(childPath, ".")] = rawToken{typ: typ, value: v}
			continue
		}
		if err := p.walk(child, childPath, inherited, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// resolve replaces aliases in v, recursively inside composite values.
func (p *parser) resolve(v any, hops int) (any, error) {
	if hops > maxAliasHops {
		return nil, parseError("alias chain longer than " + strconv.Itoa(maxAliasHops) + " (a cycle?)")
	}
	switch x := v.(type) {
	case string:
		if len(x) > 2 && x[0] == '{' && x[len(x)-1] == '}' {
			target, ok := p.raw[x[1:len(x)-1]]
			if !ok {
				return nil, parseError("alias " + strconv.Quote(x) + " names no token")
			}
			return p.resolve(target.value, hops+1)
		}
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := p.resolve(e, hops+1)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := p.resolve(e, hops+1)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func (s *Set) add(name, typ string, v any) error {
	switch typ {
	case "color":
		c, err := colorValue(v)
		if err != nil {
			return err
		}
		s.Colors = append(s.Colors, ColorToken{Name: name, Color: c})
	case "dimension", "fontSize", "spacing", "borderRadius", "sizing":
		px, err := dimensionValue(v)
		if err != nil {
			return err
		}
		s.addDimension(name, typ, px)
	case "fontFamily":
		fams, err := familyValue(v)
		if err != nil {
			return err
		}
		s.FontFamilies = append(s.FontFamilies, FontFamily{name, fams})
	case "typography":
		m, ok := v.(map[string]any)
		if !ok {
			return parseError("typography value must be an object")
		}
		if f, ok := m["fontFamily"]; ok {
			fams, err := familyValue(f)
			if err != nil {
				return err
			}
			s.FontFamilies = append(s.FontFamilies, FontFamily{name, fams})
		}
		if f, ok := m["fontSize"]; ok {
			px, err := dimensionValue(f)
			if err != nil {
				return err
			}
			s.FontSizes = append(s.FontSizes, Dimension{name, px})
		}
	}
	return nil
}

// addDimension files a length under the list its name and type say.
func (s *Set) addDimension(name, typ string, px float64) {
	n := strings.ToLower(name)
	d := Dimension{name, px}
	switch {
	case typ == "fontSize" || hasAny(n, "font-size", "fontsize", "font_size", "font.size", "text.size", "type.size", "typography.size", "font-sizes", "fontsizes"):
		s.FontSizes = append(s.FontSizes, d)
	case typ == "borderRadius" || hasAny(n, "radius", "radii", "rounded", "corner"):
		s.Radii = append(s.Radii, d)
	case hasAny(n, "breakpoint", "screen", "media"):
		s.Breakpoints = append(s.Breakpoints, d)
	case typ == "spacing" || hasAny(n, "spac", "gap", "gutter", "inset", "margin", "padding", "size"):
		s.Spacing = append(s.Spacing, d)
	}
}

func hasAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func colorValue(v any) (Color, error) {
	switch x := v.(type) {
	case string:
		c, ok := ParseColor(x)
		if !ok {
			return Color{}, parseError("colour " + strconv.Quote(trunc(x)) + " is not a CSS colour")
		}
		return c, nil
	case map[string]any:
		// DTCG 2025.10 colour object: {colorSpace, components, alpha, hex}.
		if h, ok := x["hex"].(string); ok {
			if c, ok := ParseColor(h); ok {
				if a, ok := number(x["alpha"]); ok {
					c.A = math.Max(0, math.Min(1, a))
				}
				return c, nil
			}
		}
		space, _ := x["colorSpace"].(string)
		comps, _ := x["components"].([]any)
		if space != "srgb" || len(comps) != 3 {
			return Color{}, parseError("colour object must be sRGB with three components or carry a hex")
		}
		var rgb [3]float64
		for i, c := range comps {
			f, ok := number(c)
			if !ok {
				return Color{}, parseError("colour component is not a number")
			}
			rgb[i] = math.Max(0, math.Min(1, f)) * 255
		}
		c := Color{rgb[0], rgb[1], rgb[2], 1}
		if a, ok := number(x["alpha"]); ok {
			c.A = math.Max(0, math.Min(1, a))
		}
		return c, nil
	}
	return Color{}, parseError("colour value must be a string or an object")
}

func dimensionValue(v any) (float64, error) {
	switch x := v.(type) {
	case string:
		px, ok := ParseLength(x)
		if !ok {
			return 0, parseError("dimension " + strconv.Quote(trunc(x)) + " is not a px or rem length")
		}
		return px, nil
	case json.Number:
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, parseError("dimension is not a finite number")
		}
		return f, nil
	case map[string]any:
		f, ok := number(x["value"])
		unit, _ := x["unit"].(string)
		if !ok {
			return 0, parseError("dimension object needs a numeric value")
		}
		switch unit {
		case "px", "":
			return f, nil
		case "rem", "em":
			return f * 16, nil
		}
		return 0, parseError("dimension unit " + strconv.Quote(trunc(unit)) + " is not px or rem")
	}
	return 0, parseError("dimension value must be a string, number or object")
}

func familyValue(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		fams := SplitFamilies(x)
		if len(fams) == 0 {
			return nil, parseError("empty font family")
		}
		return fams, nil
	case []any:
		var fams []string
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, parseError("font family list must hold strings")
			}
			fams = append(fams, SplitFamilies(s)...)
		}
		if len(fams) == 0 {
			return nil, parseError("empty font family")
		}
		return fams, nil
	}
	return nil, parseError("font family must be a string or a list of strings")
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// ParseLength parses a CSS length in px, rem or em (16 px each) or a bare
// 0, reporting false for anything else.
func ParseLength(s string) (float64, bool) { return ParseLengthRem(s, 16) }

// ParseLengthRem is ParseLength with rem (and em) worth remPx: a page whose
// root sets font-size: 62.5% has 10 px rems.
func ParseLengthRem(s string, remPx float64) (float64, bool) {
	s = strings.TrimSpace(strings.ToLower(s))
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "px"):
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "rem"):
		s, mult = s[:len(s)-3], remPx
	case strings.HasSuffix(s, "em"):
		s, mult = s[:len(s)-2], remPx
	case s != "0":
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > 1e6 {
		return 0, false
	}
	return f * mult, true
}

// SplitFamilies splits a CSS font-family list into unquoted family names.
func SplitFamilies(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.Trim(strings.TrimSpace(f), `"'`)
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (s *Set) empty() bool {
	return len(s.Colors)+len(s.Spacing)+len(s.FontFamilies)+len(s.FontSizes)+len(s.Radii)+len(s.Breakpoints) == 0
}

func (s *Set) sort() {
	for _, l := range [][]Dimension{s.Spacing, s.FontSizes, s.Radii, s.Breakpoints} {
		sort.SliceStable(l, func(i, j int) bool { return l[i].Name < l[j].Name })
	}
	sort.SliceStable(s.Colors, func(i, j int) bool { return s.Colors[i].Name < s.Colors[j].Name })
	sort.SliceStable(s.FontFamilies, func(i, j int) bool { return s.FontFamilies[i].Name < s.FontFamilies[j].Name })
}

// NearestColor returns the token colour closest to c by CIEDE2000 and the
// difference, or false when s has no colours.
func (s *Set) NearestColor(c Color) (ColorToken, float64, bool) {
	best, bestD := ColorToken{}, math.Inf(1)
	for _, t := range s.Colors {
		if d := DeltaE2000(c, t.Color); d < bestD {
			best, bestD = t, d
		}
	}
	return best, bestD, len(s.Colors) > 0
}

// NearestDimension returns the entry of l closest to px.
func NearestDimension(l []Dimension, px float64) (Dimension, bool) {
	best, bestD := Dimension{}, math.Inf(1)
	for _, d := range l {
		if diff := math.Abs(d.Px - px); diff < bestD {
			best, bestD = d, diff
		}
	}
	return best, len(l) > 0
}

// HasFamily reports whether name (case-insensitive) appears in any of s's
// font stacks.
func (s *Set) HasFamily(name string) bool {
	name = strings.ToLower(strings.Trim(strings.TrimSpace(name), `"'`))
	for _, f := range s.FontFamilies {
		for _, fam := range f.Families {
			if strings.ToLower(fam) == name {
				return true
			}
		}
	}
	return false
}
