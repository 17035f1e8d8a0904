package app

import (
	"testing"

	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/principal"
)

// TestGatewayInFlight: [gateway] max_in_flight_per_principal and in_flight
// reach the edge options both HTTP fronts build, and an unset file leaves
// the edge's machine-scaled default (zero) and no per-principal bounds.
func TestGatewayInFlight(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("b.toml", []byte("[gateway]\nmax_in_flight_per_principal = 300\nin_flight = { \"acme/bot\" = 1024 }\n\n[server.a]\nkind = \"review\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var o edge.Options
	(&Gateway{cfg: cfg}).InFlight(&o)
	if o.MaxInFlightPerPrincipal != 300 || o.InFlightLimit == nil {
		t.Fatalf("options: per principal %d, limit func set %v", o.MaxInFlightPerPrincipal, o.InFlightLimit != nil)
	}
	bot, _ := principal.New("acme", "bot")
	other, _ := principal.New("acme", "alice")
	if got := o.InFlightLimit(bot); got != 1024 {
		t.Errorf("acme/bot: %d, want 1024", got)
	}
	if got := o.InFlightLimit(other); got != 0 {
		t.Errorf("acme/alice: %d, want 0 (the per-principal default)", got)
	}

	plain, err := config.Parse("b.toml", []byte("[server.a]\nkind = \"review\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var d edge.Options
	(&Gateway{cfg: plain}).InFlight(&d)
	if d.MaxInFlightPerPrincipal != 0 || d.InFlightLimit != nil {
		t.Errorf("unset: per principal %d, limit func set %v; want the edge's defaults", d.MaxInFlightPerPrincipal, d.InFlightLimit != nil)
	}
}
