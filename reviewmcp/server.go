// Package reviewmcp serves bastion's design-review service as MCP tools:
// design_review, design_review_get, design_recheck, design_review_cancel and
// design_review_panel_action, plus the review panel as ui:// resources: an
// interactive MCP App and a per-job static page.
//
// It only adapts: every rule (scope, tenant, idempotency, units, recheck
// limits, cancellation) lives in the review.Service behind the Service
// interface, and this package holds no store handle.
//
// Invariants: the input and output schemas served on tools/list are the
// bytes of the embedded schemas/mcp-tools.json, and a test compares the live
// catalog with that file; every argument is validated against the input
// schema (unknown properties included) before the service is called, and a
// violation is a typed INVALID_ARGUMENT tool error naming the field, never a
// protocol error; every error a tool returns is the one envelope
// {"error": {schema_version, code, message, retriable, correlation_id,
// next_action, retry_after_ms?}} with isError set; page-derived text reaches a
// client only as data inside JSON, text blocks or the escaped panel, never as
// a tool description or an instruction.
//
// Decisions: summary is a condensed "summary" member (views.go), not the
// critique; the findings view returns the whole critique, every finding at
// once (no cursor: the input schema is the peer's, and a review is bounded
// by 5 routes × 3 viewports); focus keeps only the actionable findings.
// Text content is a short rendering and the data is in structuredContent
// once (the peer repeats it as JSON text). The server declares the MCP Apps
// extension (io.modelcontextprotocol/ui) and lists one static app,
// ui://bastion/design-review-app, which design_review_get and design_recheck
// name in _meta.ui.resourceUri; a host renders it beside their results and
// it calls tools back through the host (app.go). The static panel is
// addressed by job id (ui://bastion/design-review/<job_id>) because reads
// go through the principal-scoped Get, which is keyed by job. A client gets
// the static panel block only if it declares the MCP Apps extension
// (io.modelcontextprotocol/ui with mimeType text/html;profile=mcp-app);
// MCP has no way to declare image support, so images are sent unless
// Options.NoImages is set.
package reviewmcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
)

// Version is the design-review server's version: serverInfo.version, the
// catalog's catalog_version and directory/server.json's version. The catalog
// test pins all three to it.
const Version = "0.1.0"

// ServerName is the name the server reports in serverInfo and in the MCP
// registry.
const ServerName = "io.github.bastion-mcp/bastion"

// Service is the design-review service the tools adapt. *review.Service
// implements it.
type Service interface {
	Submit(ctx context.Context, p principal.Principal, in *review.SubmitParams) (*review.SubmitResult, error)
	Get(ctx context.Context, p principal.Principal, in *review.GetParams) (*review.GetResult, error)
	Recheck(ctx context.Context, p principal.Principal, in *review.RecheckParams) (*review.RecheckResult, error)
	Cancel(ctx context.Context, p principal.Principal, in *review.CancelParams) (*review.CancelResult, error)
	PanelAction(ctx context.Context, p principal.Principal, in *review.PanelActionParams) (*review.PanelActionResult, error)
}

// Options configures NewServer. The zero value of each field means its
// default.
type Options struct {
	// Version is reported as serverInfo.version. Default Version.
	Version string
	// Logger receives one line per failed call (code, correlation id and the
	// internal cause, which never reaches the client). Nil discards.
	Logger *slog.Logger
	// PrincipalFrom returns the caller of a request. Default
	// principal.FromContext. A call without a valid principal is
	// AUTH_REQUIRED.
	PrincipalFrom func(ctx context.Context) (principal.Principal, bool)
	// NoImages withholds evidence image blocks from every client, listing
	// their ids in presentation.images_withheld instead. MCP has no
	// capability by which a client declares it can render images, so by
	// default every client is assumed to; set this for a host known to
	// render text only.
	NoImages bool
}

// NewServer returns an MCP server with the five design-review tools and the
// review-panel resource template over svc. Each call reads its caller from
// o.PrincipalFrom, so one server may serve many principals.
//
// NewServer panics if the embedded catalog is malformed; the catalog test
// makes that impossible in a built binary.
func NewServer(svc Service, o Options) *mcp.Server {
	a := newAdapter(svc, o)
	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "bastion design review", Version: a.opts.Version},
		&mcp.ServerOptions{Logger: a.opts.Logger, Capabilities: capabilities()})
	for _, d := range toolDefs() {
		srv.AddTool(a.tool(d), a.handler(d))
	}
	srv.AddResourceTemplate(panelTemplate(), a.readPanel)
	srv.AddResource(appResource(), readApp)
	return srv
}

// NewToolHandler returns the tools of the server NewServer(svc, o) builds
// as one handler that dispatches on the tool's name, for a gateway that
// calls them in this process without a session (upstream.Spec.Call). A
// call gets exactly the result the server's tool would give for the same
// request; an unknown name is the JSON-RPC error the SDK's server returns.
func NewToolHandler(svc Service, o Options) mcp.ToolHandler {
	a := newAdapter(svc, o)
	handlers := map[string]mcp.ToolHandler{}
	for _, d := range toolDefs() {
		handlers[d.name] = a.handler(d)
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var name string
		if req != nil && req.Params != nil {
			name = req.Params.Name
		}
		h, ok := handlers[name]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
		}
		return h(ctx, req)
	}
}

func newAdapter(svc Service, o Options) *adapter {
	if o.Version == "" {
		o.Version = Version
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.PrincipalFrom == nil {
		o.PrincipalFrom = principal.FromContext
	}
	cat, err := sharedCatalog()
	if err != nil {
		panic("reviewmcp: " + err.Error())
	}
	return &adapter{svc: svc, opts: o, cat: cat}
}

// capabilities are the capabilities the server declares; tools and resources
// are inferred by the SDK from the tools and the panel template. The SDK
// answers prompts/list on every server, so prompts is declared with its
// always-empty list (a client, and the stateless wire's discovery check,
// may rely on an undeclared method being unsupported). Logging is left out:
// the server sends no log messages. The MCP Apps extension is declared
// because the server serves a UI resource (app.go).
func capabilities() *mcp.ServerCapabilities {
	c := &mcp.ServerCapabilities{Prompts: &mcp.PromptCapabilities{}}
	c.AddExtension(appsExtension, appsCapability())
	return c
}

// adapter holds what every tool handler shares. It is immutable after
// NewServer.
type adapter struct {
	svc  Service
	opts Options
	cat  *catalog
}
