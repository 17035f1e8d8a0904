package app

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/reviewmcp"
	"github.com/bastion-mcp/bastion/tracing"
)

// StopGrace bounds a graceful stop: running jobs get this long to finish
// before they are cancelled (and resumed by the next start on the same data
// directory).
const StopGrace = 5 * time.Second

// MCPServer returns the design-review MCP server over the App's service for
// one principal: every call is made as p.
func (a *App) MCPServer(p principal.Principal) *mcp.Server {
	srv := reviewmcp.NewServer(a.Service, a.mcpOptions(p))
	if a.Config.Tracing.Enabled() {
		srv.AddReceivingMiddleware(tracing.MCPMiddleware)
	}
	return srv
}

// mcpToolHandler returns the tools of MCPServer(p) as one handler, for the
// gateway to call in process without a session.
func (a *App) mcpToolHandler(p principal.Principal) mcp.ToolHandler {
	h := reviewmcp.NewToolHandler(a.Service, a.mcpOptions(p))
	if !a.Config.Tracing.Enabled() {
		return h
	}
	// Called without a session, the call passes no middleware: it joins
	// the gateway's trace from the traceparent the gateway put in _meta.
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req != nil && req.Params != nil {
			ctx = tracing.FromMeta(ctx, req.Params.Meta)
		}
		return h(ctx, req)
	}
}

// mcpOptions makes the design-review server act for p alone.
func (a *App) mcpOptions(p principal.Principal) reviewmcp.Options {
	return reviewmcp.Options{
		Logger:        a.Log,
		PrincipalFrom: func(context.Context) (principal.Principal, bool) { return p, true },
	}
}

// RunStdio is `bastion stdio`: it opens the composition in cfg, starts the
// job workers, serves the local principal on t until the client hangs up or
// ctx ends, then stops gracefully (StopGrace).
func RunStdio(ctx context.Context, cfg Config, t mcp.Transport) error {
	a, err := Open(ctx, cfg)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		a.Close(context.Background())
		return err
	}
	a.Log.Info("bastion stdio: serving", "data_dir", a.Config.DataDir)
	runErr := ServeStdio(ctx, a.MCPServer(principal.Local()), t)
	if ctx.Err() != nil {
		runErr = nil // a signal, not a failure
	}
	a.Log.Info("bastion stdio: stopping")
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopGrace)
	defer cancel()
	return errors.Join(runErr, a.Close(stopCtx))
}
