package checks_test

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
)

const collectPage = `<!doctype html><html class="light"><head><meta name="viewport" content="width=device-width, initial-scale=1"><style>
:root { --color-brand: #2563eb; --space-4: 16px; --sidebar-resize-indicator-width: 8px; --unused: #ff0000; }
.light { --muted: #666; }
.dark { --muted: #eee; }
@media (prefers-color-scheme: dark) { :root { --color-brand: #000; } }
.brandy { color: var(--color-brand); border: 1px solid var(--color-brand); }
.muted { color: var(--muted); }
.pad2 { padding: var(--space-4) 0; }
.twice { margin: calc(var(--space-4) * 2); }
.resize { width: var(--sidebar-resize-indicator-width); }
@font-face { font-family: "Gone Font"; src: url(/missing.woff2); }
body { margin: 0; font-family: sans-serif; }
.centered { width: 200px; margin: 0 auto; padding: 5%; }
.pad { padding: 18px; margin-top: 24px; }
.big { font-size: 40px; }
.gone { font-family: "Gone Font", serif; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
.twin { color: rgb(1, 2, 3); }
</style></head><body>
<h1>Title with UA margins</h1>
<p id="plain">Plain paragraph with a <a href="#x">default link</a>.</p>
<div class="centered">Centered box</div>
<div class="pad" data-testid="padded">Padded</div>
<h2 class="big">Big heading</h2>
<p class="gone">Fallback text</p>
<span class="sr">Screen reader only</span>
<div aria-hidden="true"><p class="decor">Decorative</p></div>
<pre><code><span class="hl">let x = 1;</span></code></pre>
<ul><li class="twin">One</li><li class="twin">Two</li></ul>
<button><svg width="10" height="10"></svg></button>
</body></html>`

// TestCollect loads a small page in Chromium and checks what the collector
// measures: values the page set versus browser defaults, skipped content,
// unique selectors, custom properties, failed fonts and unnamed controls.
func TestCollect(t *testing.T) {
	b := newBrowser(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(collectPage))
	}))
	t.Cleanup(srv.Close)
	s := b.snapshot(t, srv.URL+"/", design.Mobile)

	if s.Viewport != design.Mobile || s.Width != 390 {
		t.Errorf("viewport %s width %v; want mobile 390", s.Viewport, s.Width)
	}
	if s.Origin != srv.URL {
		t.Errorf("origin %q; want %q (same-origin facts are named by path)", s.Origin, srv.URL)
	}
	el := func(sel string) *checks.Element {
		t.Helper()
		for i := range s.Elements {
			if s.Elements[i].Selector == sel {
				return &s.Elements[i]
			}
		}
		t.Fatalf("no element %q", sel)
		return nil
	}
	if set := el("h1").Set; set != nil {
		t.Errorf("h1 with only UA styles has Set %v; want none", set)
	}
	if set := el("#plain").Set; set != nil {
		t.Errorf("plain p has Set %v; want none (UA margins are not the page's)", set)
	}
	if set := el("a").Set; set != nil {
		t.Errorf("UA-styled link has Set %v; want none", set)
	}
	c := el("div.centered").Set
	for _, p := range []string{"margin-left", "margin-right", "padding-top"} {
		if _, ok := c[p]; ok {
			t.Errorf("auto margins and %% paddings are not px values, but Set has %s=%v", p, c[p])
		}
	}
	pad := el(`[data-testid="padded"]`).Set
	if pad["padding-top"] != 18.0 || pad["margin-top"] != 24.0 {
		t.Errorf("padded Set = %v; want padding-top 18 and margin-top 24", pad)
	}
	if big := el("h2.big"); big.Set["font-size"] != "40px" || big.FontSize != 40 { // and larger than the h1: type_scale
		t.Errorf("h2.big = %+v", big)
	}
	if _, ok := el("h2.big").Set["margin-top"]; ok {
		t.Errorf("h2.big's UA em margins were taken for page-set values")
	}
	for i := range s.Elements {
		sel := s.Elements[i].Selector
		if strings.Contains(sel, "sr") || strings.Contains(sel, "decor") {
			t.Errorf("screen-reader-only or aria-hidden element kept: %s", sel)
		}
	}
	// Two alike elements get distinct, unique paths.
	if a, b := s.Elements[len(s.Elements)-3].Selector, s.Elements[len(s.Elements)-2].Selector; a == b || a == "" {
		t.Errorf("twin selectors %q and %q", a, b)
	}
	// Tokens by use: a colour used for text and borders, a length used for
	// padding (not the one used inside calc(), nor the width), the active
	// theme's value of a class-scoped property, and a colour no rule uses (a
	// palette entry); never a length no rule uses for spacing.
	uses := map[string]string{}
	for _, u := range s.TokenUses {
		uses[u.Name] = u.Value + " " + strings.Join(u.Roles, ",")
	}
	want := map[string]string{"--color-brand": "#2563eb border,text", "--muted": "#666 text", "--space-4": "16px spacing", "--unused": "#ff0000 "}
	if !reflect.DeepEqual(uses, want) {
		t.Errorf("token uses = %v; want %v", uses, want)
	}
	themes := map[string]bool{}
	for _, th := range s.Themes {
		themes[th.Scope] = th.Active
	}
	if !themes[":root"] || !themes[".light"] || themes[".dark"] || themes[":root @media (prefers-color-scheme: dark)"] || len(themes) != 4 {
		t.Errorf("themes = %+v; want :root and .light active, .dark and the dark media query not", s.Themes)
	}
	if s.RootFontSize != 16 {
		t.Errorf("root font size = %v; want 16", s.RootFontSize)
	}
	if hl := el("span.hl"); hl.OutOfScope != "code" {
		t.Errorf("highlighted code span out of scope = %q; want code", hl.OutOfScope)
	}
	if len(s.FontsFailed) != 1 || s.FontsFailed[0] != "Gone Font" {
		t.Errorf("fonts failed = %v; want [Gone Font]", s.FontsFailed)
	}
	gone := el("p.gone")
	if gone.FontProbe == nil || len(s.Elements[*gone.FontProbe].Rendered) == 0 {
		t.Fatalf("p.gone has no rendered fonts")
	}
	if r := s.Elements[*gone.FontProbe].Rendered[0].Family; r == "Gone Font" || r == "" {
		t.Errorf("p.gone rendered in %q; want a fallback", r)
	}
	if len(s.Unnamed) != 1 || s.Unnamed[0].Selector != "button" || s.Unnamed[0].Role != "button" {
		t.Errorf("unnamed = %+v; want the svg-only button", s.Unnamed)
	}
	fs := checks.Run(s, checks.Config{})
	var kinds []string
	for _, f := range fs {
		kinds = append(kinds, f.Kind+" "+f.Selector)
	}
	if want := []string{"font_fallback p.gone", "type_scale h2.big", "unnamed_control button"}; strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Errorf("findings = %v; want %v", kinds, want)
	}
}

const patternsPage = `<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1"><style>
html { overflow-x: hidden; }
body { margin: 0; font-family: sans-serif; }
.card { width: 480px; height: 40px; background: #eeeeff; }
.pager a { display: inline-block; padding: 2px 4px; }
.scroll { height: 60px; overflow-y: auto; }
.scroll p { margin: 0; line-height: 20px; }
.box { overflow: auto; height: 120px; }
.box p { margin: 0; line-height: 20px; }
</style></head><body>
<div class="card">A card wider than the phone</div>
<nav class="pager"><span class="page-item disabled"><a href="#p" id="prev">Previous</a></span></nav>
<div class="scroll"><p>one</p><p>two</p><p>three</p><p>four</p><a id="far" href="#f">Far link</a></div>
<div class="box"><p id="ova">Alpha alpha alpha</p><p id="ovb" style="margin-top:-12px">Beta beta beta</p></div>
<header class="bar" style="position:sticky;top:0"><h3 id="bar-title" style="margin:0;line-height:1.1">Quarterly summary</h3><p id="bar-text" style="margin:-0.6em 0 0">Revenue grew in every region.</p></header>
<div id="foot" style="border-top:1px solid #cccccc;height:8px;margin-top:24px"><div id="foot-text">Last updated 1 December 2026</div></div>
</body></html>`

// TestCollectRealWorldPatterns: what real pages do that once misled the
// checks. The root's overflow-x: hidden is the viewport's (a card cut off
// at the phone's edge still overflows it); a framework's .disabled makes a
// control inactive; a link scrolled out of its scroller's view is clipped,
// not covered; text inside a scroll container is still tested for overlap,
// and so is text inside one sticky bar; a box drawn by a top border alone
// has no bottom edge to escape.
func TestCollectRealWorldPatterns(t *testing.T) {
	b := newBrowser(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(patternsPage))
	}))
	t.Cleanup(srv.Close)
	s := b.snapshot(t, srv.URL+"/", design.Mobile)
	el := func(sel string) *checks.Element {
		t.Helper()
		for i := range s.Elements {
			if s.Elements[i].Selector == sel {
				return &s.Elements[i]
			}
		}
		t.Fatalf("no element %q", sel)
		return nil
	}
	if c := el("div.card"); c.ClipX {
		t.Errorf("div.card counts as clipped by the root's overflow-x: hidden")
	}
	if c := el("#prev").Control; c == nil || !c.Disabled {
		t.Errorf("#prev in a .disabled item: control %+v; want disabled", c)
	}
	if c := el("#far").Control; c == nil || c.Hit != "clipped" {
		t.Errorf("#far scrolled out of its scroller: control %+v; want hit clipped", c)
	}
	a, bb := el("#ova").Index, el("#ovb").Index
	found := false
	for _, o := range s.Overlaps {
		found = found || (o.Top == bb && o.Bottom == a)
	}
	if !found {
		t.Errorf("overlaps = %+v; want #ovb over #ova inside the scroll container", s.Overlaps)
	}
	var kinds []string
	for _, f := range checks.Run(s, checks.Config{}) {
		kinds = append(kinds, f.Kind+" "+f.Selector)
	}
	if f := el("#foot"); !f.Bounded || f.Edges != "t" {
		t.Errorf("#foot draws a top border only: bounded %v, edges %q; want edges \"t\"", f.Bounded, f.Edges)
	}
	for _, k := range kinds {
		if k == "container_escape #foot-text" {
			t.Errorf("finding %s: #foot draws no bottom edge to escape", k)
		}
	}
	// Texts inside one sticky toolbar are laid out together: a line pulled
	// into the heading above it overlaps it there as anywhere.
	for _, want := range []string{"viewport_overflow div.card", "overlap #ovb", "overlap #bar-text"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("findings = %v; want %s", kinds, want)
		}
	}
	for _, k := range kinds {
		if strings.HasPrefix(k, "occluded_control") || k == "tap_target #prev" {
			t.Errorf("finding %s: scrolled-away and inactive controls are exempt", k)
		}
	}
}

// TestCollectBounded: a huge, deeply nested page is measured up to the
// element cap, marked truncated, and still judged.
func TestCollectBounded(t *testing.T) {
	var page strings.Builder
	page.WriteString(`<!doctype html><html><head><meta name="viewport" content="width=device-width"></head><body>`)
	page.WriteString(strings.Repeat("<div>", 400) + "deep" + strings.Repeat("</div>", 400))
	for i := range 6000 {
		page.WriteString(`<p class="row">Row ` + strings.Repeat("x", i%7) + `</p>`)
	}
	page.WriteString(`</body></html>`)
	b := newBrowser(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page.String()))
	}))
	t.Cleanup(srv.Close)
	s := b.snapshot(t, srv.URL+"/", design.Desktop)
	if !s.Truncated || len(s.Elements) > 4000 {
		t.Errorf("truncated=%v with %d elements; want truncated at 4000", s.Truncated, len(s.Elements))
	}
	_ = checks.Run(s, checks.Config{})
}
