package capture

import (
	"context"
	"fmt"
	"image"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Region shoots the part of the page that area names (page coordinates,
// CSS px) in the live tab ctx, as a PNG, and returns the part it shot:
// area cut to the viewport's height vh. It is for a Measure that needs a
// few crops rather than the whole page (Target.NoScreenshot): a full-page
// shot of a long page lays the page out again at its whole height and
// costs a second or more; a region inside the viewport costs one frame.
//
// The page is scrolled to bring the region into view and scrolled back
// afterwards. A region wider than the viewport vw (an overflow's part past
// the edge) is shot beyond the viewport, as the full-page screenshot is.
func Region(ctx context.Context, area image.Rectangle, vw, vh int) ([]byte, image.Rectangle, error) {
	if area.Empty() || vw <= 0 || vh <= 0 {
		return nil, image.Rectangle{}, fmt.Errorf("capture: empty region %v", area)
	}
	if area.Dy() > vh {
		area.Max.Y = area.Min.Y + vh
	}
	beyond := area.Min.X < 0 || area.Max.X > vw
	if !beyond {
		// Centre the region vertically; the page clamps the scroll near its
		// end, where the region is still inside the viewport.
		top := max(0, area.Min.Y-(vh-area.Dy())/2)
		js := fmt.Sprintf(`(() => { const y = scrollY; window.scrollTo({left: 0, top: %d, behavior: 'instant'}); return y })()`, top)
		y0, err := chromedp.Run(ctx, chromedp.Evaluate[float64](js))
		if err != nil {
			return nil, image.Rectangle{}, err
		}
		defer func() {
			_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => { window.scrollTo({left: 0, top: %d, behavior: 'instant'}); return true })()`, int(y0))))
		}()
	}
	r, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format: page.CaptureScreenshotFormatPng,
		Clip: &page.Viewport{X: float64(area.Min.X), Y: float64(area.Min.Y),
			Width: float64(area.Dx()), Height: float64(area.Dy()), Scale: 1},
		CaptureBeyondViewport: new(beyond),
		FromSurface:           new(true),
	})
	if err != nil {
		return nil, image.Rectangle{}, err
	}
	return r.Data, area, nil
}

// Overview shoots the top of the page, area (page coordinates, CSS px, from
// the page's top-left), scaled by scale (image px per CSS px), as a PNG. It
// is the one shot of a review that lays the page out past the viewport, so
// it is taken after the crops and its height is the caller's to bound.
func Overview(ctx context.Context, area image.Rectangle, scale float64) ([]byte, error) {
	if area.Empty() || !(scale > 0 && scale <= 1) {
		return nil, fmt.Errorf("capture: bad overview %v at scale %v", area, scale)
	}
	// From the top: a sticky header is drawn where the page is scrolled
	// to, which after the crops is anywhere down the page.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { window.scrollTo({left: 0, top: 0, behavior: 'instant'}); return true })()`)); err != nil {
		return nil, err
	}
	r, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format: page.CaptureScreenshotFormatPng,
		Clip: &page.Viewport{X: float64(area.Min.X), Y: float64(area.Min.Y),
			Width: float64(area.Dx()), Height: float64(area.Dy()), Scale: scale},
		CaptureBeyondViewport: new(true),
		FromSurface:           new(true),
	})
	if err != nil {
		return nil, err
	}
	return r.Data, nil
}
