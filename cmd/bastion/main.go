// Command bastion is a design-review MCP server, a remote MCP edge and a
// governing MCP gateway in one binary. This package only wires: every rule
// lives in the packages it imports.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
		var ec exitCoder
		if asExitCoder(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "bastion:", err)
		os.Exit(2)
	}
}
