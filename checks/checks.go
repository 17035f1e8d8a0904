// Package checks measures a loaded page (Collect) and judges the measurement
// (Run) with bastion's design checks: contrast, layout (viewport overflow,
// container escape, clipped text, overlap, occluded controls, tap targets),
// design tokens (colour, spacing, rhythm, fonts, type scale), broken images
// and unnamed controls.
//
// Invariants: Run is a pure function of a Snapshot and a Config, so a saved
// snapshot re-judges identically; a check judges only what was measured and,
// for token checks, only values the page's own CSS set (never browser
// defaults) outside code and user content, and only where there is a token
// system (Coverage says which checks ran and why the others did not);
// screen-reader-only, aria-hidden, animated, off-canvas and
// svg/img/canvas content is never judged; each defect is reported once, on
// the outermost element an author can act on; when a measurement is
// uncertain the check stays silent or marks its finding advisory.
package checks

import (
	"cmp"
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/tokens"
	"math"
	"slices"
	"strings"
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
// Config.Tokens is nil (type_scale then judges only tiny text and heading
// order).
func TokenKinds() []string {
	return []string{KindOffTokenColor, KindOffScaleSpacing, KindOffTokenFont, KindTypeScale}
}

// Config tunes Run. The zero Config runs every check that needs no tokens
// (type_scale then judges only tiny text and heading order).
type Config struct {
	Tokens *tokens.Set // nil turns the token comparisons off
	// StrictTargets adds WCAG 2.5.5's 44 px advisory (AAA) to tap_target;
	// by default it judges 2.5.8's 24 px minimum only.
	StrictTargets bool
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
func Run(s *Snapshot, cfg Config) []design.Finding {
	return run(s, cfg, allKinds)
}

func run(s *Snapshot, cfg Config, kinds []string) []design.Finding {
	if s == nil {
		return nil
	}
	j := &judge{s: s, cfg: cfg}
	for _, k := range kinds {
		if offReason(s, cfg, k) != "" {
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
	slices.SortStableFunc(j.out, func(a, b design.Finding) int {
		return cmp.Or(cmp.Compare(order[a.Kind], order[b.Kind]), cmp.Compare(a.Box.Y, b.Box.Y),
			cmp.Compare(a.Box.X, b.Box.X), cmp.Compare(a.Selector, b.Selector))
	})
	return j.out
}

// judge holds one Run's state.
type judge struct {
	s   *Snapshot
	cfg Config
	out []design.Finding
}

func (j *judge) el(i int) *Element {
	if i < 0 || i >= len(j.s.Elements) {
		return nil
	}
	return &j.s.Elements[i]
}

func (j *judge) add(f design.Finding) {
	if f.Selector == "" {
		return // nothing an author could act on
	}
	f.Viewports = []design.Viewport{j.s.Viewport}
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

// paintsText reports whether e is shown and its own text draws something:
// a line box at a size above zero. Text set in font-size 0 (the idiom that
// hides a label from sight but not from the accessibility tree, or a
// navigation bar's titles on a phone) has characters but no ink, so no
// check of how text reads may judge it.
func paintsText(e *Element) bool {
	return e.Text != nil && shown(e) && e.FontSize > 0 && len(e.Text.Rects) > 0
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

func withAlso(f design.Facts, g *group) design.Facts {
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

// isLarge is WCAG's large-scale text: at least 18 pt, or 14 pt bold, in
// CSS pixels (1 pt = 4/3 px: 24 px and 18.67 px). The margin only absorbs
// the browser's rounding of a computed 14 pt (18.6667px); AsciiDoc's bold
// 17.6 px titles are normal text and need 4.5:1.
func isLarge(size float64, weight int) bool {
	const pt, rounding = 4.0 / 3, 0.001
	return size >= 18*pt-rounding || (size >= 14*pt-rounding && weight >= 700)
}

// contrast: WCAG 2.2 SC 1.4.3 on each element's own text against the
