package checks_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/tokens"
)

// page builds a small snapshot by hand: html > body > the given elements,
// each the child of the element before it unless parent is set.
type page struct {
	s *checks.Snapshot
}

func newPage(vp design.Viewport) *page {
	w, h, _ := vp.Size()
	s := &checks.Snapshot{Viewport: vp, Width: float64(w), Height: float64(h), DocWidth: float64(w), DocHeight: 2000}
	p := &page{s}
	p.add(checks.Element{Parent: -1, Tag: "html", Selector: "html", Box: design.Rect{W: float64(w), H: 2000}})
	p.add(checks.Element{Parent: 0, Tag: "body", Selector: "body", Box: design.Rect{W: float64(w), H: 2000}})
	return p
}

// add appends e (Parent defaults to body) and returns its index.
func (p *page) add(e checks.Element) int {
	e.Index = len(p.s.Elements)
	if e.Display == "" {
		e.Display = "block"
	}
	if e.Position == "" {
		e.Position = "static"
	}
	if e.FontSize == 0 {
		e.FontSize = 16
	}
	if e.Text != nil && len(e.Text.Rects) == 1 && e.Text.Rects[0] == (design.Rect{X: 16, Y: 16, W: 200, H: 22}) {
		e.Text.Rects = []design.Rect{e.Box} // the text fills the element unless a test says otherwise
	}
	p.s.Elements = append(p.s.Elements, e)
	return e.Index
}

func text(color string, bg ...checks.Layer) *checks.Text {
	return &checks.Text{Rects: []design.Rect{{X: 16, Y: 16, W: 200, H: 22}}, Chars: 20, Weight: 400, Family: "Brand Sans", Color: color, Measured: true, Bg: bg}
}

func bg(c string) checks.Layer { return checks.Layer{Color: c} }

func kindsOf(fs []design.Finding, kind string) []string {
	var out []string
	for _, f := range fs {
		if f.Kind == kind {
			out = append(out, f.Selector)
		}
	}
	return out
}

func box(x, y, w, h float64) design.Rect { return design.Rect{X: x, Y: y, W: w, H: h} }

func TestContrastRules(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.low", Box: box(16, 16, 400, 24), Text: text("rgb(209, 213, 219)", bg("rgb(255, 255, 255)"))})
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.ok", Box: box(16, 48, 400, 24), Text: text("rgb(75, 85, 99)", bg("rgb(255, 255, 255)"))})
	// Large text needs only 3:1: #767676-ish at 24px passes, at 16px fails.
	p.add(checks.Element{Parent: 1, Tag: "h2", Selector: "h2.large", FontSize: 24, Box: box(16, 80, 400, 30), Text: text("rgb(130, 130, 130)", bg("rgb(255, 255, 255)"))})
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.small-grey", Box: box(16, 120, 400, 24), Text: text("rgb(130, 130, 130)", bg("rgb(255, 255, 255)"))})
	// Disabled controls are exempt.
	btn := p.add(checks.Element{Parent: 1, Tag: "button", Selector: "button.off", Box: box(16, 160, 120, 48), Control: &checks.Control{Role: "button", Disabled: true, Hit: "self"}})
	dis := text("rgb(209, 213, 219)", bg("rgb(243, 244, 246)"))
	dis.Disabled = true
	p.add(checks.Element{Parent: btn, Tag: "span", Selector: "button.off > span", InControl: &btn, Box: box(24, 170, 80, 24), Text: dis})
	// Over an image: unknowable, silent.
	img := text("rgb(255, 255, 255)")
	img.BgUnknown = "image"
	p.add(checks.Element{Parent: 1, Tag: "h1", Selector: "h1.hero", Box: box(16, 220, 400, 40), Text: img})
	// A translucent layer is composited: white text on 20% black over white fails.
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.veil", Box: box(16, 280, 400, 24), Text: text("rgb(255, 255, 255)", bg("rgba(0, 0, 0, 0.2)"), bg("rgb(255, 255, 255)"))})
	// A gradient with opaque stops is judged at its worst stop, as advisory.
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.grad", Box: box(16, 320, 400, 24), Text: text("rgb(255, 255, 255)", checks.Layer{Gradient: []string{"rgb(17, 24, 39)", "rgb(219, 234, 254)"}})})
	// Not hit-tested (off to the side): silent.
	un := text("rgb(209, 213, 219)", bg("rgb(255, 255, 255)"))
	un.Measured = false
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.unmeasured", Box: box(16, 360, 400, 24), Text: un})

	fs := checks.Run(p.s, checks.Config{})
	got := kindsOf(fs, checks.KindContrast)
	want := []string{"p.low", "p.small-grey", "p.veil", "p.grad"}
	if !slices.Equal(got, want) {
		t.Errorf("contrast findings = %v; want %v", got, want)
	}
	for _, f := range fs {
		if f.Selector == "p.grad" && !f.Advisory {
			t.Errorf("gradient finding is not advisory")
		}
		if f.Selector == "p.low" {
			if r := f.Facts["ratio"].(float64); r != 1.47 {
				t.Errorf("p.low ratio = %v; want 1.47", r)
			}
			if f.Severity != design.Major || f.Fix == "" || f.Viewports[0] != design.Desktop {
				t.Errorf("p.low finding = %+v", f)
			}
		}
	}
}

func TestViewportOverflowBlamesOutermost(t *testing.T) {
	t.Parallel()
	p := newPage(design.Mobile)
	main := p.add(checks.Element{Parent: 1, Tag: "main", Selector: "main", Box: box(0, 0, 390, 800)})
	wide := p.add(checks.Element{Parent: main, Tag: "div", Selector: "div.wide", Box: box(16, 16, 520, 100)})
	p.add(checks.Element{Parent: wide, Tag: "p", Selector: "div.wide > p", Box: box(16, 16, 500, 24)})
	// Inside a scroll container: fine.
	p.add(checks.Element{Parent: main, Tag: "table", Selector: "table.scrolls", InScroller: true, Box: box(16, 200, 640, 100)})
	// Fixed, clipped, off to the right entirely, transformed: silent.
	p.add(checks.Element{Parent: main, Tag: "div", Selector: "div.toast", Fixed: true, Box: box(200, 700, 300, 40)})
	p.add(checks.Element{Parent: main, Tag: "div", Selector: "div.clipped", ClipX: true, Box: box(16, 300, 600, 40)})
	p.add(checks.Element{Parent: main, Tag: "nav", Selector: "nav.offcanvas", Box: box(390, 0, 300, 800)})
	// Own text that runs past the edge (a long URL) counts; own text of an
	// element that clips it (ellipsis) does not.
	url := text("rgb(0, 0, 0)")
	url.Rects = []design.Rect{box(16, 400, 560, 22)}
	p.add(checks.Element{Parent: main, Tag: "p", Selector: "p.url", Box: box(16, 400, 358, 22), Text: url})
	el := text("rgb(0, 0, 0)")
	el.Rects = []design.Rect{box(16, 440, 560, 22)}
	p.add(checks.Element{Parent: main, Tag: "p", Selector: "p.ellipsis", OwnClipX: true, Box: box(16, 440, 358, 22), Text: el})
	// A pre whose synopsis line of keywords and inline ems runs past the
	// edge: the pre is the offender, once, however many ems cross.
	syn := text("rgb(0, 0, 0)")
	syn.Rects = []design.Rect{box(16, 480, 200, 16)}
	pre := p.add(checks.Element{Parent: main, Tag: "pre", Selector: "pre.synopsis", Box: box(16, 480, 358, 64), Text: syn})
	for k, x := range []float64{200, 330, 370} {
		t := text("rgb(0, 0, 0)")
		t.Rects = []design.Rect{box(x, 480, 90, 16)}
		p.add(checks.Element{Parent: pre, Tag: "em", Display: "inline", Selector: fmt.Sprintf("pre.synopsis > em:nth-of-type(%d)", k+1), Box: box(x, 480, 90, 16), Text: t})
	}
	// An inline span alone in its box (no text of its own around it) is
	// the offender itself.
	card := p.add(checks.Element{Parent: main, Tag: "div", Selector: "div.profile", Box: box(16, 560, 358, 40)})
	mail := text("rgb(0, 0, 0)")
	mail.Rects = []design.Rect{box(16, 560, 420, 22)}
	p.add(checks.Element{Parent: card, Tag: "span", Display: "inline", Selector: "span.email", Box: box(16, 560, 420, 22), Text: mail})

	fs := checks.Run(p.s, checks.Config{})
	got := kindsOf(fs, checks.KindViewportOverflow)
	if want := []string{"div.wide", "p.url", "pre.synopsis", "span.email"}; !slices.Equal(got, want) {
		t.Errorf("viewport_overflow = %v; want %v", got, want)
	}
	for _, f := range fs {
		if f.Selector == "pre.synopsis" && f.Facts["element_right"] != 460.0 {
			t.Errorf("pre.synopsis facts = %v; want its furthest em's end, 460", f.Facts)
		}
	}
}

func TestContainerEscape(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	card := p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.card", Bounded: true, Box: box(16, 16, 280, 200)})
	inner := p.add(checks.Element{Parent: card, Tag: "div", Selector: "div.inner", Box: box(16, 16, 280, 150)})
	chart := p.add(checks.Element{Parent: inner, Tag: "div", Selector: "div.chart", Box: box(40, 40, 320, 120)})
	p.add(checks.Element{Parent: chart, Tag: "svg", Selector: "div.chart > svg", Box: box(40, 40, 320, 20)})
	// Absolutely positioned badges stick out on purpose.
	p.add(checks.Element{Parent: card, Tag: "span", Selector: "span.badge", Position: "absolute", Box: box(280, 8, 40, 20)})
	// An unbounded box (no background, border or shadow): nothing visible to escape.
	plain := p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.plain", Box: box(16, 300, 200, 100)})
	p.add(checks.Element{Parent: plain, Tag: "div", Selector: "div.plain > div", Box: box(16, 300, 260, 100)})
	// A grid row's negative gutters reach 12 px past its card on both
	// sides; the columns' padding keeps what they paint inside.
	card2 := p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.card2", Bounded: true, Box: box(16, 500, 300, 100)})
	row := p.add(checks.Element{Parent: card2, Tag: "div", Selector: "div.row", Box: box(4, 500, 324, 100)})
	col := p.add(checks.Element{Parent: row, Tag: "div", Selector: "div.col", Box: box(4, 500, 162, 100)})
	p.add(checks.Element{Parent: col, Tag: "p", Selector: "div.col > p", Text: &checks.Text{Chars: 4}, Box: box(16, 500, 138, 20)})
	// AsciiDoc's footer draws only a top rule: its text running past the
	// footer's bottom crosses no drawn edge; past a bottom rule it does.
	foot := p.add(checks.Element{Parent: 1, Tag: "div", Selector: "#footer", Bounded: true, Edges: "t", Box: box(16, 700, 300, 8)})
	p.add(checks.Element{Parent: foot, Tag: "div", Selector: "#footer-text", Text: &checks.Text{Chars: 20}, Box: box(16, 700, 300, 30)})
	ruled := p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.ruled", Bounded: true, Edges: "b", Box: box(16, 800, 300, 8)})
	p.add(checks.Element{Parent: ruled, Tag: "div", Selector: "div.ruled > div", Text: &checks.Text{Chars: 20}, Box: box(16, 800, 300, 30)})
	got := kindsOf(checks.Run(p.s, checks.Config{}), checks.KindContainerEscape)
	if want := []string{"div.chart", "div.ruled > div"}; !slices.Equal(got, want) {
		t.Errorf("container_escape = %v; want %v", got, want)
	}
}

func TestTextClippedExceptions(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.cut", Box: box(0, 0, 200, 48), Clip: &checks.Clip{Y: 40}})
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.ellipsis", Box: box(0, 60, 200, 24), Clip: &checks.Clip{X: 90, Ellipsis: true}})
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.clamp", Box: box(0, 90, 200, 48), Clip: &checks.Clip{Y: 60, LineClamp: true}})
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.ellipsis-and-short", Box: box(0, 150, 200, 10), Clip: &checks.Clip{X: 90, Y: 12, Ellipsis: true}})
	p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.teaser", Box: box(0, 170, 200, 100), Clip: &checks.Clip{Y: 300, Masked: true}})
	p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.collapsed", Box: box(0, 280, 200, 100), Clip: &checks.Clip{Y: 300, Collapsed: true}})
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.subpixel", Box: box(0, 400, 200, 24), Clip: &checks.Clip{X: 0.6}})
	// The body's overflow-x: hidden is the viewport's edge: text cut off
	// there is viewport_overflow's; cut off at its bottom, it is clipped.
	p.s.Elements[1].Clip = &checks.Clip{X: 217}
	p.s.Elements[0].Clip = &checks.Clip{X: 20, Y: 30}

	got := kindsOf(checks.Run(p.s, checks.Config{}), checks.KindTextClipped)
	if want := []string{"html", "p.cut", "p.ellipsis-and-short"}; !slices.Equal(got, want) {
		t.Errorf("text_clipped = %v; want %v", got, want)
	}
}

func TestOverlapBlamesBranchAndSkipsOverlays(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	art := p.add(checks.Element{Parent: 1, Tag: "article", Selector: "article", Box: box(0, 0, 600, 300)})
	title := p.add(checks.Element{Parent: art, Tag: "h1", Selector: "h1", Box: box(0, 0, 600, 40), Text: text("rgb(0, 0, 0)")})
	meta := p.add(checks.Element{Parent: art, Tag: "div", Selector: "div.meta", Box: box(0, 20, 600, 40)})
	by := p.add(checks.Element{Parent: meta, Tag: "p", Selector: "div.meta > p", Box: box(0, 20, 600, 24), Text: text("rgb(0, 0, 0)")})
	badge := p.add(checks.Element{Parent: art, Tag: "span", Selector: "span.badge", Position: "absolute", Box: box(500, 0, 60, 24), Text: text("rgb(0, 0, 0)")})
	tight := p.add(checks.Element{Parent: art, Tag: "p", Selector: "p.tight", Box: box(0, 60, 600, 24), Text: text("rgb(0, 0, 0)")})
	// A paragraph pulled up under a heading (margin-top: -1.6em) until the
	// heading's descenders run into its ascenders.
	sum := p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.summary", Box: box(0, 400, 600, 60)})
	head := p.add(checks.Element{Parent: sum, Tag: "h3", Selector: "div.summary > h3", Box: box(0, 400, 600, 25), Text: text("rgb(0, 0, 0)")})
	pulled := p.add(checks.Element{Parent: sum, Tag: "p", Selector: "div.summary > p", Box: box(0, 418, 600, 22), Text: text("rgb(0, 0, 0)")})
	// Sphinx's copy button: a transparent, bordered, absolutely positioned
	// ">>>" in a code block's corner, over the code's first line.
	code := p.add(checks.Element{Parent: art, Tag: "div", Selector: "div.highlight", Box: box(0, 100, 600, 80)})
	pre := p.add(checks.Element{Parent: code, Tag: "pre", Selector: "pre", Box: box(0, 100, 600, 80), Text: text("rgb(0, 0, 0)")})
	copyBtn := p.add(checks.Element{Parent: code, Tag: "span", Selector: "span.copybutton", Position: "absolute", Bounded: true, Box: box(570, 100, 30, 14), Text: text("rgb(0, 0, 0)")})
	// An absolutely positioned label that draws nothing of its own is not
	// an overlay: its text lands on the text under it.
	stray := p.add(checks.Element{Parent: code, Tag: "span", Selector: "span.stray", Position: "absolute", Box: box(100, 120, 60, 18), Text: text("rgb(0, 0, 0)")})
	p.s.Overlaps = []checks.Overlap{
		{Top: by, Bottom: title, Area: 4000, W: 200, H: 20, LineH: 22},
		{Top: badge, Bottom: title, Area: 1000, W: 60, H: 20, LineH: 22, Surface: true}, // opaque badge: deliberate
		{Top: tight, Bottom: by, Area: 300, W: 300, H: 0.8, LineH: 16},                  // ink grazing
		{Top: pulled, Bottom: head, Area: 350, W: 184, H: 1.9, LineH: 16},               // descenders into ascenders
		{Top: copyBtn, Bottom: pre, Area: 221, W: 25, H: 8.8, LineH: 12},                // bordered overlay: deliberate
		{Top: stray, Bottom: pre, Area: 600, W: 60, H: 12, LineH: 12},
	}
	got := kindsOf(checks.Run(p.s, checks.Config{}), checks.KindOverlap)
	if want := []string{"div.meta", "span.stray", "div.summary > p"}; !slices.Equal(got, want) {
		t.Errorf("overlap = %v; want %v (the byline's branch under the article)", got, want)
	}
}

func TestOccludedControl(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	p.add(checks.Element{Parent: 1, Tag: "a", Selector: "a.covered", Box: box(0, 0, 120, 48), Control: &checks.Control{Role: "link", Hit: "other", HitBy: "div.glow"}})
	p.add(checks.Element{Parent: 1, Tag: "a", Selector: "a.free", Box: box(0, 60, 120, 48), Control: &checks.Control{Role: "link", Hit: "self"}})
	p.add(checks.Element{Parent: 1, Tag: "input", Selector: "input.custom", Box: box(0, 120, 16, 16), Control: &checks.Control{Role: "checkbox", Hit: "label"}})
	p.add(checks.Element{Parent: 1, Tag: "button", Selector: "button.behind-modal", Box: box(0, 160, 120, 48), Control: &checks.Control{Role: "button", Hit: "modal"}})
	p.add(checks.Element{Parent: 1, Tag: "button", Selector: "button.disabled", Box: box(0, 220, 120, 48), Control: &checks.Control{Role: "button", Hit: "other", HitBy: "div.x", Disabled: true}})
	fs := checks.Run(p.s, checks.Config{})
	if got, want := kindsOf(fs, checks.KindOccludedControl), []string{"a.covered"}; !slices.Equal(got, want) {
		t.Errorf("occluded_control = %v; want %v", got, want)
	}
	if fs[0].Facts["covered_by"] != "div.glow" {
		t.Errorf("facts = %v", fs[0].Facts)
	}
}

func TestTapTargetExceptions(t *testing.T) {
	t.Parallel()
	build := func(vp design.Viewport) *checks.Snapshot {
		p := newPage(vp)
		// Two 20×20 buttons 2 px apart: their 24 px circles intersect.
		p.add(checks.Element{Parent: 1, Tag: "button", Selector: "#a", Box: box(16, 16, 20, 20), Control: &checks.Control{Role: "button", Hit: "self"}})
		p.add(checks.Element{Parent: 1, Tag: "button", Selector: "#b", Box: box(38, 16, 20, 20), Control: &checks.Control{Role: "button", Hit: "self"}})
		// 20×20 buttons 4 px apart: circles touch but do not intersect (spacing exception).
		p.add(checks.Element{Parent: 1, Tag: "button", Selector: "#c", Box: box(16, 100, 20, 20), Control: &checks.Control{Role: "button", Hit: "self"}})
		p.add(checks.Element{Parent: 1, Tag: "button", Selector: "#d", Box: box(40, 100, 20, 20), Control: &checks.Control{Role: "button", Hit: "self"}})
		// An inline link in running text, a browser-default checkbox, a disabled button.
		p.add(checks.Element{Parent: 1, Tag: "a", Selector: "a.inline", Box: box(100, 200, 30, 18), Control: &checks.Control{Role: "link", Inline: true, Hit: "self"}})
		p.add(checks.Element{Parent: 1, Tag: "a", Selector: "a.next", Box: box(100, 218, 30, 18), Control: &checks.Control{Role: "link", Hit: "self"}})
		p.add(checks.Element{Parent: 1, Tag: "input", Selector: "#terms", Box: box(16, 300, 13, 13), Control: &checks.Control{Role: "checkbox", UASized: true, Hit: "self"}})
		p.add(checks.Element{Parent: 1, Tag: "button", Selector: "button.dis", Box: box(16, 320, 16, 16), Control: &checks.Control{Role: "button", Disabled: true, Hit: "self"}})
		// A 40 px high button: fine for 2.5.8, advisory for 44 px on mobile.
		p.add(checks.Element{Parent: 1, Tag: "button", Selector: "button.small", Box: box(16, 400, 120, 40), Control: &checks.Control{Role: "button", Hit: "self"}})
		return p.s
	}
	got := kindsOf(checks.Run(build(design.Mobile), checks.Config{}), checks.KindTapTarget)
	if want := []string{"#a", "#b", "a.next"}; !slices.Equal(got, want) {
		t.Errorf("mobile tap_target = %v; want %v (the 44 px advice only in the strict profile)", got, want)
	}
	got = kindsOf(checks.Run(build(design.Mobile), checks.Config{StrictTargets: true}), checks.KindTapTarget)
	if want := []string{"#a", "#b", "a.next", "button.small"}; !slices.Equal(got, want) {
		t.Errorf("strict mobile tap_target = %v; want %v", got, want)
	}
	got = kindsOf(checks.Run(build(design.Tablet), checks.Config{}), checks.KindTapTarget)
	if want := []string{"#a", "#b", "a.next"}; !slices.Equal(got, want) {
		t.Errorf("tablet tap_target = %v; want %v", got, want)
	}
	if got := kindsOf(checks.Run(build(design.Desktop), checks.Config{}), checks.KindTapTarget); len(got) != 0 {
		t.Errorf("desktop tap_target = %v; want none", got)
	}
}

func testTokens(t *testing.T) *tokens.Set {
	s, err := tokens.Parse([]byte(`{
	  "color": {"$type": "color", "ink": {"$value": "#1f2937"}, "primary": {"$value": "#2563eb"}},
	  "space": {"$type": "dimension", "2": {"$value": "8px"}, "4": {"$value": "16px"}, "6": {"$value": "24px"}},
	  "font": {"family": {"$type": "fontFamily", "body": {"$value": ["Brand Sans", "sans-serif"]}},
	           "size": {"$type": "dimension", "md": {"$value": "16px"}, "xl": {"$value": "24px"}}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTokenChecksJudgeOnlyPageSetValues(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.brandish", Set: map[string]any{"color": "rgb(38, 99, 235)"}, Box: box(0, 0, 100, 20)})
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.purple", Set: map[string]any{"color": "rgb(124, 58, 237)"}, Box: box(0, 30, 100, 20)})
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.purple2", Set: map[string]any{"color": "rgb(124, 58, 237)"}, Box: box(0, 60, 100, 20)})
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.white", Set: map[string]any{"background-color": "rgb(255, 255, 255)"}, Box: box(0, 90, 100, 20)})
	p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.pad", Set: map[string]any{"padding-top": 18.0, "padding-left": 18.0, "margin-top": -16.0, "margin-bottom": 2.0}, Box: box(0, 120, 100, 20)})
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.default-margins", Box: box(0, 150, 100, 20)}) // UA margins are never in Set

	fs := checks.Run(p.s, checks.Config{Tokens: testTokens(t)})
	if got, want := kindsOf(fs, checks.KindOffTokenColor), []string{"p.purple"}; !slices.Equal(got, want) {
		t.Errorf("off_token_color = %v; want %v (grouped, near-token and white allowed)", got, want)
	}
	for _, f := range fs {
		if f.Kind == checks.KindOffTokenColor && f.Facts["count"] != 2 {
			t.Errorf("grouped count = %v; want 2", f.Facts["count"])
		}
	}
	if got, want := kindsOf(fs, checks.KindOffScaleSpacing), []string{"div.pad"}; !slices.Equal(got, want) {
		t.Errorf("off_scale_spacing = %v; want %v", got, want)
	}
	// Without tokens the token checks are off.
	if fs := checks.Run(p.s, checks.Config{}); len(fs) != 0 {
		t.Errorf("without tokens: %v", fs)
	}
}

func TestFontChecks(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	p.s.FontsFailed = []string{"Display Pro"}
	probe := func(i int) *int { return &i }
	// A failed web font: font_fallback, not off_token_font.
	h := p.add(checks.Element{Parent: 1, Tag: "h1", Selector: "h1.display", Set: map[string]any{"font-family": `"Display Pro", "Brand Sans", sans-serif`}, Box: box(0, 0, 300, 40), Text: text("rgb(0, 0, 0)")})
	p.s.Elements[h].FontProbe = probe(h)
	p.s.Elements[h].Rendered = []checks.Font{{Family: "Noto Sans", Glyphs: 20}}
	// A serif quote: off_token_font.
	q := p.add(checks.Element{Parent: 1, Tag: "blockquote", Selector: "blockquote", Set: map[string]any{"font-family": "Georgia, serif"}, Box: box(0, 50, 300, 40), Text: text("rgb(0, 0, 0)")})
	p.s.Elements[q].FontProbe = probe(q)
	p.s.Elements[q].Rendered = []checks.Font{{Family: "DejaVu Serif", Glyphs: 30}}
	// Code is exempt.
	c := p.add(checks.Element{Parent: 1, Tag: "code", Selector: "code", Set: map[string]any{"font-family": "Menlo, monospace"}, Box: box(0, 100, 300, 20), Text: text("rgb(0, 0, 0)")})
	p.s.Elements[c].FontProbe = probe(c)
	p.s.Elements[c].Rendered = []checks.Font{{Family: "DejaVu Sans Mono", Glyphs: 10}}
	// A token font that loaded.
	b := p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.body", Set: map[string]any{"font-family": `"Brand Sans", sans-serif`}, Box: box(0, 130, 300, 20), Text: text("rgb(0, 0, 0)")})
	p.s.Elements[b].FontProbe = probe(b)
	p.s.Elements[b].Rendered = []checks.Font{{Family: "Noto Sans", Glyphs: 10, Custom: true}}

	fs := checks.Run(p.s, checks.Config{Tokens: testTokens(t)})
	if got, want := kindsOf(fs, checks.KindFontFallback), []string{"h1.display"}; !slices.Equal(got, want) {
		t.Errorf("font_fallback = %v; want %v", got, want)
	}
	if got, want := kindsOf(fs, checks.KindOffTokenFont), []string{"blockquote"}; !slices.Equal(got, want) {
		t.Errorf("off_token_font = %v; want %v", got, want)
	}
}

func TestTypeScale(t *testing.T) {
	t.Parallel()
	p := newPage(design.Mobile)
	p.add(checks.Element{Parent: 1, Tag: "h1", Selector: "h1", Heading: 1, FontSize: 36, Box: box(0, 0, 300, 40), Text: text("rgb(0, 0, 0)")})
	p.add(checks.Element{Parent: 1, Tag: "h2", Selector: "h2", Heading: 2, FontSize: 24, Box: box(0, 50, 300, 30), Text: text("rgb(0, 0, 0)")})
	p.add(checks.Element{Parent: 1, Tag: "h3", Selector: "h3.big", Heading: 3, FontSize: 30, Set: map[string]any{"font-size": "30px"}, Box: box(0, 90, 300, 30), Text: text("rgb(0, 0, 0)")})
	legal := p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.legal", FontSize: 11, Set: map[string]any{"font-size": "11px"}, Box: box(0, 130, 300, 30)})
	p.add(checks.Element{Parent: legal, Tag: "p", Selector: "div.legal > p", FontSize: 11, Box: box(0, 130, 300, 15), Text: text("rgb(0, 0, 0)")})
	p.add(checks.Element{Parent: legal, Tag: "small", Selector: "div.legal > small", FontSize: 11, Box: box(0, 145, 300, 15), Text: text("rgb(0, 0, 0)")})

	fs := checks.Run(p.s, checks.Config{}) // no tokens: tiny text and heading order only
	if got, want := kindsOf(fs, checks.KindTypeScale), []string{"h3.big", "div.legal"}; !slices.Equal(got, want) {
		t.Errorf("type_scale = %v; want %v", got, want)
	}
	fs = checks.Run(p.s, checks.Config{Tokens: testTokens(t)}) // + off-scale 30px and 11px
	if got := kindsOf(fs, checks.KindTypeScale); len(got) != 4 {
		t.Errorf("type_scale with tokens = %v; want 4 findings", got)
	}
	p.s.Viewport = design.Desktop
	if got, want := kindsOf(checks.Run(p.s, checks.Config{}), checks.KindTypeScale), []string{"h3.big"}; !slices.Equal(got, want) {
		t.Errorf("desktop type_scale = %v; want %v (12px rule is mobile only)", got, want)
	}
}

func TestBrokenImageAndUnnamed(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	empty := ""
	alt := "Team photo"
	p.add(checks.Element{Parent: 1, Tag: "img", Selector: "img.photo", Box: box(0, 0, 300, 200), Image: &checks.Image{Src: "/a.jpg", Complete: true, Alt: &alt}})
	p.add(checks.Element{Parent: 1, Tag: "img", Selector: "img.deco", Box: box(0, 210, 48, 48), Image: &checks.Image{Src: "/b.png", Complete: true, Alt: &empty}})
	p.add(checks.Element{Parent: 1, Tag: "img", Selector: "img.lazy", Box: box(0, 300, 48, 48), Image: &checks.Image{Src: "/c.png", Complete: false}})
	p.add(checks.Element{Parent: 1, Tag: "img", Selector: "img.fine", Box: box(0, 400, 48, 48), Image: &checks.Image{Src: "/d.png", Complete: true, NaturalWidth: 48}})
	p.s.Unnamed = []checks.Unnamed{{Selector: "button.icon", Role: "button", Box: box(0, 500, 48, 48)}}
	fs := checks.Run(p.s, checks.Config{})
	if got, want := kindsOf(fs, checks.KindBrokenImage), []string{"img.photo", "img.deco"}; !slices.Equal(got, want) {
		t.Errorf("broken_image = %v; want %v", got, want)
	}
	if fs[0].Severity != design.Major || fs[1].Severity != design.Minor {
		t.Errorf("severities %v %v; want major for content, minor for decorative", fs[0].Severity, fs[1].Severity)
	}
	if got, want := kindsOf(fs, checks.KindUnnamedControl), []string{"button.icon"}; !slices.Equal(got, want) {
		t.Errorf("unnamed_control = %v; want %v", got, want)
	}
}

func TestSpacingRhythm(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	list := p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.list", Box: box(0, 0, 400, 400)})
	y := 0.0
	for i, gap := range []float64{16, 16, 32, 16, 0} {
		e := checks.Element{Parent: list, Tag: "div", Class: "notice", Selector: "div.notice-" + string(rune('a'+i)), Box: box(0, y, 400, 40)}
		if i == 2 {
			e.Set = map[string]any{"margin-bottom": 32.0}
		} else {
			e.Set = map[string]any{"margin-bottom": 16.0}
		}
		p.add(e)
		y += 40 + gap
	}
	// Three alike items are too few to call a rhythm.
	few := p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.few", Box: box(0, 500, 400, 200)})
	for i, yy := range []float64{500, 556, 620} {
		p.add(checks.Element{Parent: few, Tag: "p", Class: "x", Selector: "p.few-" + string(rune('a'+i)), Box: box(0, yy, 400, 40)})
	}
	fs := checks.Run(p.s, checks.Config{})
	got := kindsOf(fs, checks.KindSpacingRhythm)
	if want := []string{"div.notice-c"}; !slices.Equal(got, want) {
		t.Fatalf("spacing_rhythm = %v; want %v", got, want)
	}
	// The odd gap follows div.notice-c (its own margin-bottom), so the
	// finding names that side for the evidence to draw it.
	for _, f := range fs {
		if f.Kind == checks.KindSpacingRhythm && f.Facts["gap_edge"] != "bottom" {
			t.Errorf("gap_edge = %v; want bottom", f.Facts["gap_edge"])
		}
	}
}

func TestRemeasure(t *testing.T) {
	t.Parallel()
	before := newPage(design.Desktop)
	before.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.low", Box: box(16, 16, 400, 24), Text: text("rgb(209, 213, 219)", bg("rgb(255, 255, 255)"))})
	fs := checks.Run(before.s, checks.Config{})
	if len(fs) != 1 {
		t.Fatalf("findings = %v", fs)
	}
	f := fs[0]
	f.ID = "f1"
	// Round-trip through JSON as the engine stores findings.
	raw, _ := json.Marshal(f)
	var stored design.Finding
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}

	if o := checks.Remeasure(before.s, checks.Config{}, stored); o.Outcome != design.Failed || o.Facts["ratio"] != 1.47 || o.FindingID != "f1" {
		t.Errorf("unchanged page: %+v; want failed with the ratio", o)
	}
	fixed := newPage(design.Desktop)
	fixed.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.low", Box: box(16, 16, 400, 24), Text: text("rgb(75, 85, 99)", bg("rgb(255, 255, 255)"))})
	// A pass shows what it measured: the ratio the text has now.
	if o := checks.Remeasure(fixed.s, checks.Config{}, stored); o.Outcome != design.Passed || o.Facts["ratio"] != 7.56 || o.Facts["required"] != 4.5 {
		t.Errorf("fixed page: %+v; want passed with the ratio 7.56 of 4.5 required", o)
	}
	gone := newPage(design.Desktop)
	if o := checks.Remeasure(gone.s, checks.Config{}, stored); o.Outcome != design.Inconclusive {
		t.Errorf("element gone: %+v; want inconclusive", o)
	}
	stored.Kind = "no_such_check"
	if o := checks.Remeasure(before.s, checks.Config{}, stored); o.Outcome != design.Inconclusive {
		t.Errorf("unknown kind: %+v; want inconclusive", o)
	}
}

func TestSnapshotJSONRoundTrip(t *testing.T) {
	t.Parallel()
	p := newPage(design.Mobile)
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.low", Box: box(16, 16, 400, 24), Text: text("rgb(209, 213, 219)", bg("rgb(255, 255, 255)")), Set: map[string]any{"padding-top": 18.0}})
	p.s.TokenUses = []tokens.Use{{Name: "--color-ink", Value: "#1f2937", Roles: []string{tokens.RoleText}}}
	raw, err := json.Marshal(p.s)
	if err != nil {
		t.Fatal(err)
	}
	var back checks.Snapshot
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(checks.Run(p.s, checks.Config{Tokens: testTokens(t)}))
	b, _ := json.Marshal(checks.Run(&back, checks.Config{Tokens: testTokens(t)}))
	if string(a) != string(b) {
		t.Errorf("findings differ after a JSON round trip:\n%s\n%s", a, b)
	}
	if !reflect.DeepEqual(back.TokenUses, p.s.TokenUses) {
		t.Errorf("token uses after a round trip = %+v", back.TokenUses)
	}
}

func TestKinds(t *testing.T) {
	t.Parallel()
	if got := len(checks.Kinds()); got != 15 {
		t.Errorf("Kinds() has %d kinds; want 15", got)
	}
	if checks.Run(nil, checks.Config{}) != nil {
		t.Error("Run(nil) is not nil")
	}
}

// TestRemeasureComparesTheSameRule: a recheck answers for the rule that
// produced the finding, not for another rule of the same kind that still
// applies to the element.
func TestRemeasureComparesTheSameRule(t *testing.T) {
	t.Parallel()
	stored := func(t *testing.T, fs []design.Finding, sel string, pick func(design.Finding) bool) design.Finding {
		t.Helper()
		for _, f := range fs {
			if f.Selector == sel && pick(f) {
				raw, _ := json.Marshal(f)
				var g design.Finding
				if err := json.Unmarshal(raw, &g); err != nil {
					t.Fatal(err)
				}
				return g
			}
		}
		t.Fatalf("no finding on %s in %+v", sel, fs)
		return design.Finding{}
	}
	hard := func(f design.Finding) bool { return !f.Advisory }
	soft := func(f design.Finding) bool { return f.Advisory }

	t.Run("TapTarget", func(t *testing.T) {
		t.Parallel()
		taps := func(size float64) *checks.Snapshot {
			p := newPage(design.Mobile)
			p.add(checks.Element{Parent: 1, Tag: "button", Selector: "#a", Box: box(16, 16, size, size), Control: &checks.Control{Role: "button", Hit: "self"}})
			p.add(checks.Element{Parent: 1, Tag: "button", Selector: "#b", Box: box(16+size+2, 16, 20, 20), Control: &checks.Control{Role: "button", Hit: "self"}})
			return p.s
		}
		small, enlarged := taps(20), taps(32)
		f := stored(t, checks.Run(small, checks.Config{}), "#a", hard)
		if o := checks.Remeasure(enlarged, checks.Config{}, f); o.Outcome != design.Passed || o.Facts["width_px"] != 32.0 || o.Facts["height_px"] != 32.0 {
			t.Errorf("24 px finding after enlarging to 32 px: %+v; want passed at 32 × 32 (only the 44 px advice remains)", o)
		}
		if o := checks.Remeasure(small, checks.Config{}, f); o.Outcome != design.Failed {
			t.Errorf("24 px finding on the unchanged page: %+v; want failed", o)
		}
		strict := checks.Config{StrictTargets: true}
		nit := stored(t, checks.Run(enlarged, strict), "#a", soft)
		if o := checks.Remeasure(enlarged, strict, nit); o.Outcome != design.Failed {
			t.Errorf("44 px advice on the unchanged page: %+v; want failed", o)
		}
		if o := checks.Remeasure(small, checks.Config{}, nit); o.Outcome != design.Failed {
			t.Errorf("44 px advice after shrinking under 24 px: %+v; want failed", o)
		}
	})

	t.Run("Contrast", func(t *testing.T) {
		t.Parallel()
		solid := newPage(design.Desktop)
		solid.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.low", Box: box(16, 16, 400, 24), Text: text("rgb(209, 213, 219)", bg("rgb(255, 255, 255)"))})
		f := stored(t, checks.Run(solid.s, checks.Config{}), "p.low", hard)
		grad := newPage(design.Desktop)
		grad.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.low", Box: box(16, 16, 400, 24),
			Text: text("rgb(120, 120, 120)", checks.Layer{Gradient: []string{"rgb(255, 255, 255)", "rgb(40, 40, 40)"}})})
		if fs := checks.Run(grad.s, checks.Config{}); len(fs) != 1 || !fs[0].Advisory {
			t.Fatalf("gradient page findings = %+v; want one advisory contrast finding", fs)
		}
		if o := checks.Remeasure(grad.s, checks.Config{}, f); o.Outcome != design.Inconclusive {
			t.Errorf("measured contrast finding where only an estimate remains: %+v; want inconclusive", o)
		}
		est := stored(t, checks.Run(grad.s, checks.Config{}), "p.low", soft)
		if o := checks.Remeasure(solid.s, checks.Config{}, est); o.Outcome != design.Failed {
			t.Errorf("estimated contrast finding now measured low: %+v; want failed", o)
		}
	})

	t.Run("TypeScale", func(t *testing.T) {
		t.Parallel()
		heads := func(h2 float64) *checks.Snapshot {
			p := newPage(design.Desktop)
			p.add(checks.Element{Parent: 1, Tag: "h1", Selector: "h1", Heading: 1, FontSize: 24, Box: box(16, 16, 400, 30), Text: text("rgb(0, 0, 0)", bg("rgb(255, 255, 255)"))})
			p.add(checks.Element{Parent: 1, Tag: "h2", Selector: "h2", Heading: 2, FontSize: h2, Box: box(16, 60, 400, 40), Text: text("rgb(0, 0, 0)", bg("rgb(255, 255, 255)")),
				Set: map[string]any{"font-size": "21px"}})
			return p.s
		}
		order := func(f design.Finding) bool { _, ok := f.Facts["level"]; return ok }
		cfg := checks.Config{Tokens: testTokens(t)}
		f := stored(t, checks.Run(heads(30), cfg), "h2", order)
		fixed := heads(21) // smaller than the h1 now, still off the type scale
		if fs := kindsOf(checks.Run(fixed, cfg), checks.KindTypeScale); !slices.Contains(fs, "h2") {
			t.Fatalf("fixed page type_scale = %v; want the off-scale finding on h2 to remain", fs)
		}
		if o := checks.Remeasure(fixed, cfg, f); o.Outcome != design.Passed || o.Facts["font_size_px"] != 21.0 {
			t.Errorf("heading-order finding after the fix: %+v; want passed at 21 px (only the off-scale nit remains)", o)
		}
	})

	t.Run("OffTokenColor", func(t *testing.T) {
		t.Parallel()
		cfg := checks.Config{Tokens: testTokens(t)}
		colors := func(fg string) *checks.Snapshot {
			p := newPage(design.Desktop)
			p.add(checks.Element{Parent: 1, Tag: "div", Selector: "div.card", Box: box(16, 16, 400, 100),
				Set: map[string]any{"color": fg, "background-color": "rgb(250, 200, 0)"}})
			return p.s
		}
		isColor := func(f design.Finding) bool { return f.Facts["property"] == "color" }
		f := stored(t, checks.Run(colors("rgb(200, 0, 120)"), cfg), "div.card", isColor)
		if o := checks.Remeasure(colors("rgb(31, 41, 55)"), cfg, f); o.Outcome != design.Passed || o.Facts["value"] != "rgb(31, 41, 55)" {
			t.Errorf("off-token color finding after the color became a token: %+v; want passed (the background one is another finding)", o)
		}
	})
}

// TestOffTokenFontListsEachFamilyOnce: token stacks that share a family
// (body, heading, mono) name it once in the facts.
func TestOffTokenFontListsEachFamilyOnce(t *testing.T) {
	t.Parallel()
	set, err := tokens.Parse([]byte(`{"font": {"$type": "fontFamily",
	  "body": {"$value": ["Brand Sans", "sans-serif"]},
	  "code": {"$value": ["Brand Mono", "monospace"]},
	  "heading": {"$value": ["Brand Sans", "serif"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := newPage(design.Desktop)
	q := p.add(checks.Element{Parent: 1, Tag: "blockquote", Selector: "blockquote", Set: map[string]any{"font-family": "Georgia, serif"}, Box: box(0, 50, 300, 40), Text: text("rgb(0, 0, 0)")})
	p.s.Elements[q].FontProbe = &q
	p.s.Elements[q].Rendered = []checks.Font{{Family: "DejaVu Serif", Glyphs: 30}}
	fs := checks.Run(p.s, checks.Config{Tokens: set})
	if len(fs) != 1 || fs[0].Kind != checks.KindOffTokenFont {
		t.Fatalf("findings = %+v; want one off_token_font", fs)
	}
	if got, want := fs[0].Facts["token_families"], "Brand Sans, Brand Mono"; got != want {
		t.Errorf("token_families = %q; want %q", got, want)
	}
}

// TestBrokenImageNamesSameOriginByPath: the reviewed host and port stay out
// of a same-origin image's src fact; a cross-origin src stays whole.
func TestBrokenImageNamesSameOriginByPath(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	p.s.Origin = "http://127.0.0.1:41234"
	alt := "x"
	p.add(checks.Element{Parent: 1, Tag: "img", Selector: "img.own", Box: box(0, 0, 100, 100), Image: &checks.Image{Src: "http://127.0.0.1:41234/img/team.jpg?v=2", Complete: true, Alt: &alt}})
	p.add(checks.Element{Parent: 1, Tag: "img", Selector: "img.cdn", Box: box(0, 110, 100, 100), Image: &checks.Image{Src: "https://cdn.example/team.jpg", Complete: true, Alt: &alt}})
	p.add(checks.Element{Parent: 1, Tag: "img", Selector: "img.port", Box: box(0, 220, 100, 100), Image: &checks.Image{Src: "http://127.0.0.1:412345/x.png", Complete: true, Alt: &alt}})
	fs := checks.Run(p.s, checks.Config{})
	want := map[string]string{"img.own": "/img/team.jpg?v=2", "img.cdn": "https://cdn.example/team.jpg", "img.port": "http://127.0.0.1:412345/x.png"}
	if len(fs) != len(want) {
		t.Fatalf("findings = %+v", fs)
	}
	for _, f := range fs {
		if got := f.Facts["src"]; got != want[f.Selector] {
			t.Errorf("%s src = %q; want %q", f.Selector, got, want[f.Selector])
		}
		if f.Selector == "img.own" && strings.Contains(f.Description, "127.0.0.1") {
			t.Errorf("description names the reviewed host: %q", f.Description)
		}
	}
}

// TestSmallTextReadByReaders: under 12 px on mobile judges only text a
// reader reads (a "¶" anchor or an icon glyph is none), and one size
// repeated across elements (mdBook's 11.2 px code in every listing caption)
// is one finding listing the rest.
func TestSmallTextReadByReaders(t *testing.T) {
	t.Parallel()
	p := newPage(design.Mobile)
	small := func(sel string) checks.Element {
		return checks.Element{Parent: 1, Tag: "code", Selector: sel, FontSize: 11.2, Set: map[string]any{"font-size": "0.875em"}, Box: box(0, 0, 40, 15), Text: text("rgb(0, 0, 0)")}
	}
	glyph := func(sel, kind string) checks.Element {
		e := small(sel)
		e.Tag, e.Text.Glyphs = "a", kind
		return e
	}
	p.add(glyph("a.headerlink", "symbols"))
	p.add(glyph("span.icon", "single"))
	p.add(small("p:nth-of-type(1) > span.caption > code"))
	p.add(small("p:nth-of-type(2) > span.caption > code"))
	fs := checks.Run(p.s, checks.Config{})
	got := kindsOf(fs, checks.KindTypeScale)
	if want := []string{"p:nth-of-type(1) > span.caption > code"}; !slices.Equal(got, want) {
		t.Fatalf("type_scale = %v; want %v", got, want)
	}
	if also, _ := fs[0].Facts["also"].([]string); !slices.Equal(also, []string{"p:nth-of-type(2) > span.caption > code"}) {
		t.Errorf("also = %v; want the second caption", fs[0].Facts["also"])
	}
}

// TestContrastLargeTextThreshold: WCAG's large text is 18 pt (24 px) or
// 14 pt (18.67 px) bold. AsciiDoc's #527bbd block titles, bold at 17.6 px
// and 4.26:1 on white, are normal text that needs 4.5:1; at a computed 14
// pt bold the same colour passes 3:1, and 18.66 px bold is still under 14 pt.
func TestContrastLargeTextThreshold(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	for i, c := range []struct {
		sel    string
		size   float64
		weight int
	}{{"div.title", 17.6, 700}, {"div.title-14pt", 18.6667, 700}, {"div.title-18-66", 18.66, 700}, {"div.title-regular", 18.6667, 400}, {"div.title-18pt", 24, 400}} {
		tx := text("rgb(82, 123, 189)", bg("rgb(255, 255, 255)"))
		tx.Weight = c.weight
		p.add(checks.Element{Parent: 1, Tag: "div", Selector: c.sel, FontSize: c.size, Box: box(16, float64(16+40*i), 400, 30), Text: tx})
	}
	fs := checks.Run(p.s, checks.Config{})
	if got, want := kindsOf(fs, checks.KindContrast), []string{"div.title"}; !slices.Equal(got, want) {
		t.Fatalf("contrast findings = %v; want %v", got, want)
	}
	if also := fs[0].Facts["also"]; !slices.Equal(also.([]string), []string{"div.title-18-66", "div.title-regular"}) || fs[0].Facts["required"] != 4.5 {
		t.Errorf("finding facts = %v; want 4.5:1 required, also the 18.66 px bold and 18.67 px regular titles", fs[0].Facts)
	}
}
