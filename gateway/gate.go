// Package gateway defines the decision path every governed tools/call takes:
// the shared CallArgs and Decision types, the Gate seam, and the one place
// that fixes the gate order (routing → policy, with approval → pin → rate
// limit → inspect).
//
// Invariants: the gates run in exactly the order of Stages.ordered and the
// first denial ends the chain, so a call the policy refuses never reaches
// the rate limiter (a denied flood drains no bucket) and a call that is not
// routed is never looked at by anything else; a gate that fails (returns an
// error) denies the call (fail closed); a denial is rendered to the model as
// a tool result with isError set and the text "bastion denied: <reason>",
// never as a protocol error; a Reason is client-safe: it never carries a
// secret, an argument value or an internal address.
//
// The gates themselves live in the subpackages policy, pin, ratelimit and
// inspect; this package imports none of them, so each depends only on the
// types here. Package gates compiles a configuration into a Chain of them.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/bastion-mcp/bastion/principal"
)

// CallArgs is one tools/call as the gates see it. It is a struct, not a
// parameter list, so it can grow (smokescreen's DecideArgs habit).
type CallArgs struct {
	// Principal is the authenticated caller, with the scopes and roles its
	// verified credential states (a JWT's scope and roles claims; a PAT has
	// no roles); the zero Principal (no authentication) matches no
	// principal, scope or role condition.
	Principal principal.Principal
	// Name is the tool name the client called (namespaced, "server__tool").
	Name string
	// Server and Tool are the upstream's id (its [server.NAME] key) and the
	// tool's name on that upstream. The routing gate fills them from Name;
	// later gates rely on them.
	Server, Tool string
	// Arguments is params.arguments verbatim (may be nil or JSON null).
	Arguments json.RawMessage
	// Approved is set only by the approval flow, when it replays a call a
	// human approved (it checks the approval against principal, server, tool
	// and the arguments' hash before setting it). It lets a policy rule with
	// action "approve" pass; nothing else reads it.
	Approved bool
}

// Decision is a gate's (or the chain's) verdict on one call.
type Decision struct {
	// Allow reports whether the call may proceed.
	Allow bool
	// Gate names the gate that decided ("routing", "policy", "pin",
	// "ratelimit", "inspect"); for an allowed chain it is empty.
	Gate string
	// Rule is the audit rule: a policy rule's name or a fixed id such as
	// "unknown-tool", "deny-default", "rug-pull", "rate-limited",
	// "secret-exfil", "injection". Metrics label by it.
	Rule string
	// Reason is the client-safe sentence shown after "bastion denied: ".
	Reason string
	// Approval is non-nil when the call is not refused but must be parked
	// for a human (a policy rule with action "approve"). Allow is false.
	Approval *Approval
	// RetryAfter is how long a rate-limited caller should wait; zero otherwise.
	RetryAfter time.Duration
	// Warnings are findings that did not deny (pin and inspect in warn
	// mode). The ledger records them; they are never shown to the model.
	Warnings []string
}

// Approval says why a call must wait for a human.
type Approval struct {
	// Rule is the policy rule that asked for approval.
	Rule string
	// Reason is the rule's stated reason (or a default), shown to the agent
	// and to the approver.
	Reason string
}

// ParkForApproval reports whether d asks the caller to park the call for a
// human rather than refuse it.
func (d Decision) ParkForApproval() bool { return !d.Allow && d.Approval != nil }

// Deny returns a denying Decision from gate with rule and a client-safe reason.
func Deny(gate, rule, reason string) Decision {
	return Decision{Gate: gate, Rule: rule, Reason: reason}
}

// Allow returns an allowing Decision that records which gate and rule let
// the call through (a policy rule's name, for the ledger).
func Allow(gate, rule string) Decision {
	return Decision{Allow: true, Gate: gate, Rule: rule}
}

// DenialPrefix starts every denial text the model sees.
const DenialPrefix = "bastion denied: "

// DenialText returns the tool-error text for a denied or parked Decision:
// "bastion denied: <reason>".
func DenialText(d Decision) string {
	r := d.Reason
	if r == "" {
		r = "the call was refused"
	}
	return DenialPrefix + r
}

// A Gate decides one step of a call. Check returns an error only when it
// could not decide (a store is unreachable); the chain then denies.
// A Gate must be safe for concurrent use.
type Gate interface {
	Check(ctx context.Context, a *CallArgs) (Decision, error)
}

// A ResultGate also judges what the upstream returned (the inspect gate).
// result is the raw CallToolResult JSON.
type ResultGate interface {
	CheckResult(ctx context.Context, a *CallArgs, result json.RawMessage) (Decision, error)
}

// GateFunc adapts a function to Gate.
type GateFunc func(ctx context.Context, a *CallArgs) (Decision, error)

// Check calls f.
func (f GateFunc) Check(ctx context.Context, a *CallArgs) (Decision, error) { return f(ctx, a) }

// The gate names, as Decision.Gate carries them.
const (
	GateRouting   = "routing"
	GatePolicy    = "policy"
	GatePin       = "pin"
	GateRateLimit = "ratelimit"
	GateInspect   = "inspect"
)

// Stages are the gates of a Chain. Routing and Policy are required (a
// gateway without them would allow everything); Pin, RateLimit and Inspect
// may be nil when the operator turned them off.
type Stages struct {
	Routing   Gate
	Policy    Gate // the approval step is part of policy: an "approve" rule parks the call
	Pin       Gate
	RateLimit Gate
	Inspect   Gate
}

type namedGate struct {
	name string
	gate Gate
	span string // the gate's span name, "gateway.gate " + name, made once
}

// ordered is the one statement of the gate order. Rate limiting comes after
// every authorization step so a refused call never spends a token; inspect
// comes last because it is the most expensive and only allowed calls need it.
func (s Stages) ordered() []namedGate {
	return []namedGate{
		{name: GateRouting, gate: s.Routing},
		{name: GatePolicy, gate: s.Policy},
		{name: GatePin, gate: s.Pin},
		{name: GateRateLimit, gate: s.RateLimit},
		{name: GateInspect, gate: s.Inspect},
	}
}

// Chain runs the gates in order and returns the first denial. It holds no
// lock and is safe for concurrent use if its gates are.
type Chain struct {
	gates  []namedGate  // non-nil gates in order
	result ResultGate   // or nil
	tracer trace.Tracer // or nil: no span per gate
}

// NewChain returns a Chain over s. It fails if Routing or Policy is nil.
func NewChain(s Stages) (*Chain, error) {
	if s.Routing == nil || s.Policy == nil {
		return nil, errors.New("gateway: a chain needs a routing and a policy gate")
	}
	c := &Chain{}
	for _, g := range s.ordered() {
		if g.gate != nil {
			g.span = "gateway.gate " + g.name
			c.gates = append(c.gates, g)
		}
	}
	if rg, ok := s.Inspect.(ResultGate); ok {
		c.result = rg
	}
	return c, nil
}

// Check runs every gate on a. It returns the first denial (or approval
// request), or an allowing Decision that carries the policy rule that
// allowed the call and every warning. A gate error denies the call with rule
// "gate-error" and is returned for the log; its text is never the Reason.
func (c *Chain) Check(ctx context.Context, a *CallArgs) (Decision, error) {
	var out Decision
	out.Allow = true
	for _, g := range c.gates {
		d, err := c.check(ctx, g, a)
		if err != nil {
			return gateError(g.name), fmt.Errorf("gateway: %s gate: %w", g.name, err)
		}
		if d.Gate == "" {
			d.Gate = g.name
		}
		if !d.Allow {
			d.Warnings = append(out.Warnings, d.Warnings...)
			return d, nil
		}
		if g.name == GatePolicy {
			out.Rule = d.Rule
		}
		out.Warnings = append(out.Warnings, d.Warnings...)
	}
	return out, nil
}

// WithTracer returns a Chain like c that runs each gate in a span of its
// own ("gateway.gate NAME", with the decision and rule), a child of ctx's
// span. A nil t returns c: without a tracer the chain starts no span and
// allocates nothing for tracing.
func (c *Chain) WithTracer(t trace.Tracer) *Chain {
	if t == nil {
		return c
	}
	cc := *c
	cc.tracer = t
	return &cc
}

// check runs one gate, inside its span when the chain has a tracer.
func (c *Chain) check(ctx context.Context, g namedGate, a *CallArgs) (Decision, error) {
	if c.tracer == nil {
		return g.gate.Check(ctx, a)
	}
	ctx, span := c.tracer.Start(ctx, g.span)
	defer span.End()
	d, err := g.gate.Check(ctx, a)
	if err != nil {
		span.SetStatus(codes.Error, "gate-error")
		return d, err
	}
	span.SetAttributes(attribute.Bool("bastion.gate.allow", d.Allow), attribute.String("bastion.gate.rule", d.Rule))
	return d, nil
}

// CheckResult runs the result gate (inspect) on an upstream's result; with
// no result gate it allows.
func (c *Chain) CheckResult(ctx context.Context, a *CallArgs, result json.RawMessage) (Decision, error) {
	if c.result == nil {
		return Decision{Allow: true}, nil
	}
	d, err := c.result.CheckResult(ctx, a, result)
	if err != nil {
		return gateError(GateInspect), fmt.Errorf("gateway: inspect gate: %w", err)
	}
	if d.Gate == "" {
		d.Gate = GateInspect
	}
	return d, nil
}

func gateError(gate string) Decision {
	return Deny(gate, "gate-error", "the "+gate+" check could not be completed; try again later")
}
