package ratelimit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/principal"
)

type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *clock) advance(d time.Duration) { c.t.Add(int64(d)) }

func newClock() *clock {
	c := &clock{}
	c.t.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func caller(t testing.TB, id string) principal.Principal {
	p, err := principal.New("acme", id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func call(l *Limiter, p principal.Principal, tool string) gateway.Decision {
	d, _ := l.Check(context.Background(), &gateway.CallArgs{Principal: p, Server: "mock", Tool: tool, Name: "mock__" + tool})
	return d
}

func TestPerToolBurst(t *testing.T) {
	t.Parallel()
	c := newClock()
	l, err := New(Limits{PerTool: &Bucket{Rate: 0.001, Burst: 2}, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	alice := caller(t, "alice")
	for i := range 2 {
		if d := call(l, alice, "echo"); !d.Allow {
			t.Fatalf("call %d shed: %+v", i+1, d)
		}
	}
	d := call(l, alice, "echo")
	if d.Allow || d.Rule != RuleRateLimited || d.Gate != gateway.GateRateLimit {
		t.Fatalf("third call = %+v, want shed", d)
	}
	if d.RetryAfter < 999*time.Second || d.RetryAfter > 1001*time.Second {
		t.Errorf("retry after %v, want about 1000s", d.RetryAfter)
	}
	if !strings.Contains(d.Reason, "rate limit exceeded for tool 'mock__echo'; retry after 16m40") {
		t.Errorf("reason = %q", d.Reason)
	}
	if d := call(l, alice, "other"); !d.Allow {
		t.Errorf("another tool shares the bucket: %+v", d)
	}
	c.advance(1000 * time.Second)
	if d := call(l, alice, "echo"); !d.Allow {
		t.Errorf("no refill after 1000s: %+v", d)
	}
}

func TestPerPrincipalIsolation(t *testing.T) {
	t.Parallel()
	c := newClock()
	l, _ := New(Limits{PerPrincipal: &Bucket{Rate: 1, Burst: 1}, Now: c.now})
	alice, bob := caller(t, "alice"), caller(t, "bob")
	if !call(l, alice, "x").Allow || call(l, alice, "x").Allow {
		t.Fatal("alice's bucket does not hold one call")
	}
	if !call(l, bob, "x").Allow {
		t.Fatal("alice's use drained bob's bucket")
	}
	if d := call(l, alice, "y"); !strings.Contains(d.Reason, "for this caller") || d.RetryAfter != time.Second+time.Millisecond {
		t.Errorf("alice shed = %+v", d)
	}
}

// TestShedDrainsNothing: a call the tool bucket refuses gives back the
// caller's and the global tokens it had reserved.
func TestShedDrainsNothing(t *testing.T) {
	t.Parallel()
	c := newClock()
	l, _ := New(Limits{
		PerPrincipal: &Bucket{Rate: 1e-6, Burst: 2},
		PerTool:      &Bucket{Rate: 1e-6, Burst: 1},
		Global:       &Bucket{Rate: 1e-6, Burst: 3},
		Now:          c.now,
	})
	alice, bob := caller(t, "alice"), caller(t, "bob")
	if !call(l, alice, "hot").Allow {
		t.Fatal("first call shed")
	}
	for range 5 {
		if d := call(l, bob, "hot"); d.Allow || !strings.Contains(d.Reason, "for tool") {
			t.Fatalf("bob's call to the drained tool: %+v", d)
		}
	}
	// Bob's five refused calls took nothing: both his tokens and two
	// global tokens are still there.
	if !call(l, bob, "a").Allow || !call(l, bob, "b").Allow {
		t.Fatal("refused calls drained bob's bucket or the global one")
	}
	if d := call(l, alice, "c"); d.Allow || !strings.Contains(d.Reason, "for the gateway") {
		t.Fatalf("global burst 3 allowed a fourth call: %+v", d)
	}
}

func TestConcurrentExactBurst(t *testing.T) {
	t.Parallel()
	l, _ := New(Limits{Global: &Bucket{Rate: 1e-9, Burst: 100}, PerTool: &Bucket{Rate: 1e-9, Burst: 1000}})
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			p := caller(t, fmt.Sprint("u", g))
			for i := range 50 {
				if call(l, p, fmt.Sprint("t", i%5)).Allow {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 100 {
		t.Errorf("allowed %d calls, want exactly the global burst 100", got)
	}
}

func TestKeysBounded(t *testing.T) {
	t.Parallel()
	c := newClock()
	l, _ := New(Limits{PerPrincipal: &Bucket{Rate: 1e-6, Burst: 1}, PerTool: &Bucket{Rate: 1e-6, Burst: 5}, MaxKeys: 64, Now: c.now})
	for i := range 5000 {
		call(l, caller(t, fmt.Sprint("user", i)), fmt.Sprint("tool", i))
	}
	p, tools := l.Len()
	if p > 64 || tools > 64 || p == 0 || tools == 0 {
		t.Errorf("kept %d principal and %d tool buckets, want 1..64 each", p, tools)
	}
}

func TestEvictionPrefersRefilledBuckets(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	k := newKeyed[string](Bucket{Rate: 1, Burst: 2}, 32)
	busy := rate.NewLimiter(1, 2)
	busy.AllowN(now, 2) // drained, and used long ago
	idle := rate.NewLimiter(1, 2)
	m := map[string]*entry{
		"busy": {lim: busy, last: now.Add(-time.Minute)},
		"idle": {lim: idle, last: now},
	}
	k.evictLocked(m, now)
	if _, ok := m["busy"]; !ok || len(m) != 1 {
		t.Fatalf("evicted the drained bucket; left %v", m)
	}
	other := rate.NewLimiter(1, 2)
	other.AllowN(now, 2)
	m["other"] = &entry{lim: other, last: now}
	k.evictLocked(m, now) // nothing refilled: the least recently used goes
	if _, ok := m["busy"]; ok || len(m) != 1 {
		t.Fatalf("LRU eviction kept %v", m)
	}
}

func TestNewRejectsBadBuckets(t *testing.T) {
	t.Parallel()
	for _, b := range []Bucket{{0, 1}, {-1, 1}, {1, 0}} {
		if _, err := New(Limits{Global: &b}); err == nil {
			t.Errorf("New accepted %+v", b)
		}
	}
	l, err := New(Limits{})
	if err != nil || l.Enabled() {
		t.Fatalf("empty limits: %v, enabled=%v", err, l.Enabled())
	}
	if !call(l, principal.Principal{}, "x").Allow {
		t.Error("a limiter with no buckets shed a call")
	}
}
