package reviewmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/clip"
	"github.com/bastion-mcp/bastion/panel"
	"github.com/bastion-mcp/bastion/review"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP Apps (SEP-1865): a client that can show an HTML view declares the
// extension with this MIME type among its settings' mimeTypes.
const (
	appsExtension = "io.modelcontextprotocol/ui"
	appsMIMEType  = "text/html;profile=mcp-app"
	panelURIBase  = "ui://bastion/design-review/"
)

// metaEvidenceID names the crop an image block carries, so a view that
// shows findings (the MCP App) can put each crop beside its finding's
// evidence_id without relying on the order of the blocks.
const metaEvidenceID = "io.github.bastion-mcp/evidence_id"

// hostMedia is what one client can be sent in the evidence view.
type hostMedia struct {
	panel  bool // the client declared MCP Apps with the HTML profile
	images bool // image blocks; see Options.NoImages
}

// mediaFor negotiates hostMedia from the calling client's capabilities (the
// initialize capabilities, or a stateless request's per-request
// capabilities).
func (a *adapter) mediaFor(req *mcp.CallToolRequest) hostMedia {
	m := hostMedia{images: !a.opts.NoImages}
	if req != nil {
		m.panel = supportsApps(req.ClientCapabilities())
	}
	return m
}

// supportsApps reports whether caps declares the MCP Apps extension with
// the mcp-app HTML profile.
func supportsApps(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	v, ok := caps.Extensions[appsExtension]
	if !ok {
		return false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var settings struct {
		MIMETypes []string `json:"mimeTypes"`
	}
	if json.Unmarshal(b, &settings) != nil {
		return false
	}
	for _, t := range settings.MIMETypes {
		if strings.EqualFold(strings.ReplaceAll(t, " ", ""), appsMIMEType) {
			return true
		}
	}
	return false
}

var imageMIME = regexp.MustCompile(`^image/[a-z0-9.+-]+$`)

// evidenceResult renders the evidence view: structuredContent is the payload
// with its presentation, and content is, in order, the panel resource (if
// the client supports MCP Apps), the grade and overall text, the coverage
// line, each page's overview (its line, then its image), each finding's
// numbered text followed by its evidence crop (if the client renders
// images), and what was not reviewed.
func (a *adapter) evidenceResult(req *mcp.CallToolRequest, pl getPayload, out *review.GetResult) (*mcp.CallToolResult, error) {
	media := a.mediaFor(req)
	c := pl.Review
	pres := &presentation{ImagesWithheld: []string{}}
	var blocks []mcp.Content
	if media.panel {
		html, err := renderPanel(out)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: panelURIBase + out.Job.JobID, MIMEType: appsMIMEType, Text: html,
		}})
		pres.Panel = true
	} else {
		pres.PanelWithheld = true
	}
	blocks = append(blocks, &mcp.TextContent{Text: fmt.Sprintf("Design review (%s): %s", c.Grade, c.Overall)})
	blocks = append(blocks, &mcp.TextContent{Text: coverageLine(c.Coverage)})
	crops := cropsOf(out.Evidence)
	for _, o := range c.Overviews {
		blocks = append(blocks, &mcp.TextContent{Text: overviewLine(o)})
		blocks = crops.send(blocks, &o.EvidenceID, media, pres)
	}
	for i, f := range c.Findings {
		blocks = append(blocks, &mcp.TextContent{Text: fmt.Sprintf("%d. %s", i+1, findingLine(f))})
		blocks = crops.send(blocks, f.EvidenceID, media, pres)
	}
	if len(c.NotReviewed) > 0 {
		blocks = append(blocks, &mcp.TextContent{Text: "Not reviewed: " + strings.Join(c.NotReviewed, ", ")})
	}
	return withBlocks(pl, pres, blocks)
}

// recheckEvidenceResult renders a completed recheck's evidence view: each
// outcome's line, then the review's crop of its element and the crop of it
// now, so an agent or a person sees the before and after side by side.
func (a *adapter) recheckEvidenceResult(req *mcp.CallToolRequest, pl getPayload, out *review.GetResult) (*mcp.CallToolResult, error) {
	media := a.mediaFor(req)
	pres := &presentation{ImagesWithheld: []string{}} // a recheck has no panel
	r := pl.Recheck
	blocks := []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Recheck of review %s: %d passed, %d failed, %d inconclusive.", r.ReviewID,
		r.Summary[string(design.Passed)], r.Summary[string(design.Failed)], r.Summary[string(design.Inconclusive)])}}
	crops := cropsOf(out.Evidence)
	for _, o := range r.Outcomes {
		line := fmt.Sprintf("%s: %s. %s", o.FindingID, o.Outcome, clip.String(o.Reason, maxLine))
		if o.BeforeEvidenceID != nil || o.EvidenceID != nil {
			line += " Crops: before, then now."
		}
		blocks = append(blocks, &mcp.TextContent{Text: line})
		blocks = crops.send(blocks, o.BeforeEvidenceID, media, pres)
		blocks = crops.send(blocks, o.EvidenceID, media, pres)
	}
	return withBlocks(pl, pres, blocks)
}

// withBlocks is an evidence view's result: pl with what pres says was
// sent, and blocks as its content in place of the view's own text.
func withBlocks(pl getPayload, pres *presentation, blocks []mcp.Content) (*mcp.CallToolResult, error) {
	pl.Presentation = pres
	res, err := viewResult(pl, "")
	if err != nil {
		return nil, err
	}
	res.Content = blocks
	return res, nil
}

// cropSet is the evidence a view can send, by id: only images.
type cropSet map[string]design.Evidence

func cropsOf(ev []design.Evidence) cropSet {
	crops := cropSet{}
	for _, e := range ev {
		if len(e.Data) > 0 && imageMIME.MatchString(strings.ToLower(e.MIMEType)) {
			crops[e.ID] = e
		}
	}
	return crops
}

// send appends the crop id names as an image block, when the client
// renders images, or records it as withheld; a crop that was not kept is
// neither sent nor withheld.
func (c cropSet) send(blocks []mcp.Content, id *string, media hostMedia, pres *presentation) []mcp.Content {
	if id == nil {
		return blocks
	}
	e, ok := c[*id]
	switch {
	case !ok:
	case media.images:
		blocks = append(blocks, &mcp.ImageContent{Data: e.Data, MIMEType: strings.ToLower(e.MIMEType), Meta: mcp.Meta{metaEvidenceID: e.ID}})
		pres.Multimedia = true
	default:
		pres.ImagesWithheld = append(pres.ImagesWithheld, e.ID)
	}
	return blocks
}

// overviewLine introduces a page's thumbnail: which page, how much of it,
// and which findings (by number) are marked on it.
func overviewLine(o overviewWire) string {
	ns := make([]string, len(o.Marks))
	for i, m := range o.Marks {
		ns[i] = strconv.Itoa(m.N)
	}
	marked := "no findings in the part shown"
	if len(ns) > 0 {
		marked = "findings " + strings.Join(ns, ", ") + " marked (numbered as listed below)"
	}
	return fmt.Sprintf("Overview of %s @ %s, the top %.0f px: %s.", o.Route, o.Viewport, o.Height, marked)
}

// findingLine is one finding as a sentence an agent can act on.
func findingLine(f critiqueFinding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s @ %s (%s", f.Severity, f.Title, f.Route, strings.Join(viewportNames(f.Viewports), ", "))
	if f.ElementRef != nil {
		fmt.Fprintf(&b, ", `%s`", *f.ElementRef)
	}
	b.WriteString(").")
	if f.Suggestion != nil {
		b.WriteString(" Fix: " + *f.Suggestion)
	}
	if f.Advisory {
		b.WriteString(" Advisory: a human should judge this one.")
	}
	return b.String()
}

func viewportNames(vs []design.Viewport) []string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return s
}

// coverageLine says how much of the request was reviewed.
func coverageLine(c coverageWire) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Coverage (%s): %d of %d route(s) reviewed", c.State, len(c.RoutesReviewed), len(c.RoutesRequested))
	if len(c.RoutesReviewed) > 0 {
		b.WriteString("; reviewed " + listOf(c.RoutesReviewed))
	}
	if len(c.RoutesSkipped) > 0 {
		b.WriteString("; skipped " + listOf(c.RoutesSkipped))
	}
	if len(c.ViewportsReviewed) > 0 {
		b.WriteString("; viewports " + listOf(viewportNames(c.ViewportsReviewed)))
	}
	if len(c.ViewportsSkipped) > 0 {
		b.WriteString("; viewports skipped: " + listOf(viewportNames(c.ViewportsSkipped)))
	}
	if n := len(c.CapturesSkipped); n > 0 {
		b.WriteString("; " + strconv.Itoa(n) + " capture(s) failed")
	}
	b.WriteString(".")
	return b.String()
}

// listOf joins at most 12 items, then says how many more there are.
func listOf(s []string) string {
	if len(s) <= 12 {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:12], ", ") + " and " + strconv.Itoa(len(s)-12) + " more"
}

// renderPanel renders a completed review's panel with its evidence crops
// inline.
func renderPanel(out *review.GetResult) (string, error) {
	if out.Review == nil {
		return "", fault.New(fault.ReviewNotReady, "job %s has no completed review yet", out.Job.JobID)
	}
	res := *out.Review
	res.Evidence = out.Evidence
	var meta panel.Meta
	if t := out.Target; t != nil {
		meta.URL, meta.Revision = t.URL, t.ExpectedRevision
	}
	if c := out.Job.CompletedAt; c != nil {
		meta.Generated = c.UTC() // the job's own time: the same job renders the same bytes
	}
	var buf bytes.Buffer
	if err := panel.Render(&buf, &res, meta); err != nil {
		return "", fault.Wrap(err, fault.InternalError, "the review panel could not be rendered")
	}
	return buf.String(), nil
}

// panelTemplate is the review panel as a resource: ui://bastion/design-review/<job_id>.
func panelTemplate() *mcp.ResourceTemplate {
	return &mcp.ResourceTemplate{
		Name:        "design-review-panel",
		Title:       "Design review panel",
		Description: "A completed review as one self-contained HTML page (no scripts, evidence inline), readable by the principal that submitted it.",
		MIMEType:    appsMIMEType,
		URITemplate: panelURIBase + "{job_id}",
	}
}

// readPanel serves the panel resource through the same principal-scoped
// Get as the tools, so another principal's job reads as not found.
func (a *adapter) readPanel(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, panelURIBase)
	if !ok || id == "" || strings.ContainsAny(id, "/?#") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	p, ok := a.opts.PrincipalFrom(ctx)
	if !ok {
		return nil, fault.New(fault.AuthRequired, "this read needs an authenticated caller")
	}
	out, err := a.svc.Get(ctx, p, &review.GetParams{JobID: id, View: review.ViewEvidence})
	if err == nil {
		var html string
		if html, err = renderPanel(out); err == nil {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: appsMIMEType, Text: html}}}, nil
		}
	}
	fe := fault.From(err, "the review panel could not be read")
	if fe.Code == fault.JobNotFound || fe.Code == fault.JobExpired || fe.Code == fault.InvalidArgument {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	a.opts.Logger.Log(ctx, levelFor(fe), "panel read failed", "code", fe.Code, "cause", fe.Unwrap())
	return nil, fe
}
