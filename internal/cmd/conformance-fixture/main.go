// Command conformance-fixture serves the MCP conformance fixture
// (internal/mcpfixture) through bastion's edge on loopback with no
// authentication, for scripts/conformance.sh. It is a test harness: it is
// not part of the bastion binary, and it prints the MCP URL it serves on
// its first line of stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/app"
	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/internal/mcpfixture"
	"github.com/bastion-mcp/bastion/principal"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	generic := flag.Bool("generic", false, "serve a server with only generic capabilities instead of the fixture")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *generic); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-fixture:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string, generic bool) error {
	if err := edge.CheckBind(addr, false); err != nil {
		return err
	}
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
	fmt.Printf("http://%s%s\n", ln.Addr(), edge.DefaultPath)
	return app.Serve(ctx, app.Listeners{Edge: e, Listener: ln})
}
