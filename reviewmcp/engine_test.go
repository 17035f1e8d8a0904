package reviewmcp_test

import (
	"bytes"
	"context"
	"image/png"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/reviewmcp"
)

// seeded is a page with defects the measured checks must report: light grey
// text (about 2.3:1 on white), a fixed-width banner wider than a phone, and
// a padding off the page's own spacing scale (its steps are tokens because
// the page's rules use them: tokens are inferred by use).
const seeded = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pricing</title>
<style>
:root { --color-ink: #1a1a1a; --color-paper: #ffffff; --color-brand: #0b5fff; --space-1: 4px; --space-2: 8px; --space-4: 16px; }
body { margin: 0; font-family: sans-serif; color: var(--color-ink); background: var(--color-paper); }
main { padding: var(--space-4); }
h1 { margin: 0 0 var(--space-2); }
p { margin: 0 0 var(--space-1); }
#faint { color: #aaaaaa; font-size: 16px; }
#wide { width: 600px; height: 40px; background: var(--color-brand); }
#odd { padding: 13px; border: 1px solid var(--color-ink); }
</style></head>
<body><main>
<h1>Plans</h1>
<p id="faint">Cancel any time. Prices exclude tax.</p>
<div id="wide"></div>
<div id="odd">Team plan</div>
</main></body></html>`

// fixedContrast is seeded with the grey text darkened: the contrast defect
// is gone, the others remain.
var fixedContrast = strings.Replace(seeded, "#faint { color: #aaaaaa;", "#faint { color: #1a1a1a;", 1)

type finding struct {
	FindingID       string         `json:"finding_id"`
	Severity        string         `json:"severity"`
	BastionSeverity string         `json:"bastion_severity"`
	Kind            string         `json:"kind"`
	Route           string         `json:"route"`
	Viewports       []string       `json:"viewports"`
	ElementRef      *string        `json:"element_ref"`
	Suggestion      *string        `json:"suggestion"`
	EvidenceID      *string        `json:"evidence_id"`
	Advisory        bool           `json:"advisory"`
	Facts           map[string]any `json:"facts"`
}

type critiqueOut struct {
	ReviewID   string `json:"review_id"`
	Grade      string `json:"grade"`
	Provenance struct {
		ModelBacked bool   `json:"model_backed"`
		Source      string `json:"source"`
	} `json:"provenance"`
	Overall  string    `json:"overall"`
	Findings []finding `json:"findings"`
	Coverage struct {
		State string `json:"state"`
	} `json:"coverage"`
	Measurements struct {
		ChecksRun  []string `json:"checks_run"`
		Violations []struct {
			FindingID string `json:"finding_id"`
		} `json:"violations"`
	} `json:"measurements"`
	NotReviewed []string `json:"not_reviewed"`
	Overviews   []struct {
		Viewport   string `json:"viewport"`
		EvidenceID string `json:"evidence_id"`
		Marks      []struct {
			N         int    `json:"n"`
			FindingID string `json:"finding_id"`
		} `json:"marks"`
	} `json:"overviews"`
}

type summaryOut struct {
	Grade      string         `json:"grade"`
	Findings   int            `json:"findings"`
	Actionable int            `json:"actionable"`
	BySeverity map[string]int `json:"by_severity"`
	ByKind     map[string]int `json:"by_kind"`
	Coverage   struct {
		State string `json:"state"`
	} `json:"coverage"`
	Top []struct {
		FindingID string `json:"finding_id"`
		Severity  string `json:"severity"`
		Line      string `json:"line"`
	} `json:"top_findings"`
}

type getOut struct {
	Job          jobOut       `json:"job"`
	Summary      *summaryOut  `json:"summary"`
	Review       *critiqueOut `json:"review"`
	Presentation *struct {
		Panel          bool     `json:"panel"`
		PanelWithheld  bool     `json:"panel_withheld"`
		Multimedia     bool     `json:"multimedia"`
		ImagesWithheld []string `json:"images_withheld"`
	} `json:"presentation"`
	Recheck *struct {
		ReviewID string `json:"review_id"`
		Outcomes []struct {
			FindingID string         `json:"finding_id"`
			Outcome   string         `json:"outcome"`
			Reason    string         `json:"reason"`
			Facts     map[string]any `json:"facts"`
			Evidence  *string        `json:"evidence_id"`
			Before    *string        `json:"before_evidence_id"`
		} `json:"outcomes"`
	} `json:"recheck"`
}

func (c *client) get(jobID, view string) (*mcp.CallToolResult, getOut) {
	c.t.Helper()
	res := c.call(reviewmcp.ToolGet, map[string]any{"job_id": jobID, "view": view})
	wantOK(c.t, res)
	var out getOut
	decodeInto(c.t, res, &out)
	return res, out
}

// blockKinds lists content block kinds: text, image, resource.
func blockKinds(cs []mcp.Content) []string {
	var k []string
	for _, c := range cs {
		switch c.(type) {
		case *mcp.TextContent:
			k = append(k, "text")
		case *mcp.ImageContent:
			k = append(k, "image")
		case *mcp.EmbeddedResource:
			k = append(k, "resource")
		default:
			k = append(k, "other")
		}
	}
	return k
}

// TestReviewLoopWithRealEngine walks an agent's loop over MCP against the
// real engine: submit, poll, every view, the evidence blocks for three
// kinds of client, the panel resource and action, and a recheck after a fix.
func TestReviewLoopWithRealEngine(t *testing.T) {
	t.Parallel()
	eng := reviewtest.ChromiumEngine(t)
	s := reviewtest.NewSite(t, map[string]string{"/pricing": seeded})
	h := newHarness(t, eng, s.URL, true)
	alice := reviewtest.NewPrincipal(t, "acme", "alice", principal.AllScopes()...)
	plain := h.connect(t, alice, clientOpts{})
	apps := h.connect(t, alice, clientOpts{apps: true})
	textOnly := h.connect(t, alice, clientOpts{noImages: true})

	res := plain.call(reviewmcp.ToolReview, map[string]any{
		"url": "https://preview.example.com/", "routes": []string{"/pricing"}, "viewports": []string{"mobile", "desktop"},
		"client_request_id": "loop-review-1",
	})
	wantOK(t, res)
	var sub submitOut
	decodeInto(t, res, &sub)
	if j := plain.waitDone(sub.Job.JobID); j.Status != "completed" {
		t.Fatalf("review ended %s: %+v", j.Status, j.Error)
	}

	_, fv := plain.get(sub.Job.JobID, "findings")
	rv := fv.Review
	if rv == nil {
		t.Fatal("findings view of a completed review has no review")
	}
	if rv.ReviewID != sub.Job.ReviewID || rv.Provenance.ModelBacked || rv.Provenance.Source != "measured" || rv.Coverage.State != "full" {
		t.Errorf("critique header %+v", rv)
	}
	if rv.Grade != "needs_work" && rv.Grade != "blocked" {
		t.Errorf("grade %s for a page with a 2.3:1 text and a 600px banner on a phone", rv.Grade)
	}
	if len(rv.Measurements.ChecksRun) == 0 || len(rv.Measurements.Violations) != len(rv.Findings) {
		t.Errorf("measurements %+v for %d findings", rv.Measurements, len(rv.Findings))
	}
	byKind := map[string]finding{}
	for _, f := range rv.Findings {
		byKind[f.Kind] = f
		want := map[string]string{"blocker": "blocker", "major": "should_fix", "minor": "should_fix", "nit": "nit"}[f.BastionSeverity]
		if f.Severity != want {
			t.Errorf("%s: severity %s for bastion severity %s, want %s", f.FindingID, f.Severity, f.BastionSeverity, want)
		}
	}
	contrast, ok := byKind["contrast"]
	if !ok || contrast.ElementRef == nil || *contrast.ElementRef != "#faint" || contrast.Suggestion == nil || contrast.Facts["ratio"] == nil {
		t.Fatalf("no grounded contrast finding on #faint with a measured ratio: %s", mustJSON(rv.Findings))
	}
	if _, ok := byKind["viewport_overflow"]; !ok {
		t.Errorf("no viewport_overflow finding for a 600px banner: %s", mustJSON(rv.Findings))
	}

	t.Run("SummaryView", func(t *testing.T) {
		res, sv := plain.get(sub.Job.JobID, "summary")
		s := sv.Summary
		if s == nil || sv.Review != nil {
			t.Fatalf("summary view: summary %v, review %v", s != nil, sv.Review != nil)
		}
		if s.Grade != rv.Grade || s.Findings != len(rv.Findings) || s.Coverage.State != rv.Coverage.State {
			t.Errorf("summary %+v disagrees with the findings view (grade %s, %d findings)", s, rv.Grade, len(rv.Findings))
		}
		sev, kinds := 0, 0
		for _, n := range s.BySeverity {
			sev += n
		}
		for k, n := range s.ByKind {
			kinds += n
			want := 0
			for _, f := range rv.Findings {
				if f.Kind == k {
					want++
				}
			}
			if n != want {
				t.Errorf("by_kind[%s] = %d, want %d", k, n, want)
			}
		}
		if sev != len(rv.Findings) || kinds != len(rv.Findings) {
			t.Errorf("counts by severity %d and by kind %d, want %d", sev, kinds, len(rv.Findings))
		}
		if len(s.Top) != min(3, len(rv.Findings)) || s.Top[0].Severity != rv.Findings[0].BastionSeverity {
			t.Errorf("top findings %+v, want the worst first", s.Top)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !strings.HasPrefix(text, "Design review ("+rv.Grade+"): ") || strings.Contains(text, "{") {
			t.Errorf("summary text is not a short rendering: %q", text)
		}
	})
	t.Run("FocusViewIsActionable", func(t *testing.T) {
		_, fo := plain.get(sub.Job.JobID, "focus")
		var want []string
		for _, f := range rv.Findings {
			if !f.Advisory && f.ElementRef != nil && f.Suggestion != nil {
				want = append(want, f.FindingID)
			}
		}
		var got []string
		for _, f := range fo.Review.Findings {
			got = append(got, f.FindingID)
		}
		if !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("focus findings %v, want the actionable ones %v", got, want)
		}
		if len(fo.Review.Measurements.Violations) != len(got) {
			t.Errorf("focus violations %d, findings %d", len(fo.Review.Measurements.Violations), len(got))
		}
	})
	t.Run("StatusView", func(t *testing.T) {
		_, st := plain.get(sub.Job.JobID, "status")
		if st.Review != nil || st.Job.Status != "completed" {
			t.Errorf("status view %+v", st)
		}
	})

	withEvidence := 0
	for _, f := range rv.Findings {
		if f.EvidenceID != nil {
			withEvidence++
		}
	}
	if withEvidence == 0 {
		t.Fatal("no finding has an evidence crop")
	}
	// One overview per reviewed viewport, each mark naming a finding by
	// its place in the list.
	if len(rv.Overviews) != 2 {
		t.Errorf("%d overviews, want one per reviewed viewport (mobile, desktop)", len(rv.Overviews))
	}
	for _, o := range rv.Overviews {
		for _, m := range o.Marks {
			if m.N < 1 || m.N > len(rv.Findings) || rv.Findings[m.N-1].FindingID != m.FindingID {
				t.Errorf("overview @ %s: mark %d names %s, not finding %d", o.Viewport, m.N, m.FindingID, m.N)
			}
		}
	}
	// Block order: [panel] → grade text → coverage → per overview text
	// [+ image] → per finding text [+ image] → not reviewed.
	wantBlocks := func(panel, images bool) []string {
		var k []string
		if panel {
			k = append(k, "resource")
		}
		k = append(k, "text", "text")
		for range rv.Overviews {
			k = append(k, "text")
			if images {
				k = append(k, "image")
			}
		}
		for _, f := range rv.Findings {
			k = append(k, "text")
			if images && f.EvidenceID != nil {
				k = append(k, "image")
			}
		}
		if len(rv.NotReviewed) > 0 {
			k = append(k, "text")
		}
		return k
	}
	t.Run("EvidenceWithImagesNoApps", func(t *testing.T) {
		res, ev := plain.get(sub.Job.JobID, "evidence")
		if got, want := blockKinds(res.Content), wantBlocks(false, true); !slices.Equal(got, want) {
			t.Errorf("blocks %v, want %v", got, want)
		}
		p := ev.Presentation
		if p == nil || p.Panel || !p.PanelWithheld || !p.Multimedia || len(p.ImagesWithheld) != 0 {
			t.Errorf("presentation %+v", p)
		}
		first := res.Content[0].(*mcp.TextContent).Text
		if !strings.HasPrefix(first, "Design review ("+rv.Grade+"): ") {
			t.Errorf("first block %q", first)
		}
		for i, c := range res.Content {
			img, ok := c.(*mcp.ImageContent)
			if !ok {
				continue
			}
			if img.MIMEType != "image/png" {
				t.Errorf("image MIME %q", img.MIMEType)
			}
			if _, err := png.Decode(bytes.NewReader(img.Data)); err != nil {
				t.Errorf("image block %d is not a PNG: %v", i, err)
			}
			prev := res.Content[i-1].(*mcp.TextContent).Text
			finding := regexp.MustCompile(`^[0-9]+\. \[`).MatchString(prev) && strings.Contains(prev, " @ /pricing (")
			if !finding && !strings.HasPrefix(prev, "Overview of /pricing @ ") {
				t.Errorf("image block %d follows %q, want its finding's or its overview's line", i, prev)
			}
		}
		line := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok && strings.Contains(tc.Text, "Fix: "+*contrast.Suggestion) {
				line = tc.Text
			}
		}
		if want := "[" + contrast.Severity + "] "; !strings.Contains(line, ". "+want) || !strings.Contains(line, "`#faint`") {
			t.Errorf("contrast line %q", line)
		}
	})
	t.Run("EvidenceWithAppsPanel", func(t *testing.T) {
		res, ev := apps.get(sub.Job.JobID, "evidence")
		if got, want := blockKinds(res.Content), wantBlocks(true, true); !slices.Equal(got, want) {
			t.Errorf("blocks %v, want %v", got, want)
		}
		r := res.Content[0].(*mcp.EmbeddedResource).Resource
		if r.URI != "ui://bastion/design-review/"+sub.Job.JobID || r.MIMEType != "text/html;profile=mcp-app" {
			t.Errorf("panel resource %s %s", r.URI, r.MIMEType)
		}
		checkPanelHTML(t, r.Text)
		if p := ev.Presentation; !p.Panel || p.PanelWithheld {
			t.Errorf("presentation %+v", p)
		}
	})
	t.Run("EvidenceTextOnly", func(t *testing.T) {
		res, ev := textOnly.get(sub.Job.JobID, "evidence")
		if got, want := blockKinds(res.Content), wantBlocks(false, false); !slices.Equal(got, want) {
			t.Errorf("blocks %v, want %v", got, want)
		}
		p := ev.Presentation
		if p.Multimedia || len(p.ImagesWithheld) != withEvidence+len(rv.Overviews) || !slices.Contains(p.ImagesWithheld, *contrast.EvidenceID) {
			t.Errorf("presentation %+v, want %d withheld ids (crops and overviews) including %s", p, withEvidence+len(rv.Overviews), *contrast.EvidenceID)
		}
	})
	t.Run("PanelResource", func(t *testing.T) {
		uri := "ui://bastion/design-review/" + sub.Job.JobID
		rr, err := plain.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatal(err)
		}
		if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "text/html;profile=mcp-app" {
			t.Fatalf("contents %+v", rr.Contents)
		}
		checkPanelHTML(t, rr.Contents[0].Text)
		// The header names what was reviewed, as the file panel's does.
		if html := rr.Contents[0].Text; !strings.Contains(html, `<div class="muted"><code>http://127.0.0.1:`) {
			i := strings.Index(html, `<div class="muted">`)
			t.Errorf("panel header does not name the reviewed URL and time: %.200s", html[max(i, 0):])
		}
		bob := h.connect(t, reviewtest.NewPrincipal(t, "acme", "bob", principal.AllScopes()...), clientOpts{})
		if _, err := bob.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Error("another principal read the panel")
		}
	})
	t.Run("PanelAction", func(t *testing.T) {
		res := plain.call(reviewmcp.ToolPanelAction, map[string]any{"job_id": sub.Job.JobID, "action": "apply_fix", "finding_id": contrast.FindingID})
		wantOK(t, res)
		var pa struct {
			ReviewID   string `json:"review_id"`
			Provenance struct {
				Source string `json:"source"`
			} `json:"provenance"`
			Response struct {
				Type      string `json:"type"`
				FindingID string `json:"finding_id"`
				Fix       string `json:"fix"`
			} `json:"response"`
		}
		decodeInto(t, res, &pa)
		if pa.Response.Type != "fix" || pa.Response.Fix != *contrast.Suggestion || pa.ReviewID != sub.Job.ReviewID || pa.Provenance.Source != "measured" {
			t.Errorf("apply_fix on a grounded finding: %+v", pa)
		}
		for _, f := range rv.Findings {
			if f.Advisory {
				res := plain.call(reviewmcp.ToolPanelAction, map[string]any{"job_id": sub.Job.JobID, "action": "apply_fix", "finding_id": f.FindingID})
				decodeInto(t, res, &pa)
				if pa.Response.Type != "human_only" || pa.Response.Fix != "" {
					t.Errorf("apply_fix on advisory %s: %+v", f.FindingID, pa.Response)
				}
			}
		}
		e := wantError(t, plain.call(reviewmcp.ToolPanelAction, map[string]any{"job_id": sub.Job.JobID, "action": "apply_fix", "finding_id": "f_not_there"}), fault.FindingNotFound)
		if e.NextAction != "none" {
			t.Errorf("FINDING_NOT_FOUND next_action %s", e.NextAction)
		}
	})
	t.Run("RecheckErrors", func(t *testing.T) {
		wantError(t, plain.call(reviewmcp.ToolRecheck, map[string]any{
			"review_id": sub.Job.ReviewID, "finding_ids": []string{contrast.FindingID}, "client_request_id": "loop-recheck-0",
		}), fault.TargetUnchanged)
		wantError(t, plain.call(reviewmcp.ToolRecheck, map[string]any{
			"review_id": sub.Job.ReviewID, "finding_ids": []string{"f_not_there"}, "expected_revision": "v2", "client_request_id": "loop-recheck-9",
		}), fault.FindingNotFound)
	})

	// The agent fixes the contrast and deploys; bastion rechecks.
	s.Set("/pricing", fixedContrast)
	overflow := byKind["viewport_overflow"]
	res = plain.call(reviewmcp.ToolRecheck, map[string]any{
		"review_id": sub.Job.ReviewID, "finding_ids": []string{contrast.FindingID, overflow.FindingID},
		"expected_revision": "v2", "client_request_id": "loop-recheck-1",
	})
	wantOK(t, res)
	var rk submitOut
	decodeInto(t, res, &rk)
	if rk.Job.Kind != "recheck" || rk.Budget.UnitsReserved != 1 {
		t.Errorf("recheck submit %+v", rk)
	}
	if j := plain.waitDone(rk.Job.JobID); j.Status != "completed" {
		t.Fatalf("recheck ended %s: %+v", j.Status, j.Error)
	}
	// Another connection of the same principal reads the report.
	_, rc := apps.get(rk.Job.JobID, "summary")
	if rc.Recheck == nil || rc.Review != nil || rc.Recheck.ReviewID != sub.Job.ReviewID {
		t.Fatalf("get on a recheck job: %s", mustJSON(rc))
	}
	outcomes := map[string]string{}
	for _, o := range rc.Recheck.Outcomes {
		outcomes[o.FindingID] = o.Outcome
	}
	if outcomes[contrast.FindingID] != "passed" || outcomes[overflow.FindingID] != "failed" {
		t.Errorf("outcomes %v: the fixed contrast must pass and the untouched overflow must still fail", outcomes)
	}
	// The evidence view shows each element before and now: two decodable
	// images per outcome, named by the outcome's evidence ids, and the pass
	// carries the ratio measured now.
	evRes, ev := plain.get(rk.Job.JobID, "evidence")
	sent := map[string]bool{}
	for _, c := range evRes.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			if _, err := png.Decode(bytes.NewReader(img.Data)); err != nil {
				t.Errorf("recheck crop does not decode: %v", err)
			}
			id, _ := img.Meta["io.github.bastion-mcp/evidence_id"].(string)
			sent[id] = true
		}
	}
	for _, o := range ev.Recheck.Outcomes {
		if o.Evidence == nil || o.Before == nil || *o.Evidence == *o.Before || !sent[*o.Evidence] || !sent[*o.Before] {
			t.Errorf("recheck outcome %s: evidence %v before %v, images sent %v; want both crops sent", o.FindingID, o.Evidence, o.Before, sent)
		}
		if r, _ := o.Facts["ratio"].(float64); o.FindingID == contrast.FindingID && r < 4.5 {
			t.Errorf("passed contrast outcome facts %v; want the ratio now", o.Facts)
		}
	}
	res = plain.call(reviewmcp.ToolRecheck, map[string]any{
		"review_id": sub.Job.ReviewID, "finding_ids": []string{contrast.FindingID, overflow.FindingID},
		"expected_revision": "v2", "client_request_id": "loop-recheck-1",
	})
	wantOK(t, res)
	var replay struct {
		Job     jobOut `json:"job"`
		Recheck *struct {
			Outcomes []any `json:"outcomes"`
		} `json:"recheck"`
	}
	decodeInto(t, res, &replay)
	if !replay.Job.Reused || replay.Job.JobID != rk.Job.JobID || replay.Recheck == nil || len(replay.Recheck.Outcomes) != 2 {
		t.Errorf("recheck replay %s", mustJSON(res.StructuredContent))
	}
}

// checkPanelHTML checks the panel is the self-contained, script-free page.
func checkPanelHTML(t *testing.T, html string) {
	t.Helper()
	low := strings.ToLower(html)
	if !strings.HasPrefix(low, "<!doctype html>") || strings.Contains(low, "<script") || !strings.Contains(low, "data:image/png;base64,") {
		t.Errorf("panel is not a self-contained page with inline evidence and no script (%d bytes)", len(html))
	}
	if strings.Contains(low, "src=\"http") || strings.Contains(low, "href=\"http") {
		t.Error("panel references an external URL")
	}
}
