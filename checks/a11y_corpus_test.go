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
// and scores each kind: precision must be 1 and recall at least 0.93, the
// figures axe-core reaches on cases of this kind.
func TestAccessibilityCases(t *testing.T) {
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
	b := newBrowser(t)
	base := serveCorpus(t, dir)

	var mu sync.Mutex
	got := map[string][]design.Finding{}
	queue := make(chan a11yCase)
	var wg sync.WaitGroup
	for range 2 {
		tb := frozenTab(t, b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer tb.cancel()
			for c := range queue {
				s := tb.snapshot(t, base+"/"+c.File, design.Desktop)
				fs := checks.Run(s, checks.Config{})
				mu.Lock()
				got[c.File] = fs
				mu.Unlock()
			}
		}()
	}
	for _, c := range labels.Cases {
		if *onlyCase == "" || c.File == *onlyCase {
			queue <- c
		}
	}
	close(queue)
	wg.Wait()

	kinds, classes := map[string]*a11yTally{}, map[string]*a11yTally{}
	tally := func(m map[string]*a11yTally, k string) *a11yTally {
		if m[k] == nil {
			m[k] = &a11yTally{}
		}
		return m[k]
	}
	for _, c := range labels.Cases {
		fs, ok := got[c.File]
		if !ok {
			continue
		}
		tp, fp, fn := 0, 0, 0
		hit := false
		for _, f := range fs {
			if *onlyCase != "" {
				t.Logf("%s %s advisory=%v %s %v", f.Kind, f.Selector, f.Advisory, f.Title, f.Facts)
			}
			if f.Kind != c.Kind {
				continue
			}
			if c.Expect == "failed" && (f.Selector == c.Selector || slices.Contains(alsoSelectors(f), c.Selector)) {
				hit = true
				continue
			}
			fp++
			t.Logf("false positive: %s (%s): %s on %s %v", c.File, c.Note, f.Title, f.Selector, f.Facts)
		}
		if c.Expect == "failed" {
			if hit {
				tp = 1
			} else {
				fn = 1
				t.Logf("missed: %s (%s): want %s on %s", c.File, c.Note, c.Kind, c.Selector)
			}
		}
		if fp > 1 {
			fp = 1 // one verdict per case
		}
		for _, x := range []*a11yTally{tally(kinds, c.Kind), tally(classes, c.Kind+"/"+c.Class)} {
			x.tp, x.fp, x.fn, x.cases = x.tp+tp, x.fp+fp, x.fn+fn, x.cases+1
		}
	}
	var tbl strings.Builder
	row := func(name string, x *a11yTally) {
		fmt.Fprintf(&tbl, "%-34s %5d %4d %4d %4d %9.2f %6.2f\n", name, x.cases, x.tp, x.fp, x.fn, x.precision(), x.recall())
	}
	fmt.Fprintf(&tbl, "%-34s %5s %4s %4s %4s %9s %6s\n", "kind", "cases", "tp", "fp", "fn", "precision", "recall")
	for _, k := range sortedKeys(kinds) {
		row(k, kinds[k])
	}
	fmt.Fprintf(&tbl, "by class:\n")
	for _, k := range sortedKeys(classes) {
		row("  "+k, classes[k])
	}
	t.Logf("accessibility cases (desktop):\n%s", tbl.String())
	if *onlyCase != "" {
		return
	}
	for _, k := range sortedKeys(kinds) {
		if x := kinds[k]; x.precision() < 1 || x.recall() < 0.93 {
			t.Errorf("%s: precision %.2f recall %.2f; want 1.00 and at least 0.93", k, x.precision(), x.recall())
		}
	}
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
