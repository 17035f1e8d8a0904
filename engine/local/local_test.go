package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/engine/local"
	"github.com/bastion-mcp/bastion/evidence"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

var quiet = slog.New(slog.DiscardHandler)

// localGuard is the local operator's guard: loopback dev servers allowed.
func localGuard() *egress.Guard {
	return egress.NewGuard(egress.Policy{AllowHTTP: true, AllowPrivate: true}, egress.StaticResolver{})
}

// setup returns an engine wired like `bastion review --allow-private`, and
// the base URL of a loopback site serving pages.
func setup(t *testing.T, pages map[string]func() string) (*local.Engine, string) {
	t.Helper()
	mux := http.NewServeMux()
	for path, body := range pages {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body())
		})
	}
	return newEngine(t, mux, local.Options{Logger: quiet})
}

// newEngine wires an engine like `bastion review --allow-private` around a
// capture pool with the production defaults (tabs sized to the machine, no
// budget per capture), and serves h on loopback; it returns the engine and
// the site's base URL.
func newEngine(t *testing.T, h http.Handler, opts local.Options) (*local.Engine, string) {
	t.Helper()
	chrome := testenv.Chromium(t)
	guard := localGuard()
	proxy, err := browserproxy.New(guard, browserproxy.Options{AllowHTTP: true, RequireAuth: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	pool, err := capture.NewPool(context.Background(), capture.Options{Chrome: chrome, ProxyAddr: proxy.Addr(), Sessions: proxy, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return local.New(pool, guard, opts), "http://" + ln.Addr().String()
}

// seeded has two defects a design review must report: light grey body text
// (2.3:1 on white) and a fixed-width banner wider than a phone.
const seeded = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pricing</title>
<style>
:root { --color-ink: #1a1a1a; --color-paper: #ffffff; --color-brand: #0b5fff; --space-1: 4px; --space-2: 8px; --space-4: 16px; }
body { margin: 0; font-family: sans-serif; color: var(--color-ink); background: var(--color-paper); }
main { padding: var(--space-4); }
#faint { color: #aaaaaa; font-size: 16px; }
#wide { width: 600px; height: 40px; background: var(--color-brand); }
</style></head>
<body><main>
<h1>Plans</h1>
<p id="faint">Cancel any time. Prices exclude tax.</p>
<div id="wide"></div>
</main></body></html>`

func TestReviewEndToEnd(t *testing.T) {
	t.Parallel()
	var fixed atomic.Bool
	eng, base := setup(t, map[string]func() string{"/": func() string {
		if fixed.Load() {
			return strings.Replace(seeded, "#faint { color: #aaaaaa;", "#faint { color: #1a1a1a;", 1)
		}
		return seeded
	}})
	req := engine.Request{URL: base + "/", Routes: []string{"/", "/gone"}, Viewports: []design.Viewport{design.Mobile, design.Desktop}}
	res, err := eng.Review(context.Background(), req)
	if err != nil {
		t.Fatalf("Review: %v", err)
	}

	cov := res.Coverage
	if !reflect.DeepEqual(cov.RoutesReviewed, []string{"/"}) || !reflect.DeepEqual(cov.ViewportsReviewed, req.Viewports) {
		t.Errorf("reviewed routes %v viewports %v, want [/] and %v", cov.RoutesReviewed, cov.ViewportsReviewed, req.Viewports)
	}
	var skipped []string
	for _, s := range cov.Skipped {
		if !strings.HasPrefix(s.Reason, string(fault.CaptureFailed)+":") || !strings.Contains(s.Reason, "404") {
			t.Errorf("skip %q reason %q, want CAPTURE_FAILED naming the 404", s.What, s.Reason)
		}
		skipped = append(skipped, s.What)
	}
	if want := []string{"/gone @ mobile", "/gone @ desktop"}; !reflect.DeepEqual(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
	if len(res.Health) != 4 {
		t.Fatalf("page health has %d entries, want one per route × viewport (4)", len(res.Health))
	}
	for _, h := range res.Health {
		want := 200
		if h.Route == "/gone" {
			want = 404
		}
		if h.StatusCode != want || h.CaptureDuration <= 0 {
			t.Errorf("health %s @ %s: status %d duration %v, want %d", h.Route, h.Viewport, h.StatusCode, h.CaptureDuration, want)
		}
	}
	if res.TokensFrom != "root_custom_properties" {
		t.Errorf("tokens from %q, want root_custom_properties (the page's rules use its --color-* and --space-4)", res.TokensFrom)
	}
	// The checks say what they judged: three colours are a palette to
	// judge against; one spacing length is no scale, and the page uses no
	// font tokens. tap_target ran at mobile, so it is not off.
	var off []string
	for _, s := range cov.ChecksOff {
		if s.Reason == "" {
			t.Errorf("check %s off without a reason", s.What)
		}
		off = append(off, s.What)
	}
	if want := []string{"off_scale_spacing", "off_token_font", "type_scale (token scale)"}; !reflect.DeepEqual(off, want) {
		t.Errorf("checks off %+v; want %v", cov.ChecksOff, want)
	}
	if !slices.Contains(cov.ChecksRun, "off_token_color") || !slices.Contains(cov.ChecksRun, "tap_target") || !slices.Contains(cov.ChecksRun, "type_scale") {
		t.Errorf("checks run %v; want off_token_color, tap_target and type_scale among them", cov.ChecksRun)
	}
	if got := design.GradeOf(2, res.Findings); res.Grade != got {
		t.Errorf("grade %s, but the findings grade %s", res.Grade, got)
	}

	// Every finding is complete, merged and has evidence that decodes.
	ev := map[string][]byte{}
	for _, e := range res.Evidence {
		ev[e.ID] = e.Data
	}
	for _, f := range res.Findings {
		if f.ID != design.FindingID(f.Kind, f.Route, f.Selector) || f.Route != "/" || len(f.Viewports) == 0 {
			t.Errorf("finding %+v: bad id, route or viewports", f)
		}
		img, err := png.Decode(bytes.NewReader(ev[f.EvidenceID]))
		if err != nil {
			t.Errorf("finding %s (%s): evidence %q does not decode: %v", f.ID, f.Kind, f.EvidenceID, err)
			continue
		}
		// The crop frames the box with the padding, wherever on the page.
		if b := img.Bounds(); float64(b.Dx()) < min(f.Box.W, evidence.MaxWidth-2*evidence.Pad) || b.Dy() < 1 {
			t.Errorf("finding %s: crop %v smaller than its box %+v", f.ID, b, f.Box)
		}
	}
	// The seeded defects: faint text at every viewport (merged into one
	// finding), the wide banner on the phone only.
	i := slices.IndexFunc(res.Findings, func(f design.Finding) bool { return f.Kind == "contrast" && f.Selector == "#faint" })
	if i < 0 {
		t.Fatalf("no contrast finding on #faint; findings: %+v", res.Findings)
	}
	contrast := res.Findings[i]
	if !reflect.DeepEqual(contrast.Viewports, req.Viewports) || contrast.EvidenceID == "" || contrast.Severity == design.Nit {
		t.Errorf("contrast on #faint: %+v, want merged over %v with evidence", contrast, req.Viewports)
	}
	i = slices.IndexFunc(res.Findings, func(f design.Finding) bool { return f.Kind == "viewport_overflow" && f.Selector == "#wide" })
	if i < 0 {
		t.Errorf("no viewport_overflow finding on #wide; findings: %+v", res.Findings)
	} else if f := res.Findings[i]; !reflect.DeepEqual(f.Viewports, []design.Viewport{design.Mobile}) {
		t.Errorf("overflow on #wide seen at %v, want mobile only", f.Viewports)
	}
	checkOverviews(t, res, ev, req.Viewports, slices.IndexFunc(res.Findings, func(f design.Finding) bool { return f.ID == contrast.ID })+1)
	if res.Grade != design.NeedsWork && res.Grade != design.Blocked {
		t.Errorf("grade %s with a major contrast defect", res.Grade)
	}

	// Identical input, identical findings and crops.
	again, err := eng.Review(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(res.Findings)
	b, _ := json.Marshal(again.Findings)
	if !bytes.Equal(a, b) {
		t.Errorf("two reviews of the same page differ:\n%s\n%s", a, b)
	}
	if len(res.Evidence) != len(again.Evidence) {
		t.Fatalf("evidence count differs: %d vs %d", len(res.Evidence), len(again.Evidence))
	}
	for i := range res.Evidence {
		if res.Evidence[i].ID != again.Evidence[i].ID || !bytes.Equal(res.Evidence[i].Data, again.Evidence[i].Data) {
			t.Errorf("evidence %d differs between runs", i)
		}
	}

	// Recheck the findings on the unchanged page; a finding on a route that
	// no longer loads is inconclusive, never passed.
	gone := design.Finding{ID: "f_gone", Kind: "contrast", Route: "/gone", Selector: "#x", Viewports: []design.Viewport{design.Mobile}}
	outs, err := eng.Recheck(context.Background(), engine.RecheckRequest{URL: base + "/", Findings: append(slices.Clone(res.Findings), gone)})
	if err != nil {
		t.Fatalf("Recheck: %v", err)
	}
	if len(outs) != len(res.Findings)+1 {
		t.Fatalf("recheck gave %d outcomes for %d findings", len(outs), len(res.Findings)+1)
	}
	for i, o := range outs[:len(res.Findings)] {
		if o.FindingID != res.Findings[i].ID || o.Outcome == design.Passed {
			t.Errorf("recheck of unchanged %s: %+v, want not passed", res.Findings[i].ID, o)
		}
		// Each outcome shows the element now, beside the review's crop.
		if _, ok := pngSize(t, o.Evidence); !ok || o.EvidenceID == "" || o.Evidence.ID != o.EvidenceID {
			t.Errorf("recheck of unchanged %s carries no crop of the element now: %+v", res.Findings[i].ID, o)
		}
	}
	if last := outs[len(outs)-1]; last.FindingID != "f_gone" || last.Outcome != design.Inconclusive || !strings.HasPrefix(last.Reason, string(fault.CaptureFailed)) {
		t.Errorf("recheck of a finding on a 404 route: %+v, want inconclusive CAPTURE_FAILED", last)
	}

	// The agent fixes the colour: the contrast finding is measured gone.
	fixed.Store(true)
	outs, err = eng.Recheck(context.Background(), engine.RecheckRequest{URL: base + "/", Findings: []design.Finding{contrast}})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Outcome != design.Passed || outs[0].FindingID != contrast.ID {
		t.Fatalf("recheck after the fix: %+v, want passed", outs)
	}
	// The pass shows why: the ratio measured now, and the element as it is.
	if r, _ := outs[0].Facts["ratio"].(float64); r < 4.5 {
		t.Errorf("passed contrast recheck facts = %v; want the ratio now, at least 4.5", outs[0].Facts)
	}
	if _, ok := pngSize(t, outs[0].Evidence); !ok || outs[0].EvidenceID == contrast.EvidenceID {
		t.Errorf("passed recheck's crop = %q (review's %q); want a crop of the fixed element", outs[0].EvidenceID, contrast.EvidenceID)
	}
}

// pngSize decodes ev's image, reporting false when there is none.
func pngSize(t *testing.T, ev *design.Evidence) (image.Point, bool) {
	t.Helper()
	if ev == nil || ev.MIMEType != "image/png" {
		return image.Point{}, false
	}
	img, err := png.Decode(bytes.NewReader(ev.Data))
	if err != nil {
		t.Errorf("crop %s does not decode: %v", ev.ID, err)
		return image.Point{}, false
	}
	return img.Bounds().Size(), true
}

func TestReviewNothingReviewedAndTokensOff(t *testing.T) {
	t.Parallel()
	eng, base := setup(t, map[string]func() string{"/plain": func() string { return `<!doctype html><title>x</title><p>No tokens here.</p>` }})
	res, err := eng.Review(context.Background(), engine.Request{URL: base + "/", Routes: []string{"/missing"}, Viewports: []design.Viewport{design.Desktop}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Grade != design.NothingReviewed || len(res.Coverage.RoutesReviewed) != 0 || len(res.Coverage.Skipped) != 1 {
		t.Errorf("all routes failed: grade %s, reviewed %v, skipped %+v", res.Grade, res.Coverage.RoutesReviewed, res.Coverage.Skipped)
	}

	res, err = eng.Review(context.Background(), engine.Request{URL: base + "/", Routes: []string{"/plain"}, Viewports: []design.Viewport{design.Desktop}})
	if err != nil {
		t.Fatal(err)
	}
	if res.TokensFrom != "none" {
		t.Errorf("tokens from %q, want none", res.TokensFrom)
	}
	if len(res.Coverage.ChecksOff) == 0 || len(res.Coverage.ChecksRun) == 0 {
		t.Errorf("without tokens: checks run %v, off %+v; want the token checks off and the rest run", res.Coverage.ChecksRun, res.Coverage.ChecksOff)
	}
	for _, s := range res.Coverage.ChecksOff {
		if slices.Contains(res.Coverage.ChecksRun, s.What) || s.Reason == "" {
			t.Errorf("check %q is both off and run, or off without a reason", s.What)
		}
	}
	if res.Grade == design.NothingReviewed {
		t.Error("a page that loaded was graded nothing_reviewed")
	}
}

func TestReviewRejectsBadRequests(t *testing.T) {
	t.Parallel()
	// Validation runs before any capture, so no browser is needed.
	eng := local.New(nil, localGuard(), local.Options{Logger: quiet})
	ok := engine.Request{URL: "http://127.0.0.1:8080/", Routes: []string{"/"}, Viewports: []design.Viewport{design.Mobile}}
	cases := map[string]func(r *engine.Request){
		"NoURL":             func(r *engine.Request) { r.URL = "" },
		"NotHTTP":           func(r *engine.Request) { r.URL = "file:///etc/passwd" },
		"ProtocolRelative":  func(r *engine.Request) { r.Routes = []string{"//evil.example/"} },
		"AbsoluteRoute":     func(r *engine.Request) { r.Routes = []string{"https://evil.example/"} },
		"RelativeRoute":     func(r *engine.Request) { r.Routes = []string{"pricing"} },
		"Backslash":         func(r *engine.Request) { r.Routes = []string{"/\\evil.example"} },
		"Fragment":          func(r *engine.Request) { r.Routes = []string{"/a#b"} },
		"ControlCharacter":  func(r *engine.Request) { r.Routes = []string{"/a\nb"} },
		"UnknownViewport":   func(r *engine.Request) { r.Viewports = []design.Viewport{"watch"} },
		"NoViewport":        func(r *engine.Request) { r.Viewports = nil },
		"TooManyRoutes":     func(r *engine.Request) { r.Routes = slices.Repeat([]string{"/a"}, local.MaxRoutes+1) },
		"TokensNotJSON":     func(r *engine.Request) { r.Tokens = []byte("{not json") },
		"TokensNothingUsed": func(r *engine.Request) { r.Tokens = []byte(`{}`) },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			r := ok
			mutate(&r)
			_, err := eng.Review(context.Background(), r)
			f, isFault := fault.As(err)
			if !isFault || (f.Code != fault.InvalidArgument && f.Code != fault.URLNotAllowed) {
				t.Fatalf("err = %v, want INVALID_ARGUMENT or URL_NOT_ALLOWED", err)
			}
		})
	}
	if _, err := eng.Recheck(context.Background(), engine.RecheckRequest{URL: ok.URL}); !fault.Is(err, fault.InvalidArgument) {
		t.Errorf("recheck of nothing: err = %v", err)
	}
}

// TestReviewNotesTruncatedMeasurement: a page past the collector's element
// cap is reviewed, and the coverage says part of it went unchecked; a small
// page gets no such note.
func TestReviewNotesTruncatedMeasurement(t *testing.T) {
	t.Parallel()
	many := func() string {
		var b strings.Builder
		b.WriteString(`<!doctype html><title>many</title><body>`)
		for i := range 4100 {
			fmt.Fprintf(&b, `<button id="b%d" style="display:block;width:60px;height:30px">%d</button>`, i, i)
		}
		return b.String()
	}
	eng, base := setup(t, map[string]func() string{
		"/many": many,
		"/few":  func() string { return `<!doctype html><title>few</title><p>Small page.</p>` },
	})
	res, err := eng.Review(context.Background(), engine.Request{URL: base + "/", Routes: []string{"/many", "/few"}, Viewports: []design.Viewport{design.Desktop}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Coverage.RoutesReviewed, "/many") || !slices.Contains(res.Coverage.RoutesReviewed, "/few") {
		t.Fatalf("reviewed %v; want both routes", res.Coverage.RoutesReviewed)
	}
	var notes []design.Skip
	for _, s := range res.Coverage.Skipped {
		if strings.Contains(s.Reason, "cap reached") {
			notes = append(notes, s)
		}
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0].What, "/many @ desktop") {
		t.Errorf("coverage skipped %+v; want one cap note for /many @ desktop", res.Coverage.Skipped)
	}
}

// checkOverviews asserts res has one overview per reviewed viewport of
// "/": an image no wider than the overview width that decodes, on which
// the contrast finding (number n) is marked where its element is: the
// badge's magenta at the box's scaled top-left corner.
func checkOverviews(t *testing.T, res *design.Result, ev map[string][]byte, vps []design.Viewport, n int) {
	t.Helper()
	if len(res.Overviews) != len(vps) {
		t.Fatalf("%d overviews, want one per reviewed viewport (%d): %+v", len(res.Overviews), len(vps), res.Overviews)
	}
	for k, o := range res.Overviews {
		if o.Route != "/" || o.Viewport != vps[k] {
			t.Errorf("overview %d is of %s @ %s, want / @ %s", k, o.Route, o.Viewport, vps[k])
		}
		img, err := png.Decode(bytes.NewReader(ev[o.EvidenceID]))
		if err != nil {
			t.Errorf("overview %s @ %s: image %q does not decode: %v", o.Route, o.Viewport, o.EvidenceID, err)
			continue
		}
		vw, _, _ := o.Viewport.Size()
		if b := img.Bounds(); b.Dx() > 320 || o.Width < float64(vw) || b.Dx() < int(o.Width*o.Scale)-1 || float64(b.Dy()) > o.Height*o.Scale+1 {
			t.Errorf("overview @ %s: image %v at scale %v of %v CSS px high; want the viewport's width scaled, at most 320 px", o.Viewport, b, o.Scale, o.Height)
		}
		i := slices.IndexFunc(o.Marks, func(m design.OverviewMark) bool { return m.N == n })
		if i < 0 || o.Marks[i].FindingID != res.Findings[n-1].ID {
			t.Errorf("overview @ %s: marks %+v, want finding %d (%s) among them", o.Viewport, o.Marks, n, res.Findings[n-1].ID)
			continue
		}
		b := o.Marks[i].Box
		x, y := int(b.X*o.Scale), int(b.Y*o.Scale)
		if r, g, bl, _ := img.At(x, y).RGBA(); r>>8 != 0xFF || g>>8 != 0 || bl>>8 != 0xFF {
			t.Errorf("overview @ %s: pixel (%d,%d) at finding %d's corner is %v, want its magenta badge", o.Viewport, x, y, n, img.At(x, y))
		}
	}
}
