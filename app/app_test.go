package app

import (
	"context"
	"net/netip"
	"testing"
)

func TestOpenBaseDemo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stub := netip.MustParseAddr("93.184.216.34")
	b, err := OpenBase(ctx, Config{DataDir: t.TempDir(), Demo: &Demo{
		Host: "preview.example.com", StubAddr: stub, Site: netip.MustParseAddrPort("127.0.0.1:1"), SPKI: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := b.Targets.IsVerified(ctx, LocalTenant, "preview.example.com"); !ok || err != nil {
		t.Errorf("demo host verified = %t, %v", ok, err)
	}
	if ok, _ := b.Targets.IsVerified(ctx, "acme", "preview.example.com"); ok {
		t.Error("the demo host is verified for another tenant")
	}
	addrs, err := b.Guard.Resolve(ctx, "preview.example.com")
	if err != nil || len(addrs) != 1 || addrs[0] != stub {
		t.Errorf("demo host resolves to %v, %v; want %v", addrs, err, stub)
	}
}
