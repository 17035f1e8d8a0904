// Command testmcp serves the testmcp server over stdio. Tests build it
// natively and for GOOS=wasip1 GOARCH=wasm.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/bastion-mcp/bastion/internal/testmcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	fmt.Fprintln(os.Stderr, "testmcp: serving on stdio")
	t := &mcp.IOTransport{Reader: stdin(), Writer: nopCloser{os.Stdout}}
	if err := testmcp.New(testmcp.OptionsFromEnv()).Run(context.Background(), t); err != nil {
		fmt.Fprintln(os.Stderr, "testmcp:", err)
		os.Exit(1)
	}
}

type nopCloser struct{ *os.File }

func (nopCloser) Close() error { return nil }
