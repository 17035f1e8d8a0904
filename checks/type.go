// Type: font tokens, fallback fonts and the type scale.

package checks

import (
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/tokens"
	"math"
	"slices"
	"strings"
)

var monoHint = []string{"mono", "code", "courier", "consolas", "menlo", "monaco"}

func isMono(e *Element, fams []string) bool {
	switch e.Tag {
	case "code", "pre", "kbd", "samp", "tt", "var":
		return true
	}
	for _, f := range fams {
		lf := strings.ToLower(f)
		if lf == "monospace" || hasAny(lf, monoHint) {
			return true
		}
	}
	return false
}

func hasAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

func (j *judge) rendered(e *Element) []Font {
	if p := j.el(derefOr(e.FontProbe, -1)); p != nil {
		return p.Rendered
	}
	return nil
}

// offTokenFont: an element whose CSS sets a font family outside the token
// stacks and that renders in a font outside them too. Code fonts are exempt.
func (j *judge) offTokenFont() {
	ts := j.cfg.Tokens
	failed := map[string]bool{}
	for _, f := range j.s.FontsFailed {
		failed[strings.ToLower(f)] = true
	}
	var g groups
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		decl, _ := e.Set["font-family"].(string)
		fonts := j.rendered(e)
		if decl == "" || len(fonts) == 0 || e.Invisible || e.OutOfScope != "" {
			continue
		}
		fams := tokens.SplitFamilies(decl)
		if len(fams) == 0 || failed[strings.ToLower(fams[0])] {
			continue // font_fallback reports a declared font that failed to load
		}
		if isMono(e, fams) || ts.HasFamily(fams[0]) || ts.HasFamily(fonts[0].Family) || hasAny(strings.ToLower(fonts[0].Family), monoHint) {
			continue
		}
		g.add(decl, e, fonts[0].Family)
	}
	var want []string
	for _, f := range ts.FontFamilies {
		// Several tokens often share a family (body and heading stacks).
		if len(f.Families) > 0 && !slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(w, f.Families[0]) }) {
			want = append(want, f.Families[0])
		}
	}
	g.each(func(gr *group) {
		decl := gr.first.Set["font-family"].(string)
		got := gr.data.(string)
		j.add(design.Finding{
			Kind: KindOffTokenFont, Severity: design.Minor,
			Title:       fmt.Sprintf("Font %q is not a design-token font", got),
			Description: fmt.Sprintf("The page sets font-family: %s here and the text renders in %s; the token fonts are %s.", decl, got, strings.Join(want, ", ")),
			Selector:    gr.first.Selector, Box: gr.first.Box,
			Facts: withAlso(design.Facts{"declared": decl, "rendered": got, "token_families": strings.Join(want, ", ")}, gr),
			Fix:   fmt.Sprintf("Use a token font stack (for example %s) on %s.", strings.Join(want, " or "), gr.first.Selector),
		})
	})
}

// fontFallback: an element that sets a web font whose faces all failed to
// load and that renders in another font.
func (j *judge) fontFallback() {
	failed := map[string]bool{}
	for _, f := range j.s.FontsFailed {
		failed[strings.ToLower(f)] = true
	}
	if len(failed) == 0 {
		return
	}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		decl, _ := e.Set["font-family"].(string)
		fams := tokens.SplitFamilies(decl)
		fonts := j.rendered(e)
		if len(fams) == 0 || !failed[strings.ToLower(fams[0])] || len(fonts) == 0 || e.Invisible {
			continue
		}
		if strings.EqualFold(fonts[0].Family, fams[0]) {
			continue
		}
		j.add(design.Finding{
			Kind: KindFontFallback, Severity: design.Major,
			Title:       fmt.Sprintf("Web font %q failed to load; text falls back to %s", fams[0], fonts[0].Family),
			Description: fmt.Sprintf("This element sets font-family: %s, but every face of %q failed to load, so it renders in %s.", decl, fams[0], fonts[0].Family),
			Selector:    e.Selector, Box: e.Box,
			Facts: design.Facts{"declared": fams[0], "rendered": fonts[0].Family},
			Fix:   fmt.Sprintf("Fix the @font-face src for %q (check the URL, the file and its CORS/MIME headers) or self-host the font.", fams[0]),
		})
	}
}

// offScaleText: text whose computed size is off the token scale. It judges
// what readers see (an element's own text at its computed size, so a root
// set to 62.5% for rem arithmetic is no finding) and blames the nearest
// element whose CSS set the size. Code and user content are out of scope.
func (j *judge) offScaleText() {
	var g groups
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if !paintsText(e) || e.OutOfScope != "" {
			continue
		}
		blame := e
		for p := e; p != nil; p = j.el(p.Parent) {
			if _, ok := p.Set["font-size"]; ok {
				blame = p
				break
			}
		}
		if _, ok := blame.Set["font-size"]; !ok {
			continue // the browser's default size, not the page's choice
		}
		size := e.FontSize
		near, _ := tokens.NearestDimension(j.cfg.Tokens.FontSizes, size)
		if math.Abs(near.Px-size) <= scaleTolerance {
			continue
		}
		g.add(fmt.Sprintf("off|%g", size), blame, offSize{near, size})
	}
	g.each(func(gr *group) {
		d := gr.data.(offSize)
		near, size := d.near, d.size
		j.add(design.Finding{
			Kind: KindTypeScale, Severity: design.Nit,
			Title:       fmt.Sprintf("Font size %s is off the type scale", px(size)),
			Description: fmt.Sprintf("Text here renders at %s; the nearest size on the type scale is %s (%s).", px(size), near.Name, px(near.Px)),
			Selector:    gr.first.Selector, Box: gr.first.Box,
			Facts: withAlso(design.Facts{"font_size_px": size, "nearest_token": near.Name, "nearest_px": near.Px}, gr),
			Fix:   fmt.Sprintf("Use %s (%s) for %s.", near.Name, px(near.Px), gr.first.Selector),
		})
	})
}

type offSize struct {
	near tokens.Dimension
	size float64
}

// typeScale: text sizes off the token scale, text under 12 px on
// mobile (see smallText) and headings larger than every heading of a
// higher level.
func (j *judge) typeScale() {
	hasText := make([]bool, len(j.s.Elements))
	for i := range j.s.Elements {
		if paintsText(&j.s.Elements[i]) {
			for p := i; p >= 0 && !hasText[p]; p = j.s.Elements[p].Parent {
				hasText[p] = true
			}
		}
	}
	if offReason(j.s, j.cfg, scaleScope) == "" {
		j.offScaleText()
	}
	if j.s.Viewport == design.Mobile {
		j.smallText()
	}
	var heads []*Element
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if e.Heading > 0 && shown(e) && hasText[i] {
			heads = append(heads, e)
		}
	}
	// Compare each heading with the nearest higher level on the page (an h3
	// with the h2s, or the h1s when there is no h2).
	largest := map[int]float64{}
	for _, h := range heads {
		largest[h.Heading] = math.Max(largest[h.Heading], h.FontSize)
	}
	seen := map[string]bool{}
	for _, h := range heads {
		maxAbove, level := 0.0, 0
		for l := h.Heading - 1; l >= 1; l-- {
			if v, ok := largest[l]; ok {
				maxAbove, level = v, l
				break
			}
		}
		if level == 0 || h.FontSize <= maxAbove+1 {
			continue
		}
		key := fmt.Sprintf("h%d|%g", h.Heading, h.FontSize)
		if seen[key] {
			continue
		}
		seen[key] = true
		j.add(design.Finding{
			Kind: KindTypeScale, Severity: design.Minor,
			Title:       fmt.Sprintf("h%d is larger than every h%d (%s > %s)", h.Heading, level, px(h.FontSize), px(maxAbove)),
			Description: fmt.Sprintf("This h%d renders at %s, larger than the largest h%d at %s, so the visual hierarchy contradicts the document outline.", h.Heading, px(h.FontSize), level, px(maxAbove)),
			Selector:    h.Selector, Box: h.Box,
			Facts: design.Facts{"font_size_px": h.FontSize, "level": h.Heading, "higher_level": level, "higher_level_px": maxAbove},
			Fix:   fmt.Sprintf("Make %s smaller than the h%d size (%s), or use the heading level that matches its importance.", h.Selector, level, px(maxAbove)),
		})
	}
}

// smallText: text a reader reads that renders under 12 px on a phone,
// blamed on the element that set the small size. Text that is no language
// (an icon glyph, an arrow, a "¶" anchor, one lone character) is no body
// text, so its size is no finding. Each size is one recurring defect: one
// finding names its first instance and lists the rest.
func (j *judge) smallText() {
	var g groups
	seen := map[string]bool{}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if !paintsText(e) || e.Text.Glyphs != "" || e.FontSize >= minMobileText-0.01 {
			continue
		}
		blame := e
		for p := e; p != nil; p = j.el(p.Parent) {
			if _, ok := p.Set["font-size"]; ok && p.FontSize < minMobileText-0.01 {
				blame = p
			}
			if p.FontSize >= minMobileText-0.01 {
				break
			}
		}
		if seen[blame.Selector] {
			continue
		}
		seen[blame.Selector] = true
		g.add(fmt.Sprintf("small|%g", e.FontSize), blame, e.FontSize)
	}
	g.each(func(gr *group) {
		size := gr.data.(float64)
		j.add(design.Finding{
			Kind: KindTypeScale, Severity: design.Minor,
			Title:       fmt.Sprintf("Text is %s on mobile (under 12px)", px(size)),
			Description: fmt.Sprintf("Text here renders at %s on a phone; under 12 px is hard to read.", px(size)),
			Selector:    gr.first.Selector, Box: gr.first.Box,
			Facts: withAlso(design.Facts{"font_size_px": size, "minimum_px": minMobileText}, gr),
			Fix:   fmt.Sprintf("Raise the font-size on %s to at least 12px (the type scale's smallest body size).", gr.first.Selector),
		})
	})
}
