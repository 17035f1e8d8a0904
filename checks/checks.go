// Package checks measures a loaded page (Collect) and judges the measurement
// (Run) with bastion's design checks: contrast, layout (viewport overflow,
// container escape, clipped text, overlap, occluded controls, tap targets),
// design tokens (colour, spacing, rhythm, fonts, type scale), broken images
// and unnamed controls.
//
// Invariants: Run is a pure function of a Snapshot and a Config, so a saved
// snapshot re-judges identically; a check judges only what was measured and,
// for token checks, only values the page's own CSS set (never browser
// defaults); screen-reader-only, aria-hidden, animated, off-canvas and
// svg/img/canvas content is never judged; each defect is reported once, on
// the outermost element an author can act on; when a measurement is
// uncertain the check stays silent or marks its finding advisory.
package checks

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/tokens"
)

// The check kinds, in report order.
const (
	KindContrast         = "contrast"
	KindViewportOverflow = "viewport_overflow"
	KindContainerEscape  = "container_escape"
	KindTextClipped      = "text_clipped"
	KindOverlap          = "overlap"
	KindOccludedControl  = "occluded_control"
	KindTapTarget        = "tap_target"
	KindOffTokenColor    = "off_token_color"
	KindOffScaleSpacing  = "off_scale_spacing"
	KindSpacingRhythm    = "spacing_rhythm"
	KindOffTokenFont     = "off_token_font"
	KindFontFallback     = "font_fallback"
	KindTypeScale        = "type_scale"
	KindBrokenImage      = "broken_image"
	KindUnnamedControl   = "unnamed_control"
)

var allKinds = []string{
	KindContrast, KindViewportOverflow, KindContainerEscape, KindTextClipped, KindOverlap,
	KindOccludedControl, KindTapTarget, KindOffTokenColor, KindOffScaleSpacing, KindSpacingRhythm,
	KindOffTokenFont, KindFontFallback, KindTypeScale, KindBrokenImage, KindUnnamedControl,
}

// Kinds lists every check kind Run can report, in report order.
func Kinds() []string { return slices.Clone(allKinds) }

// TokenKinds lists the kinds that need a token set; Run skips them when
// Config.Tokens is nil.
func TokenKinds() []string {
	return []string{KindOffTokenColor, KindOffScaleSpacing, KindOffTokenFont, KindTypeScale}
}

// Config tunes Run. The zero Config runs every check that needs no tokens
// (type_scale then judges only tiny text and heading order).
type Config struct {
	Tokens *tokens.Set // nil turns the token comparisons off
}

// Thresholds. They are constants, not knobs: the corpus test pins them.
const (
	minContrast      = 4.5
	minContrastLarge = 3.0
	maxColorDeltaE   = 3.0 // CIEDE2000; ~2.3 is a just-noticeable difference
	edgeTolerance    = 1.0 // px a box may cross an edge by (subpixel layout)
	escapeMin        = 2.0
	scaleTolerance   = 0.5
	rhythmTolerance  = 2.0
	minTarget        = 24.0 // WCAG 2.5.8
	comfyTarget      = 44.0 // WCAG 2.5.5, advisory
	minMobileText    = 12.0
)

type checker func(*judge)

var checkers = map[string]checker{
	KindContrast:         (*judge).contrast,
	KindViewportOverflow: (*judge).viewportOverflow,
	KindContainerEscape:  (*judge).containerEscape,
	KindTextClipped:      (*judge).textClipped,
	KindOverlap:          (*judge).overlap,
	KindOccludedControl:  (*judge).occluded,
	KindTapTarget:        (*judge).tapTarget,
	KindOffTokenColor:    (*judge).offTokenColor,
	KindOffScaleSpacing:  (*judge).offScaleSpacing,
	KindSpacingRhythm:    (*judge).spacingRhythm,
	KindOffTokenFont:     (*judge).offTokenFont,
	KindFontFallback:     (*judge).fontFallback,
	KindTypeScale:        (*judge).typeScale,
	KindBrokenImage:      (*judge).brokenImage,
	KindUnnamedControl:   (*judge).unnamed,
}

// Run judges s with every check and returns the findings in a stable order
// (kind, then position, then selector). Route and ID are left for the
// engine to fill.
func Run(s *Snapshot, cfg Config) []engine.Finding {
	return run(s, cfg, allKinds)
}

func run(s *Snapshot, cfg Config, kinds []string) []engine.Finding {
	if s == nil {
		return nil
	}
	j := &judge{s: s, cfg: cfg}
	for _, k := range kinds {
		if cfg.Tokens == nil && k != KindTypeScale && slices.Contains(TokenKinds(), k) {
			continue
		}
		if c, ok := checkers[k]; ok {
			c(j)
		}
	}
	order := map[string]int{}
	for i, k := range allKinds {
		order[k] = i
	}
	slices.SortStableFunc(j.out, func(a, b engine.Finding) int {
		return cmp.Or(cmp.Compare(order[a.Kind], order[b.Kind]), cmp.Compare(a.Box.Y, b.Box.Y),
			cmp.Compare(a.Box.X, b.Box.X), cmp.Compare(a.Selector, b.Selector))
	})
	return j.out
}

// Remeasure finds f's element in s (a fresh snapshot of the same route and
// viewport) and re-runs f's check: Passed when the check no longer reports
// it, Failed with the new facts when it does, Inconclusive when the element
// is gone or the kind is unknown.
func Remeasure(s *Snapshot, cfg Config, f engine.Finding) engine.RecheckOutcome {
	out := engine.RecheckOutcome{FindingID: f.ID}
	if _, ok := checkers[f.Kind]; !ok || s == nil {
		out.Outcome, out.Reason = engine.Inconclusive, "unknown check kind "+f.Kind
		return out
	}
	if slices.Contains(TokenKinds(), f.Kind) && f.Kind != KindTypeScale && cfg.Tokens == nil {
		out.Outcome, out.Reason = engine.Inconclusive, "no design tokens to compare against"
		return out
	}
	var estimate *engine.Finding
	for _, g := range run(s, cfg, []string{f.Kind}) {
		if g.Selector != f.Selector && !slices.Contains(alsoOf(g), f.Selector) {
			continue
		}
		switch {
		case sameRule(f, g):
			out.Outcome, out.Facts = engine.Failed, g.Facts
			out.Reason = "still measured: " + g.Title
			return out
		case f.Kind == KindContrast && !f.Advisory && g.Advisory && estimate == nil:
			estimate = &g
		}
	}
	if estimate != nil {
		// The measured defect became an estimate (the text now sits on a
		// gradient or is translucent): neither fixed nor measured.
		out.Outcome, out.Facts = engine.Inconclusive, estimate.Facts
		out.Reason = "only an estimate remains, check it by eye: " + estimate.Title
		return out
	}
	present := s.bySelector(f.Selector) != nil
	for _, u := range s.Unnamed {
		present = present || u.Selector == f.Selector
	}
	if !present {
		out.Outcome, out.Reason = engine.Inconclusive, "element gone: "+f.Selector+" is no longer in the page"
		return out
	}
	out.Outcome, out.Reason = engine.Passed, "measured again: the defect is gone"
	return out
}

// ruleOf names the rule within f's kind that produced f: a kind whose
// check applies several rules to one element (a hard minimum and an
// advisory comfort size, a type-scale step and a heading order, one
// colour property and another) must be rechecked against the same rule,
// not against whatever else the kind still says about the element. It reads
// only what survives a JSON round trip (the advisory flag and fact names).
func ruleOf(f engine.Finding) string {
	has := func(k string) bool { _, ok := f.Facts[k]; return ok }
	switch f.Kind {
	case KindTapTarget:
		if f.Advisory {
			return "2.5.5"
		}
		return "2.5.8"
	case KindContrast:
		if f.Advisory {
			return "estimate"
		}
		return "measured"
	case KindTypeScale:
		switch {
		case has("nearest_token"):
			return "scale"
		case has("minimum_px"):
			return "mobile_minimum"
		case has("level"):
			return "heading_order"
		}
	case KindOffTokenColor:
		p, _ := f.Facts["property"].(string)
		return p
	case KindOffScaleSpacing:
		p, _ := f.Facts["property"].(string)
		return strings.SplitN(p, "-", 2)[0] // grouped by family: margin, padding, row, column
	}
	return ""
}

// sameRule reports whether g, measured now, still shows the defect the
// stored finding f reported. An advisory finding is still shown by a hard
// one of its kind (a target under 24 px is under 44 px too; a contrast
// measured low is low at its worst point too).
func sameRule(f, g engine.Finding) bool {
	if ruleOf(f) == ruleOf(g) {
		return true
	}
	return f.Advisory && !g.Advisory && (f.Kind == KindTapTarget || f.Kind == KindContrast)
}

// alsoOf returns the other selectors a grouped finding covers, whether f
// was built here or decoded from JSON.
func alsoOf(f engine.Finding) []string {
	switch l := f.Facts["also"].(type) {
	case []string:
		return l
	case []any:
		var out []string
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// judge holds one Run's state.
type judge struct {
	s   *Snapshot
	cfg Config
	out []engine.Finding
}

func (j *judge) el(i int) *Element {
	if i < 0 || i >= len(j.s.Elements) {
		return nil
	}
	return &j.s.Elements[i]
}

func (j *judge) add(f engine.Finding) {
	if f.Selector == "" {
		return // nothing an author could act on
	}
	f.Viewports = []engine.Viewport{j.s.Viewport}
	for k, v := range f.Facts {
		if x, ok := v.(float64); ok {
			f.Facts[k] = round2(x)
		}
	}
	j.out = append(j.out, f)
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// shown reports whether e is rendered with a box an author can see.
func shown(e *Element) bool {
	return !e.Invisible && !e.Animated && e.Box.W > 0 && e.Box.H > 0
}

// group collects elements that share a defect, so one finding covers them.
type group struct {
	first *Element
	also  []string
	count int
	data  any
}

type groups struct {
	keys []string
	m    map[string]*group
}

func (g *groups) add(key string, e *Element, data any) {
	if g.m == nil {
		g.m = map[string]*group{}
	}
	if x, ok := g.m[key]; ok {
		x.count++
		if len(x.also) < 5 && e.Selector != "" && e.Selector != x.first.Selector && !slices.Contains(x.also, e.Selector) {
			x.also = append(x.also, e.Selector)
		}
		return
	}
	g.keys = append(g.keys, key)
	g.m[key] = &group{first: e, count: 1, data: data}
}

func (g *groups) each(fn func(*group)) {
	for _, k := range g.keys {
		fn(g.m[k])
	}
}

func withAlso(f engine.Facts, g *group) engine.Facts {
	f["count"] = g.count
	if len(g.also) > 0 {
		f["also"] = g.also
	}
	return f
}

func px(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0") + "px"
}

func isLarge(size float64, weight int) bool {
	return size >= 24 || (size >= 18.66 && weight >= 700)
}

// contrast: WCAG 2.2 SC 1.4.3 on each element's own text against the
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
// viewport's right edge.
func (j *judge) viewportOverflow() {
	vw := j.s.Width
	// An element crosses the edge when its own box does, or its own text
	// (an unbreakable word, a long URL) runs past it.
	crosses := func(e *Element) bool {
		if !shown(e) {
			return false
		}
		if e.Box.X+e.Box.W > vw+edgeTolerance && e.Box.X < vw {
			return true
		}
		if e.Text != nil && !e.OwnClipX {
			for _, r := range e.Text.Rects {
				if r.X+r.W > vw+edgeTolerance && r.X < vw {
					return true
				}
			}
		}
		return false
	}
	right := func(e *Element) float64 {
		r := e.Box.X + e.Box.W
		if e.Text != nil && !e.OwnClipX {
			for _, t := range e.Text.Rects {
				r = math.Max(r, t.X+t.W)
			}
		}
		return r
	}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if e.Tag == "html" || !crosses(e) || e.Fixed || e.InScroller || e.ClipX || e.Transformed {
			continue
		}
		outer := true
		for p := j.el(e.Parent); p != nil; p = j.el(p.Parent) {
			if p.Tag != "html" && crosses(p) {
				outer = false
				break
			}
		}
		if !outer {
			continue
		}
		over := right(e) - vw
		sev := engine.Minor
		if over > 16 {
			sev = engine.Major
		}
		j.add(engine.Finding{
			Kind: KindViewportOverflow, Severity: sev,
			Title:       fmt.Sprintf("Element runs %s past the viewport's right edge", px(over)),
			Description: fmt.Sprintf("%s is %s wide and its content ends at x=%s in a %s viewport, so the page scrolls sideways or cuts it off.", e.Tag, px(e.Box.W), px(right(e)), px(vw)),
			Selector:    e.Selector, Box: e.Box,
			Facts: engine.Facts{"overflow_px": over, "viewport_width": vw, "element_width": e.Box.W, "element_right": right(e)},
			Fix:   fmt.Sprintf("Constrain %s to the viewport: max-width: 100%% (or remove its fixed width of %s), let it wrap, or put it in an overflow-x: auto container.", e.Selector, px(e.Box.W)),
		})
	}
}

// containerEscape: an in-flow element whose box extends past the nearest
// visibly bounded ancestor (own background, border or shadow).
func (j *judge) containerEscape() {
	vw := j.s.Width
	escape := func(e, b *Element) (right, bottom, left float64) {
		return e.Box.X + e.Box.W - (b.Box.X + b.Box.W), e.Box.Y + e.Box.H - (b.Box.Y + b.Box.H), b.Box.X - e.Box.X
	}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if !shown(e) || e.Fixed || e.InScroller || e.Transformed || e.Transform || e.Offset || e.Tag == "html" || e.Tag == "body" {
			continue
		}
		if e.Position != "static" && e.Position != "relative" {
			continue
		}
		if e.Box.X+e.Box.W > vw+edgeTolerance {
			continue // viewport_overflow reports it
		}
		// The nearest bounded ancestor, through in-flow ancestors only.
		var b *Element
		ok := true
		for p := j.el(e.Parent); p != nil; p = j.el(p.Parent) {
			if p.Tag == "body" || p.Tag == "html" {
				break
			}
			if p.Bounded {
				b = p
				break
			}
			if p.Position != "static" && p.Position != "relative" || p.Transform {
				ok = false
				break
			}
		}
		if b == nil || !ok || !shown(b) {
			continue
		}
		r, bo, l := escape(e, b)
		if e.ClipX {
			r, l = 0, 0
		}
		if e.ClipY {
			bo = 0
		}
		worst := math.Max(r, math.Max(bo, l))
		if worst <= escapeMin {
			continue
		}
		if p := j.el(e.Parent); p != b {
			pr, pb, pl := escape(p, b)
			if math.Max(pr, math.Max(pb, pl)) > escapeMin && shown(p) {
				continue // the parent escapes too: it is the outer offender
			}
		}
		side := "right"
		switch worst {
		case bo:
			side = "bottom"
		case l:
			side = "left"
		}
		sev := engine.Minor
		if worst >= 16 {
			sev = engine.Major
		}
		j.add(engine.Finding{
			Kind: KindContainerEscape, Severity: sev,
			Title:       fmt.Sprintf("Element spills %s out of its container's %s edge", px(worst), side),
			Description: fmt.Sprintf("%s extends %s past the %s edge of %s, which draws a visible box around it.", e.Tag, px(worst), side, b.Selector),
			Selector:    e.Selector, Box: e.Box,
			Facts: engine.Facts{"escape_px": worst, "edge": side, "container": b.Selector, "container_width": b.Box.W, "container_height": b.Box.H},
			Fix:   fmt.Sprintf("Let %s fit %s: give it max-width: 100%% or min-width: 0 (flex/grid items), allow wrapping (overflow-wrap: anywhere), or drop the fixed height on the container.", e.Selector, b.Selector),
		})
	}
}

// textClipped: text that an overflow:hidden/clip box cuts off, except
// deliberate truncation (text-overflow: ellipsis, line-clamp, masks,
// collapsed disclosure panels).
func (j *judge) textClipped() {
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		c := e.Clip
		if c == nil || !shown(e) || c.Masked || c.Collapsed {
			continue
		}
		x, y := c.X, c.Y
		if c.Ellipsis {
			x = 0
		}
		if c.LineClamp {
			y = 0
		}
		if x <= edgeTolerance && y <= edgeTolerance {
			continue
		}
		axis, cut := "horizontally", x
		fix := fmt.Sprintf("Let %s widen with its text (drop the fixed width or white-space: nowrap), or truncate on purpose with text-overflow: ellipsis and expose the full text (title or tooltip).", e.Selector)
		if y > x {
			axis, cut = "vertically", y
			fix = fmt.Sprintf("Let %s grow with its text (min-height instead of height or max-height, or remove overflow: hidden), or clamp on purpose with -webkit-line-clamp and a way to read the rest.", e.Selector)
		}
		j.add(engine.Finding{
			Kind: KindTextClipped, Severity: engine.Major,
			Title:       fmt.Sprintf("Text cut off %s by %s", axis, px(cut)),
			Description: fmt.Sprintf("%s hides its overflow and its text runs %s past its edge, so readers lose part of it.", e.Tag, px(cut)),
			Selector:    e.Selector, Box: e.Box,
			Facts: engine.Facts{"clipped_x_px": x, "clipped_y_px": y, "box_width": e.Box.W, "box_height": e.Box.H},
			Fix:   fix,
		})
	}
}

// overlap: unrelated text whose line boxes intersect with no opaque surface
// between them (an opaque surface means a deliberate overlay such as a
// badge, menu or dialog). It blames the top element's branch under the
// lowest common ancestor.
func (j *judge) overlap() {
	seen := map[string]bool{}
	for _, o := range j.s.Overlaps {
		top, bottom := j.el(o.Top), j.el(o.Bottom)
		if top == nil || bottom == nil || o.Surface || !shown(top) || !shown(bottom) {
			continue
		}
		if o.W < 4 || o.H < math.Max(3, 0.3*o.LineH) {
			continue // glyph boxes that merely touch
		}
		off := j.branch(o.Top, o.Bottom)
		if off == nil || seen[off.Selector] {
			continue
		}
		seen[off.Selector] = true
		ob := j.branch(o.Bottom, o.Top)
		other := bottom.Selector
		if ob != nil {
			other = ob.Selector
		}
		j.add(engine.Finding{
			Kind: KindOverlap, Severity: engine.Major,
			Title:       "Text overlaps other text",
			Description: fmt.Sprintf("Text in %s is drawn over text in %s (%s × %s intersect), so both become hard to read.", off.Selector, other, px(o.W), px(o.H)),
			Selector:    off.Selector, Box: off.Box,
			Facts: engine.Facts{"overlap_w_px": o.W, "overlap_h_px": o.H, "overlap_area_px2": o.Area, "other": other},
			Fix:   fmt.Sprintf("Remove the negative margin, offset or absolute position that puts %s over %s, or reserve space for it.", off.Selector, other),
		})
	}
}

// branch returns the ancestor-or-self of a that is a child of the lowest
// common ancestor of a and b.
func (j *judge) branch(a, b int) *Element {
	anc := map[int]bool{}
	for p := b; p >= 0; p = j.el(p).Parent {
		anc[p] = true
	}
	prev := a
	for p := j.el(a).Parent; p >= 0; p = j.el(p).Parent {
		if anc[p] {
			return j.el(prev)
		}
		prev = p
	}
	return nil
}

// occluded: a control whose centre hit-tests to an unrelated element.
func (j *judge) occluded() {
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		c := e.Control
		if c == nil || c.Hit != "other" || c.Disabled || c.NoPointer || !shown(e) {
			continue
		}
		j.add(engine.Finding{
			Kind: KindOccludedControl, Severity: engine.Major,
			Title:       "Control is covered by another element",
			Description: fmt.Sprintf("A click at the centre of this %s lands on %s instead, so the control cannot be used there.", c.Role, c.HitBy),
			Selector:    e.Selector, Box: e.Box,
			Facts: engine.Facts{"covered_by": c.HitBy, "role": c.Role, "center_x": e.Box.X + e.Box.W/2, "center_y": e.Box.Y + e.Box.H/2},
			Fix:   fmt.Sprintf("Move %s out from over %s, give it pointer-events: none if it is decorative, or fix the stacking (z-index) so the control is on top.", c.HitBy, e.Selector),
		})
	}
}

// tapTarget: WCAG 2.2 SC 2.5.8 (24×24 CSS px, with the spacing and
// inline-link exceptions and the user-agent-default exception) on mobile
// and tablet; buttons under 44 px on mobile get an advisory nit (2.5.5).
func (j *judge) tapTarget() {
	if j.s.Viewport != engine.Mobile && j.s.Viewport != engine.Tablet {
		return
	}
	type target struct {
		e   *Element
		box engine.Rect
	}
	var ts []target
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		c := e.Control
		if c == nil || c.Disabled || c.NoPointer || !shown(e) || e.InControl != nil || c.Hit == "ancestor" {
			continue
		}
		box := e.Box
		if c.LabelBox != nil && c.LabelBox.W*c.LabelBox.H > box.W*box.H && (c.Role == "checkbox" || c.Role == "radio") {
			box = *c.LabelBox
		}
		ts = append(ts, target{e, box})
	}
	small := func(r engine.Rect) bool { return math.Min(r.W, r.H) < minTarget-0.01 }
	for k, t := range ts {
		c := t.e.Control
		if c.Inline || c.UASized {
			continue
		}
		w, h := t.box.W, t.box.H
		if !small(t.box) {
			if j.s.Viewport == engine.Mobile && c.Role == "button" && math.Min(w, h) < comfyTarget-0.01 {
				j.add(engine.Finding{
					Kind: KindTapTarget, Severity: engine.Nit, Advisory: true,
					Title:       fmt.Sprintf("Button is %s × %s; 44 × 44 is comfortable on touch", px(w), px(h)),
					Description: "WCAG 2.5.8's 24 px minimum is met, but 2.5.5 (AAA) and platform guidelines ask for 44 × 44 CSS px on touch screens.",
					Selector:    t.e.Selector, Box: t.box,
					Facts: engine.Facts{"width_px": w, "height_px": h, "recommended_px": comfyTarget},
					Fix:   fmt.Sprintf("Give %s min-height: 44px (and min-width: 44px) with padding.", t.e.Selector),
				})
			}
			continue
		}
		// Spacing exception: a 24 px circle on the target's centre must not
		// meet another target, nor another small target's circle.
		cx, cy := t.box.X+t.box.W/2, t.box.Y+t.box.H/2
		crowded := ""
		for m, o := range ts {
			if m == k {
				continue
			}
			ox, oy := o.box.X+o.box.W/2, o.box.Y+o.box.H/2
			dx := math.Max(0, math.Max(o.box.X-cx, cx-(o.box.X+o.box.W)))
			dy := math.Max(0, math.Max(o.box.Y-cy, cy-(o.box.Y+o.box.H)))
			if math.Hypot(dx, dy) < minTarget/2 || (small(o.box) && math.Hypot(ox-cx, oy-cy) < minTarget) {
				crowded = o.e.Selector
				break
			}
		}
		if crowded == "" {
			continue
		}
		sev := engine.Major
		if j.s.Viewport == engine.Tablet {
			sev = engine.Minor
		}
		j.add(engine.Finding{
			Kind: KindTapTarget, Severity: sev,
			Title:       fmt.Sprintf("Tap target %s × %s is under 24 × 24 px", px(w), px(h)),
			Description: fmt.Sprintf("This %s is smaller than WCAG 2.2's 24 × 24 CSS px minimum (2.5.8) and too close to %s for the spacing exception.", c.Role, crowded),
			Selector:    t.e.Selector, Box: t.box,
			Facts: engine.Facts{"width_px": w, "height_px": h, "minimum_px": minTarget, "nearest_target": crowded},
			Fix:   fmt.Sprintf("Make %s at least 24 × 24 px (padding or min-width/min-height), or space it so a 24 px circle around it touches no other target.", t.e.Selector),
		})
	}
}

// offTokenColor: colours the page's CSS sets that are perceptibly off every
// token colour (CIEDE2000 > maxColorDeltaE). Pure white and black are
// neutral and always allowed.
func (j *judge) offTokenColor() {
	ts := j.cfg.Tokens
	if ts == nil || len(ts.Colors) == 0 {
		return
	}
	var g groups
	type data struct {
		prop  string
		c     tokens.Color
		near  tokens.ColorToken
		delta float64
	}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if e.Invisible || e.Animated {
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
			g.add(c.String(), e, data{prop, c, near, d})
		}
	}
	g.each(func(gr *group) {
		d := gr.data.(data)
		sev := engine.Nit
		if d.delta > 10 {
			sev = engine.Minor
		}
		j.add(engine.Finding{
			Kind: KindOffTokenColor, Severity: sev,
			Title:       fmt.Sprintf("Colour %s is not a design token (ΔE %.1f from %s)", d.c.String(), d.delta, d.near.Name),
			Description: fmt.Sprintf("The page sets %s: %s here; the nearest token, %s (%s), is ΔE2000 %.1f away (over %.0f is a visible difference).", d.prop, d.c.String(), d.near.Name, d.near.Color.String(), d.delta, maxColorDeltaE),
			Selector:    gr.first.Selector, Box: gr.first.Box,
			Facts: withAlso(engine.Facts{"property": d.prop, "value": d.c.String(), "nearest_token": d.near.Name, "nearest_value": d.near.Color.String(), "delta_e": d.delta}, gr),
			Fix:   fmt.Sprintf("Use the token %s (%s) for %s instead of %s, or add the colour to the design tokens if it is intended.", d.near.Name, d.near.Color.String(), d.prop, d.c.String()),
		})
	})
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
	if ts == nil || len(ts.Spacing) == 0 {
		return
	}
	var g groups
	type data struct {
		prop string
		v    float64
		near tokens.Dimension
	}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if e.Invisible || e.Animated || e.Box.W == 0 && e.Box.H == 0 {
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
		j.add(engine.Finding{
			Kind: KindOffScaleSpacing, Severity: engine.Nit,
			Title:       fmt.Sprintf("Spacing %s is off the spacing scale", px(d.v)),
			Description: fmt.Sprintf("The page sets %s: %s; the nearest step on the spacing scale is %s (%s).", d.prop, px(d.v), d.near.Name, px(d.near.Px)),
			Selector:    gr.first.Selector, Box: gr.first.Box,
			Facts: withAlso(engine.Facts{"property": d.prop, "value_px": d.v, "nearest_token": d.near.Name, "nearest_px": d.near.Px}, gr),
			Fix:   fmt.Sprintf("Use %s (%s) for %s on %s.", d.near.Name, px(d.near.Px), d.prop, gr.first.Selector),
		})
	})
}

// spacingRhythm: in a run of four or more alike siblings stacked in a column
// or a row, a gap that differs from the run's usual gap.
func (j *judge) spacingRhythm() {
	children := map[int][]*Element{}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if e.Parent < 0 || !shown(e) || e.Fixed || e.InScroller || e.Float || e.Transform || e.Offset || e.Position == "absolute" || e.Position == "fixed" || strings.HasPrefix(e.Display, "inline") && e.Display != "inline-block" {
			continue
		}
		children[e.Parent] = append(children[e.Parent], e)
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
			for end < len(kids) && kids[end].Tag == kids[start].Tag && kids[end].Class == kids[start].Class {
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
		j.add(engine.Finding{
			Kind: KindSpacingRhythm, Severity: engine.Nit,
			Title:       fmt.Sprintf("Uneven spacing: %s gap where its siblings use %s", px(g), px(usual)),
			Description: fmt.Sprintf("In a run of %d alike %s elements the %s gap next to this one is %s; the others are %s.", len(run), off.Tag, axis, px(g), px(usual)),
			Selector:    off.Selector, Box: off.Box,
			Facts: engine.Facts{"gap_px": g, "usual_gap_px": usual, "siblings": len(run)},
			Fix:   fmt.Sprintf("Give %s the same margins as its siblings (or space the group with the parent's gap) so every gap is %s.", off.Selector, px(usual)),
		})
	}
}

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
	if ts == nil || len(ts.FontFamilies) == 0 {
		return
	}
	failed := map[string]bool{}
	for _, f := range j.s.FontsFailed {
		failed[strings.ToLower(f)] = true
	}
	var g groups
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		decl, _ := e.Set["font-family"].(string)
		fonts := j.rendered(e)
		if decl == "" || len(fonts) == 0 || e.Invisible {
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
		j.add(engine.Finding{
			Kind: KindOffTokenFont, Severity: engine.Minor,
			Title:       fmt.Sprintf("Font %q is not a design-token font", got),
			Description: fmt.Sprintf("The page sets font-family: %s here and the text renders in %s; the token fonts are %s.", decl, got, strings.Join(want, ", ")),
			Selector:    gr.first.Selector, Box: gr.first.Box,
			Facts: withAlso(engine.Facts{"declared": decl, "rendered": got, "token_families": strings.Join(want, ", ")}, gr),
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
		j.add(engine.Finding{
			Kind: KindFontFallback, Severity: engine.Major,
			Title:       fmt.Sprintf("Web font %q failed to load; text falls back to %s", fams[0], fonts[0].Family),
			Description: fmt.Sprintf("This element sets font-family: %s, but every face of %q failed to load, so it renders in %s.", decl, fams[0], fonts[0].Family),
			Selector:    e.Selector, Box: e.Box,
			Facts: engine.Facts{"declared": fams[0], "rendered": fonts[0].Family},
			Fix:   fmt.Sprintf("Fix the @font-face src for %q (check the URL, the file and its CORS/MIME headers) or self-host the font.", fams[0]),
		})
	}
}

// typeScale: page-set font sizes off the token scale, text under 12 px on
// mobile (blamed on the element that sets the size) and headings larger
// than every heading of a higher level.
func (j *judge) typeScale() {
	hasText := make([]bool, len(j.s.Elements))
	for i := range j.s.Elements {
		if j.s.Elements[i].Text != nil && shown(&j.s.Elements[i]) {
			for p := i; p >= 0 && !hasText[p]; p = j.s.Elements[p].Parent {
				hasText[p] = true
			}
		}
	}
	if ts := j.cfg.Tokens; ts != nil && len(ts.FontSizes) > 0 {
		var g groups
		for i := range j.s.Elements {
			e := &j.s.Elements[i]
			v, ok := e.Set["font-size"].(string)
			size, okl := tokens.ParseLength(v)
			if !ok || !okl || !hasText[i] || e.Invisible {
				continue
			}
			near, _ := tokens.NearestDimension(ts.FontSizes, size)
			if math.Abs(near.Px-size) <= scaleTolerance {
				continue
			}
			g.add(fmt.Sprintf("off|%g", size), e, near)
		}
		g.each(func(gr *group) {
			near := gr.data.(tokens.Dimension)
			size := gr.first.FontSize
			j.add(engine.Finding{
				Kind: KindTypeScale, Severity: engine.Nit,
				Title:       fmt.Sprintf("Font size %s is off the type scale", px(size)),
				Description: fmt.Sprintf("The page sets font-size: %s here; the nearest size on the type scale is %s (%s).", px(size), near.Name, px(near.Px)),
				Selector:    gr.first.Selector, Box: gr.first.Box,
				Facts: withAlso(engine.Facts{"font_size_px": size, "nearest_token": near.Name, "nearest_px": near.Px}, gr),
				Fix:   fmt.Sprintf("Use %s (%s) for %s.", near.Name, px(near.Px), gr.first.Selector),
			})
		})
	}
	if j.s.Viewport == engine.Mobile {
		seen := map[string]bool{}
		for i := range j.s.Elements {
			e := &j.s.Elements[i]
			if e.Text == nil || !shown(e) || e.FontSize >= minMobileText-0.01 {
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
			j.add(engine.Finding{
				Kind: KindTypeScale, Severity: engine.Minor,
				Title:       fmt.Sprintf("Text is %s on mobile (under 12px)", px(e.FontSize)),
				Description: fmt.Sprintf("Text here renders at %s on a phone; under 12 px is hard to read.", px(e.FontSize)),
				Selector:    blame.Selector, Box: blame.Box,
				Facts: engine.Facts{"font_size_px": e.FontSize, "minimum_px": minMobileText},
				Fix:   fmt.Sprintf("Raise the font-size on %s to at least 12px (the type scale's smallest body size).", blame.Selector),
			})
		}
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
		j.add(engine.Finding{
			Kind: KindTypeScale, Severity: engine.Minor,
			Title:       fmt.Sprintf("h%d is larger than every h%d (%s > %s)", h.Heading, level, px(h.FontSize), px(maxAbove)),
			Description: fmt.Sprintf("This h%d renders at %s, larger than the largest h%d at %s, so the visual hierarchy contradicts the document outline.", h.Heading, px(h.FontSize), level, px(maxAbove)),
			Selector:    h.Selector, Box: h.Box,
			Facts: engine.Facts{"font_size_px": h.FontSize, "level": h.Heading, "higher_level": level, "higher_level_px": maxAbove},
			Fix:   fmt.Sprintf("Make %s smaller than the h%d size (%s), or use the heading level that matches its importance.", h.Selector, level, px(maxAbove)),
		})
	}
}

// brokenImage: an img that finished loading without any image data.
func (j *judge) brokenImage() {
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		im := e.Image
		if im == nil || !im.Complete || im.NaturalWidth != 0 || strings.TrimSpace(im.Src) == "" || e.Invisible {
			continue
		}
		sev := engine.Major
		if im.Alt != nil && *im.Alt == "" {
			sev = engine.Minor // decorative
		}
		src := pageRelative(im.Src, j.s.Origin)
		j.add(engine.Finding{
			Kind: KindBrokenImage, Severity: sev,
			Title:       "Image failed to load",
			Description: fmt.Sprintf("The image %q loaded no image data, so the page shows a broken image or its alt text.", trunc(src, 120)),
			Selector:    e.Selector, Box: e.Box,
			Facts: engine.Facts{"src": trunc(src, 300), "rendered_width": e.Box.W, "rendered_height": e.Box.H},
			Fix:   "Fix the image URL (check the path, that the file is deployed and its content type), or remove the img.",
		})
	}
}

// pageRelative names a same-origin URL by its path (the reviewed host and
// port say nothing to the author and may be a private address); a
// cross-origin URL stays whole. The browser normalizes both sides (lower-case
// host, default port dropped), so a prefix test suffices.
func pageRelative(u, origin string) string {
	if origin == "" {
		return u
	}
	if rest, ok := strings.CutPrefix(u, origin); ok && (rest == "" || strings.ContainsRune("/?#", rune(rest[0]))) {
		if rest == "" || rest[0] != '/' {
			rest = "/" + rest
		}
		return rest
	}
	return u
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// unnamed: controls the accessibility tree exposes with no name.
func (j *judge) unnamed() {
	for _, u := range j.s.Unnamed {
		j.add(engine.Finding{
			Kind: KindUnnamedControl, Severity: engine.Major,
			Title:       fmt.Sprintf("%s has no accessible name", u.Role),
			Description: fmt.Sprintf("Screen readers announce this %s without a name, so its purpose is unknown to people who cannot see it.", u.Role),
			Selector:    u.Selector, Box: u.Box,
			Facts: engine.Facts{"role": u.Role},
			Fix:   fmt.Sprintf("Give %s a name: visible text, aria-label, aria-labelledby, a <label for>, or alt text on its image.", u.Selector),
		})
	}
}
