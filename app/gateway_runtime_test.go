package app

import (
	"runtime/debug"
	"testing"
)

// TestTuneGatewayRuntime: the gateway's collector target is set unless the
// operator set GOGC, which is left alone.
func TestTuneGatewayRuntime(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return v
			}
			return ""
		}
	}
	if TuneGatewayRuntime(env("50")) {
		t.Error("tuned although GOGC is set")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: target changed to %d", got)
	}
	if !TuneGatewayRuntime(env("")) {
		t.Error("not tuned without GOGC")
	}
	if got := debug.SetGCPercent(100); got != GatewayGCPercent {
		t.Errorf("target %d, want %d", got, GatewayGCPercent)
	}
}
