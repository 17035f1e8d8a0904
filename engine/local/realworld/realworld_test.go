// Package realworld_test reviews real documentation sites that Debian
// packages install, end to end through engine/local, and scores the
// findings against labels: a regression set the checks were tuned on
// (TestRealWorld, testdata/labels.json) and a set labelled blind as a
// held-out one, then tuned on (TestHeldOut, testdata/heldout.json). It is a
// package of its own so that its minutes of Chromium run beside
// engine/local's tests, not inside them.
package realworld_test

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/checks/corpus"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/engine/local"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// The real-world regression set: documentation sites that Debian packages
// ship (scripts/deps.sh installs them), made by generators nobody here
// wrote (mdBook, rustdoc, Sphinx, AsciiDoc, DocBook, Texinfo and
// SQLite's own). testdata/labels.json names a sample of their pages and
// what a designer flags on each, by the checks' documented rules, judged
// from screenshots and the engine's findings while the checks were tuned
// (so it is a regression set, not a held-out one); the pages themselves are read from the installed
// packages, never copied here. The same pages with one realistic defect
// injected each (a small HTML/CSS edit made while serving a copy) measure
// recall.

// -realworld.only narrows TestRealWorld to the pages (and injected copies)
// whose path contains it, for iterating on one site's findings; the
// figures it prints then cover only those pages, and the floors are not
// judged.
var realWorldOnly = flag.String("realworld.only", "", "review only the real-world pages whose path contains this")

var realWorldViewports = []design.Viewport{design.Mobile, design.Desktop}

// The goals of issue 12 §3. The checks reached them on this set on
// 2026-12-02 (precision 0.981, injected 0.974 / 0.949, no unconfirmed
// finding on the clean pages), so the floors are the goals: a change that
// takes a figure below its goal fails. (The floors were a ratchet below the
// goals until then; judgeFigure still tells the two apart.)
const (
	realWorldPrecision = 0.9
	injectedPrecision  = 0.9
	injectedRecall     = 0.9
	maxCleanPerPage    = 0.5 // unconfirmed findings per clean page

	floorRealWorldPrecision = realWorldPrecision
	floorInjectedPrecision  = injectedPrecision
	floorInjectedRecall     = injectedRecall
	floorMaxCleanPerPage    = maxCleanPerPage
)

// judgeFigure fails t below floor and logs the gap to goal: higher is better
// when above is true, lower otherwise.
func judgeFigure(t *testing.T, name string, got, goal, floor float64, above bool) {
	t.Helper()
	metGoal, metFloor := got >= goal, got >= floor
	if !above {
		metGoal, metFloor = got <= goal, got <= floor
	}
	switch {
	case !metFloor:
		t.Errorf("%s %.3f: below the floor %.3f (a regression); the goal is %.2f", name, got, floor, goal)
	case !metGoal:
		t.Logf("GOAL NOT MET: %s %.3f; the goal is %.2f (floor %.3f)", name, got, goal, floor)
	default:
		t.Logf("%s %.3f meets the goal %.2f", name, got, goal)
	}
}

// defect is one realistic defect injected into a copy of a real page: a
// snippet placed after the page's first h1 (or at the top of its body),
// and the findings it must cause.
type defect struct {
	name    string
	host    string // the page it is injected into
	snippet string
	expect  []corpus.Label
}

func label(kind, sel string, vps ...design.Viewport) corpus.Label {
	return corpus.Label{Kind: kind, Selector: sel, Viewports: vps}
}

var both = []design.Viewport{design.Mobile, design.Desktop}

var defects = []defect{
	{"contrast", "python3.11-doc/html/library/json.html",
		`<p id="inj-contrast" style="color:#b4b4b4;background:#ffffff">Prices exclude tax and shipping.</p>`,
		[]corpus.Label{label("contrast", "#inj-contrast", both...)}},
	// Not into a page without a viewport meta tag (PostgreSQL's, Git's,
	// gettext's): a phone lays those out 980 px wide, and 560 px fit.
	{"overflow", "python3.11-doc/html/tutorial/controlflow.html",
		`<div id="inj-overflow" style="width:560px;height:48px;background:#2b6cb0;color:#ffffff">Summer sale: every plan half price</div>`,
		[]corpus.Label{label("viewport_overflow", "#inj-overflow", design.Mobile)}},
	{"tap_target", "git-doc/git-commit.html",
		`<p id="inj-pager"><a id="inj-prev" href="#prev" aria-label="Previous page" style="display:inline-block;width:18px;height:18px;background:#2b6cb0"></a><a id="inj-next" href="#next" aria-label="Next page" style="display:inline-block;width:18px;height:18px;margin-left:2px;background:#2b6cb0"></a></p>`,
		[]corpus.Label{label("tap_target", "#inj-prev", design.Mobile), label("tap_target", "#inj-next", design.Mobile)}},
	{"unnamed_control", "rust-doc/html/std/fs/fn.read_to_string.html",
		`<button id="inj-unnamed" type="button" style="width:40px;height:40px"><svg width="16" height="16" viewBox="0 0 16 16"><path d="M2 8h12" stroke="#000"/></svg></button>`,
		[]corpus.Label{label("unnamed_control", "#inj-unnamed", both...)}},
	{"font_fallback", "sqlite3/quickstart.html",
		`<style>@font-face { font-family: "Injected Face"; src: url(/missing/injected-face.woff2) format("woff2"); }</style><p id="inj-font" style="font-family:'Injected Face', serif">Set in the brand face.</p>`,
		[]corpus.Label{label("font_fallback", "#inj-font", both...)}},
	{"text_clipped", "gettext/gettext_2.html",
		`<div id="inj-clip" style="width:140px;height:22px;overflow:hidden;white-space:nowrap;border:1px solid #888888">Subscription renews automatically every month</div>`,
		[]corpus.Label{label("text_clipped", "#inj-clip", both...)}},
	{"overlap", "rust-doc/html/book/ch03-01-variables-and-mutability.html",
		`<div id="inj-overlap"><h3 id="inj-overlap-title">Quarterly summary</h3><p id="inj-overlap-text" style="margin-top:-1.6em">Revenue grew in every region.</p></div>`,
		[]corpus.Label{label("overlap", "#inj-overlap-text", both...)}},
	{"broken_image", "rust-doc/html/std/fs/fn.read_to_string.html",
		`<img id="inj-img" src="/missing/chart.png" alt="Sales chart" width="240" height="120">`,
		[]corpus.Label{label("broken_image", "#inj-img", both...)}},
}

var (
	firstH1   = regexp.MustCompile(`(?is)<h1[\s>].*?</h1>`)
	bodyStart = regexp.MustCompile(`(?is)<body[^>]*>`)
)

// inject returns page with snippet after its first h1, else at the top of
// its body.
func inject(page []byte, snippet string) []byte {
	for _, re := range []*regexp.Regexp{firstH1, bodyStart} {
		if loc := re.FindIndex(page); loc != nil {
			return slices.Concat(page[:loc[1]], []byte(snippet), page[loc[1]:])
		}
	}
	return append([]byte(snippet), page...)
}

// realWorldHandler serves root, and /inject/NAME/PATH as PATH with defect
// NAME injected into a copy made per request when PATH is the defect's
// host page. Everything else under /inject/NAME/ (the page's stylesheets,
// scripts and images, which it names relative to itself) is served as it
// is, so the injected copy renders exactly as its host does.
func realWorldHandler(root string) http.Handler {
	files := http.FileServer(http.Dir(root))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/inject/")
		if !ok {
			files.ServeHTTP(w, r)
			return
		}
		name, file, _ := strings.Cut(rest, "/")
		i := slices.IndexFunc(defects, func(d defect) bool { return d.name == name })
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		if file != defects[i].host {
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/" + file
			files.ServeHTTP(w, r2)
			return
		}
		page, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(inject(page, defects[i].snippet))
	})
}

// realWorldEngine is an engine wired like `bastion review --allow-private`
// (engine/local's corpus tests wire theirs the same way) with room for
// real pages, which are larger than the corpus's: these tests judge what the checks find, not
// how fast a loaded machine captures.
func realWorldEngine(t *testing.T) *local.Engine {
	t.Helper()
	chrome := testenv.Chromium(t)
	guard := localGuard()
	proxy, err := browserproxy.New(guard, browserproxy.Options{AllowHTTP: true, RequireAuth: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	pool, err := capture.NewPool(context.Background(), capture.Options{
		Chrome: chrome, ProxyAddr: proxy.Addr(), Sessions: proxy, Logger: quiet, MaxConcurrent: 2 * runtime.NumCPU(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return local.New(pool, guard, local.Options{Logger: quiet, Timeout: 20 * time.Minute})
}

// reviewAll reviews each route at the real-world viewports and returns the
// findings by route (without its leading "/"). A route that was not
// reviewed at every viewport fails the test.
func reviewAll(t *testing.T, eng *local.Engine, base string, routes []string) map[string][]design.Finding {
	t.Helper()
	var mu sync.Mutex
	got := map[string][]design.Finding{}
	sem := make(chan struct{}, pagesInFlight)
	var wg sync.WaitGroup
	for _, route := range routes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := eng.Review(context.Background(), engine.Request{URL: base + "/", Routes: []string{"/" + route}, Viewports: realWorldViewports})
			if err != nil {
				t.Errorf("%s: Review: %v", route, err)
				return
			}
			if !slices.Equal(res.Coverage.ViewportsReviewed, realWorldViewports) {
				t.Errorf("%s: reviewed %v, skipped %+v; want every viewport", route, res.Coverage.ViewportsReviewed, res.Coverage.Skipped)
			}
			mu.Lock()
			got[route] = res.Findings
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

// TestRealWorld reviews the labelled real pages and the injected copies,
// prints precision per kind for both, and judges the totals against the
// goals (precision ≥ 0.9 on the real pages, at most one unconfirmed finding
// per two clean pages, precision and recall ≥ 0.9 on the injected defects)
// and the floors below them (see judgeFigure).
func TestRealWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("reviews real documentation sites in Chromium; skipped under -short")
	}
	t.Parallel()
	set := loadSet(t, regressionLabels)
	defects := defects
	judge := judgeFigure
	if *realWorldOnly != "" {
		only := func(path string) bool { return strings.Contains(path, *realWorldOnly) }
		set.Pages = slices.DeleteFunc(set.Pages, func(p corpus.Page) bool { return !only(p.File) })
		defects = slices.DeleteFunc(slices.Clone(defects), func(d defect) bool { return !only(d.host) })
		judge = func(t *testing.T, name string, got, goal, _ float64, _ bool) {
			t.Logf("%s %.3f over the pages matching -realworld.only=%q (the goal is %.2f; floors not judged)", name, got, *realWorldOnly, goal)
		}
	}
	eng := realWorldEngine(t)
	srv := httptest.NewServer(realWorldHandler(set.Root))
	t.Cleanup(srv.Close)
	base := srv.URL

	routes := make([]string, 0, len(set.Pages)+len(defects))
	for _, p := range set.Pages {
		routes = append(routes, p.File)
	}
	// The injected copies, scored as pages of their own: their labels are
	// the host page's plus the defect's.
	injected := &corpus.Corpus{}
	for _, d := range defects {
		i := slices.IndexFunc(set.Pages, func(p corpus.Page) bool { return p.File == d.host })
		if i < 0 {
			t.Fatalf("defect %s: host %s is not a labelled page", d.name, d.host)
		}
		route := "inject/" + d.name + "/" + d.host
		routes = append(routes, route)
		injected.Pages = append(injected.Pages, corpus.Page{File: route, Expect: slices.Concat(set.Pages[i].Expect, d.expect)})
	}
	got := reviewAll(t, eng, base, routes)
	// Each set is scored on its own routes only: Match counts every
	// finding of an unlabelled route as false.
	realGot, injGot := map[string][]design.Finding{}, map[string][]design.Finding{}
	for route, fs := range got {
		if strings.HasPrefix(route, "inject/") {
			injGot[route] = fs
		} else {
			realGot[route] = fs
		}
	}

	real := &corpus.Corpus{Dir: set.Root, Pages: set.Pages}
	rep := real.Match(realGot, realWorldViewports, local.CheckKinds())
	t.Logf("real pages: per-kind precision over %d pages × %d viewports:\n%s", len(set.Pages), len(realWorldViewports), rep.Table())
	logMisses(t, rep, realGot)
	tp, fp := 0, 0
	for _, s := range rep.Kinds {
		tp, fp = tp+s.TP, fp+s.FP
	}
	judge(t, "real pages: precision", ratio(tp, tp+fp), realWorldPrecision, floorRealWorldPrecision, true)
	clean := 0
	for _, p := range set.Pages {
		if p.Clean {
			clean++
		}
	}
	t.Logf("clean real pages: %d unconfirmed findings on %d pages", len(rep.CleanHits), clean)
	judge(t, "clean real pages: unconfirmed findings a page", float64(len(rep.CleanHits))/float64(max(clean, 1)), maxCleanPerPage, floorMaxCleanPerPage, false)

	irep := injected.Match(injGot, realWorldViewports, local.CheckKinds())
	t.Logf("injected defects: per-kind precision and recall over %d copies:\n%s", len(defects), irep.Table())
	logMisses(t, irep, injGot)
	tp, fp, fn := 0, 0, 0
	for _, s := range irep.Kinds {
		tp, fp, fn = tp+s.TP, fp+s.FP, fn+s.FN
	}
	judge(t, "injected defects: precision", ratio(tp, tp+fp), injectedPrecision, floorInjectedPrecision, true)
	judge(t, "injected defects: recall", ratio(tp, tp+fn), injectedRecall, floorInjectedRecall, true)
}

// TestInject: the snippet lands after the first h1, else after <body>.
func TestInject(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`<body class="x"><H1 id="t">T</H1><p>a</p>`, `<body class="x"><H1 id="t">T</H1>SNIP<p>a</p>`},
		{`<html><body><p>a</p>`, `<html><body>SNIP<p>a</p>`},
		{`<p>a</p>`, `SNIP<p>a</p>`},
	} {
		if got := inject([]byte(c.in), "SNIP"); !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("inject(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}
