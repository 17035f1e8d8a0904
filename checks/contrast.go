// Contrast: WCAG 2.2 SC 1.4.3 over the composited backgrounds, and the
// colour a fix would need.

package checks

import (
	"fmt"
	"math"

	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/tokens"
)

// composited backgrounds under its first line.
func (j *judge) contrast() {
	var g groups
	type data struct {
		fg, bg  tokens.Color
		ratio   float64
		need    float64
		size    float64
		advisry bool
	}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		t := e.Text
		if t == nil || !shown(e) || !t.Measured || t.Disabled || t.Shadow {
			continue
		}
		if t.BgUnknown != "" {
			continue // over an image, video, translucent gradient, pseudo-element layer or filter: unknowable
		}
		if c := j.el(derefOr(e.InControl, -1)); c != nil && c.Control != nil && c.Control.Disabled {
			continue // WCAG exempts inactive controls
		}
		fg, ok := tokens.ParseColor(t.Color)
		if !ok || fg.A == 0 {
			continue
		}
		bgs, advisory, ok := composite(t.Bg)
		if !ok {
			continue
		}
		if e.Opacity > 0 && e.Opacity < 1 {
			fg.A *= e.Opacity
			advisory = true
		}
		need := minContrast
		if isLarge(e.FontSize, t.Weight) {
			need = minContrastLarge
		}
		worst, worstBg := 22.0, tokens.Color{}
		for _, bg := range bgs {
			if r := tokens.Contrast(fg.Over(bg), bg); r < worst {
				worst, worstBg = r, bg
			}
		}
		if worst >= need-0.005 {
			continue
		}
		key := fmt.Sprintf("%s|%s|%v|%v", fg.Over(worstBg).Hex(), worstBg.Hex(), need, advisory)
		g.add(key, e, data{fg.Over(worstBg), worstBg, worst, need, e.FontSize, advisory})
	}
	g.each(func(gr *group) {
		d := gr.data.(data)
		sev := engine.Minor
		if d.ratio < d.need*2/3 {
			sev = engine.Major
		}
		kind := "normal"
		if d.need == minContrastLarge {
			kind = "large"
		}
		fix := suggestColor(d.fg, d.bg, d.need)
		desc := fmt.Sprintf("Text colour %s on %s measures %.2f:1; WCAG 2.2 (1.4.3) needs %.1f:1 for %s text (%s).",
			d.fg.Hex(), d.bg.Hex(), d.ratio, d.need, kind, px(d.size))
		if d.advisry {
			desc += " The background is a gradient or the text is translucent, so the worst point was used: check it by eye."
		}
		j.add(engine.Finding{
			Kind: KindContrast, Severity: sev, Advisory: d.advisry,
			Title:       fmt.Sprintf("Low text contrast %.2f:1 (needs %.1f:1)", d.ratio, d.need),
			Description: desc, Selector: gr.first.Selector, Box: textBox(gr.first),
			Facts: withAlso(engine.Facts{"ratio": d.ratio, "required": d.need, "foreground": d.fg.Hex(),
				"background": d.bg.Hex(), "font_size_px": d.size}, gr),
			Fix: fix,
		})
	})
}

func derefOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func textBox(e *Element) engine.Rect {
	if e.Text == nil || len(e.Text.Rects) == 0 {
		return e.Box
	}
	return union(e.Text.Rects)
}

func union(rs []engine.Rect) engine.Rect {
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, r := range rs {
		x0, y0 = math.Min(x0, r.X), math.Min(y0, r.Y)
		x1, y1 = math.Max(x1, r.X+r.W), math.Max(y1, r.Y+r.H)
	}
	return engine.Rect{X: x0, Y: y0, W: x1 - x0, H: y1 - y0}
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
func suggestColor(fg, bg tokens.Color, need float64) string {
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
		return fmt.Sprintf("%s the text to %s or further (%.1f:1 against %s), or change the background.", verb1, c.Hex(), need, bg.Hex())
	}
	if c, ok := try(second); ok {
		return fmt.Sprintf("%s the text to %s or further (%.1f:1 against %s), or change the background.", verb2, c.Hex(), need, bg.Hex())
	}
	return fmt.Sprintf("Change the background %s: no text colour reaches %.1f:1 on it.", bg.Hex(), need)
}

// viewportOverflow blames the outermost element whose own box crosses the
