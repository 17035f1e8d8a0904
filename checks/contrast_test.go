package checks_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/tokens"
)

// TestContrastOnSampledPixels: a text whose background was read from the
// rendered pixels is judged on them (not on the style layers, not as an
// estimate), its fix holds against the worst sampled background, and the
// published exceptions stay silent whatever the pixels say.
func TestContrastOnSampledPixels(t *testing.T) {
	t.Parallel()
	p := newPage(design.Desktop)
	sampled := func(color, bg, worst string) *checks.Text {
		x := text(color)
		x.BgUnknown = "image"
		x.Sampled = &checks.Sampled{Bg: bg, Worst: worst, Pixels: 200}
		return x
	}
	// Light text on a light image: measured, not advisory.
	p.add(checks.Element{Parent: 1, Tag: "h1", Selector: "h1.hero", Box: box(16, 16, 400, 40), Text: sampled("rgb(200, 200, 200)", "#f1f1f1", "#f4f4f4")})
	// White text on the dark part of a gradient that is white elsewhere:
	// the stops say 1:1 at worst, the pixels under the glyphs say it passes.
	grad := sampled("rgb(255, 255, 255)", "#111111", "#151515")
	grad.BgUnknown, grad.Bg = "", []checks.Layer{{Gradient: []string{"rgb(17, 17, 17)", "rgb(255, 255, 255)"}}}
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.grad", Box: box(16, 80, 400, 24), Text: grad})
	// A shadowed text without pixels stays silent (nothing measured).
	sh := text("rgb(200, 200, 200)", bg("rgb(255, 255, 255)"))
	sh.Shadow = true
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.shadow", Box: box(16, 120, 400, 24), Text: sh})
	// A faded group: the painted colour read from the pixels is the text's.
	faded := sampled("rgb(255, 255, 255)", "#7e7e7e", "#7e7e7e")
	faded.Sampled.Fg = "#ffffff"
	p.add(checks.Element{Parent: 1, Tag: "p", Selector: "p.faded", Opacity: 0.5, Box: box(16, 160, 400, 24), Text: faded})
	// Exceptions: a lone glyph, icon symbols, a logo, a label of a disabled control.
	for i, mod := range []func(*checks.Text){
		func(x *checks.Text) { x.Glyphs = "single" },
		func(x *checks.Text) { x.Glyphs = "symbols" },
		func(x *checks.Text) { x.Logo = true },
		func(x *checks.Text) { x.Disabled = true },
	} {
		x := sampled("rgb(200, 200, 200)", "#ffffff", "#ffffff")
		mod(x)
		p.add(checks.Element{Parent: 1, Tag: "span", Selector: "span.exempt" + string(rune('a'+i)), Box: box(16, 200+float64(i)*30, 100, 24), Text: x})
	}

	fs := checks.Run(p.s, checks.Config{})
	if got, want := kindsOf(fs, checks.KindContrast), []string{"h1.hero", "p.faded"}; !slices.Equal(got, want) {
		t.Fatalf("contrast findings = %v; want %v", got, want)
	}
	for _, f := range fs {
		switch f.Selector {
		case "h1.hero":
			if f.Advisory || f.Facts["background"] != "#f1f1f1" || f.Facts["ratio"].(float64) != 1.48 {
				t.Errorf("h1.hero = advisory %v facts %v; want measured 1.48:1 on #f1f1f1", f.Advisory, f.Facts)
			}
			if !strings.Contains(f.Description, "rendered pixels") {
				t.Errorf("h1.hero description does not say the background was read from pixels: %s", f.Description)
			}
			// The advice holds against the worst sampled background.
			hex := strings.Fields(strings.SplitN(f.Fix, " to ", 2)[1])[0]
			c, ok := tokens.ParseColor(hex)
			worst, _ := tokens.ParseColor("#f4f4f4")
			if !ok || tokens.Contrast(c, worst) < 4.5 {
				t.Errorf("fix %q: %s on #f4f4f4 does not reach 4.5:1", f.Fix, hex)
			}
		case "p.faded":
			if f.Facts["foreground"] != "#ffffff" || f.Facts["ratio"].(float64) != 4.06 {
				t.Errorf("p.faded facts %v; want the painted #ffffff on #7e7e7e, 4.06:1", f.Facts)
			}
		}
	}
}
