// Contrast: WCAG 2.2 SC 1.4.3 over the composited backgrounds, and the
// colour a fix would need.

package checks

import (
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/tokens"
	"math"
)

// background under its glyphs: the pixels read from the rendered page when
// the styles cannot give one colour (Text.Sampled), else the composited
// background layers under its first line.
func (j *judge) contrast() {
	var g groups
	type data struct {
		fg, bg, fixBg tokens.Color
		ratio         float64
		need          float64
		size          float64
		advisry       bool
		sampled       bool
	}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		t := e.Text
		if !paintsText(e) || !t.Measured || j.s.contrastExempt(e) {
			continue
		}
		fg, ok := tokens.ParseColor(t.Color)
		if !ok || fg.A == 0 {
			continue
		}
		if e.Opacity > 0 && e.Opacity < 1 {
			fg.A *= e.Opacity
		}
		need := minContrast
		if isLarge(e.FontSize, t.Weight) {
			need = minContrastLarge
		}
		d, ok := measureContrast(fg, t, e.Opacity)
		if !ok || d.ratio >= need-0.005 {
			continue
		}
		key := fmt.Sprintf("%s|%s|%v|%v", d.fg.Hex(), d.bg.Hex(), need, d.advisory)
		g.add(key, e, data{d.fg, d.bg, d.fixBg, d.ratio, need, e.FontSize, d.advisory, d.sampled})
	}
	g.each(func(gr *group) {
		d := gr.data.(data)
		sev := design.Minor
		if d.ratio < d.need*2/3 {
			sev = design.Major
		}
		kind := "normal"
		if d.need == minContrastLarge {
			kind = "large"
		}
		fix, suggested := suggestColor(d.fg, d.fixBg, d.need)
		desc := fmt.Sprintf("Text colour %s on %s measures %.2f:1; WCAG 2.2 (1.4.3) needs %.1f:1 for %s text (%s).",
			d.fg.Hex(), d.bg.Hex(), d.ratio, d.need, kind, px(d.size))
		switch {
		case d.sampled:
			desc += " The background was read from the rendered pixels under the glyphs (it is an image, a gradient, a translucent layer or a shadow)."
		case d.advisry:
			desc += " The background is a gradient or the text is translucent, so the worst point was used: check it by eye."
		}
		facts := withAlso(design.Facts{"ratio": d.ratio, "required": d.need, "foreground": d.fg.Hex(),
			"background": d.bg.Hex(), "font_size_px": d.size}, gr)
		if suggested != "" {
			facts["suggested"] = suggested // the colour the fix names, for a swatch beside the measured ones
		}
		j.add(design.Finding{
			Kind: KindContrast, Severity: sev, Advisory: d.advisry,
			Title:       fmt.Sprintf("Low text contrast %.2f:1 (needs %.1f:1)", d.ratio, d.need),
			Description: desc, Selector: gr.first.Selector, Box: textBox(gr.first),
			Facts: facts, Fix: fix,
		})
	})
}

// measured is one text's contrast: the opaque text colour, the background
// it is judged on, and the background a fix must hold against.
type measured struct {
	fg, bg, fixBg     tokens.Color
	ratio             float64
	advisory, sampled bool
}

// measureContrast judges fg (its alpha already multiplied by the element's
// opacity) on the sampled pixels when there are some: the background under
// the median glyph pixel, with a fix that also holds under the 10th
// percentile. Without pixels it composites the style layers, and a
// gradient's stops or a translucent text give an advisory worst point. It
// reports false when neither can say (an image, a shadow, a filter).
func measureContrast(fg tokens.Color, t *Text, opacity float64) (measured, bool) {
	if sm := t.Sampled; sm != nil {
		bg, ok1 := tokens.ParseColor(sm.Bg)
		worst, ok2 := tokens.ParseColor(sm.Worst)
		if !ok1 || !ok2 {
			return measured{}, false
		}
		if c, ok := tokens.ParseColor(sm.Fg); ok && sm.Fg != "" {
			fg = c // what the faded group really paints
		}
		return measured{fg: fg.Over(bg), bg: bg, fixBg: worst, ratio: tokens.Contrast(fg.Over(bg), bg), sampled: true}, true
	}
	if t.BgUnknown != "" || t.Shadow {
		return measured{}, false
	}
	bgs, advisory, ok := composite(t.Bg)
	if !ok {
		return measured{}, false
	}
	advisory = advisory || (opacity > 0 && opacity < 1)
	m := measured{ratio: 22, advisory: advisory}
	for _, bg := range bgs {
		if r := tokens.Contrast(fg.Over(bg), bg); r < m.ratio {
			m.ratio, m.fg, m.bg, m.fixBg = r, fg.Over(bg), bg, bg
		}
	}
	return m, true
}

// contrastExempt reports whether WCAG 1.4.3's exceptions cover e's text:
// part of an inactive control or naming one, a logotype, or no language
// (icon glyphs, a lone character).
func (s *Snapshot) contrastExempt(e *Element) bool {
	t := e.Text
	if t.Disabled || t.Logo || t.Glyphs != "" {
		return true
	}
	if c := derefOr(e.InControl, -1); c >= 0 && c < len(s.Elements) {
		if ctl := s.Elements[c].Control; ctl != nil && ctl.Disabled {
			return true
		}
	}
	return false
}

func derefOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func textBox(e *Element) design.Rect {
	if e.Text == nil || len(e.Text.Rects) == 0 {
		return e.Box
	}
	return union(e.Text.Rects)
}

func union(rs []design.Rect) design.Rect {
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, r := range rs {
		x0, y0 = math.Min(x0, r.X), math.Min(y0, r.Y)
		x1, y1 = math.Max(x1, r.X+r.W), math.Max(y1, r.Y+r.H)
	}
	return design.Rect{X: x0, Y: y0, W: x1 - x0, H: y1 - y0}
}

// composite turns background layers (top first) into the opaque colours the
// text can sit on: one, or a gradient's stops. The canvas under everything is
// white.
func composite(layers []Layer) (bgs []tokens.Color, advisory, ok bool) {
	base := []tokens.Color{{R: 255, G: 255, B: 255, A: 1}}
	for i := len(layers) - 1; i >= 0; i-- {
		l := layers[i]
		if len(l.Gradient) > 0 {
			var stops []tokens.Color
			for _, s := range l.Gradient {
				c, ok := tokens.ParseColor(s)
				if !ok {
					return nil, false, false
				}
				stops = append(stops, c.Over(base[0]))
			}
			base, advisory = stops, true
			continue
		}
		c, ok := tokens.ParseColor(l.Color)
		if !ok {
			return nil, false, false
		}
		for k := range base {
			base[k] = c.Over(base[k])
		}
	}
	return base, advisory, true
}

// suggestColor names the nearest colour along fg→black or fg→white that
// meets need against bg.
func suggestColor(fg, bg tokens.Color, need float64) (fix, suggested string) {
	black, white := tokens.Color{A: 1}, tokens.Color{R: 255, G: 255, B: 255, A: 1}
	try := func(to tokens.Color) (tokens.Color, bool) {
		if tokens.Contrast(fg.Mix(to, 1), bg) < need+0.05 {
			return tokens.Color{}, false
		}
		lo, hi := 0.0, 1.0
		for range 30 {
			mid := (lo + hi) / 2
			if tokens.Contrast(fg.Mix(to, mid), bg) >= need+0.05 {
				hi = mid
			} else {
				lo = mid
			}
		}
		return fg.Mix(to, hi), true
	}
	first, second, verb1, verb2 := black, white, "Darken", "Lighten"
	if bg.Luminance() < 0.18 {
		first, second, verb1, verb2 = white, black, "Lighten", "Darken"
	}
	if c, ok := try(first); ok {
		return fmt.Sprintf("%s the text to %s or further (%.1f:1 against %s), or change the background.", verb1, c.Hex(), need, bg.Hex()), c.Hex()
	}
	if c, ok := try(second); ok {
		return fmt.Sprintf("%s the text to %s or further (%.1f:1 against %s), or change the background.", verb2, c.Hex(), need, bg.Hex()), c.Hex()
	}
	return fmt.Sprintf("Change the background %s: no text colour reaches %.1f:1 on it.", bg.Hex(), need), ""
}

// viewportOverflow blames the outermost element whose own box crosses the
