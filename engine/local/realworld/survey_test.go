package realworld_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// The labeller's instrument for the held-out set (heldout_test.go): it
// shows the pages as bastion's capture lays them out (the same device
// metrics, mobile flag and touch emulation) but measures them with its own
// code, never with bastion's collector or checks, so the labels are blind
// to what bastion finds. For each held-out page and viewport it writes a
// full-page screenshot and a survey of candidates for the checks' rules
// (low contrast from computed styles, then re-measured on the screenshot's
// pixels; targets under 24 px; boxes past the right edge; clipped
// overflow; controls with no name; broken images; text under 12 px), which
// the labeller confirms or rejects by looking at the screenshots.
//
//	go test ./engine/local/realworld -run TestLabelSurvey -realworld.survey=/tmp/survey
var surveyDir = flag.String("realworld.survey", "", "write the held-out pages' screenshots and label survey here")

func TestLabelSurvey(t *testing.T) {
	if *surveyDir == "" {
		t.Skip("the labeller's instrument: runs only with -realworld.survey=DIR")
	}
	set := loadSet(t, heldOutLabels)
	chrome := testenv.Chromium(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(set.Root)))
	t.Cleanup(srv.Close)
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
			chromedp.Flag("hide-scrollbars", true), chromedp.Flag("font-render-hinting", "none"))...)
	t.Cleanup(cancel)
	for _, p := range set.Pages {
		for _, vp := range []design.Viewport{design.Mobile, design.Desktop} {
			out := filepath.Join(*surveyDir, strings.NewReplacer("/", "_").Replace(p.File)+"."+string(vp))
			if err := survey(alloc, srv.URL+"/"+p.File, vp, out); err != nil {
				t.Errorf("%s @%s: %v", p.File, vp, err)
			}
		}
	}
}

// survey loads url at vp in a fresh tab and writes out.png (full page)
// and out.json (the candidates, contrast re-measured on the pixels).
func survey(alloc context.Context, url string, vp design.Viewport, out string) error {
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel2()
	w, h, _ := vp.Size()
	mobile := vp != design.Desktop
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(w), Height: int64(h), DeviceScaleFactor: 1, Mobile: mobile, ScreenWidth: int64(w), ScreenHeight: int64(h),
	}); err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{Enabled: mobile}); err != nil {
		return err
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
		return err
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.fonts.ready.then(() => true)`, chromedp.EvalAwaitPromise)); err != nil {
		return err
	}
	m, err := chromedp.Call(ctx, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return err
	}
	r, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format: page.CaptureScreenshotFormatPng, CaptureBeyondViewport: new(true), FromSurface: new(true),
		Clip: &page.Viewport{Width: max(float64(w), m.CSSContentSize.Width), Height: min(m.CSSContentSize.Height, 12000), Scale: 1},
	})
	if err != nil {
		return err
	}
	shot := r.Data
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](surveyJS))
	if err != nil {
		return err
	}
	if err := os.WriteFile(out+".png", shot, 0o644); err != nil {
		return err
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		return fmt.Errorf("survey: %w", err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return err
	}
	if cs, ok := rep["contrast"].([]any); ok {
		for _, c := range cs {
			m := c.(map[string]any)
			r, ok := m["rect"].(map[string]any)
			if !ok {
				continue
			}
			m["pixels"] = pixelContrast(img, r["x"].(float64), r["y"].(float64), r["w"].(float64), r["h"].(float64))
		}
	}
	b, _ := json.MarshalIndent(rep, "", " ")
	return os.WriteFile(out+".json", b, 0o644)
}

// pixelContrast reads the screenshot under a text rect: the background is
// the most common colour, the text the pixel whose luminance is farthest
// from it (a glyph's core), and their WCAG ratio.
func pixelContrast(img image.Image, x, y, w, h float64) map[string]any {
	count := map[[3]uint8]int{}
	b := img.Bounds()
	for py := int(y); py < int(math.Ceil(y+h)) && py < b.Max.Y; py++ {
		for px := int(x); px < int(math.Ceil(x+w)) && px < b.Max.X; px++ {
			r, g, bl, _ := img.At(px, py).RGBA()
			count[[3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}]++
		}
	}
	var bg [3]uint8
	best := -1
	for c, n := range count {
		if n > best {
			bg, best = c, n
		}
	}
	if best < 0 {
		return nil
	}
	fg, far := bg, 0.0
	for c := range count {
		if d := math.Abs(lum(c) - lum(bg)); d > far {
			fg, far = c, d
		}
	}
	hi, lo := math.Max(lum(fg), lum(bg)), math.Min(lum(fg), lum(bg))
	hex := func(c [3]uint8) string { return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2]) }
	return map[string]any{"bg": hex(bg), "fg": hex(fg), "ratio": math.Round((hi+0.05)/(lo+0.05)*100) / 100}
}

func lum(c [3]uint8) float64 {
	ch := func(v uint8) float64 {
		s := float64(v) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*ch(c[0]) + 0.7152*ch(c[1]) + 0.0722*ch(c[2])
}
