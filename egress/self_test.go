package egress_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/fault"
)

// TestExcludeListener holds the guard to "bastion's own listeners are never
// a target": under AllowPrivate a loopback port is reachable until it is
// registered, then Check, CheckTarget-free Check by name and DialContext all
// refuse it, and reachable again once removed. A listener on an unspecified
// address excludes its port on loopback too.
func TestExcludeListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	g := egress.NewGuard(egress.Policy{AllowPrivate: true}, egress.StaticResolver{})
	ctx := context.Background()
	refused := func(what string, err error) {
		t.Helper()
		fe, ok := fault.As(err)
		if !ok || fe.Code != fault.URLNotAllowed || !strings.Contains(fe.Message, "own listeners") {
			t.Errorf("%s = %v, want URL_NOT_ALLOWED naming bastion's own listeners", what, err)
		}
	}
	if _, err := g.Check(ctx, "http://127.0.0.1:"+port+"/"); err != nil {
		t.Fatalf("before exclusion: %v", err)
	}
	remove := g.ExcludeListener(ln.Addr())
	_, err = g.Check(ctx, "http://127.0.0.1:"+port+"/")
	refused("Check(127.0.0.1)", err)
	_, err = g.Check(ctx, "https://localhost:"+port+"/")
	refused("Check(localhost)", err)
	_, err = g.DialContext(ctx, "tcp", "127.0.0.1:"+port)
	refused("DialContext", err)
	_, err = g.WithPrivate().DialContext(ctx, "tcp", "localhost:"+port)
	refused("WithPrivate().DialContext", err)
	remove()
	remove() // idempotent
	c, err := g.DialContext(ctx, "tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("after removal: %v", err)
	}
	c.Close()

	wild := &net.TCPAddr{IP: net.IPv6unspecified, Port: ln.Addr().(*net.TCPAddr).Port}
	defer g.ExcludeListener(wild)()
	_, err = g.Check(ctx, "http://127.0.0.1:"+port+"/")
	refused("Check under a wildcard listener", err)
	if _, err := g.Check(ctx, "http://10.0.0.1:"+port+"/"); err != nil && strings.Contains(err.Error(), "own listeners") {
		t.Errorf("a LAN host that is not this machine was refused as bastion's own: %v", err)
	}
}
