// Targets: pointer target size and spacing (WCAG 2.2 SC 2.5.8).

package checks

import (
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"math"
)

// inline-link exceptions and the user-agent-default exception) on mobile
// and tablet; buttons under 44 px on mobile get an advisory nit (2.5.5).
func (j *judge) tapTarget() {
	type target struct {
		e   *Element
		box design.Rect
	}
	var ts []target
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		c := e.Control
		if c == nil || c.Disabled || c.NoPointer || !shown(e) || e.InControl != nil || c.Hit == "ancestor" {
			continue
		}
		ts = append(ts, target{e, targetBox(e)})
	}
	small := func(r design.Rect) bool { return math.Min(r.W, r.H) < minTarget-0.01 }
	for k, t := range ts {
		c := t.e.Control
		if c.Inline || c.UASized {
			continue
		}
		w, h := t.box.W, t.box.H
		if !small(t.box) {
			if j.cfg.StrictTargets && j.s.Viewport == design.Mobile && c.Role == "button" && math.Min(w, h) < comfyTarget-0.01 {
				j.add(design.Finding{
					Kind: KindTapTarget, Severity: design.Nit, Advisory: true,
					Title:       fmt.Sprintf("Button is %s × %s; 44 × 44 is comfortable on touch", px(w), px(h)),
					Description: "WCAG 2.5.8's 24 px minimum is met, but 2.5.5 (AAA) and platform guidelines ask for 44 × 44 CSS px on touch screens.",
					Selector:    t.e.Selector, Box: t.box,
					Facts: design.Facts{"width_px": w, "height_px": h, "recommended_px": comfyTarget},
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
		sev := design.Major
		if j.s.Viewport == design.Tablet {
			sev = design.Minor
		}
		j.add(design.Finding{
			Kind: KindTapTarget, Severity: sev,
			Title:       fmt.Sprintf("Tap target %s × %s is under 24 × 24 px", px(w), px(h)),
			Description: fmt.Sprintf("This %s is smaller than WCAG 2.2's 24 × 24 CSS px minimum (2.5.8) and too close to %s for the spacing exception.", c.Role, crowded),
			Selector:    t.e.Selector, Box: t.box,
			Facts: design.Facts{"width_px": w, "height_px": h, "minimum_px": minTarget, "nearest_target": crowded},
			Fix:   fmt.Sprintf("Make %s at least 24 × 24 px (padding or min-width/min-height), or space it so a 24 px circle around it touches no other target.", t.e.Selector),
		})
	}
}

// targetBox is the area a tap on control e lands in: its box, or for a
// checkbox or radio button its label's when that is larger (a click on the
// label toggles it).
func targetBox(e *Element) design.Rect {
	c := e.Control
	if c.LabelBox != nil && c.LabelBox.W*c.LabelBox.H > e.Box.W*e.Box.H && (c.Role == "checkbox" || c.Role == "radio") {
		return *c.LabelBox
	}
	return e.Box
}
