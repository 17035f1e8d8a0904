package remote

import (
	"reflect"
	"testing"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/engine"
)

// TestNotReviewed: bastion's own not-reviewed lines come back as the skips
// and checks off they were written from; another engine's line is kept
// whole; the nothing-reviewed line is dropped.
func TestNotReviewed(t *testing.T) {
	t.Parallel()
	skipped, off := notReviewed([]string{
		"/pricing @ mobile: the page did not load (net::ERR_CONNECTION_REFUSED)",
		"/pricing @ desktop (partly): the page is taller than the capture limit",
		"check tokens off: no token file and no :root custom properties",
		"[bastion] nothing was reviewed: 0 of 1 requested route(s) could be captured on this run.",
		"route /checkout (no preview deployment matched the head SHA)",
	})
	wantSkipped := []design.Skip{
		{What: "/pricing @ mobile", Reason: "the page did not load (net::ERR_CONNECTION_REFUSED)"},
		{What: "/pricing @ desktop (partly)", Reason: "the page is taller than the capture limit"},
		{What: "route /checkout (no preview deployment matched the head SHA)", Reason: "the engine gave no reason"},
	}
	if !reflect.DeepEqual(skipped, wantSkipped) {
		t.Errorf("skipped = %+v, want %+v", skipped, wantSkipped)
	}
	if want := []design.Skip{{What: "tokens", Reason: "no token file and no :root custom properties"}}; !reflect.DeepEqual(off, want) {
		t.Errorf("checks off = %+v, want %+v", off, want)
	}
}

// TestMergeGradesTheWhole: six minor findings on each of two parts are
// needs_work together (design.MinorLimit), though each part alone is
// ship_with_nits; coverage is the union in the request's order.
func TestMergeGradesTheWhole(t *testing.T) {
	t.Parallel()
	partOf := func(route string) *part {
		r := &design.Result{Grade: design.ShipWithNits, Coverage: design.Coverage{RoutesReviewed: []string{route},
			ViewportsReviewed: []design.Viewport{design.Desktop, design.Mobile}}}
		for i := range 6 {
			r.Findings = append(r.Findings, design.Finding{ID: design.FindingID("spacing", route, string(rune('a'+i))), Severity: design.Minor, Route: route})
		}
		return &part{res: r}
	}
	req := engine.Request{Routes: []string{"/a", "/b"}, Viewports: []design.Viewport{design.Mobile, design.Desktop}}
	res := merge(req, []*part{partOf("/b"), partOf("/a")})
	if res.Grade != design.NeedsWork || len(res.Findings) != 12 {
		t.Fatalf("grade %s with %d findings, want needs_work with 12", res.Grade, len(res.Findings))
	}
	if !reflect.DeepEqual(res.Coverage.RoutesReviewed, []string{"/a", "/b"}) ||
		!reflect.DeepEqual(res.Coverage.ViewportsReviewed, []design.Viewport{design.Mobile, design.Desktop}) || !res.Coverage.Complete() {
		t.Fatalf("coverage %+v", res.Coverage)
	}
	req.Tokens = []byte("{}")
	if res := merge(req, []*part{partOf("/a")}); len(res.Coverage.ChecksOff) != 1 || res.Coverage.ChecksOff[0] != noTokens {
		t.Fatalf("a token file the wire cannot carry is not reported: %+v", res.Coverage.ChecksOff)
	}
}

// TestMergeKeepsTrueNumbers: the merge sorts the parts' findings as one;
// an overview whose drawn numbers that order keeps true stays, one whose
// numbers it changes is dropped with its image, and other evidence stays.
func TestMergeKeepsTrueNumbers(t *testing.T) {
	t.Parallel()
	part1 := func(route string, sev design.Severity) *part {
		id := design.FindingID("contrast", route, "#cta")
		ov := "ev_overview" + route
		return &part{res: &design.Result{
			Findings:  []design.Finding{{ID: id, Kind: "contrast", Severity: sev, Route: route, Selector: "#cta", Viewports: []design.Viewport{design.Mobile}}},
			Evidence:  []design.Evidence{{ID: ov, MIMEType: "image/png", Data: []byte("png")}, {ID: "ev_crop" + route, MIMEType: "image/png", Data: []byte("png")}},
			Overviews: []design.Overview{{Route: route, Viewport: design.Mobile, EvidenceID: ov, Marks: []design.OverviewMark{{N: 1, FindingID: id}}}},
			Coverage:  design.Coverage{RoutesReviewed: []string{route}, ViewportsReviewed: []design.Viewport{design.Mobile}},
		}}
	}
	// The blocker on /b sorts first: /b's mark 1 stays true, /a's mark 1
	// is now its finding's second place.
	res := merge(engine.Request{Routes: []string{"/a", "/b"}, Viewports: []design.Viewport{design.Mobile}},
		[]*part{part1("/a", design.Minor), part1("/b", design.Blocker)})
	if len(res.Overviews) != 1 || res.Overviews[0].Route != "/b" {
		t.Fatalf("overviews kept: %+v, want /b's alone", res.Overviews)
	}
	var ids []string
	for _, e := range res.Evidence {
		ids = append(ids, e.ID)
	}
	if want := []string{"ev_crop/a", "ev_overview/b", "ev_crop/b"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("evidence kept: %v, want %v", ids, want)
	}
}
