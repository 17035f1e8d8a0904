package remote

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/enginehttp"
)

// noTokens is the checks-off line of a review asked with a token file: §14
// has no field for one, so the engines judged without it.
var noTokens = design.Skip{What: "design tokens file", Reason: "the engine job API carries no token file, so the engine pool judged without it"}

// resultOf maps one completed job's §15 result back onto design.Result,
// keeping only what the wire carries: findings lose their box (the wire
// has none; an overview's marks keep theirs), the result its page health
// and tokens source; coverage's
// skipped captures and checks off come back from the not-reviewed lines.
// Evidence is fetched from the artifact URLs (fetchEvidence).
func (e *Engine) resultOf(ctx context.Context, p *peer, asked wireRequest, w *enginehttp.EngineResult) *design.Result {
	res := &design.Result{Grade: w.Grade, Findings: []design.Finding{}}
	for _, f := range w.Findings {
		vps := f.Viewports
		if len(vps) == 0 && f.Viewport != "" {
			vps = []design.Viewport{f.Viewport}
		}
		df := design.Finding{
			ID: f.ID, Kind: f.Dimension, Severity: f.Severity, Title: f.Title, Description: f.Description,
			Route: f.Route, Viewports: slices.Clone(vps), Selector: deref(f.Element), Facts: f.Facts,
			Fix: deref(f.Suggestion), Advisory: f.Advisory, EvidenceID: deref(f.ScreenshotID),
		}
		if df.ID == "" {
			df.ID = design.FindingID(df.Kind, df.Route, df.Selector)
		}
		res.Findings = append(res.Findings, df)
	}
	cov := w.Coverage
	res.Coverage = design.Coverage{
		RoutesRequested: cov.RoutesRequested, RoutesReviewed: cov.RoutesReviewed,
		ViewportsRequested: cov.ViewportsRequested, ViewportsReviewed: cov.ViewportsReviewed,
		ChecksRun: w.Measurements.ChecksRun,
	}
	if len(res.Coverage.RoutesRequested) == 0 {
		res.Coverage.RoutesRequested = slices.Clone(asked.Routes)
	}
	if len(res.Coverage.ViewportsRequested) == 0 {
		for _, v := range asked.Viewports {
			res.Coverage.ViewportsRequested = append(res.Coverage.ViewportsRequested, design.Viewport(v))
		}
	}
	res.Coverage.Skipped, res.Coverage.ChecksOff = notReviewed(w.NotReviewed)
	res.Evidence = e.fetchEvidence(ctx, p, w.Artifacts.AnnotatedScreenshots, res.Findings)
	ovs, ev := e.fetchOverviews(ctx, p, asked, w.Artifacts.PageOverviews, res.Findings)
	res.Overviews, res.Evidence = ovs, append(res.Evidence, ev...)
	return res
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// notReviewed reads §15's not-reviewed prose back into skips. bastion's
// engines write "WHAT: REASON" for a skipped capture and "check KIND off:
// REASON" for a check that did not run, and a fixed line when nothing was
// reviewed (dropped: the critique writes it again from the coverage).
// Another engine's line is kept whole as a skip.
func notReviewed(lines []string) (skipped, checksOff []design.Skip) {
	for _, l := range lines {
		if strings.HasPrefix(l, "[bastion] nothing was reviewed") {
			continue
		}
		if rest, ok := strings.CutPrefix(l, "check "); ok {
			if what, why, ok := strings.Cut(rest, " off: "); ok {
				checksOff = append(checksOff, design.Skip{What: what, Reason: why})
				continue
			}
		}
		what, why, ok := strings.Cut(l, ": ")
		if !ok {
			what, why = l, "the engine gave no reason"
		}
		skipped = append(skipped, design.Skip{What: what, Reason: why})
	}
	return skipped, checksOff
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// fetchEvidence fetches each annotated screenshot of a finding that names
// one. A URL off the engine's own origin, or an answer that is not a PNG,
// is dropped (logged) and its finding loses its evidence id: an engine
// cannot make this server fetch anything else, nor store anything else as
// evidence.
func (e *Engine) fetchEvidence(ctx context.Context, p *peer, shots []enginehttp.Screenshot, fs []design.Finding) []design.Evidence {
	byID := map[string]*design.Finding{}
	for i := range fs {
		byID[fs[i].ID] = &fs[i]
	}
	var out []design.Evidence
	fetched := map[string]bool{}
	for _, s := range shots {
		f := byID[s.FindingID]
		if f == nil || f.EvidenceID == "" || fetched[f.EvidenceID] {
			continue
		}
		data, err := e.fetchArtifact(ctx, p, s.URL)
		if err != nil {
			e.log.Warn("remote: an artifact was not fetched", "engine", p.base, "finding", f.ID, "err", err)
			continue
		}
		fetched[f.EvidenceID] = true
		out = append(out, design.Evidence{ID: f.EvidenceID, MIMEType: "image/png", Data: data})
	}
	for i := range fs {
		if !fetched[fs[i].EvidenceID] {
			fs[i].EvidenceID = ""
		}
	}
	return out
}

type artifactError string

func (e artifactError) Error() string { return string(e) }

func (e *Engine) fetchArtifact(ctx context.Context, p *peer, raw string) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme+"://"+u.Host != p.origin {
		return nil, artifactError("the artifact URL is not on the engine's origin")
	}
	ctx, cancel := context.WithTimeout(ctx, e.o.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	res, err := e.artifacts.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, artifactError("the artifact URL answered " + res.Status)
	}
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, pngMagic) {
		return nil, artifactError("the artifact is not a PNG")
	}
	return data, nil
}

// merge folds the parts' results into the review's: findings sorted as
// one, coverage the union in the request's order, and the overviews whose
// drawn numbers that order leaves true. One part keeps the
// engine's grade; several are graded by design.GradeOf over all findings,
// the rule bastion's engines grade by.
func merge(req engine.Request, parts []*part) *design.Result {
	if len(parts) == 1 {
		res := parts[0].res
		addTokensNote(req, res)
		return res
	}
	res := &design.Result{Findings: []design.Finding{}}
	cov := &res.Coverage
	cov.RoutesRequested = slices.Clone(req.Routes)
	cov.ViewportsRequested = slices.Clone(req.Viewports)
	for _, pt := range parts {
		r := pt.res
		res.Findings = append(res.Findings, r.Findings...)
		res.Evidence = append(res.Evidence, r.Evidence...)
		res.Overviews = append(res.Overviews, r.Overviews...)
		cov.RoutesReviewed = union(cov.RoutesReviewed, r.Coverage.RoutesReviewed)
		cov.ViewportsReviewed = union(cov.ViewportsReviewed, r.Coverage.ViewportsReviewed)
		cov.ChecksRun = union(cov.ChecksRun, r.Coverage.ChecksRun)
		cov.Skipped = append(cov.Skipped, r.Coverage.Skipped...)
		for _, s := range r.Coverage.ChecksOff {
			if !slices.ContainsFunc(cov.ChecksOff, func(o design.Skip) bool { return o.What == s.What }) {
				cov.ChecksOff = append(cov.ChecksOff, s)
			}
		}
	}
	cov.RoutesReviewed = inOrder(cov.RoutesReviewed, req.Routes)
	cov.ViewportsReviewed = inOrder(cov.ViewportsReviewed, design.Viewports())
	design.Sort(res.Findings)
	res.Overviews, res.Evidence = keepNumbered(res.Overviews, res.Evidence, res.Findings)
	res.Grade = design.GradeOf(len(cov.RoutesReviewed)*len(cov.ViewportsReviewed), res.Findings)
	addTokensNote(req, res)
	return res
}

func addTokensNote(req engine.Request, res *design.Result) {
	if req.Tokens != nil {
		res.Coverage.ChecksOff = append(res.Coverage.ChecksOff, noTokens)
	}
}

func union[T comparable](a, b []T) []T {
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	return a
}

// inOrder returns s sorted by position in order; values not in order
// keep their place after those that are.
func inOrder[T comparable](s, order []T) []T {
	slices.SortStableFunc(s, func(a, b T) int {
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		return cmp.Compare(ia, ib)
	})
	return s
}

// progress reports a review's progress from its parts' job states: the
// wire says only pending, running or done, so captures count as done when
// their part completes.
type progress struct {
	fn    func(engine.Progress)
	total int

	mu   sync.Mutex // guards done; fn is called outside it
	done int
}

func newProgress(fn func(engine.Progress), total int) *progress {
	p := &progress{fn: fn, total: total}
	p.report(engine.Progress{Stage: engine.StageCapturing, Total: total})
	return p
}

func (p *progress) report(pr engine.Progress) {
	if p.fn != nil {
		p.fn(pr)
	}
}

func (p *progress) partDone(n int) {
	p.mu.Lock()
	p.done = min(p.done+n, p.total)
	d := p.done
	p.mu.Unlock()
	p.report(engine.Progress{Stage: engine.StageCapturing, Done: d, Total: p.total})
}

func (p *progress) judging() {
	p.report(engine.Progress{Stage: engine.StageJudging, Done: p.total, Total: p.total})
}
