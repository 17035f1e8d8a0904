package reviewmcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/design"
)

// TestSummaryStaysSmall holds the summary of a dozen findings with long
// titles and selectors, across every kind, under 2 KB: its size depends on
// how many kinds there are, not on how many findings.
func TestSummaryStaysSmall(t *testing.T) {
	res := &design.Result{Grade: design.NeedsWork, Coverage: design.Coverage{
		RoutesRequested: []string{"/a", "/b"}, RoutesReviewed: []string{"/a", "/b"},
		ViewportsRequested: design.Viewports(), ViewportsReviewed: design.Viewports(),
		ChecksRun: []string{"contrast", "overflow", "tap_target"},
	}}
	sev := []design.Severity{design.Blocker, design.Major, design.Minor, design.Nit}
	for i := range 12 {
		res.Findings = append(res.Findings, design.Finding{
			ID: fmt.Sprintf("f_%010d", i), Kind: fmt.Sprintf("kind_%d", i%8), Severity: sev[i%4],
			Title: strings.Repeat("long title ", 20), Route: "/a", Viewports: design.Viewports(),
			Selector: strings.Repeat("section > article:nth-of-type(3) > ", 8) + "p", Fix: strings.Repeat("fix ", 100),
			Advisory: i%5 == 0,
		})
	}
	design.Sort(res.Findings)
	s := summaryOf(critiqueOf("rev_x", res))
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2048 {
		t.Errorf("summary of 12 findings is %d B, budget 2048:\n%s", len(b), b)
	}
	if len(s.Top) != 3 || s.Top[0].Severity != "blocker" || s.Findings != 12 || s.BySeverity["nit"] != 3 || s.Advisory != 3 {
		t.Errorf("summary %+v", s)
	}
	for _, f := range s.Top {
		if len([]rune(f.Line)) > maxLine {
			t.Errorf("line of %d runes", len([]rune(f.Line)))
		}
	}
	// A blocker that is advisory ranks after an actionable blocker.
	if f := s.Top[0]; f.FindingID == "f_0000000000" {
		t.Errorf("advisory blocker %s ranked first over an actionable one", f.FindingID)
	}
}
