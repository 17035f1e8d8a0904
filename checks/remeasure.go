package checks

import (
	"slices"
	"strings"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/tokens"
)

// Remeasure finds f's element in s (a fresh snapshot of the same route and
// viewport) and re-runs f's check: Passed when the check no longer reports
// it, Failed with the new facts when it does, Inconclusive when the element
// is gone or the kind is unknown. A Passed outcome carries what was measured
// on the element now (nowFacts), so the reader sees the defect is gone
// rather than taking the verdict on trust.
func Remeasure(s *Snapshot, cfg Config, f design.Finding) design.RecheckOutcome {
	out := design.RecheckOutcome{FindingID: f.ID}
	if _, ok := checkers[f.Kind]; !ok || s == nil {
		out.Outcome, out.Reason = design.Inconclusive, "unknown check kind "+f.Kind
		return out
	}
	why := offReason(s, cfg, f.Kind)
	if f.Kind == KindTypeScale && ruleOf(f) == "scale" {
		why = offReason(s, cfg, scaleScope)
	}
	if why != "" {
		out.Outcome, out.Reason = design.Inconclusive, "the check does not apply here: "+why
		return out
	}
	var estimate *design.Finding
	for _, g := range run(s, cfg, []string{f.Kind}) {
		if g.Selector != f.Selector && !slices.Contains(alsoOf(g), f.Selector) {
			continue
		}
		switch {
		case sameRule(f, g):
			out.Outcome, out.Facts = design.Failed, g.Facts
			out.Reason = "still measured: " + g.Title
			return out
		case f.Kind == KindContrast && !f.Advisory && g.Advisory && estimate == nil:
			estimate = &g
		}
	}
	if estimate != nil {
		// The measured defect became an estimate (the text now sits on a
		// gradient or is translucent): neither fixed nor measured.
		out.Outcome, out.Facts = design.Inconclusive, estimate.Facts
		out.Reason = "only an estimate remains, check it by eye: " + estimate.Title
		return out
	}
	if _, present := s.BoxOf(f.Selector); !present {
		out.Outcome, out.Reason = design.Inconclusive, "element gone: "+f.Selector+" is no longer in the page"
		return out
	}
	out.Outcome, out.Reason = design.Passed, "measured again: the defect is gone"
	out.Facts = nowFacts(s, f)
	return out
}

// ruleOf names the rule within f's kind that produced f: a kind whose
// check applies several rules to one element (a hard minimum and an
// advisory comfort size, a type-scale step and a heading order, one
// colour property and another) must be rechecked against the same rule,
// not against whatever else the kind still says about the element. It reads
// only what survives a JSON round trip (the advisory flag and fact names).
func ruleOf(f design.Finding) string {
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
func sameRule(f, g design.Finding) bool {
	if ruleOf(f) == ruleOf(g) {
		return true
	}
	return f.Advisory && !g.Advisory && (f.Kind == KindTapTarget || f.Kind == KindContrast)
}

// alsoOf returns the other selectors a grouped finding covers, whether f
// was built here or decoded from JSON.
func alsoOf(f design.Finding) []string {
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

// nowFacts is what s measures now on the element f was about, under the
// names f's own facts use: the contrast it has, the size it is drawn at,
// the value its CSS sets. It is for a Passed outcome, whose check reported
// nothing to carry facts; a measurement s does not have is left out, never
// guessed, so a kind with nothing to show gets no facts.
func nowFacts(s *Snapshot, f design.Finding) design.Facts {
	e := s.bySelector(f.Selector)
	if e == nil {
		return nil
	}
	out := design.Facts{}
	str := func(k string) string { v, _ := f.Facts[k].(string); return v }
	switch f.Kind {
	case KindContrast:
		j := &judge{s: s}
		if need, fg, bg, ok := j.contrastPair(e); ok {
			out["ratio"], out["required"] = tokens.Contrast(fg, bg), need
			out["foreground"], out["background"] = fg.String(), bg.String()
		}
	case KindViewportOverflow:
		out["element_right"], out["viewport_width"] = e.Box.X+e.Box.W, s.Width
	case KindContainerEscape:
		if c := s.bySelector(str("container")); c != nil {
			out["escape_px"] = max(0, c.Box.X-e.Box.X, e.Box.X+e.Box.W-(c.Box.X+c.Box.W),
				c.Box.Y-e.Box.Y, e.Box.Y+e.Box.H-(c.Box.Y+c.Box.H))
		}
	case KindTextClipped:
		out["clipped_x_px"], out["clipped_y_px"] = 0.0, 0.0
		if e.Clip != nil {
			out["clipped_x_px"], out["clipped_y_px"] = e.Clip.X, e.Clip.Y
		}
	case KindOverlap:
		area := 0.0
		for _, o := range s.Overlaps {
			if !o.Surface && (o.Top == e.Index || o.Bottom == e.Index) {
				area += o.Area
			}
		}
		out["overlap_area_px2"] = area
	case KindOccludedControl:
		if e.Control != nil && e.Control.Hit != "" {
			out["click_lands_on"] = e.Control.Hit
		}
	case KindTapTarget:
		if e.Control != nil {
			b := targetBox(e)
			out["width_px"], out["height_px"] = b.W, b.H
		}
	case KindOffTokenColor, KindOffScaleSpacing:
		if v, ok := e.Set[str("property")]; ok {
			if f.Kind == KindOffTokenColor {
				out["value"] = v
			} else {
				out["value_px"] = v
			}
		}
	case KindOffTokenFont:
		if v, ok := e.Set["font-family"].(string); ok {
			out["declared"] = v
		}
	case KindFontFallback:
		if len(e.Rendered) > 0 {
			out["rendered"] = e.Rendered[0].Family
		}
	case KindTypeScale:
		out["font_size_px"] = e.FontSize
	case KindBrokenImage:
		if e.Image != nil {
			out["natural_width"] = e.Image.NaturalWidth
		}
	}
	for k, v := range out {
		if x, ok := v.(float64); ok {
			out[k] = round2(x)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
