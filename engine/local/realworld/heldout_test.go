package realworld_test

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/checks/corpus"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/engine/local"
)

// The held-out real-world set (issue 12 §3): pages of Debian documentation
// sites that TestRealWorld's set does not use (DocBook XSL:
// debian-reference-en, maint-guide; Sphinx: developers-reference,
// cmake-doc; Doxygen: doxygen-doc), labelled in testdata/heldout.json by
// this protocol, which its "method" field repeats:
//
//  1. The labels were written BEFORE any review of these pages was run, from
//     full-page screenshots at the mobile (390 px, mobile emulation) and
//     desktop (1440 px) viewports, looked at by the labeller, and from the
//     labeller's own measurements (TestLabelSurvey: computed styles read
//     in the page and colours re-read from the screenshot's pixels; never
//     bastion's collector, checks or findings), by the checks' documented
//     rules (WCAG 1.4.3 contrast, 2.5.8's 24 px targets with its inline,
//     spacing and user-agent exceptions, the layout kinds' rules in
//     checks/layout.go). A recurring defect is labelled on its first
//     instance in document order, as the checks report it.
//  2. Then the review ran, and every finding that matched no blind label was
//     measured independently: a real defect by the rule became a label
//     marked "adjudicated" (a true positive for precision, reported apart
//     as found by bastion and missed by the labeller), anything else stays
//     a false positive and is listed under the page's "rejected" with the
//     measurement. A blind label was changed afterwards only to correct a
//     selector naming the same element (its note says so).
//  3. The figures are precision and recall per kind and overall, blind
//     recall (blind labels found) and the adjudication counts.
//
// NO LONGER HELD OUT (2026-12-02): after the first figures (precision
// 0.975, recall 0.969, blind recall 0.962, 4 unconfirmed findings on the 2
// clean pages, two runs alike), four check bugs these pages showed were
// fixed while looking at them (font-size 0 text judged as small text;
// spacing_rhythm's likeness by markup alone; a cast text-shadow sampled as
// the background; the last screen of a sideways-overflowing phone page
// never hit-tested). The checks are now tuned on this set, so it is a
// second regression set, no longer a measure of pages nobody tuned on. Its
// blind labels were kept; the adjudicated labels that named further
// instances of one colour pair (reported apart only because of the shadow
// bug) were removed, since a recurring defect is labelled once.
//
// The floors below are a ratchet just under the figures measured after
// those fixes (2026-12-02: precision 1.000, recall 1.000, blind recall
// 1.000 over 141 true findings, no finding on the 2 clean pages), not
// goals: a change that lowers a figure fails (0.99 leaves room for one
// finding's flake, not two), and a change that raises one should raise its
// floor. Issue 12's goals (precision 0.9, at most one unconfirmed finding
// per two clean pages) are logged beside them.
const (
	floorHeldOutPrecision   = 0.99
	floorHeldOutRecall      = 0.99
	floorHeldOutBlindRecall = 0.99
	ceilHeldOutCleanPerPage = 0.5 // unconfirmed findings per clean page: lower is better
)

// -heldout.only narrows TestHeldOut to the pages whose path contains it,
// as -realworld.only does TestRealWorld: the figures then cover only those
// pages, and the floors are not judged.
var heldOutOnly = flag.String("heldout.only", "", "review only the held-out pages whose path contains this")

// heldOutLabel is a corpus.Label that may have been added after the review.
type heldOutLabel struct {
	corpus.Label
	Adjudicated bool `json:"adjudicated,omitempty"`
}

// heldOutPage is one page of heldout.json.
type heldOutPage struct {
	File     string         `json:"file"`
	Kind     string         `json:"kind"`
	Clean    bool           `json:"clean"`
	Expect   []heldOutLabel `json:"expect"`
	Rejected []rejected     `json:"rejected,omitempty"`
}

// rejected is a finding judged false on adjudication, and why.
type rejected struct {
	Kind      string            `json:"kind"`
	Selector  string            `json:"selector"`
	Viewports []design.Viewport `json:"viewports"`
	Note      string            `json:"note"`
}

// loadHeldOut reads heldout.json (loadSet skips without its packages) and
// returns the corpus of every label and the one of the blind labels only.
func loadHeldOut(t *testing.T) (all, blind *corpus.Corpus, pages []heldOutPage) {
	t.Helper()
	set := loadSet(t, heldOutLabels)
	if !strings.Contains(set.Method, "BEFORE") {
		t.Fatalf("%s: the method field must state the blind protocol", heldOutLabels)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", heldOutLabels))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Pages []heldOutPage `json:"pages"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	all, blind = &corpus.Corpus{Dir: set.Root}, &corpus.Corpus{Dir: set.Root}
	for _, p := range f.Pages {
		a, b := corpus.Page{File: p.File, Kind: p.Kind, Clean: p.Clean}, corpus.Page{File: p.File, Kind: p.Kind, Clean: p.Clean}
		for _, l := range p.Expect {
			a.Expect = append(a.Expect, l.Label)
			if !l.Adjudicated {
				b.Expect = append(b.Expect, l.Label)
			}
		}
		all.Pages, blind.Pages = append(all.Pages, a), append(blind.Pages, b)
	}
	return all, blind, f.Pages
}

// TestHeldOut reviews the held-out pages, prints per-kind precision and
// recall over every label and blind recall over the blind ones, counts the
// adjudications, and fails below the ratchet floors.
func TestHeldOut(t *testing.T) {
	if testing.Short() {
		t.Skip("reviews real documentation sites in Chromium; skipped under -short")
	}
	t.Parallel()
	all, blind, pages := loadHeldOut(t)
	floor := judgeFloor
	if *heldOutOnly != "" {
		only := func(p string) bool { return strings.Contains(p, *heldOutOnly) }
		pages = slices.DeleteFunc(pages, func(p heldOutPage) bool { return !only(p.File) })
		all.Pages = slices.DeleteFunc(all.Pages, func(p corpus.Page) bool { return !only(p.File) })
		blind.Pages = slices.DeleteFunc(blind.Pages, func(p corpus.Page) bool { return !only(p.File) })
		floor = func(t *testing.T, name string, got, _ float64) {
			t.Logf("%s %.3f over the pages matching -heldout.only=%q (floors not judged)", name, got, *heldOutOnly)
		}
	}
	clean, adjudicated, rejections := 0, 0, 0
	for _, p := range pages {
		if p.Clean {
			clean++
		}
		for _, l := range p.Expect {
			if l.Adjudicated {
				adjudicated++
			}
		}
		for _, r := range p.Rejected {
			rejections += len(r.Viewports)
		}
	}
	if *heldOutOnly == "" && (len(pages) < 8 || clean < 2) {
		t.Errorf("held-out set has %d pages, %d clean; want at least 8 and 2", len(pages), clean)
	}
	eng := realWorldEngine(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(all.Dir)))
	t.Cleanup(srv.Close)
	routes := make([]string, 0, len(pages))
	for _, p := range pages {
		routes = append(routes, p.File)
	}
	got := reviewAll(t, eng, srv.URL, routes)

	rep := all.Match(got, realWorldViewports, local.CheckKinds())
	t.Logf("held-out pages: per-kind precision and recall over %d pages × %d viewports (blind and adjudicated labels):\n%s", len(pages), len(realWorldViewports), rep.Table())
	logMisses(t, rep, got)
	brep := blind.Match(got, realWorldViewports, local.CheckKinds())
	t.Logf("held-out pages: blind labels only (recall is what bastion found of what the labeller saw):\n%s", brep.Table())
	tp, fp, fn := totals(rep)
	_, _, bfn := totals(brep)
	blindN := labelCount(blind)
	t.Logf("adjudication: %d labels found by bastion and missed by the labeller (adjudicated), %d findings × viewports judged false (rejected); %d of the %d false positives now are not adjudicated yet",
		adjudicated, rejections, unadjudicated(rep, pages), fp)
	perClean := float64(len(rep.CleanHits)) / float64(max(clean, 1))
	t.Logf("clean pages: %d unconfirmed findings on %d pages (issue 12's goal: at most 0.5 a page)", len(rep.CleanHits), clean)
	if *heldOutOnly == "" && perClean > ceilHeldOutCleanPerPage+1e-9 {
		t.Errorf("held-out clean pages: %.2f unconfirmed findings a page, above the ratchet ceiling %.2f (a regression)", perClean, ceilHeldOutCleanPerPage)
	}
	floor(t, "held-out precision (goal 0.9)", ratio(tp, tp+fp), floorHeldOutPrecision)
	floor(t, "held-out recall", ratio(tp, tp+fn), floorHeldOutRecall)
	floor(t, "held-out blind recall", ratio(blindN-bfn, blindN), floorHeldOutBlindRecall)
}

// unadjudicated counts the false positives of rep that no "rejected"
// entry names: findings that appeared after the adjudication and still
// need one (a real defect becomes an adjudicated label, anything else a
// rejection).
func unadjudicated(rep corpus.Report, pages []heldOutPage) int {
	known := map[corpus.Key]bool{}
	for _, p := range pages {
		for _, r := range p.Rejected {
			for _, v := range r.Viewports {
				known[corpus.Key{Page: p.File, Kind: r.Kind, Selector: r.Selector, Viewport: v}] = true
			}
		}
	}
	n := 0
	for _, s := range rep.Kinds {
		for _, k := range s.FalsePos {
			if !known[k] {
				n++
			}
		}
	}
	return n
}

// totals sums a report's kinds.
func totals(rep corpus.Report) (tp, fp, fn int) {
	for _, s := range rep.Kinds {
		tp, fp, fn = tp+s.TP, fp+s.FP, fn+s.FN
	}
	return tp, fp, fn
}

// labelCount counts c's labels at the reviewed viewports, one per
// (page, kind, selector, viewport) as corpus.Match keys them: a report's
// TP counts true findings, which grouped findings make differ from the
// labels found.
func labelCount(c *corpus.Corpus) int {
	keys := map[corpus.Key]bool{}
	for _, p := range c.Pages {
		for _, l := range p.Expect {
			for _, v := range l.Viewports {
				if slices.Contains(realWorldViewports, v) {
					keys[corpus.Key{Page: p.File, Kind: l.Kind, Selector: l.Selector, Viewport: v}] = true
				}
			}
		}
	}
	return len(keys)
}

// judgeFloor fails t when got is below floor, and logs the figure.
func judgeFloor(t *testing.T, name string, got, floor float64) {
	t.Helper()
	if got < floor-1e-9 {
		t.Errorf("%s %.3f: below the ratchet floor %.3f (a regression)", name, got, floor)
		return
	}
	t.Logf("%s %.3f (ratchet floor %.3f)", name, got, floor)
}
