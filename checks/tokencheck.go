// Design tokens: colours, spacing and vertical rhythm against the page's
// token set.

package checks

import (
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/tokens"
	"math"
	"slices"
	"strings"
)

// offTokenColor: colours the page's CSS sets that are perceptibly off every
// token colour (CIEDE2000 > maxColorDeltaE). Pure white and black are
// neutral and always allowed.
func (j *judge) offTokenColor() {
	ts := j.cfg.Tokens
	var g groups
	type data struct {
		prop  string
		c     tokens.Color
		near  tokens.ColorToken
		delta float64
	}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if e.Invisible || e.Animated || e.OutOfScope != "" {
			continue
		}
		for _, prop := range []string{"color", "background-color", "border-color"} {
			v, _ := e.Set[prop].(string)
			c, ok := tokens.ParseColor(v)
			if !ok || c.A < 0.05 {
				continue
			}
			hex := c.Hex()
			if hex == "#ffffff" || hex == "#000000" {
				continue
			}
			near, d, ok := ts.NearestColor(c)
			if !ok || d <= maxColorDeltaE {
				continue
			}
			g.add(prop+"|"+c.String(), e, data{prop, c, near, d})
		}
	}
	g.each(func(gr *group) {
		d := gr.data.(data)
		sev := design.Nit
		if d.delta > 10 {
			sev = design.Minor
		}
		j.add(design.Finding{
			Kind: KindOffTokenColor, Severity: sev,
			Title:       fmt.Sprintf("Colour %s is not a design token (ΔE %.1f from %s)", d.c.String(), d.delta, d.near.Name),
			Description: fmt.Sprintf("The page sets %s: %s here; the nearest token, %s (%s), is ΔE2000 %.1f away (over %.0f is a visible difference).", d.prop, d.c.String(), d.near.Name, d.near.Color.String(), d.delta, maxColorDeltaE),
			Selector:    gr.first.Selector, Box: gr.first.Box,
			Facts: withAlso(design.Facts{"property": d.prop, "value": d.c.String(), "nearest_token": d.near.Name, "nearest_value": d.near.Color.String(), "delta_e": d.delta}, gr),
			Fix:   j.colorFix(gr.first, d.prop, d.c),
		})
	})
}

// colorRole is the token role a colour property plays.
var colorRole = map[string]string{"color": tokens.RoleText, "background-color": tokens.RoleBackground, "border-color": tokens.RoleBorder}

// colorFix proposes a token for e's prop that can only help: one the page
// uses for the same role (text colours for text), and, where the element's
// text and background were measured, one that keeps the text at the WCAG
// contrast it needs (so it never contradicts a contrast finding on e). With
// no such token it says so rather than propose a harmful one.
func (j *judge) colorFix(e *Element, prop string, c tokens.Color) string {
	need, fg, bg, measured := j.contrastPair(e)
	best, bestD := tokens.ColorToken{}, math.Inf(1)
	for _, t := range j.cfg.Tokens.ColorsFor(colorRole[prop]) {
		if measured {
			ok := true
			switch prop {
			case "color":
				ok = tokens.Contrast(t.Color.Over(bg), bg) >= need
			case "background-color":
				ok = t.Color.Opaque() && tokens.Contrast(fg.Over(t.Color), t.Color) >= need
			}
			if !ok {
				continue
			}
		}
		if d := tokens.DeltaE2000(c, t.Color); d < bestD {
			best, bestD = t, d
		}
	}
	role := colorRole[prop]
	if best.Name == "" {
		why := ""
		if measured && (prop == "color" || prop == "background-color") {
			why = fmt.Sprintf(" that keeps this text at %.1f:1", need)
		}
		return fmt.Sprintf("No %s token the page uses%s is close: use the colour the design intends for %s (add it to the tokens if %s is intended).", role, why, prop, c.String())
	}
	check := ""
	if !measured && (prop == "color" || prop == "background-color") {
		check = " (its contrast here was not measured: check it)"
	}
	return fmt.Sprintf("Use the %s token %s (%s) for %s instead of %s%s, or add the colour to the design tokens if it is intended.", role, best.Name, best.Color.String(), prop, c.String(), check)
}

// contrastPair returns e's text colour and the one opaque colour measured
// under it with the contrast its size needs, when both are known.
func (j *judge) contrastPair(e *Element) (need float64, fg, bg tokens.Color, ok bool) {
	t := e.Text
	if t == nil || !t.Measured || t.BgUnknown != "" {
		return 0, fg, bg, false
	}
	bgs, advisory, ok := composite(t.Bg)
	if !ok || advisory || len(bgs) != 1 {
		return 0, fg, bg, false
	}
	fg, ok = tokens.ParseColor(t.Color)
	if !ok {
		return 0, fg, bg, false
	}
	need = minContrast
	if isLarge(e.FontSize, t.Weight) {
		need = minContrastLarge
	}
	return need, fg, bgs[0], true
}

var spacingProps = []string{"margin-top", "margin-right", "margin-bottom", "margin-left", "padding-top", "padding-right", "padding-bottom", "padding-left", "row-gap", "column-gap"}

func setNumber(e *Element, prop string) (float64, bool) {
	v, ok := e.Set[prop].(float64)
	return v, ok
}

// offScaleSpacing: margins, paddings and gaps the page sets in px that are
// not on the spacing scale. Values of 2 px or less are optical nudges.
func (j *judge) offScaleSpacing() {
	ts := j.cfg.Tokens
	var g groups
	type data struct {
		prop string
		v    float64
		near tokens.Dimension
	}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if e.Invisible || e.Animated || e.OutOfScope != "" || e.Box.W == 0 && e.Box.H == 0 {
			continue
		}
		for _, prop := range spacingProps {
			v, ok := setNumber(e, prop)
			if !ok || math.Abs(v) <= 2 {
				continue
			}
			near, _ := tokens.NearestDimension(ts.Spacing, math.Abs(v))
			if math.Abs(near.Px-math.Abs(v)) <= scaleTolerance {
				continue
			}
			family := strings.SplitN(prop, "-", 2)[0]
			g.add(fmt.Sprintf("%s|%g", family, v), e, data{prop, v, near})
		}
	}
	g.each(func(gr *group) {
		d := gr.data.(data)
		j.add(design.Finding{
			Kind: KindOffScaleSpacing, Severity: design.Nit,
			Title:       fmt.Sprintf("Spacing %s is off the spacing scale", px(d.v)),
			Description: fmt.Sprintf("The page sets %s: %s; the nearest step on the spacing scale is %s (%s).", d.prop, px(d.v), d.near.Name, px(d.near.Px)),
			Selector:    gr.first.Selector, Box: gr.first.Box,
			Facts: withAlso(design.Facts{"property": d.prop, "value_px": d.v, "nearest_token": d.near.Name, "nearest_px": d.near.Px}, gr),
			Fix:   fmt.Sprintf("Use %s (%s) for %s on %s.", d.near.Name, px(d.near.Px), d.prop, gr.first.Selector),
		})
	})
}

// spacingRhythm: in a run of four or more alike siblings stacked in a column
// or a row, a gap that differs from the run's usual gap. Alike is the same
// tag, class and kind of content (the tag and class of the first block
// inside: DocBook wraps a title, an author group and a copyright line in one
// bare <div> each, alike in markup only). The run is adjacent: a sibling
// between two alike ones that takes space (a heading, an inline line, a
// floated or moved box) ends it, since a gap measured across it is no
// rhythm; one that takes none (hidden, positioned out of flow) is skipped.
func (j *judge) spacingRhythm() {
	children := map[int][]*Element{}
	content := map[int]string{}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if e.Parent < 0 || !shown(e) || e.Position == "absolute" || e.Position == "fixed" {
			continue
		}
		children[e.Parent] = append(children[e.Parent], e)
		if _, ok := content[e.Parent]; !ok && !strings.HasPrefix(e.Display, "inline") {
			content[e.Parent] = e.Tag + "." + e.Class
		}
	}
	alike := func(a, b *Element) bool {
		return rhythmItem(a) && rhythmItem(b) && a.Tag == b.Tag && a.Class == b.Class && content[a.Index] == content[b.Index]
	}
	parents := make([]int, 0, len(children))
	for p := range children {
		parents = append(parents, p)
	}
	slices.Sort(parents)
	seen := map[string]bool{}
	for _, p := range parents {
		kids := children[p]
		for start := 0; start < len(kids); {
			end := start + 1
			col := false
			for end < len(kids) && alike(kids[start], kids[end]) {
				a, b := kids[end-1], kids[end]
				isCol := math.Abs(a.Box.X-b.Box.X) <= 1 && math.Abs(a.Box.W-b.Box.W) <= 1 && b.Box.Y >= a.Box.Y+a.Box.H-0.5
				isRow := math.Abs(a.Box.Y-b.Box.Y) <= 1 && b.Box.X >= a.Box.X+a.Box.W-0.5
				if end == start+1 {
					col = isCol
					if !isCol && !isRow {
						break
					}
				} else if (col && !isCol) || (!col && !isRow) {
					break
				}
				end++
			}
			run := kids[start:end]
			if len(run) >= 4 {
				j.rhythmRun(run, col, seen)
			}
			if end == start+1 {
				start++
			} else {
				start = end
			}
		}
	}
}

// rhythmItem reports whether e can be an item of a spacing run: a box in
// the flow that its own margins place (not an inline piece of a line, nor a
// box floated, transformed or nudged off its place, nor one in a fixed bar
// or a scroller).
func rhythmItem(e *Element) bool {
	inline := strings.HasPrefix(e.Display, "inline") && e.Display != "inline-block"
	return !inline && !e.Fixed && !e.InScroller && !e.Float && !e.Transform && !e.Offset
}

func (j *judge) rhythmRun(run []*Element, col bool, seen map[string]bool) {
	gaps := make([]float64, len(run)-1)
	for k := range gaps {
		a, b := run[k], run[k+1]
		if col {
			gaps[k] = b.Box.Y - (a.Box.Y + a.Box.H)
		} else {
			gaps[k] = b.Box.X - (a.Box.X + a.Box.W)
		}
	}
	// The usual gap: the value (±tolerance) most gaps share, if a majority.
	usual, best := 0.0, 0
	for _, g := range gaps {
		n := 0
		for _, h := range gaps {
			if math.Abs(g-h) <= rhythmTolerance {
				n++
			}
		}
		if n > best {
			usual, best = g, n
		}
	}
	if best < 2 || best*2 <= len(gaps) {
		return
	}
	before, after := "margin-bottom", "margin-top"
	if !col {
		before, after = "margin-right", "margin-left"
	}
	usualMargin := func(prop string) float64 {
		count := map[float64]int{}
		for _, e := range run {
			v, _ := setNumber(e, prop)
			count[v]++
		}
		m, n := 0.0, -1
		for v, c := range count {
			if c > n || c == n && v < m {
				m, n = v, c
			}
		}
		return m
	}
	ub, ua := usualMargin(before), usualMargin(after)
	for k, g := range gaps {
		if math.Abs(g-usual) <= rhythmTolerance {
			continue
		}
		off := run[k+1]
		if v, _ := setNumber(run[k], before); v != ub {
			off = run[k]
		} else if v, _ := setNumber(run[k+1], after); v != ua {
			off = run[k+1]
		} else if k+1 < len(gaps) && math.Abs(gaps[k+1]-usual) > rhythmTolerance {
			off = run[k+1]
		} else if k > 0 && math.Abs(gaps[k-1]-usual) > rhythmTolerance {
			off = run[k]
		}
		if seen[off.Selector] {
			continue
		}
		seen[off.Selector] = true
		axis := "vertical"
		if !col {
			axis = "horizontal"
		}
		// The side of off that the gap lies on: after run[k], before run[k+1].
		edge := "top"
		switch {
		case col && off == run[k]:
			edge = "bottom"
		case !col && off == run[k]:
			edge = "right"
		case !col:
			edge = "left"
		}
		j.add(design.Finding{
			Kind: KindSpacingRhythm, Severity: design.Nit,
			Title:       fmt.Sprintf("Uneven spacing: %s gap where its siblings use %s", px(g), px(usual)),
			Description: fmt.Sprintf("In a run of %d alike %s elements the %s gap next to this one is %s; the others are %s.", len(run), off.Tag, axis, px(g), px(usual)),
			Selector:    off.Selector, Box: off.Box,
			Facts: design.Facts{"gap_px": g, "usual_gap_px": usual, "siblings": len(run), "gap_edge": edge},
			Fix:   fmt.Sprintf("Give %s the same margins as its siblings (or space the group with the parent's gap) so every gap is %s.", off.Selector, px(usual)),
		})
	}
}
