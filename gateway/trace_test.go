package gateway_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/bastion-mcp/bastion/gateway"
)

// allowGate allows every call, so the chain's own cost is what is measured.
var allowGate = gateway.GateFunc(func(context.Context, *gateway.CallArgs) (gateway.Decision, error) {
	return gateway.Allow("", "ok"), nil
})

func allowChain(t testing.TB) *gateway.Chain {
	c, err := gateway.NewChain(gateway.Stages{Routing: allowGate, Policy: allowGate, Pin: allowGate, RateLimit: allowGate, Inspect: allowGate})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChainUntracedAllocatesNothing: a chain without a tracer (tracing
// off, WithTracer(nil)) spends no allocation per call on tracing: the
// chain over gates that allocate nothing allocates nothing.
func TestChainUntracedAllocatesNothing(t *testing.T) {
	c := allowChain(t).WithTracer(nil)
	ctx := context.Background()
	a := &gateway.CallArgs{Name: "s__t"}
	if n := testing.AllocsPerRun(200, func() {
		if d, err := c.Check(ctx, a); err != nil || !d.Allow {
			t.Fatalf("%+v %v", d, err)
		}
	}); n != 0 {
		t.Fatalf("untraced Chain.Check allocates %.1f times per call, want 0", n)
	}
}

// TestChainTracedSpanPerGate: with a tracer each gate runs in a span of
// its own, a child of the caller's, in the chain's order; a denial ends
// the chain and its spans.
func TestChainTracedSpanPerGate(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	deny := gateway.GateFunc(func(context.Context, *gateway.CallArgs) (gateway.Decision, error) {
		return gateway.Deny("", "limited", "slow down"), nil
	})
	c, err := gateway.NewChain(gateway.Stages{Routing: allowGate, Policy: allowGate, Pin: allowGate, RateLimit: deny, Inspect: allowGate})
	if err != nil {
		t.Fatal(err)
	}
	c = c.WithTracer(tp.Tracer("test"))
	ctx, parent := tp.Tracer("test").Start(context.Background(), "call")
	if d, _ := c.Check(ctx, &gateway.CallArgs{Name: "s__t"}); d.Allow || d.Gate != gateway.GateRateLimit {
		t.Fatalf("decision = %+v", d)
	}
	parent.End()
	var names []string
	for _, s := range rec.Ended() {
		if s.Name() == "call" {
			continue
		}
		names = append(names, s.Name())
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %s's parent is %s, want the call's", s.Name(), s.Parent().SpanID())
		}
	}
	want := []string{"gateway.gate routing", "gateway.gate policy", "gateway.gate pin", "gateway.gate ratelimit"}
	if len(names) != len(want) {
		t.Fatalf("gate spans = %q, want %q", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("gate spans = %q, want %q", names, want)
		}
	}
}

func BenchmarkChainTraceOff(b *testing.B) {
	c := allowChain(b)
	ctx := context.Background()
	a := &gateway.CallArgs{Name: "s__t"}
	b.ReportAllocs()
	for b.Loop() {
		c.Check(ctx, a)
	}
}
