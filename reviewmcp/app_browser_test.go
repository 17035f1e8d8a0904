package reviewmcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/demo"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/reviewmcp"
)

// hostile is a page-derived string that is markup if anything interpolates
// it: it must reach the reader as these characters.
const hostile = `<img src=x onerror="parent.postMessage({jsonrpc:'2.0',method:'pwned'},'*')">Badge overlaps the price`

// appReview is a completed review with a grounded finding, which has a
// crop, and an advisory one whose page-derived text is markup.
// grayPNG is a w×24 PNG of one grey.
func grayPNG(t *testing.T, w int, grey byte) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, 24))
	for i := range img.Pix {
		img.Pix[i] = grey
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func appReview(t *testing.T) *design.Result {
	return &design.Result{
		Evidence: []design.Evidence{{ID: "ev_contrast", MIMEType: "image/png", Data: grayPNG(t, 48, 0x9c)}},
		Grade:    design.NeedsWork,
		Findings: []design.Finding{
			{ID: "f_contrast", Kind: "contrast", Severity: design.Major, Title: "Low text contrast 2.54:1 (needs 4.5:1)",
				Route: "/pricing", Viewports: []design.Viewport{design.Mobile}, Selector: "p.plan-note",
				Facts: design.Facts{"ratio": 2.54, "foreground": "#9ca3af"}, EvidenceID: "ev_contrast",
				Fix: "Darken the text to #71767f or further (4.5:1 against #ffffff)."},
			{ID: "f_overlap", Kind: "overlap", Severity: design.Minor, Title: hostile, Description: hostile,
				Route: "/pricing", Viewports: []design.Viewport{design.Desktop}, Selector: "span.badge",
				Facts: design.Facts{"other": hostile}, Advisory: true},
		},
		Coverage: design.Coverage{
			RoutesRequested: []string{"/pricing"}, RoutesReviewed: []string{"/pricing"},
			ViewportsRequested: []design.Viewport{design.Mobile, design.Desktop}, ViewportsReviewed: []design.Viewport{design.Mobile, design.Desktop},
			ChecksRun: []string{"contrast", "overlap"},
		},
	}
}

// hostPage is a minimal MCP Apps host (SEP-1865 "Lifecycle"): it loads the
// view in an iframe sandboxed to allow-scripts only, answers ui/initialize
// (naming the tool that opened the view, as the host lists it),
// sends the tool input and result once the view says initialized, forwards
// the view's tools/call to the test's real MCP client session (POST /call),
// keeps the last ui/update-model-context, and logs every method it sees.
const hostPage = `<!doctype html><html><head><meta charset="utf-8"><title>host</title></head><body>
<iframe id="view" sandbox="allow-scripts" style="width:100%;height:900px;border:0"></iframe>
<script>
window.hostLog = [];
const frame = document.getElementById('view');
const post = (m) => frame.contentWindow.postMessage(m, '*');
let boot;
window.addEventListener('message', async (ev) => {
  if (ev.source !== frame.contentWindow) return;
  const m = ev.data;
  if (!m || m.jsonrpc !== '2.0') return;
  window.hostLog.push(m.method || 'response');
  const reply = (result) => post({jsonrpc: '2.0', id: m.id, result});
  const fail = (message) => post({jsonrpc: '2.0', id: m.id, error: {code: -32000, message}});
  switch (m.method) {
  case 'ui/initialize':
    reply({protocolVersion: m.params.protocolVersion, hostInfo: {name: 'test-host', version: '1'},
      hostCapabilities: {serverTools: {}},
      hostContext: {displayMode: 'inline', platform: 'web', toolInfo: {id: 1, tool: {name: boot.tool, inputSchema: {type: 'object'}}}}});
    break;
  case 'ui/notifications/initialized':
    post({jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: {arguments: boot.arguments}});
    post({jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: boot.result});
    break;
  case 'tools/call': {
    const r = await fetch('/call', {method: 'POST', body: JSON.stringify(m.params)});
    if (r.ok) reply(await r.json()); else fail(await r.text());
    break;
  }
  case 'ui/update-model-context':
    window.modelContext = m.params;
    reply({});
    break;
  default:
    if (m.id !== undefined) fail('unsupported');
  }
});
fetch('/boot').then((r) => r.json()).then((b) => { boot = b; frame.src = '/view'; });
</script></body></html>`

// hostCall is one tools/call the host forwarded, with the server's answer.
type hostCall struct {
	Name   string
	Args   map[string]any
	Result *mcp.CallToolResult
}

// appHost serves hostPage, the view (the app page with the CSP the spec has
// a host build from the resource's _meta.ui.csp), the boot data and the
// tools/call forwarder over the MCP client session c. With a prefix it
// lists the server's tools under prefixed names, as the gateway does
// ("review__"), and forwards only names that carry it, stripped.
type appHost struct {
	prefix string

	mu    sync.Mutex
	calls []hostCall
}

// forwarded returns the calls of tool name the host forwarded, in order.
func (h *appHost) forwarded(name string) []hostCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hostCall
	for _, c := range h.calls {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

func (h *appHost) handler(t *testing.T, c *client, view *mcp.ResourceContents, boot []byte) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(hostPage))
	})
	mux.HandleFunc("GET /boot", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(boot)
	})
	mux.HandleFunc("GET /view", func(w http.ResponseWriter, _ *http.Request) {
		u := uiMeta(t, view.Meta)
		src := func(base string, domains []string) string {
			return strings.Join(append([]string{base}, domains...), " ")
		}
		w.Header().Set("Content-Security-Policy", strings.Join([]string{
			"default-src 'none'",
			"script-src " + src("'self' 'unsafe-inline'", u.CSP.ResourceDomains),
			"style-src " + src("'self' 'unsafe-inline'", u.CSP.ResourceDomains),
			"img-src " + src("'self' data:", u.CSP.ResourceDomains),
			"connect-src " + src("'self'", u.CSP.ConnectDomains),
			"frame-src 'none'", "object-src 'none'", "base-uri 'self'",
		}, "; "))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(view.Text))
	})
	mux.HandleFunc("POST /call", func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			http.Error(w, "bad tools/call params", http.StatusBadRequest)
			return
		}
		name, ok := strings.CutPrefix(p.Name, h.prefix)
		if !ok {
			http.Error(w, "unknown tool "+p.Name, http.StatusNotFound)
			return
		}
		p.Name = name
		res, err := c.cs.CallTool(r.Context(), &mcp.CallToolParams{Name: p.Name, Arguments: p.Arguments})
		if err != nil {
			http.Error(w, "the server refused the call", http.StatusBadGateway)
			return
		}
		h.mu.Lock()
		h.calls = append(h.calls, hostCall{p.Name, p.Arguments, res})
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	})
	return mux
}

// openApp shows the app as host would for one design_review_get call (args
// and its result): it reads the app over c's session, serves hostPage on
// loopback, loads it in a fresh Chromium at the given width, and returns
// the host page's context and the view frame's.
func openApp(t *testing.T, host *appHost, c *client, args map[string]any, result *mcp.CallToolResult, width int64) (context.Context, context.Context) {
	t.Helper()
	exe := testenv.Chromium(t)
	boot, err := json.Marshal(map[string]any{"tool": host.prefix + reviewmcp.ToolGet, "arguments": args, "result": result})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: reviewmcp.AppURI})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(host.handler(t, c, rr.Contents[0], boot))
	t.Cleanup(srv.Close)

	actx, acancel := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(exe), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()))
	t.Cleanup(acancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(stop)
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: width, Height: 900, DeviceScaleFactor: 1, Mobile: width < 600,
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	// The sandboxed frame is an opaque origin, so Chromium runs it as a
	// target of its own: attach to it once the view has said initialized.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.hostLog.includes('ui/notifications/initialized')`)); err != nil {
		t.Fatalf("the view never finished ui/initialize: %v", err)
	}
	targets, err := chromedp.Targets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range targets {
		if ti.Type == "iframe" && ti.URL == srv.URL+"/view" {
			fctx, fcancel := chromedp.NewContext(ctx, chromedp.WithTargetID(ti.TargetID))
			t.Cleanup(fcancel)
			return ctx, fctx
		}
	}
	t.Fatalf("no iframe target for the view among %d targets", len(targets))
	return nil, nil
}

// TestAppInSandboxedFrame drives the MCP App the way a host shows it:
// Chromium loads a host page that puts the app, as read over resources/read
// from a real reviewmcp server, in an iframe sandboxed to allow-scripts and
// under the CSP its _meta.ui declares, and hands it a real
// design_review_get result: the job still running, which the app follows
// through the host to its summary; "Show all" fetches the findings and their
// crops (the evidence view). Clicking "Apply fix" must reach the server as
// design_review_panel_action through the host, and the server's fix must be
// what the frame shows; "Dismiss" tells the model through the host;
// "Recheck" submits design_recheck for the selected finding and shows its
// outcome; page-derived markup stays text throughout. The host lists the
// tools under a gateway's namespace, so every call also shows the app
// names tools as the host does.
func TestAppInSandboxedFrame(t *testing.T) {
	testenv.Chromium(t) // before the harness: a missing browser skips (or fails) at once
	gate := make(chan struct{})
	eng := &reviewtest.Engine{Gate: gate, Result: appReview(t), Outs: []design.RecheckOutcome{
		{FindingID: "f_contrast", Outcome: design.Passed, Reason: "contrast is 4.61:1 now", Facts: design.Facts{"ratio": 4.61},
			EvidenceID: "ev_contrast_now", Evidence: &design.Evidence{ID: "ev_contrast_now", MIMEType: "image/png", Data: grayPNG(t, 64, 0x33)}},
	}}
	h := newHarness(t, eng, "", true)
	c := h.connect(t, reviewtest.NewPrincipal(t, "acme", "alice", principal.AllScopes()...), clientOpts{apps: true})
	res := c.call(reviewmcp.ToolReview, map[string]any{"url": "https://" + reviewtest.PreviewHost + "/pricing", "client_request_id": "app-frame-1"})
	wantOK(t, res)
	var sub submitOut
	decodeInto(t, res, &sub)
	// The agent's first design_review_get finds the job still running (the
	// engine is held at its gate): the host shows the app with that.
	args := map[string]any{"job_id": sub.Job.JobID}
	got := c.call(reviewmcp.ToolGet, args)
	wantOK(t, got)
	if sc := structured(t, got); sc["summary"] != nil || sc["review"] != nil {
		t.Fatalf("the review finished before the gate opened: %s", mustJSON(sc))
	}
	host := &appHost{prefix: "review__"}
	ctx, fctx := openApp(t, host, c, args, got, 1024)
	run := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(fctx, a); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(fctx, chromedp.TextContent(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}

	run("the app follows the job", chromedp.WaitVisible(chromedp.CSS(`.note`)))
	close(gate)
	run("the summary renders once the job is done", chromedp.WaitVisible(chromedp.CSS(`button.more`)))
	run("show all findings", chromedp.Click(chromedp.CSS(`button.more`)))
	run("the findings render", chromedp.WaitVisible(chromedp.CSS(`[data-finding="f_overlap"]`)))
	if s := text(`[data-finding="f_overlap"] h2`); !strings.Contains(s, hostile) {
		t.Errorf("the hostile title reads %q, want its characters as text", s)
	}
	// The one image is the crop, from the evidence view's image block, and
	// it decodes; the markup in the other finding made none.
	imgs, err := chromedp.Run(fctx, chromedp.Evaluate[[]string](`Promise.all([...document.images].map((i) => i.decode().then(
		() => i.className + ' ' + i.naturalWidth, () => i.className + ' undecodable')))`, chromedp.EvalAwaitPromise))
	if err != nil || len(imgs) != 1 || imgs[0] != "crop 48" {
		t.Errorf("the frame's images: %v (%v), want the one 48 px crop", imgs, err)
	}

	run("apply fix", chromedp.Click(chromedp.CSS(`[data-finding="f_contrast"] button.apply`)))
	run("the fix answer", chromedp.WaitVisible(chromedp.CSS(`[data-finding="f_contrast"] .answer:not(.pending)`)))
	const fix = "Darken the text to #71767f or further (4.5:1 against #ffffff)."
	if s := text(`[data-finding="f_contrast"] .answer`); !strings.Contains(s, fix) {
		t.Errorf("the frame shows %q, want the server's fix %q", s, fix)
	}
	gets := host.forwarded(reviewmcp.ToolGet)
	if len(gets) < 2 || gets[len(gets)-1].Args["view"] != "evidence" || gets[0].Args["view"] != nil {
		t.Fatalf("forwarded design_review_get calls %s, want polls of the job, then the evidence view", mustJSON(gets))
	}
	calls := host.forwarded(reviewmcp.ToolPanelAction)
	if len(calls) != 1 || calls[0].Args["action"] != "apply_fix" ||
		calls[0].Args["finding_id"] != "f_contrast" || calls[0].Args["job_id"] != sub.Job.JobID {
		t.Fatalf("forwarded calls %s, want one apply_fix for f_contrast", mustJSON(calls))
	}
	var act struct {
		Response struct{ Type, Fix string } `json:"response"`
	}
	decodeInto(t, calls[0].Result, &act)
	if calls[0].Result.IsError || act.Response.Type != "fix" || act.Response.Fix != fix {
		t.Errorf("the server answered %s", mustJSON(calls[0].Result.StructuredContent))
	}

	run("apply fix on the advisory finding", chromedp.Click(chromedp.CSS(`[data-finding="f_overlap"] button.apply`)))
	run("the advisory answer", chromedp.WaitVisible(chromedp.CSS(`[data-finding="f_overlap"] .answer:not(.pending)`)))
	if s := text(`[data-finding="f_overlap"] .answer`); !strings.Contains(s, "person should judge") {
		t.Errorf("the advisory finding's answer reads %q, want human_only", s)
	}

	run("dismiss", chromedp.Click(chromedp.CSS(`[data-finding="f_overlap"] button.dismiss`)))
	run("dismissed", chromedp.WaitReady(chromedp.CSS(`[data-finding="f_overlap"].dismissed`)))
	dismissed, err := chromedp.Run(ctx, chromedp.Poll[[]string](`window.modelContext && window.modelContext.structuredContent.dismissed.length ? window.modelContext.structuredContent.dismissed : null`))
	if err != nil || len(dismissed) != 1 || dismissed[0] != "f_overlap" {
		t.Errorf("the model was told dismissed %v (%v), want [f_overlap]", dismissed, err)
	}

	run("select for recheck", chromedp.Click(chromedp.CSS(`[data-finding="f_contrast"] input[type=checkbox]`)))
	run("name the revision", chromedp.SendKeys(chromedp.CSS(`input[type=text]`), "rev-43"))
	run("recheck", chromedp.Click(chromedp.CSS(`button.recheck`)))
	run("the outcome", chromedp.WaitVisible(chromedp.CSS(`[data-finding="f_contrast"] .outcome`)))
	if s := text(`[data-finding="f_contrast"] .outcome`); !strings.Contains(s, "passed") {
		t.Errorf("the recheck outcome reads %q, want passed", s)
	}
	rechecks := host.forwarded(reviewmcp.ToolRecheck)
	if len(rechecks) != 1 || rechecks[0].Result.IsError || mustJSON(rechecks[0].Args["finding_ids"]) != mustJSON([]string{"f_contrast"}) ||
		rechecks[0].Args["expected_revision"] != "rev-43" {
		t.Fatalf("design_recheck forwarded as %s", mustJSON(rechecks))
	}
	// The card shows the element before (the review's 48 px crop) and now
	// (the recheck's 64 px one, from the recheck's evidence view) side by
	// side, and what was measured on it now.
	run("before and now", chromedp.WaitVisible(chromedp.CSS(`[data-finding="f_contrast"] .pair img.now`)))
	pair, err := chromedp.Run(fctx, chromedp.Evaluate[[]string](`Promise.all([...document.querySelectorAll('[data-finding="f_contrast"] .pair img')].map((i) =>
		i.decode().then(() => i.className + ' ' + i.naturalWidth, () => i.className + ' undecodable')))`, chromedp.EvalAwaitPromise))
	if err != nil || mustJSON(pair) != mustJSON([]string{"crop before 48", "crop now 64"}) {
		t.Errorf("the recheck's crops: %v (%v), want the 48 px crop before and the 64 px one now", pair, err)
	}
	if s := text(`[data-finding="f_contrast"] table.now`); !strings.Contains(s, "Measured now") || !strings.Contains(s, "4.61") {
		t.Errorf("the facts measured now read %q, want the ratio 4.61", s)
	}
	if gets := host.forwarded(reviewmcp.ToolGet); gets[len(gets)-1].Args["view"] != "evidence" || gets[len(gets)-1].Args["job_id"] != structured(t, rechecks[0].Result)["job"].(map[string]any)["job_id"] {
		t.Errorf("the last design_review_get forwarded was %s, want the recheck's evidence view", mustJSON(gets[len(gets)-1].Args))
	}

	log, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.hostLog`))
	if err != nil {
		t.Fatal(err)
	}
	if len(log) < 2 || log[0] != "ui/initialize" || log[1] != "ui/notifications/initialized" || strings.Contains(strings.Join(log, " "), "pwned") {
		t.Errorf("the host saw %v, want ui/initialize, then initialized, and nothing from the page's markup", log)
	}
}

// TestAppShowsDemoReview reviews the demo's sample page with the real
// engine and shows the evidence view in the app at a phone's width, as a
// person would see it: a card for every finding, every crop the result
// carries beside its finding and decoding, and nothing running off the
// side of the frame.
func TestAppShowsDemoReview(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	h := newHarness(t, reviewtest.ChromiumEngine(t), demoSite(t), true)
	c := h.connect(t, reviewtest.NewPrincipal(t, "acme", "alice", principal.AllScopes()...), clientOpts{apps: true})
	res := c.call(reviewmcp.ToolReview, map[string]any{
		"url": "https://" + demo.Host + "/pricing", "viewports": []string{"mobile"}, "client_request_id": "app-demo-1",
	})
	wantOK(t, res)
	var sub submitOut
	decodeInto(t, res, &sub)
	if j := c.waitDone(sub.Job.JobID); j.Status != "completed" {
		t.Fatalf("demo review ended %s: %+v", j.Status, j.Error)
	}
	args := map[string]any{"job_id": sub.Job.JobID, "view": "evidence"}
	got := c.call(reviewmcp.ToolGet, args)
	wantOK(t, got)
	var out getOut
	decodeInto(t, got, &out)
	crops := 0
	for _, b := range got.Content {
		if _, ok := b.(*mcp.ImageContent); ok {
			crops++
		}
	}
	if len(out.Review.Findings) < 3 || crops == 0 {
		t.Fatalf("the demo page gave %d findings and %d crops; this test needs a realistic review", len(out.Review.Findings), crops)
	}
	_, fctx := openApp(t, &appHost{}, c, args, got, 390)
	if err := chromedp.Do(fctx, chromedp.WaitVisible(chromedp.CSS(".finding"))); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Cards, Crops, Undecoded  int
		Thumbs, MarksUnlinked    int
		Sideways                 bool
		RawKeys                  []string
		Facts, Colours, Swatches int
	}
	s, err := chromedp.Run(fctx, chromedp.Evaluate[seen](`(async () => {
		const imgs = [...document.images];
		const bad = (await Promise.all(imgs.map((i) => i.decode().then(() => i.naturalWidth === 0, () => true)))).filter(Boolean).length;
		const de = document.documentElement;
		return {Cards: document.querySelectorAll('.finding').length, Crops: document.querySelectorAll('.finding img.crop').length,
			Undecoded: bad, Sideways: de.scrollWidth > de.clientWidth,
			Thumbs: document.querySelectorAll('.overview img.thumb').length,
			MarksUnlinked: [...document.querySelectorAll('.overview li a')].filter((a) => {
				const card = document.getElementById(a.hash.slice(1));
				return !card || card.querySelector('.n').textContent !== a.querySelector('.n').textContent;
			}).length,
			RawKeys: [...document.querySelectorAll('.finding tr > td:first-child')].map((d) => d.textContent).filter((t) => /_/.test(t)),
			Facts: document.querySelectorAll('.finding tr').length,
			Colours: [...document.querySelectorAll('.finding tr > td:last-child')].filter((d) => /^#[0-9a-f]{3,8}$/i.test(d.textContent)).length,
			Swatches: document.querySelectorAll('.finding tr .swatch').length};
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if s.Cards != len(out.Review.Findings) || s.Crops+s.Thumbs != crops || s.Undecoded != 0 || s.Sideways {
		t.Errorf("the app shows %+v for %d findings and %d images; want a card each, every image shown and decoded, no sideways scroll",
			s, len(out.Review.Findings), crops)
	}
	// A thumbnail per reviewed page, each mark a link to the card with
	// its number.
	if s.Thumbs != len(out.Review.Overviews) || s.Thumbs == 0 || s.MarksUnlinked != 0 {
		t.Errorf("the app shows %d page overviews (want %d) with %d marks not linked to their finding", s.Thumbs, len(out.Review.Overviews), s.MarksUnlinked)
	}
	// Facts are named in words with their units, from the file panel's table,
	// and every colour has its swatch.
	if s.Facts == 0 || len(s.RawKeys) > 0 || s.Colours == 0 || s.Swatches != s.Colours {
		t.Errorf("facts shown: %d rows, raw keys %q, %d colours with %d swatches; want labels only and a swatch per colour",
			s.Facts, s.RawKeys, s.Colours, s.Swatches)
	}
}
