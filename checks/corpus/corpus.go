// Package corpus loads bastion's labeled page corpus (checks/testdata/corpus)
// and scores findings against its labels, so the checks' own test and the
// engine's end-to-end test measure precision and recall the same way.
//
// Invariants: a label names one expected finding by (kind, selector,
// viewport); a label is found at most once; clean pages expect none.
package corpus

import (
	"encoding/json"
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
)

// Label is one expected finding.
type Label struct {
	Kind      string            `json:"kind"`
	Selector  string            `json:"selector"`
	Viewports []design.Viewport `json:"viewports"`
	Note      string            `json:"note,omitempty"`
}

// Page is one corpus page and what a review of it must find.
type Page struct {
	File   string   `json:"file"` // relative to the corpus directory, served at "/"+File
	Kind   string   `json:"kind"` // pricing, signup, dashboard, ...
	Clean  bool     `json:"clean"`
	Tokens string   `json:"tokens"` // "file" (tokens.json), "root" (:root custom properties) or "none"
	Expect []Label  `json:"expect"`
	Traps  []string `json:"traps,omitempty"` // what is there on purpose and must not be flagged
}

// Corpus is the loaded corpus.
type Corpus struct {
	Dir    string
	Tokens []byte // tokens.json
	Pages  []Page
}

// Dir returns the corpus directory in this source tree.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "corpus")
}

// Load reads labels.json and tokens.json from dir.
func Load(dir string) (*Corpus, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "labels.json"))
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	c := &Corpus{Dir: dir}
	if err := json.Unmarshal(raw, &struct {
		Pages *[]Page `json:"pages"`
	}{&c.Pages}); err != nil {
		return nil, fmt.Errorf("corpus: labels.json: %w", err)
	}
	if c.Tokens, err = os.ReadFile(filepath.Join(dir, "tokens.json")); err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	for _, p := range c.Pages {
		if _, err := os.Stat(filepath.Join(dir, p.File)); err != nil {
			return nil, fmt.Errorf("corpus: page %s: %w", p.File, err)
		}
		if p.Clean && len(p.Expect) > 0 {
			return nil, fmt.Errorf("corpus: clean page %s expects findings", p.File)
		}
	}
	return c, nil
}

// Key identifies one expected or reported finding.
type Key struct {
	Page, Kind, Selector string
	Viewport             design.Viewport
}

func (k Key) String() string {
	return fmt.Sprintf("%s %s %s @%s", k.Page, k.Kind, k.Selector, k.Viewport)
}

// Score is one kind's tally.
type Score struct {
	Kind               string
	TP, FP, FN         int
	Precision, Recall  float64
	FalsePos, FalseNeg []Key
}

// Report is a scored run.
type Report struct {
	Kinds     []Score
	CleanHits []Key // findings on clean pages
}

// Match scores findings (per page file; each finding may span viewports)
// against the labels for the viewports that were reviewed. kinds lists every
// kind to report, so kinds with no labels and no findings still show.
//
// A finding covers its own selector and those in its facts' "also" list,
// because a check reports a recurring defect (one colour pair, one size) as
// one finding naming its first instance and listing the rest. A finding is
// true when it covers a label of its kind and viewport, false otherwise; a
// label is found once however many findings cover it, and missed when none
// does. So TP counts true findings and FN unfound labels.
func (c *Corpus) Match(got map[string][]design.Finding, viewports []design.Viewport, kinds []string) Report {
	want := map[Key]bool{}
	clean := map[string]bool{}
	for _, p := range c.Pages {
		clean[p.File] = p.Clean
		for _, l := range p.Expect {
			for _, v := range l.Viewports {
				if slices.Contains(viewports, v) {
					want[Key{p.File, l.Kind, l.Selector, v}] = true
				}
			}
		}
	}
	found := map[Key]bool{}
	truth := map[Key]bool{} // each reported finding, by its own selector: true or not
	var rep Report
	for page, fs := range got {
		for _, f := range fs {
			for _, v := range f.Viewports {
				k := Key{page, f.Kind, f.Selector, v}
				if clean[page] {
					rep.CleanHits = append(rep.CleanHits, k)
				}
				for _, sel := range append([]string{f.Selector}, also(f)...) {
					if l := (Key{page, f.Kind, sel, v}); want[l] {
						found[l] = true
						truth[k] = true
					}
				}
				if !truth[k] {
					truth[k] = false
				}
			}
		}
	}
	by := map[string]*Score{}
	for _, k := range kinds {
		by[k] = &Score{Kind: k}
	}
	score := func(kind string) *Score {
		if by[kind] == nil {
			by[kind] = &Score{Kind: kind}
		}
		return by[kind]
	}
	for k, ok := range truth {
		if ok {
			score(k.Kind).TP++
		} else {
			s := score(k.Kind)
			s.FP++
			s.FalsePos = append(s.FalsePos, k)
		}
	}
	for k := range want {
		if !found[k] {
			s := score(k.Kind)
			s.FN++
			s.FalseNeg = append(s.FalseNeg, k)
		}
	}
	for _, s := range by {
		s.Precision, s.Recall = Ratio(s.TP, s.TP+s.FP), Ratio(s.TP, s.TP+s.FN)
		sortKeys(s.FalsePos)
		sortKeys(s.FalseNeg)
		rep.Kinds = append(rep.Kinds, *s)
	}
	order := map[string]int{}
	for i, k := range kinds {
		order[k] = i + 1
	}
	sort.Slice(rep.Kinds, func(i, j int) bool {
		oi, oj := order[rep.Kinds[i].Kind], order[rep.Kinds[j].Kind]
		if oi != oj {
			return oi != 0 && (oj == 0 || oi < oj)
		}
		return rep.Kinds[i].Kind < rep.Kinds[j].Kind
	})
	sortKeys(rep.CleanHits)
	return rep
}

// also is a finding's facts.also: a []string when the check made it, a
// []any when it was read back from JSON.
func also(f design.Finding) []string {
	switch v := f.Facts["also"].(type) {
	case []string:
		return v
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Ratio is a/b, and 1 when there is nothing to count: an empty kind
// scores 1, so a kind with no labels and no findings never drags a figure.
func Ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func sortKeys(ks []Key) {
	sort.Slice(ks, func(i, j int) bool { return ks[i].String() < ks[j].String() })
}

// Table renders the per-kind scores as aligned text.
func (r Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %4s %4s %4s %9s %7s\n", "kind", "TP", "FP", "FN", "precision", "recall")
	tp, fp, fn := 0, 0, 0
	for _, s := range r.Kinds {
		fmt.Fprintf(&b, "%-18s %4d %4d %4d %9.3f %7.3f\n", s.Kind, s.TP, s.FP, s.FN, s.Precision, s.Recall)
		tp, fp, fn = tp+s.TP, fp+s.FP, fn+s.FN
	}
	fmt.Fprintf(&b, "%-18s %4d %4d %4d %9.3f %7.3f\n", "all", tp, fp, fn, Ratio(tp, tp+fp), Ratio(tp, tp+fn))
	return b.String()
}

// Misses lists every false positive (with the finding behind it, from got)
// and every false negative of r, one per line; empty when there are none.
func (r Report) Misses(got map[string][]design.Finding) string {
	var b strings.Builder
	for _, s := range r.Kinds {
		for _, k := range s.FalsePos {
			fmt.Fprintf(&b, "false positive: %s — %s\n", k, describe(got, k))
		}
		for _, k := range s.FalseNeg {
			fmt.Fprintf(&b, "false negative: %s\n", k)
		}
	}
	return b.String()
}

// describe names the finding behind a scored key.
func describe(got map[string][]design.Finding, k Key) string {
	for _, f := range got[k.Page] {
		if f.Kind == k.Kind && f.Selector == k.Selector && slices.Contains(f.Viewports, k.Viewport) {
			facts, _ := json.Marshal(f.Facts)
			return fmt.Sprintf("%s [%s] %s", f.Title, f.Severity, facts)
		}
	}
	return ""
}
