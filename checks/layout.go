// Layout: boxes that leave the viewport or their container, clipped text,
// overlapping content and occluded controls.

package checks

import (
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"math"
	"strings"
)

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
	seen := map[int]bool{}
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
		end := right(e)
		if b := j.lineBlock(e); b != nil {
			// A span in a run of text (a synopsis line in a pre, a link in
			// a sentence) runs past because the block sets its line too
			// long: the block is the offender, reported once.
			if seen[b.Index] {
				continue
			}
			seen[b.Index] = true
			end = math.Max(end, right(b))
			for k := i + 1; k < len(j.s.Elements) && j.within(&j.s.Elements[k], b); k++ {
				if x := &j.s.Elements[k]; crosses(x) && !x.InScroller && !x.ClipX {
					end = math.Max(end, right(x))
				}
			}
			e = b
		}
		over := end - vw
		sev := design.Minor
		if over > 16 {
			sev = design.Major
		}
		j.add(design.Finding{
			Kind: KindViewportOverflow, Severity: sev,
			Title:       fmt.Sprintf("Element runs %s past the viewport's right edge", px(over)),
			Description: fmt.Sprintf("%s is %s wide and its content ends at x=%s in a %s viewport, so the page scrolls sideways or cuts it off.", e.Tag, px(e.Box.W), px(end), px(vw)),
			Selector:    e.Selector, Box: e.Box,
			Facts: design.Facts{"overflow_px": over, "viewport_width": vw, "element_width": e.Box.W, "element_right": end},
			Fix:   fmt.Sprintf("Constrain %s to the viewport: max-width: 100%% (or remove its fixed width of %s), let it wrap, or put it in an overflow-x: auto container.", e.Selector, px(e.Box.W)),
		})
	}
}

// lineBlock returns the block whose own text e's line belongs to when e is
// an inline element (through inline ancestors) in a block that has text of
// its own, else nil: e is then one piece of that block's line.
func (j *judge) lineBlock(e *Element) *Element {
	if e.Display != "inline" {
		return nil
	}
	for p := j.el(e.Parent); p != nil && p.Tag != "body" && p.Tag != "html"; p = j.el(p.Parent) {
		if p.Display == "inline" {
			continue
		}
		if p.Text != nil && !p.InScroller && !p.ClipX && !p.Fixed && !p.Transformed && !p.OwnClipX {
			return p
		}
		return nil
	}
	return nil
}

// within reports whether e is a descendant of a.
func (j *judge) within(e, a *Element) bool {
	for p := j.el(e.Parent); p != nil; p = j.el(p.Parent) {
		if p == a {
			return true
		}
	}
	return false
}

// paints reports whether e draws something of its own where its box is: a
// background, border or shadow, text, media or a control. A box that paints
// nothing (a grid row whose negative gutter margins reach past its
// container while its columns' padding keeps the content in) is judged by
// what it holds, not by its own box.
func paints(e *Element) bool {
	switch e.Tag {
	case "img", "svg", "video", "canvas", "picture", "object", "embed", "input", "select", "textarea", "button", "table", "hr":
		return true
	}
	return e.Bounded || e.Text != nil || e.Control != nil || e.Image != nil
}

// containerEscape: an in-flow element that paints past the nearest visibly
// bounded ancestor (own background, border or shadow).
func (j *judge) containerEscape() {
	vw := j.s.Width
	ext, has := j.paintedExtents()
	// An element escapes on a side by as far as both its box and what it
	// paints reach past the container's.
	// Only across an edge the container draws: past the bottom of a box
	// that draws only a top rule, nothing visibly escapes.
	escape := func(e, b *Element) (right, bottom, left float64) {
		x, o := ext[e.Index], e.Box
		right, bottom, left = math.Min(x.X+x.W, o.X+o.W)-(b.Box.X+b.Box.W), math.Min(x.Y+x.H, o.Y+o.H)-(b.Box.Y+b.Box.H), b.Box.X-math.Max(x.X, o.X)
		if b.Edges != "" {
			right, bottom, left = drawn(b.Edges, 'r', right), drawn(b.Edges, 'b', bottom), drawn(b.Edges, 'l', left)
		}
		return right, bottom, left
	}
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		if !has[i] || e.Fixed || e.InScroller || e.Transformed || e.Transform || e.Offset || e.Tag == "html" || e.Tag == "body" {
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
		if p := j.el(e.Parent); p != b && has[p.Index] {
			if pr, pb, pl := escape(p, b); math.Max(pr, math.Max(pb, pl)) > escapeMin {
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
		sev := design.Minor
		if worst >= 16 {
			sev = design.Major
		}
		j.add(design.Finding{
			Kind: KindContainerEscape, Severity: sev,
			Title:       fmt.Sprintf("Element spills %s out of its container's %s edge", px(worst), side),
			Description: fmt.Sprintf("%s extends %s past the %s edge of %s, which draws a visible box around it.", e.Tag, px(worst), side, b.Selector),
			Selector:    e.Selector, Box: e.Box,
			Facts: design.Facts{"escape_px": worst, "edge": side, "container": b.Selector, "container_width": b.Box.W, "container_height": b.Box.H},
			Fix:   fmt.Sprintf("Let %s fit %s: give it max-width: 100%% or min-width: 0 (flex/grid items), allow wrapping (overflow-wrap: anywhere), or drop the fixed height on the container.", e.Selector, b.Selector),
		})
	}
}

// drawn is v when edges includes side, else 0.
func drawn(edges string, side rune, v float64) float64 {
	if strings.ContainsRune(edges, side) {
		return v
	}
	return 0
}

// paintedExtents returns, for each element, the union of the boxes that
// paint in its in-flow subtree (itself included), and whether there is any.
// An element is judged by where it paints: a grid row's negative gutter
// margins reach past its container, but its columns' padding keeps every
// painted box inside, so the row does not escape.
func (j *judge) paintedExtents() ([]design.Rect, []bool) {
	n := len(j.s.Elements)
	ext, has := make([]design.Rect, n), make([]bool, n)
	for i := n - 1; i >= 0; i-- {
		e := &j.s.Elements[i]
		if !shown(e) || e.Position != "static" && e.Position != "relative" {
			has[i] = false
			continue
		}
		if paints(e) {
			ext[i], has[i] = unionOf(ext[i], has[i], e.Box), true
		}
		if p := e.Parent; has[i] && p >= 0 && p < n {
			ext[p], has[p] = unionOf(ext[p], has[p], clipTo(ext[i], e, &j.s.Elements[p])), true
		}
	}
	return ext, has
}

// clipTo cuts x, the extent of e, to e's parent p on the axes p clips
// (e's clip flags start at p).
func clipTo(x design.Rect, e, p *Element) design.Rect {
	if e.ClipX && !p.ClipX {
		x0, x1 := math.Max(x.X, p.Box.X), math.Min(x.X+x.W, p.Box.X+p.Box.W)
		x.X, x.W = x0, math.Max(0, x1-x0)
	}
	if e.ClipY && !p.ClipY {
		y0, y1 := math.Max(x.Y, p.Box.Y), math.Min(x.Y+x.H, p.Box.Y+p.Box.H)
		x.Y, x.H = y0, math.Max(0, y1-y0)
	}
	return x
}

func unionOf(a design.Rect, ok bool, b design.Rect) design.Rect {
	if !ok {
		return b
	}
	return union([]design.Rect{a, b})
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
		if c.Ellipsis || e.Tag == "html" || e.Tag == "body" {
			// The root's and body's horizontal overflow is the viewport's:
			// what runs past it is viewport_overflow's to report.
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
		j.add(design.Finding{
			Kind: KindTextClipped, Severity: design.Major,
			Title:       fmt.Sprintf("Text cut off %s by %s", axis, px(cut)),
			Description: fmt.Sprintf("%s hides its overflow and its text runs %s past its edge, so readers lose part of it.", e.Tag, px(cut)),
			Selector:    e.Selector, Box: e.Box,
			Facts: design.Facts{"clipped_x_px": x, "clipped_y_px": y, "box_width": e.Box.W, "box_height": e.Box.H},
			Fix:   fix,
		})
	}
}

// overlap: unrelated text whose ink (the extent of its glyphs: a heading's
// descenders, the next line's ascenders) intersects with no opaque surface
// between them and no drawn overlay box around the top text (an opaque
// surface, or an absolutely positioned box with its own border, background
// or shadow, means a deliberate overlay such as a badge, a code block's
// copy button, a menu or a dialog). It blames the top element's branch
// under the lowest common ancestor.
func (j *judge) overlap() {
	seen := map[string]bool{}
	for _, o := range j.s.Overlaps {
		top, bottom := j.el(o.Top), j.el(o.Bottom)
		if top == nil || bottom == nil || o.Surface || !shown(top) || !shown(bottom) {
			continue
		}
		if o.W < 4 || o.H < math.Max(1, 0.1*o.LineH) {
			continue // ink that merely touches (a subpixel graze)
		}
		off := j.branch(o.Top, o.Bottom)
		if off == nil || seen[off.Selector] || j.overlay(top, off) {
			continue
		}
		seen[off.Selector] = true
		ob := j.branch(o.Bottom, o.Top)
		other := bottom.Selector
		if ob != nil {
			other = ob.Selector
		}
		j.add(design.Finding{
			Kind: KindOverlap, Severity: design.Major,
			Title:       "Text overlaps other text",
			Description: fmt.Sprintf("Text in %s is drawn over text in %s (%s × %s intersect), so both become hard to read.", off.Selector, other, px(o.W), px(o.H)),
			Selector:    off.Selector, Box: off.Box,
			Facts: design.Facts{"overlap_w_px": o.W, "overlap_h_px": o.H, "overlap_area_px2": o.Area, "other": other},
			Fix:   fmt.Sprintf("Remove the negative margin, offset or absolute position that puts %s over %s, or reserve space for it.", off.Selector, other),
		})
	}
}

// overlay reports whether e, or an ancestor up to branch, is an
// absolutely or fixed positioned box that draws its own edge: placed over
// the content on purpose, and visibly a thing of its own.
func (j *judge) overlay(e, branch *Element) bool {
	for p := e; p != nil; p = j.el(p.Parent) {
		if (p.Position == "absolute" || p.Position == "fixed") && p.Bounded {
			return true
		}
		if p == branch {
			break
		}
	}
	return false
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
		j.add(design.Finding{
			Kind: KindOccludedControl, Severity: design.Major,
			Title:       "Control is covered by another element",
			Description: fmt.Sprintf("A click at the centre of this %s lands on %s instead, so the control cannot be used there.", c.Role, c.HitBy),
			Selector:    e.Selector, Box: e.Box,
			Facts: design.Facts{"covered_by": c.HitBy, "role": c.Role, "center_x": e.Box.X + e.Box.W/2, "center_y": e.Box.Y + e.Box.H/2},
			Fix:   fmt.Sprintf("Move %s out from over %s, give it pointer-events: none if it is decorative, or fix the stacking (z-index) so the control is on top.", c.HitBy, e.Selector),
		})
	}
}

// tapTarget: WCAG 2.2 SC 2.5.8 (24×24 CSS px, with the spacing and
