package reviewmcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
)

// The tool names. They are the peer's, so agents configured for it work
// unchanged.
const (
	ToolReview      = "design_review"
	ToolGet         = "design_review_get"
	ToolRecheck     = "design_recheck"
	ToolCancel      = "design_review_cancel"
	ToolPanelAction = "design_review_panel_action"
)

// Keys of the _meta bastion puts on each tool.
const (
	metaMetered = "io.github.bastion-mcp/metered" // the call spends review units
	metaProduct = "io.github.bastion-mcp/product"
)

// toolDef is one tool: what tools/list says about it (the schemas come from
// the catalog file) and the call that adapts it to the Service.
type toolDef struct {
	name        string
	title       string
	description string
	ann         mcp.ToolAnnotations
	metered     bool
	// call runs the tool on arguments that passed the input schema.
	call func(ctx context.Context, a *adapter, req *mcp.CallToolRequest, p principal.Principal, args json.RawMessage) (*mcp.CallToolResult, error)
}

func ptr[T any](v T) *T { return &v }

// toolDefs lists the tools in catalog order. The descriptions are what an
// agent reads to decide how to use the tool, so they say only what is true
// of bastion: judgments are measurements taken in a real browser, no model
// is involved, and nothing here edits code.
func toolDefs() []toolDef {
	return []toolDef{{
		name:  ToolReview,
		title: "Submit design review",
		description: "Submit an asynchronous, metered design review of a preview: a tenant-verified https host, or, when the server runs with --allow-private, a local development server (every address loopback or private; http, or https with its own self-signed certificate). " +
			"bastion loads each requested route at each viewport in an isolated headless Chromium behind its egress guard " +
			"and judges the capture with measured design checks (contrast, overflow, clipping, overlap, tap targets, " +
			"design-token conformance and more); no model is involved, and this tool never edits code. " +
			"Returns a job at once: reuse client_request_id on retries, then poll design_review_get no faster than poll_after_ms.",
		ann:     mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
		metered: true,
		call:    callReview,
	}, {
		name:  ToolGet,
		title: "Get design review",
		description: "Get a review or recheck job: its status, or for a completed review one view: summary (the default: grade, counts by " +
			"severity and kind, coverage and the three most important findings, a line each), findings (every finding with its measured facts), " +
			"focus (only the actionable findings: an element, a concrete fix, not advisory) or evidence (annotated screenshot crops, " +
			"plus the review panel where the client supports MCP Apps); " +
			"for a completed recheck, its per-finding outcomes (the evidence view adds the crop of each element before and now). Poll no faster than the returned poll_after_ms, or pass wait_ms (at most 25000) " +
			"to have the answer held until the job changes state; with a progressToken, notifications/progress tell its stage meanwhile. " +
			"Reads consume no review units. " +
			"Every finding was measured on the captured page (review.provenance.source is \"measured\"): each names its route, viewports, " +
			"element selector (element_ref), the measured facts and a concrete fix. Fix findings whose element_ref and suggestion are set; " +
			"advisory findings need a human's judgment.",
		ann:  mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
		call: callGet,
	}, {
		name:  ToolRecheck,
		title: "Submit design recheck",
		description: "Submit a metered recheck of findings from a completed review after your agent has changed the UI. " +
			"bastion re-captures each finding's route and viewport in a real browser and re-runs that finding's check on that element, " +
			"answering passed, failed or inconclusive (element gone, page failed) with the measured facts; no model is involved, " +
			"and this tool never edits code. Give a new url or expected_revision: an unchanged target is rejected without a capture. " +
			"Costs max(1, ceil(findings/3)) units. Reuse client_request_id on retries, then poll design_review_get with the returned job_id.",
		ann:     mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
		metered: true,
		call:    callRecheck,
	}, {
		name:  ToolCancel,
		title: "Cancel design review",
		description: "Cancel a queued or running review or recheck job. A job that has already finished keeps its state. " +
			"Cancellation stops bastion's own capture, never touches your systems, and refunds the job's reserved units.",
		ann:  mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
		call: callCancel,
	}, {
		name:  ToolPanelAction,
		title: "Act on a review panel finding",
		description: "Route an interaction from the review panel: apply_fix returns a grounded finding's fix (it names an element " +
			"and a concrete change) for the coding agent to apply itself, or human_only for an advisory finding; recheck returns the " +
			"finding ids to pass to design_recheck. This tool never edits code and never marks a finding resolved: only a recheck that " +
			"passes does. Reads only; consumes no review units.",
		ann:  mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
		call: callPanelAction,
	}}
}

// tool returns d as tools/list shows it, with the catalog's schemas.
func (a *adapter) tool(d toolDef) *mcp.Tool {
	t := a.cat.tools[d.name]
	ann := d.ann
	meta := mcp.Meta{metaMetered: d.metered, metaProduct: "design-review"}
	if showsInApp(d.name) {
		meta[metaUI] = toolUIMeta()
	}
	return &mcp.Tool{
		Name:         d.name,
		Title:        d.title,
		Description:  d.description,
		Annotations:  &ann,
		InputSchema:  t.in,
		OutputSchema: t.out,
		Meta:         meta,
	}
}

// handler wraps d.call: it names the caller, validates the arguments, and
// renders every error as the typed envelope.
func (a *adapter) handler(d toolDef) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := a.serve(ctx, d, req)
		if err != nil {
			return a.errorResult(ctx, d.name, err), nil
		}
		return res, nil
	}
}

func (a *adapter) serve(ctx context.Context, d toolDef, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, ok := a.opts.PrincipalFrom(ctx)
	if !ok {
		return nil, fault.New(fault.AuthRequired, "this call needs an authenticated caller")
	}
	var raw json.RawMessage
	if req != nil && req.Params != nil {
		raw = req.Params.Arguments
	}
	if err := a.cat.tools[d.name].validate(raw); err != nil {
		return nil, err
	}
	return d.call(ctx, a, req, p, raw)
}

// decode unmarshals arguments that already passed the input schema.
func decode[T any](raw json.RawMessage) (*T, error) {
	v := new(T)
	if len(raw) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		// The schema admitted it, so this is our bug, not the caller's.
		return nil, fault.Wrap(err, fault.InternalError, "the arguments could not be read")
	}
	return v, nil
}

func callReview(ctx context.Context, a *adapter, _ *mcp.CallToolRequest, p principal.Principal, raw json.RawMessage) (*mcp.CallToolResult, error) {
	in, err := decode[review.SubmitParams](raw)
	if err != nil {
		return nil, err
	}
	out, err := a.svc.Submit(ctx, p, in)
	if err != nil {
		return nil, err
	}
	pl := submitPayload{SchemaVersion: out.SchemaVersion, Job: jobOf(out.Job), Budget: out.Budget}
	return viewResult(pl, statusText(pl.Job))
}

func callGet(ctx context.Context, a *adapter, req *mcp.CallToolRequest, p principal.Principal, raw json.RawMessage) (*mcp.CallToolResult, error) {
	in, err := decode[review.GetParams](raw)
	if err != nil {
		return nil, err
	}
	if in.WaitMS > 0 {
		in.OnProgress = progressReporter(ctx, req)
	}
	out, err := a.svc.Get(ctx, p, in)
	if err != nil {
		return nil, err
	}
	view := in.View
	if view == "" {
		view = review.ViewSummary
	}
	pl := getPayload{SchemaVersion: out.SchemaVersion, Job: jobOf(out.Job)}
	if out.Recheck != nil {
		pl.Recheck = recheckOf(out.Recheck)
		if view == review.ViewEvidence {
			return a.recheckEvidenceResult(req, pl, out)
		}
		return viewResult(pl, statusText(pl.Job)+"\n"+recheckText(pl.Recheck))
	}
	if out.Review == nil {
		return viewResult(pl, statusText(pl.Job))
	}
	c := critiqueOf(out.Job.ReviewID, out.Review)
	switch view {
	case review.ViewSummary:
		pl.Summary = summaryOf(c)
		pl.Summary.DismissedBefore = out.DismissedBefore
		return viewResult(pl, summaryText(pl.Summary, c))
	case review.ViewEvidence:
		pl.Review = c
		return a.evidenceResult(req, pl, out)
	}
	pl.Review = c
	return viewResult(pl, findingsText(c, string(view)))
}

func callRecheck(ctx context.Context, a *adapter, _ *mcp.CallToolRequest, p principal.Principal, raw json.RawMessage) (*mcp.CallToolResult, error) {
	in, err := decode[review.RecheckParams](raw)
	if err != nil {
		return nil, err
	}
	out, err := a.svc.Recheck(ctx, p, in)
	if err != nil {
		return nil, err
	}
	pl := recheckPayload{SchemaVersion: out.SchemaVersion, Job: jobOf(out.Job), Budget: out.Budget}
	text := statusText(pl.Job)
	if out.Recheck != nil {
		pl.Recheck = recheckOf(out.Recheck)
		text += "\n" + recheckText(pl.Recheck)
	}
	return viewResult(pl, text)
}

func callCancel(ctx context.Context, a *adapter, _ *mcp.CallToolRequest, p principal.Principal, raw json.RawMessage) (*mcp.CallToolResult, error) {
	in, err := decode[review.CancelParams](raw)
	if err != nil {
		return nil, err
	}
	out, err := a.svc.Cancel(ctx, p, in)
	if err != nil {
		return nil, err
	}
	pl := cancelPayload{SchemaVersion: out.SchemaVersion, JobID: out.JobID, Status: out.Status, UpstreamCancellation: out.UpstreamCancellation}
	if out.CancellationRequestedAt != nil {
		pl.CancellationRequestedAt = ptr(wireTime(*out.CancellationRequestedAt))
	}
	return jsonResult(pl)
}

func callPanelAction(ctx context.Context, a *adapter, _ *mcp.CallToolRequest, p principal.Principal, raw json.RawMessage) (*mcp.CallToolResult, error) {
	in, err := decode[review.PanelActionParams](raw)
	if err != nil {
		return nil, err
	}
	out, err := a.svc.PanelAction(ctx, p, in)
	if err != nil {
		return nil, err
	}
	return jsonResult(panelPayload{
		SchemaVersion: out.SchemaVersion, JobID: out.JobID, ReviewID: out.ReviewID,
		Provenance: measuredProvenance(), Response: out.Response,
	})
}

// jsonResult is a successful result: the payload as structuredContent and
// as indented JSON text for clients that read only content.
func jsonResult(payload any) (*mcp.CallToolResult, error) {
	b, err := json.MarshalIndent(payload, "", "  ")
	if err != nil {
		return nil, fault.Wrap(err, fault.InternalError, "the result could not be encoded")
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}, nil
}

// wireTime formats t as the contract does: ISO-8601 UTC with milliseconds.
func wireTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// internalMessages are the fixed client messages for errors that are not
// typed: the cause goes to the log only.
var internalMessages = map[string]string{
	ToolReview:      "the review could not be submitted",
	ToolGet:         "the review could not be retrieved",
	ToolRecheck:     "the recheck could not be submitted",
	ToolCancel:      "the review could not be cancelled",
	ToolPanelAction: "the panel action could not be routed",
}

// errorResult renders err as the typed error envelope.
func (a *adapter) errorResult(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	msg := internalMessages[tool]
	if msg == "" {
		msg = "the call failed"
	}
	fe := fault.From(err, msg)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if _, typed := fault.As(err); !typed {
			fe = fault.Wrap(err, fault.Unavailable, "the call was cancelled or timed out before it finished")
		}
	}
	env := envelopeOf(fe)
	a.opts.Logger.Log(ctx, levelFor(fe), "tool call failed", "tool", tool, "code", fe.Code, "correlation_id", env.CorrelationID, "cause", fe.Unwrap())
	return envelopeResult(env)
}

// levelFor logs internal errors as errors and a caller's mistakes as info.
func levelFor(fe *fault.Error) slog.Level {
	if fe.Code == fault.InternalError {
		return slog.LevelError
	}
	return slog.LevelInfo
}
