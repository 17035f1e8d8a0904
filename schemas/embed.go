// Package schemas holds bastion's published wire schemas, embedded so the
// binary serves exactly the bytes that are checked in.
//
// Invariant: mcp-tools.json is the design-review tool catalog as a client
// sees it on tools/list; reviewmcp serves its inputSchema and outputSchema
// verbatim and a test compares the live catalog against it, so the file
// cannot drift from the server.
package schemas

import (
	"bytes"
	_ "embed"
)

//go:embed mcp-tools.json
var mcpTools []byte

// MCPTools returns a copy of schemas/mcp-tools.json.
func MCPTools() []byte { return bytes.Clone(mcpTools) }
