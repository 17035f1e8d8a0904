// Pixels: the background a text is really painted on, read from the
// rendered page where the composited style cannot say (an image, a
// gradient, a translucent layer, a shadow, a filter).

package checks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"sort"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/tokens"
)

// Sampled is the background under a text's glyphs, read from two renders
// of its first lines: as painted, and with the text's fill made transparent
// and its cast shadows dropped (a halo shadow, decorations' absence and
// everything behind it stay; see sampleFn). The
// pixels that differ are the glyphs; the second render at those pixels is
// what they sit on. Bg and Worst are the backgrounds under the glyph pixel
// of median and of 10th-percentile contrast with the text colour.
type Sampled struct {
	Bg     string `json:"bg"`
	Worst  string `json:"worst"`
	Pixels int    `json:"pixels"`
	// Fg is the text's painted colour, read where it differs most from the
	// bare render, when an ancestor's opacity fades text and background
	// together (the text's own colour then says too little); else "".
	Fg string `json:"fg,omitempty"`
	// Box is set when too few pixels differed to outline the glyphs (text
	// almost the colour of its background), so the whole text box was read.
	Box bool `json:"box,omitempty"`
}

// maxSamples bounds the texts sampled per snapshot (two small screenshots
// each); later ones keep what the styles say, and the snapshot is marked
// truncated.
const maxSamples = 24

// glyphDelta is the per-channel difference that marks a pixel as painted by
// the text; below it a difference is rounding.
const glyphDelta = 6

// sampleFn runs in the page on [json, nodes] from collect.js: "rects"
// brings the element's first lines into view and returns their boxes in
// page coordinates, "hide" makes its own text's fill transparent and drops
// its cast shadows (its element children keep both), "restore" undoes that.
//
// A text-shadow is one of two things. A halo (no offset, or an offset
// within half its blur; or offset copies on every side, an outline) rings
// the glyphs, and the text is read against it: it stays in the bare render,
// so it is the background judged. A cast shadow (a 1 px drop under a
// header's links) sits beside the glyphs: it is no background, and left in
// it would put its colour under every pixel the glyph and its shadow share.
const sampleFn = `function (i, mode) {
  const e = this[1][i];
  if (!e || !e.isConnected) return '';
  // halo keeps the layers of a computed text-shadow that ring the glyphs.
  const halo = (v) => {
    const layers = v.split(/,(?![^(]*\))/).map((l) => {
      const [x = 0, y = 0, blur = 0] = (l.replace(/[a-z-]+\([^)]*\)/g, '').match(/-?[\d.]+px/g) || []).map(parseFloat);
      return { l, x, y, blur };
    });
    const ring = (s) => Math.max(Math.abs(s.x), Math.abs(s.y)) <= s.blur / 2;
    const cast = layers.filter((s) => !ring(s));
    const outline = cast.some((s) => s.x < 0) && cast.some((s) => s.x > 0) && cast.some((s) => s.y < 0) && cast.some((s) => s.y > 0);
    const kept = layers.filter((s) => outline || ring(s)).map((s) => s.l);
    return kept.length ? kept.join(',') : 'none';
  };
  if (mode === 'hide') {
    const saved = [];
    const put = (el, p, v) => { saved.push([el, p, el.style.getPropertyValue(p), el.style.getPropertyPriority(p)]); el.style.setProperty(p, v, 'important'); };
    const kids = [...e.children].map((c) => [c, getComputedStyle(c).textShadow]);
    for (const p of ['-webkit-text-fill-color', 'text-decoration-color', '-webkit-text-stroke-color']) put(e, p, 'transparent');
    const shadow = getComputedStyle(e).textShadow;
    if (shadow && shadow !== 'none') put(e, 'text-shadow', halo(shadow));
    for (const [c, cs] of kids) {
      for (const p of ['-webkit-text-fill-color', 'text-decoration-color', '-webkit-text-stroke-color']) put(c, p, 'currentcolor');
      put(c, 'text-shadow', cs);
    }
    this[2] = saved;
    return 'ok';
  }
  if (mode === 'restore') {
    for (const [el, p, v, pr] of (this[2] || []).reverse()) { if (v) el.style.setProperty(p, v, pr); else el.style.removeProperty(p); }
    this[2] = null;
    return 'ok';
  }
  const lines = () => {
    const rs = [];
    for (const n of e.childNodes) {
      if (n.nodeType !== 3 || !/\S/.test(n.data)) continue;
      const r = document.createRange();
      r.selectNodeContents(n);
      for (const x of r.getClientRects()) if (x.width >= 1 && x.height >= 1 && rs.length < 3) rs.push(x);
    }
    return rs;
  };
  let rs = lines();
  if (!rs.length) return '';
  const top = Math.min(...rs.map((r) => r.top)), bottom = Math.max(...rs.map((r) => r.bottom));
  if (top < 0 || bottom > innerHeight) {
    window.scrollTo({ left: scrollX, top: Math.max(0, scrollY + top - innerHeight / 3), behavior: 'instant' });
    rs = lines();
  }
  const vw = document.documentElement.clientWidth || innerWidth;
  const x0 = Math.max(0, Math.min(...rs.map((r) => r.left))), x1 = Math.min(vw, Math.max(...rs.map((r) => r.right)));
  const y0 = Math.max(0, Math.min(...rs.map((r) => r.top))), y1 = Math.min(innerHeight, Math.max(...rs.map((r) => r.bottom)));
  if (x1 - x0 < 1 || y1 - y0 < 1) return '';
  return JSON.stringify({ x: Math.floor(x0 + scrollX), y: Math.floor(y0 + scrollY), w: Math.ceil(x1 - x0), h: Math.ceil(y1 - y0), sx: scrollX, sy: scrollY });
}`

// samplePixels reads the background under every text whose contrast needs
// it (needsPixels), then restores the page's scroll position. nodes is the
// remote [json, nodes] array collect.js returned. A text that cannot be
// read keeps what the styles say.
func samplePixels(ctx context.Context, s *Snapshot, nodes runtime.RemoteObjectID) {
	var sx, sy float64
	restored := false
	n := 0
	for i := range s.Elements {
		e := &s.Elements[i]
		if !s.needsPixels(e) {
			continue
		}
		if n++; n > maxSamples {
			s.Truncated = true
			break
		}
		var at struct{ X, Y, W, H, Sx, Sy float64 }
		raw, ok := callSample(ctx, nodes, i, "rects")
		if !ok || raw == "" || json.Unmarshal([]byte(raw), &at) != nil {
			continue
		}
		if !restored {
			sx, sy, restored = at.Sx, at.Sy, true
		}
		clip := &page.Viewport{X: at.X, Y: at.Y, Width: at.W, Height: at.H, Scale: 1}
		painted, err := shot(ctx, clip)
		if err != nil {
			continue
		}
		if _, ok := callSample(ctx, nodes, i, "hide"); !ok {
			continue
		}
		bare, err := shot(ctx, clip)
		callSample(ctx, nodes, i, "restore")
		if err != nil {
			continue
		}
		if smp, ok := readBackground(painted, bare, e); ok {
			e.Text.Sampled = smp
		}
	}
	if restored {
		// The texts were brought into view one by one; put the page back.
		_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](scrollBackJS(sx, sy)))
	}
}

func scrollBackJS(x, y float64) string {
	b, _ := json.Marshal([]float64{x, y})
	return "(([x, y]) => { window.scrollTo({left: x, top: y, behavior: 'instant'}); return true })(" + string(b) + ")"
}

func callSample(ctx context.Context, obj runtime.RemoteObjectID, i int, mode string) (string, bool) {
	s, err := callString(ctx, obj, sampleFn, mustJSON(i), mustJSON(mode))
	return s, err == nil
}

// callString calls fn on obj with JSON arguments and returns its string
// result.
func callString(ctx context.Context, obj runtime.RemoteObjectID, fn string, args ...[]byte) (string, error) {
	var cargs []*runtime.CallArgument
	for _, a := range args {
		cargs = append(cargs, &runtime.CallArgument{Value: a})
	}
	r, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: fn, ObjectID: obj, Arguments: cargs, ReturnByValue: ptr(true), Silent: ptr(true),
	})
	if err != nil {
		return "", err
	}
	if r.ExceptionDetails != nil {
		return "", fmt.Errorf("page function threw: %s", r.ExceptionDetails.Text)
	}
	var str string
	if r.Result == nil || json.Unmarshal(r.Result.Value, &str) != nil {
		return "", errors.New("page function returned no string")
	}
	return str, nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func shot(ctx context.Context, clip *page.Viewport) (image.Image, error) {
	r, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format: page.CaptureScreenshotFormatPng, Clip: clip, FromSurface: ptr(true), OptimizeForSpeed: ptr(true),
	})
	if err != nil {
		return nil, err
	}
	return png.Decode(bytes.NewReader(r.Data))
}

// readBackground compares the two renders: the pixels the text paints are
// its glyphs, and the bare render there is its background.
func readBackground(painted, bare image.Image, e *Element) (*Sampled, bool) {
	fg, ok := tokens.ParseColor(e.Text.Color)
	if !ok || painted.Bounds() != bare.Bounds() {
		return nil, false
	}
	if e.Opacity > 0 && e.Opacity < 1 {
		fg.A *= e.Opacity
	}
	b := painted.Bounds()
	var glyph, all []tokens.Color
	var core tokens.Color
	most := 0.0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c, p := rgb(bare.At(x, y)), rgb(painted.At(x, y))
			all = append(all, c)
			if d := delta(p, c); d >= glyphDelta {
				glyph = append(glyph, c)
				if d > most {
					most, core = d, p
				}
			}
		}
	}
	out := &Sampled{}
	if e.Opacity > 0 && e.Opacity < 1 && most > 0 {
		out.Fg = core.Hex()
	}
	px := glyph
	if len(glyph) < 12 {
		px, out.Box = all, true
	}
	if len(px) == 0 {
		return nil, false
	}
	type ranked struct {
		bg    tokens.Color
		ratio float64
	}
	rs := make([]ranked, len(px))
	for k, bg := range px {
		rs[k] = ranked{bg, tokens.Contrast(fg.Over(bg), bg)}
	}
	sort.SliceStable(rs, func(a, b int) bool { return rs[a].ratio < rs[b].ratio })
	out.Pixels = len(rs)
	out.Bg = rs[len(rs)/2].bg.Hex()
	out.Worst = rs[len(rs)/10].bg.Hex()
	return out, true
}

func rgb(c interface{ RGBA() (r, g, b, a uint32) }) tokens.Color {
	r, g, b, _ := c.RGBA()
	return tokens.Color{R: float64(r >> 8), G: float64(g >> 8), B: float64(b >> 8), A: 1}
}

func delta(a, b tokens.Color) float64 {
	return math.Max(math.Abs(a.R-b.R), math.Max(math.Abs(a.G-b.G), math.Abs(a.B-b.B)))
}

// needsPixels reports whether e's text is judged for contrast and sits on
// something its styles cannot give one colour for: an image, media, a
// pseudo-element layer, a filter, a gradient, a translucent ancestor, or
// its own shadow.
func (s *Snapshot) needsPixels(e *Element) bool {
	t := e.Text
	if t == nil || !t.Measured || s.contrastExempt(e) {
		return false
	}
	if t.BgUnknown != "" || t.Shadow || (e.Opacity > 0 && e.Opacity < 1) {
		return true
	}
	for _, l := range t.Bg {
		if len(l.Gradient) > 0 {
			return true
		}
	}
	return false
}
