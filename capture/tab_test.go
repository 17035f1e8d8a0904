package capture_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/design"
)

// waitSpares waits until the pool holds n spare tabs: the pool opens them
// in the background once no capture runs, so the test waits for that state
// (the test binary's -timeout bounds a pool that never gets there).
func waitSpares(t *testing.T, p *capture.Pool, n int) {
	t.Helper()
	for p.Stats().Spares != n {
		if err := p.Warm(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A capture that takes a tab opened ahead of need still gets a browser
// context of its own, through a proxy session of its own: what one page
// stored is not there for the next, and each capture's health lists only
// the requests the proxy refused for it.
func TestSpareTabsAreFreshAndAttributed(t *testing.T) {
	t.Parallel()
	b := setup(t, capture.Options{MaxConcurrent: 2})
	waitSpares(t, b.pool, 2)

	stored := func(ctx context.Context) error {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { localStorage.setItem('k', 'v'); document.cookie = 'c=1'; return true })()`))
		return err
	}
	c, err := b.pool.Capture(context.Background(), capture.Target{URL: b.site.url + "/page", Viewport: design.Mobile}, stored)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(c.Health.EgressBlocked, func(f design.Failure) bool { return f.URL == "http://"+blockedHost+"/tracker.png" }) {
		t.Errorf("first capture's health lost its own blocked request: %+v", c.Health.EgressBlocked)
	}
	if got := b.pool.Stats().Spares; got != 1 {
		t.Errorf("spares after one capture = %d, want 1 (it took one)", got)
	}

	var leftover string
	read := func(ctx context.Context) error {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(localStorage.getItem('k') || '') + document.cookie`))
		leftover = v
		return err
	}
	c2, err := b.pool.Capture(context.Background(), capture.Target{URL: b.site.url + "/tall", Viewport: design.Desktop}, read)
	if err != nil {
		t.Fatal(err)
	}
	if leftover != "" {
		t.Errorf("second capture saw the first one's storage %q: the spare shared a browser context", leftover)
	}
	if len(c2.Health.EgressBlocked) != 0 {
		t.Errorf("second capture's health lists another capture's refusals: %+v", c2.Health.EgressBlocked)
	}
	// Once idle, the pool opens its spares again.
	waitSpares(t, b.pool, 2)
}

// Region shows the same pixels as the full-page screenshot at the same page
// coordinates, below the fold too, and leaves the page scrolled where it was.
func TestRegionMatchesFullPage(t *testing.T) {
	t.Parallel()
	b := setup(t, capture.Options{})
	w, h, _ := design.Desktop.Size()
	area := image.Rect(100, 5000, 400, 5100)
	var region []byte
	var got, tall image.Rectangle
	var scrollAfter float64
	shoot := func(ctx context.Context) error {
		var err error
		if region, got, err = capture.Region(ctx, area, w, h); err != nil {
			return err
		}
		if _, tall, err = capture.Region(ctx, image.Rect(0, 0, 10, 2*h), w, h); err != nil {
			return err
		}
		scrollAfter, err = chromedp.Run(ctx, chromedp.Evaluate[float64](`scrollY`))
		return err
	}
	c, err := b.capture(b.site.url+"/tall", design.Desktop, shoot)
	if err != nil {
		t.Fatal(err)
	}
	if got != area || scrollAfter != 0 {
		t.Fatalf("Region shot %v (want %v) and left the page at scrollY %v (want 0)", got, area, scrollAfter)
	}
	full, err := png.Decode(bytes.NewReader(c.Screenshot))
	if err != nil {
		t.Fatal(err)
	}
	part, err := png.Decode(bytes.NewReader(region))
	if err != nil {
		t.Fatal(err)
	}
	if part.Bounds().Dx() != area.Dx() || part.Bounds().Dy() != area.Dy() {
		t.Fatalf("region is %v, want %v", part.Bounds(), area.Size())
	}
	for _, p := range []image.Point{{0, 0}, {150, 50}, {299, 99}} {
		a, bb := part.At(p.X, p.Y), full.At(area.Min.X+p.X, area.Min.Y+p.Y)
		if d := colorDist(a, bb); d > 6 {
			t.Errorf("pixel %v: region %v, full page %v", p, a, bb)
		}
	}
	if tall.Dy() != h {
		t.Errorf("a region twice the viewport's height was shot %v, want it cut to %d px", tall, h)
	}
}

func colorDist(a, b color.Color) int {
	ar, ag, ab, _ := a.RGBA()
	br, bg, bb, _ := b.RGBA()
	d := func(x, y uint32) int { return max(int(x>>8)-int(y>>8), int(y>>8)-int(x>>8)) }
	return max(d(ar, br), d(ag, bg), d(ab, bb))
}
