package app

import (
	"context"

	"github.com/bastion-mcp/bastion/edge"
)

// ReadyChecks are the gateway's readiness checks, for the /readyz of the
// edge that serves it: "ledger" fails while the audit ledger cannot write
// (governed calls are then refused, not forwarded) and passes again once it
// has recovered by itself.
func (g *Gateway) ReadyChecks() []edge.Check {
	return []edge.Check{{Name: "ledger", Check: func(context.Context) error { return g.Ledger.Err() }}}
}
