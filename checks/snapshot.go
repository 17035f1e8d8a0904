package checks

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/tokens"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Snapshot is everything measured in a page at one viewport. It is plain
// data (JSON round-trips it), so every check is a pure function of it and a
// saved snapshot can be re-judged without a browser.
type Snapshot struct {
	Viewport  design.Viewport `json:"viewport"`
	Width     float64         `json:"width"`  // viewport, CSS px
	Height    float64         `json:"height"` // viewport, CSS px
	DocWidth  float64         `json:"doc_width"`
	DocHeight float64         `json:"doc_height"`
	Elements  []Element       `json:"elements"` // document order; Elements[i].Index == i
	Overlaps  []Overlap       `json:"overlaps,omitempty"`
	// TokenUses are the custom properties the page's own rules use, by use
	// (see tokens.Use); Themes the theme scopes its sheets define custom
	// properties in; RootFontSize the root's computed font size (the rem).
	TokenUses    []tokens.Use `json:"token_uses,omitempty"`
	Themes       []Theme      `json:"themes,omitempty"`
	RootFontSize float64      `json:"root_font_size,omitempty"`
	// FontsFailed are web font families whose faces failed to load with no
	// face of the same family loaded.
	FontsFailed []string `json:"fonts_failed,omitempty"`
	FontsLoaded []string `json:"fonts_loaded,omitempty"`
	// Unnamed are controls the accessibility tree exposes without a name.
	Unnamed []Unnamed `json:"unnamed,omitempty"`
	// Truncated is set when a work cap was hit (elements, or the hit tests
	// behind contrast, occlusion and overlap): part of the page went
	// unchecked.
	Truncated bool `json:"truncated,omitempty"`
	// Origin is the page's origin ("http://host:port"), so facts can name
	// a same-origin URL by its path; "" when unknown (an opaque origin).
	Origin string `json:"origin,omitempty"`
}

// Theme is one scope the page's sheets define custom properties in (":root",
// ".dark", "[data-theme=\"light\"]", with " @media …" when a media query
// guards it) and whether it applies to the page as captured.
type Theme struct {
	Scope  string `json:"scope"`
	Active bool   `json:"active,omitempty"`
}

// Element is one rendered element the collector kept. Screen-reader-only,
// aria-hidden, display:none, fully off-canvas and svg-internal elements are
// never kept.
type Element struct {
	Index    int         `json:"i"`
	Parent   int         `json:"parent"` // nearest kept ancestor, -1 for the root
	Selector string      `json:"sel"`    // unique in the page; "" if none could be verified
	Tag      string      `json:"tag"`
	Class    string      `json:"cls,omitempty"` // sorted class list
	Box      design.Rect `json:"box"`           // border box, page coordinates
	Display  string      `json:"display"`
	Position string      `json:"position"`

	Invisible   bool `json:"invisible,omitempty"`   // visibility is not visible
	Fixed       bool `json:"fixed,omitempty"`       // fixed or sticky, itself or an ancestor
	InScroller  bool `json:"in_scroller,omitempty"` // inside a scroll container
	ClipX       bool `json:"clip_x,omitempty"`      // an ancestor clips horizontal overflow
	ClipY       bool `json:"clip_y,omitempty"`
	Transformed bool `json:"transformed,omitempty"` // an ancestor is transformed
	Transform   bool `json:"transform,omitempty"`   // it is transformed itself
	Offset      bool `json:"offset,omitempty"`      // relatively positioned with an offset
	Float       bool `json:"float,omitempty"`
	OwnClipX    bool `json:"own_clip_x,omitempty"` // its own overflow-x is not visible
	Animated    bool `json:"animated,omitempty"`
	InControl   *int `json:"in_control,omitempty"` // index of the enclosing control
	// OutOfScope says why the design tokens do not judge this element (it
	// or an ancestor): "code" (pre, code, kbd, samp: syntax highlighting
	// too) or "editable" (contenteditable, textarea: the user's content).
	OutOfScope string  `json:"oos,omitempty"`
	Opacity    float64 `json:"opacity,omitempty"` // effective, when below 1
	Bounded    bool    `json:"bounded,omitempty"` // has a visible edge: own background, border, shadow
	// Edges lists the sides a box drawn by borders alone draws ("t", "tb":
	// top, right, bottom, left); "" when it draws all four or a surface.
	Edges       string  `json:"edges,omitempty"`
	FontSize    float64 `json:"font_size"`
	RefFontSize float64 `json:"ref_font_size,omitempty"` // the unstyled element's size, when it differs
	Heading     int     `json:"heading,omitempty"`       // 1..6 for h1..h6
	FontProbe   *int    `json:"font_probe,omitempty"`    // the text element probed for this element's font

	// Set holds the computed values the page's own CSS set (not inherited,
	// not browser defaults): color, background-color, border-color,
	// font-family, font-size and px margins, paddings and gaps.
	Set map[string]any `json:"set,omitempty"`

	Text     *Text    `json:"text,omitempty"`
	Control  *Control `json:"control,omitempty"`
	Image    *Image   `json:"image,omitempty"`
	Clip     *Clip    `json:"clip,omitempty"`
	Rendered []Font   `json:"rendered,omitempty"` // platform fonts of the text, most glyphs first
}

// Text describes an element's own (direct) text.
type Text struct {
	Rects     []design.Rect `json:"rects"` // line boxes, page coordinates
	Chars     int           `json:"chars"`
	Weight    int           `json:"weight"`
	Family    string        `json:"family"`
	Color     string        `json:"color"`
	Shadow    bool          `json:"shadow,omitempty"`
	Disabled  bool          `json:"disabled,omitempty"`
	Measured  bool          `json:"measured,omitempty"`   // Bg was hit-tested
	Bg        []Layer       `json:"bg,omitempty"`         // backgrounds under the first line, top first
	BgUnknown string        `json:"bg_unknown,omitempty"` // why the styles cannot give the background: image, media, gradient, pseudo, filter
	// Sampled is the background read from the rendered pixels under the
	// glyphs, when the styles cannot give it (or a shadow changes it).
	Sampled *Sampled `json:"sampled,omitempty"`
	// Glyphs says the text is not language: "symbols" (no letter or digit:
	// icon glyphs, ×, →) or "single" (one lone non-digit character).
	Glyphs string `json:"glyphs,omitempty"`
	Logo   bool   `json:"logo,omitempty"` // part of a logo or brand mark
}

// Layer is one background under text: a colour or a gradient's stops.
type Layer struct {
	Color    string   `json:"color,omitempty"`
	Gradient []string `json:"gradient,omitempty"`
}

// Control is an interactive element.
type Control struct {
	Role      string       `json:"role"`
	Disabled  bool         `json:"disabled,omitempty"` // native, aria-disabled, or a framework's .disabled
	NoPointer bool         `json:"no_pointer,omitempty"`
	Inline    bool         `json:"inline,omitempty"`   // a link inside running text
	UASized   bool         `json:"ua_sized,omitempty"` // a native control the browser alone sizes (WCAG 2.5.8 exception)
	LabelBox  *design.Rect `json:"label_box,omitempty"`
	// Hit is what a click at the centre reaches: self, label, ancestor,
	// modal, other, none, or clipped (the centre is scrolled or clipped out
	// of an ancestor's view); "" when untested.
	Hit   string `json:"hit,omitempty"`
	HitBy string `json:"hit_by,omitempty"`
}

// Image is an img element's load state.
type Image struct {
	Src          string  `json:"src"`
	Complete     bool    `json:"complete"`
	NaturalWidth int     `json:"natural_width"`
	Alt          *string `json:"alt"`
}

// Clip is text an element's overflow:hidden/clip cuts off, in px past its
// padding box.
type Clip struct {
	X         float64 `json:"x"`
	Y         float64 `json:"y"`
	Ellipsis  bool    `json:"ellipsis,omitempty"`
	LineClamp bool    `json:"line_clamp,omitempty"`
	Masked    bool    `json:"masked,omitempty"`
	Collapsed bool    `json:"collapsed,omitempty"` // an aria-expanded=false control owns it
}

// Overlap is a pair of unrelated text elements whose ink boxes (each line
// narrowed to its glyphs' ascent and descent) intersect.
type Overlap struct {
	Top     int     `json:"top"`    // paints above
	Bottom  int     `json:"bottom"` // paints below
	Area    float64 `json:"area"`
	W       float64 `json:"w"` // the largest intersection
	H       float64 `json:"h"`
	LineH   float64 `json:"line_h"`  // the shorter ink box
	Surface bool    `json:"surface"` // an opaque surface lies between: a deliberate overlay
}

// Font is one platform font used to render text.
type Font struct {
	Family string `json:"family"`
	Glyphs int    `json:"glyphs"`
	Custom bool   `json:"custom,omitempty"` // a web font
}

// Unnamed is a control without an accessible name.
type Unnamed struct {
	Selector string      `json:"sel"`
	Role     string      `json:"role"`
	Box      design.Rect `json:"box"`
}

//go:embed collect.js
var collectJS string

// Collect measures the page loaded in the chromedp tab ctx, which the caller
// has already sized to vp and waited on (load, fonts, stable layout). It runs
// the in-page collector, reads the pixels under the texts whose background
// the styles cannot give (samplePixels), then asks CDP for rendered fonts
// and the accessibility tree. The page's scroll position is restored.
func Collect(ctx context.Context, vp design.Viewport) (*Snapshot, error) {
	if _, _, ok := vp.Size(); !ok {
		return nil, fault.New(fault.InvalidArgument, "unknown viewport %q", vp)
	}
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: collectJS, Silent: ptr(true)})
	if err == nil && res.ExceptionDetails != nil {
		err = fmt.Errorf("collector threw: %s", res.ExceptionDetails.Text)
	}
	if err == nil && (res.Result == nil || res.Result.ObjectID == "") {
		err = fmt.Errorf("collector returned no object")
	}
	if err != nil {
		return nil, fault.Wrap(err, fault.CaptureFailed, "measuring the page failed")
	}
	nodes := res.Result.ObjectID
	defer func() { _, _ = chromedp.Call(ctx, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: nodes}) }()
	raw, err := callString(ctx, nodes, `function () { return this[0]; }`)
	if err != nil {
		return nil, fault.Wrap(err, fault.CaptureFailed, "measuring the page returned no data")
	}
	s := &Snapshot{}
	if err := json.Unmarshal([]byte(raw), s); err != nil {
		return nil, fault.Wrap(err, fault.CaptureFailed, "measuring the page returned unreadable data")
	}
	s.Viewport = vp
	samplePixels(ctx, s, nodes)
	if err := collectFonts(ctx, s); err != nil {
		return nil, err
	}
	if err := collectUnnamed(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// collectFonts asks CDP which platform fonts rendered each font probe.
func collectFonts(ctx context.Context, s *Snapshot) error {
	var probes []int
	for _, e := range s.Elements {
		if e.FontProbe != nil && *e.FontProbe >= 0 && *e.FontProbe < len(s.Elements) {
			probes = append(probes, *e.FontProbe)
		}
	}
	if len(probes) == 0 {
		return nil
	}
	if _, err := chromedp.Call(ctx, dom.Enable, dom.EnableParams{}); err != nil {
		return fault.Wrap(err, fault.CaptureFailed, "enabling DOM inspection failed")
	}
	if _, err := chromedp.Call(ctx, css.Enable, cdp.Empty{}); err != nil {
		return fault.Wrap(err, fault.CaptureFailed, "enabling CSS inspection failed")
	}
	doc, err := chromedp.Call(ctx, dom.GetDocument, dom.GetDocumentParams{})
	if err != nil || doc.Root == nil {
		return fault.Wrap(err, fault.CaptureFailed, "reading the document failed")
	}
	var todo []int
	done := map[int]bool{}
	for _, i := range probes {
		if !done[i] && s.Elements[i].Selector != "" {
			done[i] = true
			todo = append(todo, i)
		}
	}
	// The probes are asked for at once: each answer is a round trip to the
	// renderer, and waiting for one before sending the next made this step
	// cost as many round trips as there are probes.
	fonts := make([][]Font, len(todo))
	var wg sync.WaitGroup
	for k, i := range todo {
		wg.Go(func() { fonts[k] = platformFonts(ctx, doc.Root.NodeID, s.Elements[i].Selector) })
	}
	wg.Wait()
	for k, i := range todo {
		s.Elements[i].Rendered = fonts[k]
	}
	return nil
}

// platformFonts returns the platform fonts that render the element sel
// names, most glyphs first, or nil when the page changed under us (the
// font check then stays silent).
func platformFonts(ctx context.Context, root cdp.NodeID, sel string) []Font {
	q, err := chromedp.Call(ctx, dom.QuerySelector, dom.QuerySelectorParams{NodeID: root, Selector: sel})
	if err != nil || q.NodeID == 0 {
		return nil
	}
	f, err := chromedp.Call(ctx, css.GetPlatformFontsForNode, css.GetPlatformFontsForNodeParams{NodeID: q.NodeID})
	if err != nil {
		return nil
	}
	var fonts []Font
	for _, u := range f.Fonts {
		if u != nil {
			fonts = append(fonts, Font{Family: u.FamilyName, Glyphs: int(u.GlyphCount), Custom: u.IsCustomFont})
		}
	}
	sort.SliceStable(fonts, func(a, b int) bool {
		if fonts[a].Glyphs != fonts[b].Glyphs {
			return fonts[a].Glyphs > fonts[b].Glyphs
		}
		return fonts[a].Family < fonts[b].Family
	})
	return fonts
}

// PageTokens returns the design tokens the page's own rules define and use
// (tokens.FromUses), or nil when it has no token system.
func (s *Snapshot) PageTokens() *tokens.Set {
	return tokens.FromUses(s.TokenUses, s.RootFontSize)
}

// BoxOf returns where the element with selector sel is drawn now: a kept
// element's border box, or an unnamed control's; false when the page has
// no such element.
func (s *Snapshot) BoxOf(sel string) (design.Rect, bool) {
	if e := s.bySelector(sel); e != nil {
		return e.Box, true
	}
	for _, u := range s.Unnamed {
		if u.Selector == sel {
			return u.Box, true
		}
	}
	return design.Rect{}, false
}

// bySelector returns the element with selector sel, or nil.
func (s *Snapshot) bySelector(sel string) *Element {
	for i := range s.Elements {
		if s.Elements[i].Selector == sel {
			return &s.Elements[i]
		}
	}
	return nil
}

func (s *Snapshot) String() string {
	return fmt.Sprintf("snapshot(%s, %d elements)", s.Viewport, len(s.Elements))
}
