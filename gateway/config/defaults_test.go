package config

import (
	"reflect"
	"testing"
	"time"
)

// TestWithDefaults: every default is filled on the copy, what the file
// says is kept, the original is untouched, and a second pass changes
// nothing.
func TestWithDefaults(t *testing.T) {
	t.Parallel()
	src := `
[server.a]
kind = "stdio"
command = "a"
[server.b]
kind = "wasm"
wasm = "/b.wasm"
namespace = "bee"
timeout = "7s"
[server.c]
kind = "wasm"
wasm = "/c.wasm"
memory_mb = 32
`
	f, err := Parse("bastion.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	d := f.WithDefaults()
	checks := []struct {
		what      string
		got, want any
	}{
		{"gateway timeout", time.Duration(d.Gateway.Timeout), DefaultTimeout},
		{"startup wait", time.Duration(d.Gateway.StartupWait), DefaultStartupWait},
		{"a namespace", d.Servers["a"].Namespace, "a"},
		{"a timeout", time.Duration(d.Servers["a"].Timeout), DefaultTimeout},
		{"a memory", d.Servers["a"].MemoryMB, 0}, // not a wasm server
		{"a protocol", d.Servers["a"].Protocol, ""},
		{"b namespace", d.Servers["b"].Namespace, "bee"},
		{"b timeout", time.Duration(d.Servers["b"].Timeout), 7 * time.Second},
		{"b memory", d.Servers["b"].MemoryMB, DefaultWasmMemoryMB},
		{"c memory", d.Servers["c"].MemoryMB, 32},
		{"max keys", d.RateLimit.MaxKeys, DefaultMaxKeys},
		{"inspect mode", d.Inspect.Mode, ModeWarn},
		{"pin mode", d.Pin.Mode, PinStrict},
		{"tofu", d.Pin.TOFU != nil && *d.Pin.TOFU, true},
		{"timeout accessor", d.TimeoutOr(d.Servers["a"]), DefaultTimeout},
		// The original is not modified.
		{"original namespace", f.Servers["a"].Namespace, ""},
		{"original timeout", f.Gateway.Timeout, Duration(0)},
		{"original inspect mode", f.Inspect.Mode, ""},
		{"original tofu", f.Pin.TOFU == nil, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if again := d.WithDefaults(); !reflect.DeepEqual(again, d) {
		t.Errorf("a second WithDefaults changed the file:\n%+v\nthen\n%+v", d, again)
	}
}

// TestWithDefaultsKeepsExplicit: values the file sets, including the ones
// that differ from a default's direction (tofu = false, warn pins, a
// gateway timeout inherited by servers), survive.
func TestWithDefaultsKeepsExplicit(t *testing.T) {
	t.Parallel()
	src := `
[gateway]
timeout = "9s"
startup_wait = "1s"
[server.a]
kind = "stdio"
command = "a"
[ratelimit]
max_keys = 5
[inspect]
mode = "off"
[pin]
mode = "warn"
tofu = false
`
	f, err := Parse("bastion.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	d := f.WithDefaults()
	checks := []struct {
		what      string
		got, want any
	}{
		{"gateway timeout", time.Duration(d.Gateway.Timeout), 9 * time.Second},
		{"server timeout", time.Duration(d.Servers["a"].Timeout), 9 * time.Second},
		{"startup wait", time.Duration(d.Gateway.StartupWait), time.Second},
		{"max keys", d.RateLimit.MaxKeys, 5},
		{"inspect mode", d.Inspect.Mode, ModeOff},
		{"pin mode", d.Pin.Mode, PinWarn},
		{"tofu", d.Pin.TOFU != nil && !*d.Pin.TOFU, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}
