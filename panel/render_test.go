package panel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/evidence"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/panel"
)

// screenshot is a page-like PNG: white, with rows of dark "text".
func screenshot(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{R: 255, G: 255, B: 255, A: 255}
			if (y/12)%2 == 1 && (x+y)%4 == 0 {
				c = color.RGBA{R: 30, G: 30, B: 30, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// reviewed is a review with one finding of each kind that shows colours,
// sizes and lists, each with a real crop, and partial coverage, round-tripped
// through JSON as a stored review is (numbers come back float64, lists []any).
func reviewed(t *testing.T) *design.Result {
	shot := screenshot(t, 1280, 900)
	res := &design.Result{
		Grade: design.NeedsWork,
		Findings: []design.Finding{
			{ID: "f_contrast", Kind: "contrast", Severity: design.Major, Title: "Low text contrast 2.54:1 (needs 4.5:1)",
				Route: "/pricing", Viewports: []design.Viewport{design.Mobile}, Selector: "section.plans > article.plan:nth-of-type(1) > p.plan-note:nth-of-type(2)",
				Box:   design.Rect{X: 40, Y: 200, W: 220, H: 20},
				Facts: design.Facts{"ratio": 2.54, "required": 4.5, "foreground": "#9ca3af", "background": "#ffffff", "suggested": "#71767f", "font_size_px": 16, "count": 3, "also": []string{"article.plan-featured > p.plan-note:nth-of-type(2)", "section.plans > article.plan:nth-of-type(3) > p.plan-note"}},
				Fix:   "Darken the text to #71767f or further (4.5:1 against #ffffff), or change the background."},
			{ID: "f_token", Kind: "off_token_color", Severity: design.Minor, Title: "Colour #e11d48 is not a design token",
				Route: "/pricing", Viewports: []design.Viewport{design.Desktop}, Selector: "span.badge-sale", Box: design.Rect{X: 900, Y: 40, W: 60, H: 18},
				Facts: design.Facts{"property": "background-color", "value": "#e11d48", "nearest_token": "--color-accent", "nearest_value": "#be123c", "delta_e": 9.1}},
			{ID: "f_tap", Kind: "tap_target", Severity: design.Major, Title: "Tap target 16px × 16px is under 24 × 24 px",
				Route: "/pricing", Viewports: []design.Viewport{design.Mobile}, Selector: "button.promo-close", Box: design.Rect{X: 360, Y: 8, W: 16, H: 16},
				Facts: design.Facts{"width_px": 16, "height_px": 16, "minimum_px": 24, "nearest_target": "span.promo-actions > a"}},
		},
		Coverage: design.Coverage{
			RoutesRequested: []string{"/pricing", "/about"}, RoutesReviewed: []string{"/pricing"},
			ViewportsRequested: []design.Viewport{design.Mobile, design.Desktop}, ViewportsReviewed: []design.Viewport{design.Mobile, design.Desktop},
			Skipped:   []design.Skip{{What: "/about @ mobile", Reason: "CAPTURE_FAILED: navigation timed out"}},
			ChecksRun: []string{"contrast", "tap_target", "unnamed_control", "viewport_overflow", "off_token_color", "off_scale_spacing", "type_scale", "font_fallback", "broken_image", "occluded_control", "container_escape", "overlap"},
		},
		TokensFrom: "page",
	}
	for i := range res.Findings {
		f := &res.Findings[i]
		crop, err := evidence.Crop(shot, f.Box, evidence.Marks{})
		if err != nil {
			t.Fatal(err)
		}
		f.EvidenceID = evidence.ID(f.ID, crop)
		res.Evidence = append(res.Evidence, design.Evidence{ID: f.EvidenceID, MIMEType: "image/png", Data: crop})
	}
	// The phone's overview: the page at half size, the contrast and the
	// tap-target findings marked (numbers 1 and 3).
	ov := design.Overview{Route: "/pricing", Viewport: design.Mobile, Scale: 0.5, Width: 390, Height: 900, Marks: []design.OverviewMark{
		{N: 1, FindingID: "f_contrast", Box: res.Findings[0].Box}, {N: 3, FindingID: "f_tap", Box: res.Findings[2].Box},
	}}
	img, err := evidence.Overview(screenshot(t, 195, 450), ov.Scale, []evidence.Numbered{{N: 1, Box: res.Findings[0].Box}, {N: 3, Box: res.Findings[2].Box}})
	if err != nil {
		t.Fatal(err)
	}
	ov.EvidenceID = evidence.ID("overview", img)
	res.Overviews = []design.Overview{ov}
	res.Evidence = append(res.Evidence, design.Evidence{ID: ov.EvidenceID, MIMEType: "image/png", Data: img})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back design.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.Evidence = res.Evidence // the crops are stored beside the review, not in its JSON
	return &back
}

// seen is what the test reads off the rendered panel.
type seen struct {
	DocOverflow              bool
	ChipsOut, BadImages      []string
	Swatches, ColourFacts    int
	Samples                  int
	Partial, Revision, Crops int
	Overviews                int
	MarksUnlinked            []string // marks whose link names no finding on the page
}

// TestPanelAsAPersonSeesIt renders the panel in Chromium at a phone's and a
// desktop's width and checks what a reader would: nothing runs off the
// page or out of its chip, every crop decodes, every colour fact has a
// swatch, the contrast finding shows its text as measured and as suggested,
// and partial coverage is flagged at the top.
func TestPanelAsAPersonSeesIt(t *testing.T) {
	exe := testenv.Chromium(t)
	var html bytes.Buffer
	if err := panel.Render(&html, reviewed(t), panel.Meta{URL: "https://preview.example.com/pricing", Revision: "rev-42"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(html.Bytes())
	}))
	t.Cleanup(srv.Close)

	actx, acancel := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(exe), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()))
	defer acancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	for _, width := range []int64{390, 1280} {
		if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: width, Height: 900, DeviceScaleFactor: 1, Mobile: width < 600,
		}); err != nil {
			t.Fatalf("width %d: %v", width, err)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
			t.Fatalf("width %d: %v", width, err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[seen](`(async () => {
				await Promise.all([...document.images].map(i => i.decode().catch(() => {})));
				const de = document.documentElement;
				const out = {DocOverflow: de.scrollWidth > de.clientWidth, ChipsOut: [], BadImages: []};
				for (const c of document.querySelectorAll('.chip')) {
					const r = c.getBoundingClientRect(), p = c.parentElement.getBoundingClientRect();
					if (c.scrollWidth > c.clientWidth + 1 || r.right > p.right + 1 || r.height > 30) out.ChipsOut.push(c.textContent);
				}
				for (const i of document.images) if (!i.complete || i.naturalWidth === 0) out.BadImages.push(i.alt);
				out.Crops = document.querySelectorAll('.evidence img').length;
				out.Overviews = [...document.querySelectorAll('.overview img')].filter(i => i.naturalWidth > 0).length;
				out.MarksUnlinked = [...document.querySelectorAll('.overview li a')].filter(a => {
					const f = document.getElementById(decodeURIComponent(a.hash.slice(1)));
					return !f || !f.classList.contains('finding') || f.querySelector('.n').textContent !== a.querySelector('.n').textContent;
				}).map(a => a.textContent);
				out.Swatches = [...document.querySelectorAll('.sw')].filter(s => getComputedStyle(s).backgroundColor !== 'rgba(0, 0, 0, 0)').length;
				out.ColourFacts = [...document.querySelectorAll('td')].filter(td => /^#[0-9a-f]{6}$/i.test(td.textContent.trim())).length;
				out.Samples = document.querySelectorAll('.sample').length;
				out.Partial = document.querySelectorAll('.partial').length;
				out.Revision = document.body.textContent.includes('rev-42') ? 1 : 0;
				return out;
			})()`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("width %d: %v", width, err)
		}
		if got.DocOverflow {
			t.Errorf("width %d: the panel scrolls sideways", width)
		}
		if len(got.ChipsOut) > 0 {
			t.Errorf("width %d: chips break or overflow: %v", width, got.ChipsOut)
		}
		if len(got.BadImages) > 0 || got.Crops != 3 {
			t.Errorf("width %d: %d crops, undecodable: %v", width, got.Crops, got.BadImages)
		}
		if got.Overviews != 1 || len(got.MarksUnlinked) > 0 {
			t.Errorf("width %d: %d overviews shown (want 1); marks not linked to their numbered finding: %v", width, got.Overviews, got.MarksUnlinked)
		}
		// foreground, background, suggested; value, nearest_value.
		if got.ColourFacts != 5 || got.Swatches != got.ColourFacts {
			t.Errorf("width %d: %d swatches for %d colour facts, want 5 and 5", width, got.Swatches, got.ColourFacts)
		}
		if got.Samples != 2 || got.Partial != 1 || got.Revision != 1 {
			t.Errorf("width %d: samples %d (want 2), partial banners %d (want 1), revision shown %d", width, got.Samples, got.Partial, got.Revision)
		}
	}
}
