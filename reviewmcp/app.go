package reviewmcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/panel"
)

// The review panel as an MCP App (SEP-1865, stable 2026-01-26). One static
// page, listed in resources/list and named by the _meta.ui.resourceUri of
// the tools whose results it shows; the host renders it in a sandboxed
// iframe and hands it each result over the postMessage bridge. It is not the
// per-job panel template (panelTemplate): that one is a finished,
// script-free page with the review baked in, for clients that read it as a
// document.
const (
	// AppURI is the MCP App's resource URI. It is outside the per-job
	// template's ui://bastion/design-review/{job_id} space, so no job id
	// can name it.
	AppURI = "ui://bastion/design-review-app"
	// metaUI is the _meta key of MCP Apps on tools and resources ("Resource
	// Discovery" and "UI Resource Format").
	metaUI = "ui"
)

// appResource is the MCP App as resources/list shows it.
func appResource() *mcp.Resource {
	return &mcp.Resource{
		URI:         AppURI,
		Name:        "design-review-app",
		Title:       "Design review panel (interactive)",
		Description: "The review panel as an MCP App: shows the result of design_review_get or design_recheck, and routes apply fix and recheck back through the host as tool calls. Holds no review data itself.",
		MIMEType:    appsMIMEType,
		Meta:        appMeta(),
	}
}

// appMeta is the resource's _meta.ui, on the listing and on the read
// contents (the draft spec has hosts prefer the latter and fall back to the
// former). The CSP declares no domains at all ("UI Resource Format",
// McpUiResourceCsp: empty means none): the page fetches nothing, and its
// evidence, if any, is inline data: images, which the host's restrictive
// default already allows.
func appMeta() mcp.Meta {
	return mcp.Meta{metaUI: map[string]any{
		"csp":           map[string]any{"connectDomains": []string{}, "resourceDomains": []string{}},
		"prefersBorder": true,
	}}
}

// showsInApp reports whether the app shows name's results: the get (a
// review's views, a recheck's outcomes) and the recheck (its job, and its
// outcomes on a replay).
func showsInApp(name string) bool { return name == ToolGet || name == ToolRecheck }

// toolUIMeta is a tool's _meta.ui linking its results to the app
// ("Resource Discovery", McpUiToolMeta). Visibility is left at its default
// (model and app): every tool is the peer's and stays callable by agents.
func toolUIMeta() map[string]any {
	return map[string]any{"resourceUri": AppURI}
}

// readApp serves the app page. It needs no principal: the page is the same
// static bytes for everyone and carries no review; the data reaches it only
// through the host, from tool calls that are principal-scoped as always.
func readApp(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if req.Params.URI != AppURI {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: AppURI, MIMEType: appsMIMEType, Text: panel.AppHTML(), Meta: appMeta(),
	}}}, nil
}

// appsCapability is the server's declaration of the extension in
// capabilities.extensions, the SEP-1724 mechanism SEP-1865's "Client<>Server
// Capability Negotiation" names, with the same settings a client sends: the
// one content type this server's UI resources have.
func appsCapability() map[string]any {
	return map[string]any{"mimeTypes": []string{appsMIMEType}}
}
