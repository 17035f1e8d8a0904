package checks_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/checks/corpus"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/tokens"
)

var (
	update   = flag.Bool("update", false, "rewrite the snapshot goldens in testdata/snapshots")
	onlyPage = flag.String("corpus.page", "", "run TestCorpus on this page only (debugging)")
)

// browser is one headless Chromium shared by a test's pages.
type browser struct {
	ctx    context.Context
	cancel func()
}

func newBrowser(t testing.TB) *browser {
	t.Helper()
	exe := testenv.Chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.Flag("mute-audio", true),
		chromedp.Flag("font-render-hinting", "none"),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // start the browser
		bcancel()
		acancel()
		t.Fatalf("starting Chromium: %v", err)
	}
	b := &browser{ctx: bctx, cancel: func() { bcancel(); acancel() }}
	t.Cleanup(b.cancel)
	return b
}

// tab is one reusable browser tab: each snapshot navigates it afresh.
type tab struct {
	ctx    context.Context
	cancel func()
}

func (b *browser) newTab(t testing.TB) *tab {
	ctx, cancel := chromedp.NewContext(b.ctx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("opening a tab: %v", err)
	}
	return &tab{ctx, cancel}
}

// snapshot loads url in a fresh tab at vp and collects a snapshot.
func (b *browser) snapshot(t testing.TB, url string, vp design.Viewport) *checks.Snapshot {
	t.Helper()
	tb := b.newTab(t)
	defer tb.cancel()
	return tb.snapshot(t, url, vp)
}

// snapshot loads url at vp and collects a snapshot.
func (tb *tab) snapshot(t testing.TB, url string, vp design.Viewport) *checks.Snapshot {
	t.Helper()
	// No clock of its own: on a loaded machine a big page takes long to
	// measure, and a hang is the test binary's -timeout to catch.
	ctx := tb.ctx
	tb.load(ctx, t, url, vp)
	s, err := checks.Collect(ctx, vp)
	if err != nil {
		t.Fatalf("%s @%s: Collect: %v", url, vp, err)
	}
	return s
}

// load navigates the tab to url at vp and waits until the page, its fonts
// and two frames after them are done, as a capture does before measuring.
func (tb *tab) load(ctx context.Context, t testing.TB, url string, vp design.Viewport) {
	t.Helper()
	w, h, _ := vp.Size()
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(w), Height: int64(h), DeviceScaleFactor: 1, Mobile: vp != design.Desktop,
	}); err != nil {
		t.Fatalf("%s: viewport: %v", url, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("%s: navigate: %v", url, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(async () => {
		if (document.readyState !== 'complete') await new Promise(r => addEventListener('load', r, {once: true}));
		await document.fonts.ready;
		await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
		return true })()`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("%s: waiting for load: %v", url, err)
	}
}

// serveCorpus serves dir on loopback.
func serveCorpus(t testing.TB, dir string) string {
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL
}

func configFor(t testing.TB, c *corpus.Corpus, p corpus.Page, s *checks.Snapshot) checks.Config {
	switch p.Tokens {
	case "file":
		set, err := tokens.Parse(c.Tokens)
		if err != nil {
			t.Fatalf("tokens.json: %v", err)
		}
		return checks.Config{Tokens: set}
	case "root":
		return checks.Config{Tokens: s.PageTokens()}
	}
	return checks.Config{}
}

var allViewports = []design.Viewport{design.Mobile, design.Tablet, design.Desktop}

// TestCorpus reviews every corpus page at every viewport in real Chromium and
// scores the findings against the labels: each kind needs precision and
// recall of at least 0.95, clean pages no finding at all, and a second run
// identical findings.
func TestCorpus(t *testing.T) {
	c, err := corpus.Load(corpus.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pages) < 25 {
		t.Errorf("corpus has %d pages; want at least 25", len(c.Pages))
	}
	seeded := map[string]map[string]bool{}
	clean := 0
	for _, p := range c.Pages {
		if p.Clean {
			clean++
		}
		for _, l := range p.Expect {
			if seeded[l.Kind] == nil {
				seeded[l.Kind] = map[string]bool{}
			}
			seeded[l.Kind][p.File+" "+l.Selector] = true
		}
	}
	if clean < 6 {
		t.Errorf("corpus has %d clean pages; want at least 6", clean)
	}
	for _, k := range checks.Kinds() {
		if len(seeded[k]) < 2 {
			t.Errorf("corpus seeds %d %s defects; want at least 2", len(seeded[k]), k)
		}
	}
	b := newBrowser(t)
	base := serveCorpus(t, c.Dir)
	type job struct {
		page corpus.Page
		vp   design.Viewport
	}
	var jobs []job
	for _, p := range c.Pages {
		if *onlyPage != "" && p.File != *onlyPage {
			continue
		}
		for _, vp := range allViewports {
			jobs = append(jobs, job{p, vp})
		}
	}
	// Two tabs work through the pages, each navigating afresh per capture.
	runAll := func() map[string][]design.Finding {
		var mu sync.Mutex
		got := map[string][]design.Finding{}
		queue := make(chan job)
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			tb := b.newTab(t)
			go func() {
				defer wg.Done()
				defer tb.cancel()
				for jb := range queue {
					s := tb.snapshot(t, base+"/"+jb.page.File, jb.vp)
					fs := checks.Run(s, configFor(t, c, jb.page, s))
					mu.Lock()
					got[jb.page.File] = append(got[jb.page.File], fs...)
					mu.Unlock()
				}
			}()
		}
		for _, jb := range jobs {
			queue <- jb
		}
		close(queue)
		wg.Wait()
		for p := range got {
			sortFindings(got[p])
		}
		return got
	}
	start := time.Now()
	first := runAll()
	t.Logf("first run: %d captures in %v", len(jobs), time.Since(start).Round(time.Millisecond))
	start = time.Now()
	second := runAll()
	t.Logf("second run: %d captures in %v", len(jobs), time.Since(start).Round(time.Millisecond))

	for p := range first {
		if !reflect.DeepEqual(first[p], second[p]) {
			a, _ := json.MarshalIndent(first[p], "", " ")
			b, _ := json.MarshalIndent(second[p], "", " ")
			t.Errorf("%s: two runs differ:\n%s\n---\n%s", p, a, b)
		}
	}
	if *onlyPage != "" {
		for _, f := range first[*onlyPage] {
			t.Logf("%s %s %s %v %v", f.Kind, f.Selector, f.Viewports[0], f.Title, f.Facts)
		}
	}
	rep := c.Match(first, allViewports, checks.Kinds())
	t.Logf("per-kind precision and recall over %d pages × %d viewports:\n%s", len(c.Pages), len(allViewports), rep.Table())
	for _, k := range rep.CleanHits {
		t.Errorf("clean page has a finding: %s", k)
	}
	for _, s := range rep.Kinds {
		for _, k := range s.FalsePos {
			t.Logf("false positive: %s — %s", k, describe(first[k.Page], k))
		}
		for _, k := range s.FalseNeg {
			t.Logf("missed: %s", k)
		}
		if *onlyPage == "" && (s.Precision < 0.95 || s.Recall < 0.95) {
			t.Errorf("%s: precision %.3f recall %.3f; both must be ≥ 0.95", s.Kind, s.Precision, s.Recall)
		}
	}
}

func describe(fs []design.Finding, k corpus.Key) string {
	for _, f := range fs {
		if f.Kind == k.Kind && f.Selector == k.Selector && f.Viewports[0] == k.Viewport {
			return fmt.Sprintf("%s %v", f.Title, f.Facts)
		}
	}
	return ""
}

func sortFindings(fs []design.Finding) {
	order := map[string]int{}
	for i, k := range checks.Kinds() {
		order[k] = i
	}
	vpo := map[design.Viewport]int{design.Mobile: 0, design.Tablet: 1, design.Desktop: 2}
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0; j-- {
			a, b := fs[j-1], fs[j]
			less := vpo[b.Viewports[0]] < vpo[a.Viewports[0]] ||
				vpo[b.Viewports[0]] == vpo[a.Viewports[0]] && (order[b.Kind] < order[a.Kind] || order[b.Kind] == order[a.Kind] && b.Selector < a.Selector)
			if !less {
				break
			}
			fs[j-1], fs[j] = b, a
		}
	}
}

// goldenDir holds saved snapshots for the pure tests.
var goldenDir = filepath.Join("testdata", "snapshots")

func readGolden(t testing.TB, name string) *checks.Snapshot {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatalf("%v (regenerate with go test -run TestUpdateGoldens -update)", err)
	}
	var s checks.Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}
