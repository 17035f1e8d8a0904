package checks_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
)

var onlyCase = flag.String("a11y.case", "", "run TestAccessibilityCases on this case file only and log its findings")

// a11yCase is one small page of testdata/a11y: one kind, one verdict.
type a11yCase struct {
	File     string `json:"file"`
	Kind     string `json:"kind"`
	Expect   string `json:"expect"` // "failed": a finding of Kind on Selector; "passed": no finding of Kind
	Class    string `json:"class"`
	Note     string `json:"note"`
	Selector string `json:"selector,omitempty"`
}

// a11yTally is one kind's (or class's) score.
type a11yTally struct{ tp, fp, fn, cases int }

func (t a11yTally) precision() float64 {
	if t.tp+t.fp == 0 {
		return 1
	}
	return float64(t.tp) / float64(t.tp+t.fp)
}

func (t a11yTally) recall() float64 {
	if t.tp+t.fn == 0 {
		return 1
	}
	return float64(t.tp) / float64(t.tp+t.fn)
}

// frozenTab opens a tab that loads pages the way a capture does: the
// capture's freeze script runs in every document before the page's own.
func frozenTab(t testing.TB, b *browser) *tab {
	t.Helper()
	tb := b.newTab(t)
	if _, err := chromedp.Call(tb.ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: capture.FreezeScript}); err != nil {
		tb.cancel()
		t.Fatalf("adding the freeze script: %v", err)
	}
	return tb
}

// TestAccessibilityCases runs the labelled accessibility cases of
// testdata/a11y (contrast, accessible names, clipped text, each with its
// published exceptions) through the capture and the checks in real Chromium
// and scores each kind: precision must be 1 and recall at least 0.93.
// Its subtest "axe-core" scores axe-core on the same cases (compareWithAxe).
func TestAccessibilityCases(t *testing.T) {
	cases, base, b := openA11yCases(t)
	got := reviewA11yCases(t, b, base, cases)
	score := newA11yScore()
	for _, c := range cases {
		fs, ok := got[c.File]
		if !ok {
			continue
		}
		if *onlyCase != "" {
			for _, f := range fs {
				t.Logf("%s %s advisory=%v %s %v", f.Kind, f.Selector, f.Advisory, f.Title, f.Facts)
			}
		}
		score.add(t, "bastion", c, bastionFlags(c, fs))
	}
	var tbl strings.Builder
	row := func(name string, x *a11yTally) {
		fmt.Fprintf(&tbl, "%-34s %5d %4d %4d %4d %9.2f %6.2f\n", name, x.cases, x.tp, x.fp, x.fn, x.precision(), x.recall())
	}
	fmt.Fprintf(&tbl, "%-34s %5s %4s %4s %4s %9s %6s\n", "kind", "cases", "tp", "fp", "fn", "precision", "recall")
	for _, k := range sortedKeys(score.kinds) {
		row(k, score.kinds[k])
	}
	fmt.Fprintf(&tbl, "by class:\n")
	for _, k := range sortedKeys(score.classes) {
		row("  "+k, score.classes[k])
	}
	t.Logf("accessibility cases (desktop):\n%s", tbl.String())
	if *onlyCase == "" {
		for _, k := range sortedKeys(score.kinds) {
			if x := score.kinds[k]; x.precision() < 1 || x.recall() < 0.93 {
				t.Errorf("%s: precision %.2f recall %.2f; want 1.00 and at least 0.93", k, x.precision(), x.recall())
			}
		}
	}
	t.Run("axe-core", func(t *testing.T) { compareWithAxe(t, b, base, cases, got) })
}

// openA11yCases reads testdata/a11y/labels.json (only the -a11y.case file
// when that is set), serves the directory on loopback and starts Chromium.
func openA11yCases(t *testing.T) ([]a11yCase, string, *browser) {
	t.Helper()
	dir := filepath.Join("testdata", "a11y")
	raw, err := os.ReadFile(filepath.Join(dir, "labels.json"))
	if err != nil {
		t.Fatal(err)
	}
	var labels struct{ Cases []a11yCase }
	if err := json.Unmarshal(raw, &labels); err != nil {
		t.Fatal(err)
	}
	if *onlyCase == "" && len(labels.Cases) < 60 {
		t.Errorf("%d cases; want at least 60", len(labels.Cases))
	}
	var cases []a11yCase
	for _, c := range labels.Cases {
		if *onlyCase == "" || c.File == *onlyCase {
			cases = append(cases, c)
		}
	}
	return cases, serveCorpus(t, dir), newBrowser(t)
}

// eachA11yCase calls do for every case on one of two tabs that load pages
// the way a capture does; calls on different tabs run concurrently.
func eachA11yCase(t *testing.T, b *browser, cases []a11yCase, do func(tb *tab, c a11yCase)) {
	t.Helper()
	queue := make(chan a11yCase)
	var wg sync.WaitGroup
	for range 2 {
		tb := frozenTab(t, b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer tb.cancel()
			for c := range queue {
				do(tb, c)
			}
		}()
	}
	for _, c := range cases {
		queue <- c
	}
	close(queue)
	wg.Wait()
}

// reviewA11yCases collects every case at the desktop viewport and runs the
// checks on it: the findings by case file.
func reviewA11yCases(t *testing.T, b *browser, base string, cases []a11yCase) map[string][]design.Finding {
	t.Helper()
	var mu sync.Mutex
	got := map[string][]design.Finding{}
	eachA11yCase(t, b, cases, func(tb *tab, c a11yCase) {
		s := tb.snapshot(t, base+"/"+c.File, design.Desktop)
		fs := checks.Run(s, checks.Config{})
		mu.Lock()
		got[c.File] = fs
		mu.Unlock()
	})
	return got
}

// a11yFlag is one element a judge (bastion or axe-core) flagged for a
// case's kind: whether it is the case's labelled element, and what to log.
type a11yFlag struct {
	onTarget bool
	what     string
}

// bastionFlags are the findings of c's kind; one is on target when its
// selector, or one of the selectors it also stands for, is c's.
func bastionFlags(c a11yCase, fs []design.Finding) []a11yFlag {
	var flags []a11yFlag
	for _, f := range fs {
		if f.Kind != c.Kind {
			continue
		}
		on := f.Selector == c.Selector || slices.Contains(alsoSelectors(f), c.Selector)
		flags = append(flags, a11yFlag{onTarget: on, what: fmt.Sprintf("%s on %s %v", f.Title, f.Selector, f.Facts)})
	}
	return flags
}

// a11yScore is one judge's tallies by kind and by kind/class.
type a11yScore struct{ kinds, classes map[string]*a11yTally }

func newA11yScore() *a11yScore {
	return &a11yScore{kinds: map[string]*a11yTally{}, classes: map[string]*a11yTally{}}
}

// add scores one case, one verdict per case: a true positive when a flag
// is on the labelled element of a failed case, a false negative when none
// is, and a false positive when any flag is elsewhere (on a passed case,
// any flag at all). It logs the misses and false positives as judge's.
func (s *a11yScore) add(t *testing.T, judge string, c a11yCase, flags []a11yFlag) (tp, fp, fn int) {
	t.Helper()
	hit := false
	for _, f := range flags {
		if c.Expect == "failed" && f.onTarget {
			hit = true
			continue
		}
		if fp == 0 {
			fp = 1
		}
		t.Logf("%s false positive: %s (%s): %s", judge, c.File, c.Note, f.what)
	}
	if c.Expect == "failed" {
		if hit {
			tp = 1
		} else {
			fn = 1
			t.Logf("%s missed: %s (%s): want %s on %s", judge, c.File, c.Note, c.Kind, c.Selector)
		}
	}
	for _, x := range []*a11yTally{tallyOf(s.kinds, c.Kind), tallyOf(s.classes, c.Kind+"/"+c.Class)} {
		x.tp, x.fp, x.fn, x.cases = x.tp+tp, x.fp+fp, x.fn+fn, x.cases+1
	}
	return tp, fp, fn
}

func tallyOf(m map[string]*a11yTally, k string) *a11yTally {
	if m[k] == nil {
		m[k] = &a11yTally{}
	}
	return m[k]
}

func alsoSelectors(f design.Finding) []string {
	l, _ := f.Facts["also"].([]string)
	return l
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
