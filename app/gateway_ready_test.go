package app

import (
	"context"
	"testing"

	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/fault"
)

// TestGatewayReadyChecksLedger: the gateway's readiness follows its real
// ledger: ready while it writes, not ready once it cannot.
func TestGatewayReadyChecksLedger(t *testing.T) {
	led, err := audit.Open(t.TempDir(), audit.Options{CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{Ledger: led}
	checks := g.ReadyChecks()
	if len(checks) != 1 || checks[0].Name != "ledger" {
		t.Fatalf("checks %+v", checks)
	}
	if err := checks[0].Check(context.Background()); err != nil {
		t.Fatalf("ledger check on a healthy ledger: %v", err)
	}
	led.Close()
	if err := checks[0].Check(context.Background()); !fault.Is(err, fault.Unavailable) {
		t.Fatalf("ledger check on a closed ledger = %v, want UNAVAILABLE", err)
	}
}
