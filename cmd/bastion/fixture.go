package main

import (
	"context"
	"fmt"
	"net"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/mcpfixture"
	"github.com/bastion-mcp/bastion/principal"
)

// newConformanceFixtureCmd serves the conformance fixture through the edge,
// for scripts/conformance.sh. Hidden: it is a test harness, not a product.
func newConformanceFixtureCmd() *cobra.Command {
	var addr string
	var generic bool
	cmd := &cobra.Command{
		Use:    "conformance-fixture",
		Short:  "Serve the MCP conformance fixture through the edge (loopback, no auth)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			fx := mcpfixture.New()
			newServer := func(context.Context, principal.Principal) *mcp.Server {
				if generic {
					return mcpfixture.Generic()
				}
				return fx.NewServer()
			}
			e, err := edge.New(edge.Options{Enabled: true, BindAddr: addr}, newServer)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv := edge.NewServer(addr, e, edge.Timeouts{})
			fmt.Fprintf(cmd.OutOrStdout(), "http://%s%s\n", ln.Addr(), edge.DefaultPath)
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			return edge.Drain(dctx, srv, e)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "loopback address to listen on")
	cmd.Flags().BoolVar(&generic, "generic", false, "serve a server with only generic capabilities instead of the fixture")
	return cmd
}
