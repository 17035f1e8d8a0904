// Package panel renders a review result as one self-contained HTML page for
// a human to read: findings with their evidence, coverage and page health;
// and ships the review panel as an MCP App (AppHTML), a static page a host
// fills from tool results.
//
// Invariants: the rendered page runs no script and fetches nothing (a
// Content-Security-Policy of default-src 'none' says so to the browser; the
// evidence crops are inline data: URIs); every page-derived string (titles,
// descriptions, selectors, facts, console errors, URLs) goes through
// html/template's contextual escaping, so nothing captured from a page
// becomes markup; the one trusted CSS it writes, a colour swatch's
// background, is built only from a value that is a plain hex colour.
// The MCP App is the one page with a script, and it builds its DOM from
// the data with textContent and setAttribute only (app.go).
// Facts are shown for a reader (labels with units, lists as lists) and the
// numbers are the measured ones, never rounded into a different verdict.
package panel

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Meta is what the panel says about the review besides its result.
type Meta struct {
	URL       string    // the reviewed URL; omitted when empty
	Revision  string    // the deployment revision reviewed, when the client named one
	Generated time.Time // shown as is; the zero time is omitted (deterministic output)
}

// Render writes the panel for res to w. Identical input gives identical
// bytes.
func Render(w io.Writer, res *design.Result, meta Meta) error {
	if res == nil {
		return fmt.Errorf("panel: nil result")
	}
	ev := map[string]design.Evidence{}
	for _, e := range res.Evidence {
		ev[e.ID] = e
	}
	v := view{Meta: meta, Result: res, Counts: map[design.Severity]int{}, Partial: !res.Coverage.Complete()}
	if !meta.Generated.IsZero() {
		v.Generated = meta.Generated.UTC().Format(time.RFC3339)
	}
	for i, f := range res.Findings {
		v.Counts[f.Severity]++
		fv := findingView{Finding: f, N: i + 1}
		for _, k := range slices.Sorted(maps.Keys(f.Facts)) {
			fv.Facts = append(fv.Facts, newFact(k, f.Facts[k]))
		}
		if f.Kind == "contrast" {
			fv.Samples = samples(f.Facts)
		}
		if e, ok := ev[f.EvidenceID]; ok && e.MIMEType == "image/png" && len(e.Data) > 0 {
			fv.Evidence = dataURI(e.Data)
		}
		v.Findings = append(v.Findings, fv)
	}
	v.Overviews = overviews(res, ev)
	for _, s := range []design.Severity{design.Blocker, design.Major, design.Minor, design.Nit} {
		v.Summary = append(v.Summary, countView{Severity: s, N: v.Counts[s]})
	}
	v.Health = slices.Clone(res.Health)
	slices.SortStableFunc(v.Health, func(a, b design.PageHealth) int {
		return cmp.Or(cmp.Compare(a.Route, b.Route), cmp.Compare(a.Viewport, b.Viewport))
	})
	return page.Execute(w, v)
}

type view struct {
	Meta      Meta
	Generated string
	Result    *design.Result
	Counts    map[design.Severity]int
	Partial   bool // something requested was not reviewed, or not whole
	Summary   []countView
	Findings  []findingView
	Overviews []overviewView
	Health    []design.PageHealth
}

// overviewView is one page's thumbnail and the findings marked on it, by
// number, title and anchor.
type overviewView struct {
	design.Overview
	Image template.URL
	Marks []markView
}

type markView struct {
	N         int
	FindingID string
	Title     string
}

// overviews pairs each overview in res with its image; one whose image is
// missing is left out, so the panel never shows a broken picture.
func overviews(res *design.Result, ev map[string]design.Evidence) []overviewView {
	titles := map[string]string{}
	for _, f := range res.Findings {
		titles[f.ID] = f.Title
	}
	var out []overviewView
	for _, o := range res.Overviews {
		e, ok := ev[o.EvidenceID]
		if !ok || e.MIMEType != "image/png" || len(e.Data) == 0 {
			continue
		}
		ov := overviewView{Overview: o, Image: dataURI(e.Data)}
		for _, m := range o.Marks {
			ov.Marks = append(ov.Marks, markView{N: m.N, FindingID: m.FindingID, Title: titles[m.FindingID]})
		}
		out = append(out, ov)
	}
	return out
}

// dataURI is an img src for a PNG we encoded: base64 has no characters
// that need escaping, so the URI is safe as is.
func dataURI(png []byte) template.URL {
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png))
}

type countView struct {
	Severity design.Severity
	N        int
}

type findingView struct {
	design.Finding
	N        int // its number on the overviews, counting from 1
	Facts    []fact
	Samples  []sample
	Evidence template.URL
}

var page = template.Must(template.New("panel").Funcs(template.FuncMap{
	"ms": func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + " ms" },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>bastion review: {{.Result.Grade}}</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
header,section{max-width:1100px;margin:0 auto;padding:16px 24px}
header{border-bottom:1px solid #d0d4da;background:#fff;max-width:none}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px}
.grade{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;background:#e4e7eb}
.grade-ship{background:#d3f5dc}.grade-ship_with_nits{background:#e6f4d0}.grade-needs_work{background:#ffe7c2}.grade-blocked{background:#ffd6d6}
.sev{display:inline-block;min-width:56px;text-align:center;padding:0 6px;border-radius:4px;font-size:12px;font-weight:600;text-transform:uppercase}
.sev-blocker{background:#b3261e;color:#fff}.sev-major{background:#c75a00;color:#fff}.sev-minor{background:#f2d36b;color:#1b1f24}.sev-nit{background:#d0d4da;color:#1b1f24}
.finding{background:#fff;border:1px solid #d0d4da;border-radius:6px;margin:12px 0;padding:12px 16px}
.finding h3{font-size:16px;margin:0 0 6px}
code{font:13px ui-monospace,monospace;background:#eef0f3;padding:1px 4px;border-radius:3px;word-break:break-all}
table{border-collapse:collapse}td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top;font-size:14px}
img{max-width:100%;border:1px solid #d0d4da;margin-top:8px}
.muted{color:#5b6470}.fix{background:#eef6ff;border-left:3px solid #0b5fff;padding:6px 10px;margin:8px 0}
ul{margin:4px 0;padding-left:20px}
.chips{display:flex;flex-wrap:wrap;gap:4px}.chip{white-space:nowrap;word-break:normal}
.sw{display:inline-block;width:14px;height:14px;border:1px solid #8a929c;border-radius:3px;vertical-align:-2px;margin-right:6px}
.samples{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}.sample{border:1px solid #d0d4da;border-radius:6px;padding:8px 12px;min-width:160px}
.sample .txt{font-size:16px}.sample .muted{font-size:12px;display:block}
.partial{background:#fff4d6;border:1px solid #e0b84c;border-radius:6px;padding:8px 12px;margin:8px 0}
.evidence img{display:block;max-width:100%;height:auto}
.overviews{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}.overview{background:#fff;border:1px solid #d0d4da;border-radius:6px;padding:8px 12px;max-width:340px}
.overview img{display:block;max-width:100%;max-height:520px;height:auto;object-fit:contain;object-position:top}.overview ol{list-style:none;padding:0;font-size:14px}
.n{display:inline-block;min-width:18px;padding:0 4px;border-radius:3px;background:#ff00ff;color:#fff;font-weight:700;font-size:12px;text-align:center;margin-right:4px}
</style></head>
<body>
<header>
<h1>Design review <span class="grade grade-{{.Result.Grade}}">{{.Result.Grade}}</span></h1>
{{if or .Meta.URL .Meta.Revision .Generated}}<div class="muted">{{with .Meta.URL}}<code>{{.}}</code>{{end}}{{with .Meta.Revision}} · revision <code>{{.}}</code>{{end}}{{with .Generated}} · {{.}}{{end}}</div>{{end}}
<div>{{range .Summary}}<span class="sev sev-{{.Severity}}">{{.Severity}}</span> {{.N}} &nbsp; {{end}}</div>
</header>
<section>
{{if .Partial}}<div class="partial" role="status"><strong>Partial review.</strong> {{len .Result.Coverage.RoutesReviewed}} of {{len .Result.Coverage.RoutesRequested}} route(s) and {{len .Result.Coverage.ViewportsReviewed}} of {{len .Result.Coverage.ViewportsRequested}} viewport(s) were reviewed{{if .Result.Coverage.Skipped}}; {{len .Result.Coverage.Skipped}} capture(s) not reviewed (see Coverage){{end}}. Findings cover only what was reviewed.</div>{{end}}
{{if .Overviews}}<h2>Pages</h2>
<div class="overviews">{{range .Overviews}}<figure class="overview"><figcaption><code>{{.Route}}</code> at {{.Viewport}} <span class="muted">· the top {{printf "%.0f" .Height}} px</span></figcaption>
<img alt="{{.Route}} at {{.Viewport}} with {{len .Marks}} finding(s) marked" src="{{.Image}}">
{{if .Marks}}<ol>{{range .Marks}}<li><a href="#{{.FindingID}}"><span class="n">{{.N}}</span>{{.Title}}</a></li>{{end}}</ol>{{else}}<p class="muted">No findings in the part shown.</p>{{end}}</figure>{{end}}</div>{{end}}
<h2>Findings ({{len .Findings}})</h2>
{{if not .Findings}}<p>No findings.</p>{{end}}
{{range .Findings}}<div class="finding" id="{{.ID}}">
<h3><span class="n" title="its number on the page overviews">{{.N}}</span><span class="sev sev-{{.Severity}}">{{.Severity}}</span> {{.Title}}{{if .Advisory}} <span class="muted">(advisory)</span>{{end}}</h3>
<div class="muted"><code>{{.Kind}}</code> on <code>{{.Route}}</code> at {{range $i, $v := .Viewports}}{{if $i}}, {{end}}{{$v}}{{end}} · <code>{{.Selector}}</code> · {{.ID}}</div>
<p>{{.Description}}</p>
{{if .Samples}}<div class="samples">{{range .Samples}}<div class="sample" style="{{.Style}}"><span class="txt">The quick brown fox</span><span class="muted" style="color:inherit">{{.Label}} {{.Ratio}}</span></div>{{end}}</div>{{end}}
{{if .Facts}}<table>{{range .Facts}}<tr><th>{{.Name}}</th><td>{{if .List}}<ul>{{range .List}}<li><code>{{.}}</code></li>{{end}}</ul>{{else}}{{if .Swatch}}<span class="sw" style="{{.Swatch}}"></span>{{end}}{{.Value}}{{end}}</td></tr>{{end}}</table>{{end}}
{{if .Fix}}<div class="fix"><strong>Fix:</strong> {{.Fix}}</div>{{end}}
{{if .Evidence}}<div class="evidence"><img alt="evidence for {{.ID}}" src="{{.Evidence}}"></div>{{end}}
</div>{{end}}
<h2>Coverage</h2>
<table>
<tr><th>Routes reviewed</th><td>{{range .Result.Coverage.RoutesReviewed}}<code>{{.}}</code> {{else}}none{{end}} <span class="muted">of {{len .Result.Coverage.RoutesRequested}}</span></td></tr>
<tr><th>Viewports reviewed</th><td>{{range .Result.Coverage.ViewportsReviewed}}{{.}} {{else}}none{{end}}</td></tr>
<tr><th>Checks run</th><td><div class="chips">{{range .Result.Coverage.ChecksRun}}<code class="chip">{{.}}</code>{{else}}none{{end}}</div></td></tr>
<tr><th>Design tokens</th><td>{{.Result.TokensFrom}}</td></tr>
</table>
{{if .Result.Coverage.Skipped}}<h3>Not reviewed</h3><ul>{{range .Result.Coverage.Skipped}}<li><code>{{.What}}</code>: {{.Reason}}</li>{{end}}</ul>{{end}}
{{if .Result.Coverage.ChecksOff}}<h3>Checks off</h3><ul>{{range .Result.Coverage.ChecksOff}}<li><code>{{.What}}</code>: {{.Reason}}</li>{{end}}</ul>{{end}}
<h2>Page health</h2>
{{range .Health}}<div class="finding"><strong><code>{{.Route}}</code> at {{.Viewport}}</strong> <span class="muted">HTTP {{.StatusCode}} · {{ms .CaptureDuration}}</span>
{{if .ConsoleErrors}}<div>Console errors:<ul>{{range .ConsoleErrors}}<li><code>{{.}}</code></li>{{end}}</ul></div>{{end}}
{{if .Failed}}<div>Failed requests:<ul>{{range .Failed}}<li><code>{{.URL}}</code> {{.Code}}</li>{{end}}</ul></div>{{end}}
{{if .EgressBlocked}}<div>Blocked by the egress guard:<ul>{{range .EgressBlocked}}<li><code>{{.URL}}</code> {{.Code}}</li>{{end}}</ul></div>{{end}}
{{if .FontsNotLoaded}}<div>Fonts that did not load: {{range .FontsNotLoaded}}<code>{{.}}</code> {{end}}</div>{{end}}
</div>{{else}}<p>No pages were loaded.</p>{{end}}
</section>
</body></html>
`))
