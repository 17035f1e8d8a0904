package corpus_test

import (
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/checks/corpus"
	"github.com/bastion-mcp/bastion/design"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	c, err := corpus.Load(corpus.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pages) < 25 || len(c.Tokens) == 0 {
		t.Errorf("%d pages, %d token bytes", len(c.Pages), len(c.Tokens))
	}
	if _, err := corpus.Load(t.TempDir()); err == nil {
		t.Error("Load of an empty directory succeeded")
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	c := &corpus.Corpus{Pages: []corpus.Page{
		{File: "a.html", Expect: []corpus.Label{
			{Kind: "contrast", Selector: "p.x", Viewports: []design.Viewport{design.Mobile, design.Desktop}},
			{Kind: "overlap", Selector: "h2", Viewports: []design.Viewport{design.Tablet}},
		}},
		{File: "clean.html", Clean: true},
	}}
	got := map[string][]design.Finding{
		"a.html": {
			{Kind: "contrast", Selector: "p.x", Viewports: []design.Viewport{design.Mobile, design.Desktop}}, // merged across viewports
			{Kind: "contrast", Selector: "p.y", Viewports: []design.Viewport{design.Mobile}},                 // false positive
		},
		"clean.html": {{Kind: "tap_target", Selector: "a", Viewports: []design.Viewport{design.Mobile}}},
	}
	rep := c.Match(got, []design.Viewport{design.Mobile, design.Tablet, design.Desktop}, []string{"contrast", "overlap", "tap_target"})
	want := map[string][3]int{"contrast": {2, 1, 0}, "overlap": {0, 0, 1}, "tap_target": {0, 1, 0}}
	for _, s := range rep.Kinds {
		if w := want[s.Kind]; [3]int{s.TP, s.FP, s.FN} != w {
			t.Errorf("%s: TP/FP/FN = %d/%d/%d; want %v", s.Kind, s.TP, s.FP, s.FN, w)
		}
	}
	if len(rep.CleanHits) != 1 {
		t.Errorf("clean hits = %v", rep.CleanHits)
	}
	if !strings.Contains(rep.Table(), "contrast") {
		t.Errorf("table:\n%s", rep.Table())
	}
	// Reviewing only mobile ignores the desktop and tablet labels.
	rep = c.Match(map[string][]design.Finding{}, []design.Viewport{design.Mobile}, []string{"contrast", "overlap"})
	if rep.Kinds[0].FN != 1 || rep.Kinds[1].FN != 0 {
		t.Errorf("mobile-only: %+v", rep.Kinds)
	}
}

// TestMatchAlso: a merged finding of a recurring defect matches a label on
// any selector it lists in facts.also, and a label covered by two findings
// is found once.
func TestMatchAlso(t *testing.T) {
	t.Parallel()
	mobile := []design.Viewport{design.Mobile}
	c := &corpus.Corpus{Pages: []corpus.Page{{File: "a.html", Expect: []corpus.Label{
		{Kind: "contrast", Selector: "span.s2", Viewports: mobile},
		{Kind: "contrast", Selector: "span.k", Viewports: mobile},
	}}}}
	got := map[string][]design.Finding{"a.html": {
		// One colour pair; the label names its second instance.
		{Kind: "contrast", Selector: "span.s1", Viewports: mobile, Facts: design.Facts{"also": []string{"span.s2", "span.s3"}}},
		// Read back from JSON, also is a []any; it covers span.s2 again.
		{Kind: "contrast", Selector: "span.x", Viewports: mobile, Facts: design.Facts{"also": []any{"span.s2"}}},
		// Another kind never matches a contrast label.
		{Kind: "type_scale", Selector: "span.q", Viewports: mobile, Facts: design.Facts{"also": []string{"span.k"}}},
	}}
	rep := c.Match(got, mobile, []string{"contrast", "type_scale"})
	want := map[string][3]int{"contrast": {2, 0, 1}, "type_scale": {0, 1, 0}}
	for _, s := range rep.Kinds {
		if w := want[s.Kind]; [3]int{s.TP, s.FP, s.FN} != w {
			t.Errorf("%s: TP/FP/FN = %d/%d/%d; want %v (false negatives %v)", s.Kind, s.TP, s.FP, s.FN, w, s.FalseNeg)
		}
	}
}
