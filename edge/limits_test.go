package edge

import (
	"runtime"
	"testing"

	"github.com/bastion-mcp/bastion/principal"
)

// TestInFlightLimitPerPrincipal: a principal's own bound (InFlightLimit)
// replaces the edge's for it alone, capped; zero means the edge's.
func TestInFlightLimitPerPrincipal(t *testing.T) {
	t.Parallel()
	busy, _ := principal.New("t1", "busy")
	other, _ := principal.New("t1", "other")
	huge, _ := principal.New("t1", "huge")
	var f inflight
	f.init(2, 1<<20, func(p principal.Principal) int {
		switch p.ID() {
		case "busy":
			return 5
		case "huge":
			return MaxInFlightPerPrincipalCap + 100
		}
		return 0
	})
	fill := func(p principal.Principal) int {
		n := 0
		for n < MaxInFlightPerPrincipalCap+200 {
			if _, reason := f.acquire(p, true); reason != "" {
				if reason != reasonInFlight {
					t.Fatalf("%s refused for %q", p.ID(), reason)
				}
				return n
			}
			n++
		}
		return n
	}
	for _, c := range []struct {
		p    principal.Principal
		want int
	}{{busy, 5}, {other, 2}, {huge, MaxInFlightPerPrincipalCap}} {
		if got := fill(c.p); got != c.want {
			t.Errorf("%s: %d calls admitted, want %d", c.p.ID(), got, c.want)
		}
	}
	// A stream (GET) is never a call: it passes a saturated principal.
	if _, reason := f.acquire(busy, false); reason != "" {
		t.Errorf("stream of a saturated principal refused: %q", reason)
	}
}

// TestDefaultInFlightScales: the defaults follow the CPUs the runtime may
// use, so one agent fanning out on a bigger machine is served.
func TestDefaultInFlightScales(t *testing.T) {
	prev := runtime.GOMAXPROCS(8)
	defer runtime.GOMAXPROCS(prev)
	if got := DefaultMaxInFlightPerPrincipal(); got != 256 {
		t.Errorf("8 CPUs: per principal %d, want 256", got)
	}
	if got := DefaultMaxInFlight(); got != 1024 {
		t.Errorf("8 CPUs: global %d, want 1024", got)
	}
	runtime.GOMAXPROCS(1)
	if got := DefaultMaxInFlightPerPrincipal(); got != 64 {
		t.Errorf("1 CPU: per principal %d, want the floor 64", got)
	}
	var o Options
	if err := o.withDefaults(); err != nil || o.MaxInFlightPerPrincipal != 64 || o.MaxInFlight != 256 {
		t.Errorf("withDefaults on 1 CPU: %d per principal, %d global, %v", o.MaxInFlightPerPrincipal, o.MaxInFlight, err)
	}
}
