package capture_test

import (
	"context"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/design"
)

// TestFreezeKeepsAreaLinks: the freeze sheet stops animations without
// changing what the accessibility tree exposes. Chromium drops an image
// map's area links from the tree when an author rule styles <area>, so the
// sheet leaves areas alone.
func TestFreezeKeepsAreaLinks(t *testing.T) {
	b := setup(t, capture.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/map.png" {
			w.Header().Set("Content-Type", "image/png")
			_ = png.Encode(w, image.NewRGBA(image.Rect(0, 0, 120, 60)))
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><body>
<img src="/map.png" usemap="#m" width="120" height="60" alt="Regions">
<map name="m"><area shape="rect" coords="0,0,60,60" href="/north" alt="North"><area shape="rect" coords="60,0,120,60" href="/south" alt="South"></map>
</body></html>`))
	}))
	t.Cleanup(srv.Close)
	var links []string
	_, err := b.capture(srv.URL+"/", design.Desktop, func(ctx context.Context) error {
		if _, err := chromedp.Call(ctx, accessibility.Enable, cdp.Empty{}); err != nil {
			return err
		}
		tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		if err != nil {
			return err
		}
		for _, n := range tree.Nodes {
			if n != nil && !n.Ignored && n.Role != nil && string(n.Role.Value) == `"link"` && n.Name != nil {
				links = append(links, string(n.Name.Value))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 2 {
		t.Errorf("links in the accessibility tree = %v; want the two area links", links)
	}
}
