package tokens

import (
	"slices"
	"sort"
	"strings"
)

// The roles a page's rules use a custom property for.
const (
	RoleText       = "text"       // color
	RoleBackground = "background" // background, background-color
	RoleBorder     = "border"     // border and outline colours
	RoleIcon       = "icon"       // fill, stroke
	RoleSpacing    = "spacing"    // margins, paddings, gaps
	RoleFontSize   = "font-size"
	RoleFontFamily = "font-family"
	RoleRadius     = "radius"
	// RolePalette marks a colour the page defines in a theme scope but no
	// rule uses: a colour of its palette (its value says so), with no role to
	// advise it for.
	RolePalette = "palette"
)

// Use is one custom property that the page's own rules use directly (the
// whole value, or a var() not wrapped in calc(), rgb() or another function),
// defined in one of the page's theme scopes (:root, html, body, or a class or
// attribute on them such as .dark or [data-theme]). Value is what it computes
// to in the theme the page shows. A colour-valued property of a theme scope
// that no rule uses comes with no roles: a palette colour.
type Use struct {
	Name  string   `json:"name"`
	Value string   `json:"value"`
	Roles []string `json:"roles"`
}

// Minimum sizes of a token system. One custom property for a page padding
// is not a spacing scale, and judging every other padding against it would
// flag the page's whole layout; a scale needs a few steps.
const (
	minColorTokens = 2
	minScaleSteps  = 3
)

// FromUses builds a Set from the custom properties a page uses, filed by
// use: a property used for colours is a colour token (with the roles it is
// used for; a palette colour no rule uses has RolePalette), one used for margins, paddings or gaps a spacing step, one used
// for font-size a type-scale step, and so on; its name plays no part. rem
// and em count remPx (the root's computed font size). A list too short to be
// a system (fewer than two colours, fewer than three distinct steps of a
// scale) is left empty, and nil comes back when nothing remains.
func FromUses(uses []Use, remPx float64) *Set {
	if remPx <= 0 {
		remPx = 16
	}
	s := &Set{}
	for _, u := range uses {
		v := strings.TrimSpace(u.Value)
		if v == "" || len(v) > 300 {
			continue
		}
		var colorRoles []string
		if len(u.Roles) == 0 {
			colorRoles = []string{RolePalette}
		}
		for _, r := range u.Roles {
			switch r {
			case RoleText, RoleBackground, RoleBorder, RoleIcon:
				colorRoles = append(colorRoles, r)
			case RoleSpacing:
				s.addLength(&s.Spacing, u.Name, v, remPx)
			case RoleFontSize:
				s.addLength(&s.FontSizes, u.Name, v, remPx)
			case RoleRadius:
				s.addLength(&s.Radii, u.Name, v, remPx)
			case RoleFontFamily:
				if fams := SplitFamilies(v); len(fams) > 0 {
					s.FontFamilies = append(s.FontFamilies, FontFamily{u.Name, fams})
				}
			}
		}
		if c, ok := ParseColor(v); ok && len(colorRoles) > 0 {
			sort.Strings(colorRoles)
			s.Colors = append(s.Colors, ColorToken{Name: u.Name, Color: c, Roles: slices.Compact(colorRoles)})
		}
	}
	if len(s.Colors) < minColorTokens {
		s.Colors = nil
	}
	for _, l := range []*[]Dimension{&s.Spacing, &s.FontSizes} {
		if distinct(*l) < minScaleSteps {
			*l = nil
		}
	}
	if s.empty() {
		return nil
	}
	s.sort()
	return s
}

func (s *Set) addLength(l *[]Dimension, name, v string, remPx float64) {
	if px, ok := ParseLengthRem(v, remPx); ok && px > 0 {
		*l = append(*l, Dimension{name, px})
	}
}

func distinct(l []Dimension) int {
	seen := map[float64]bool{}
	for _, d := range l {
		seen[d.Px] = true
	}
	return len(seen)
}

// ColorsFor returns the colour tokens usable for role: those the page uses
// for it, and every token of a file (whose tokens carry no roles).
func (s *Set) ColorsFor(role string) []ColorToken {
	var out []ColorToken
	for _, c := range s.Colors {
		if c.Roles == nil || slices.Contains(c.Roles, role) {
			out = append(out, c)
		}
	}
	return out
}
