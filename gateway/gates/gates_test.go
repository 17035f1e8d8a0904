package gates

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/gateway/pin"
	"github.com/bastion-mcp/bastion/principal"
)

const echo = `{"name":"echo","description":"Echo the text argument back.","inputSchema":{"type":"object"}}`

func compile(t *testing.T, src string) *Gates {
	t.Helper()
	f, err := config.Parse("bastion.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Compile(f, Options{Routing: gateway.RoutingGate{Router: gateway.Routes{"a__echo": {Server: "a", Tool: "echo"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func call(t *testing.T, g *Gates, args string) gateway.Decision {
	t.Helper()
	d, err := g.Chain.Check(context.Background(), &gateway.CallArgs{Name: "a__echo", Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const allowAll = `
[server.a]
kind = "stdio"
command = "a"
[[policy.rule]]
name = "all"
action = "allow"
match = ["a__*"]
`

// TestCompileDefaults: a file that leaves [pin] and [inspect] out gets the
// defaults WithDefaults states: tools are pinned on first sight (tofu),
// drift is refused (strict), findings warn (warn), and no bucket means no
// rate-limit stage.
func TestCompileDefaults(t *testing.T) {
	t.Parallel()
	g := compile(t, allowAll)
	ctx := context.Background()
	if g.RateLimit != nil {
		t.Error("a rate limiter without any bucket")
	}
	rep, err := g.Pins.Observe(ctx, "a", []json.RawMessage{json.RawMessage(echo)})
	if err != nil || !rep.Pinned {
		t.Fatalf("first observation: %+v, %v; want the tools pinned (tofu)", rep, err)
	}
	d := call(t, g, `{"text":"AKIAQ3ZJ7WK2LMBN5TXR"}`)
	if !d.Allow || d.Rule != "all" || len(d.Warnings) == 0 || !strings.HasPrefix(d.Warnings[0], "secret-exfil") {
		t.Errorf("secret in warn mode = %+v, want allowed by rule all with a secret-exfil warning", d)
	}
	drifted := strings.Replace(echo, "Echo the", "Echo every", 1)
	if _, err := g.Pins.Observe(ctx, "a", []json.RawMessage{json.RawMessage(drifted)}); err != nil {
		t.Fatal(err)
	}
	if d := call(t, g, `{}`); d.Allow || d.Gate != gateway.GatePin || d.Rule != pin.RuleRugPull {
		t.Errorf("drifted tool = %+v, want a rug-pull denial (strict)", d)
	}
}

// TestCompileExplicit: what the file says reaches the gates: enforce
// refuses the secret, warn pins let a held tool through, tofu = false holds
// the first tools, and a bucket adds the rate-limit stage (which every call
// past policy and pins spends, before inspection).
func TestCompileExplicit(t *testing.T) {
	t.Parallel()
	g := compile(t, allowAll+`
[inspect]
mode = "enforce"
[pin]
mode = "warn"
tofu = false
[ratelimit]
global = { rate = 0.001, burst = 2 }
`)
	if g.RateLimit == nil {
		t.Fatal("no rate limiter for a configured bucket")
	}
	rep, err := g.Pins.Observe(context.Background(), "a", []json.RawMessage{json.RawMessage(echo)})
	if err != nil || rep.Pinned {
		t.Fatalf("first observation: %+v, %v; want nothing pinned (tofu = false)", rep, err)
	}
	if d := call(t, g, `{"text":"AKIAQ3ZJ7WK2LMBN5TXR"}`); d.Allow || d.Gate != gateway.GateInspect {
		t.Errorf("secret in enforce mode = %+v, want an inspect denial", d)
	}
	if d := call(t, g, `{}`); !d.Allow || len(d.Warnings) == 0 {
		t.Errorf("unpinned tool in warn mode = %+v, want allowed with a warning", d)
	}
	if d := call(t, g, `{}`); d.Allow || d.Gate != gateway.GateRateLimit {
		t.Errorf("third call (the first two spent the burst of 2) = %+v, want rate limited", d)
	}
}

// TestCompileErrors: a section that does not compile is a *config.Error
// naming it, with the file left for the caller.
func TestCompileErrors(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("bastion.toml", []byte(allowAll+"[inspect]\ndisable = [\"no_such_detector\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(f, Options{})
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Key != "inspect" || ce.File != "" || !strings.Contains(err.Error(), "no_such_detector") {
		t.Errorf("unknown detector: err = %#v, want a config.Error on inspect", err)
	}
	bad := &config.File{RateLimit: config.RateLimit{Global: &config.Bucket{Rate: 0, Burst: 1}}}
	if _, err := Compile(bad, Options{}); !errors.As(err, &ce) || ce.Key != "ratelimit" {
		t.Errorf("zero rate: err = %v, want a config.Error on ratelimit", err)
	}
}

// TestCompileWithoutRouting: with no routing gate every name is unknown,
// so a chain compiled for validation can allow nothing.
func TestCompileWithoutRouting(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("bastion.toml", []byte(allowAll))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Compile(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := principal.New("acme", "dev")
	if err != nil {
		t.Fatal(err)
	}
	d, err := g.Chain.Check(context.Background(), &gateway.CallArgs{Principal: p, Name: "a__echo"})
	if err != nil || d.Allow || d.Gate != gateway.GateRouting {
		t.Errorf("Check = %+v, %v; want a routing denial", d, err)
	}
}
