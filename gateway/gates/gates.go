// Package gates compiles a gateway configuration into its gate chain: the
// one place where bastion.toml's policy, pins, rate limits and inspection
// become a gateway.Chain, used by the gateway loop and by `bastion
// validate`, so what validate accepts is what the gateway runs.
//
// It sits beside package gateway, not in it, because every gate imports
// gateway for the shared types; gateway itself imports none of them.
//
// Invariants: Compile reads a File only after config.File.WithDefaults, so
// no gate decides a default of its own; the chain's order is
// gateway.Stages's; a configuration that does not compile is an error,
// never a chain with a gate left out.
package gates

import (
	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/inspect"
	"github.com/bastion-mcp/bastion/gateway/pin"
	"github.com/bastion-mcp/bastion/gateway/policy"
	"github.com/bastion-mcp/bastion/gateway/ratelimit"
)

// Options are what a configuration file does not say.
type Options struct {
	// Routing is the chain's first gate. Nil means a gateway.RoutingGate
	// without routes: every name is unknown, which is all `bastion
	// validate` needs, since it connects to no upstream.
	Routing gateway.Gate
	// PinStore keeps the approved tool hashes; nil means an in-memory store.
	PinStore pin.Store
}

// Gates is a compiled chain and the gates it holds, which the loop also
// consults outside a call (tools/list visibility, observing tool
// definitions) and validate asks to explain the policy.
type Gates struct {
	Chain   *gateway.Chain
	Policy  *policy.Policy
	Pins    *pin.Gate
	Inspect *inspect.Gate
	// RateLimit is nil when [ratelimit] configures no bucket; the chain
	// then has no rate-limit stage.
	RateLimit *ratelimit.Limiter
}

// Compile builds the gates of f.WithDefaults(). A problem is a
// *config.Error whose Key names the section at fault ("inspect",
// "ratelimit"; none for the policy, whose message names the rule or
// profile) and whose File is left for the caller, which knows the path.
func Compile(f *config.File, o Options) (*Gates, error) {
	f = f.WithDefaults()
	pol, err := policy.New(f)
	if err != nil {
		return nil, &config.Error{Msg: err.Error()}
	}
	scanner, mode, err := inspect.FromConfig(f.Inspect)
	if err != nil {
		return nil, &config.Error{Key: "inspect", Msg: err.Error()}
	}
	lim, err := ratelimit.New(ratelimit.FromConfig(f.RateLimit))
	if err != nil {
		return nil, &config.Error{Key: "ratelimit", Msg: err.Error()}
	}
	store := o.PinStore
	if store == nil {
		store = &pin.MemStore{}
	}
	g := &Gates{Policy: pol, Pins: pin.New(store, pinOptions(f.Pin)), Inspect: inspect.NewGate(scanner, mode)}
	stages := gateway.Stages{Routing: o.Routing, Policy: g.Policy, Pin: g.Pins, Inspect: g.Inspect}
	if stages.Routing == nil {
		stages.Routing = gateway.RoutingGate{}
	}
	if lim.Enabled() {
		g.RateLimit, stages.RateLimit = lim, lim
	}
	if g.Chain, err = gateway.NewChain(stages); err != nil {
		return nil, err
	}
	return g, nil
}

// pinOptions converts [pin] as WithDefaults leaves it. A mode it does not
// know (config.Parse refuses one) is strict: the safe reading.
func pinOptions(c config.Pin) pin.Options {
	o := pin.Options{Mode: pin.Strict, TOFU: c.TOFU != nil && *c.TOFU}
	if c.Mode == config.PinWarn {
		o.Mode = pin.Warn
	}
	return o
}
