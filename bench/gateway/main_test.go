package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/upstream"
)

// TestRun runs the benchmark small, every kind on both revisions: each call
// must succeed through every gate (a denial or tool error fails the run),
// and the ledger must hold exactly the gateway's calls, intact.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds testmcp and runs every upstream kind")
	}
	kinds := []string{"inproc", "review", "stdio", "http"}
	for _, version := range []string{upstream.DefaultProtocolVersion, "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			var out bytes.Buffer
			o := options{n: 24, conc: []int{2, 3}, rounds: 2, kinds: strings.Join(kinds, ","), version: version, workDir: t.TempDir()}
			rep, err := run(context.Background(), &out, o)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			// Per kind: the gateway's warm-up, then a sequential row and
			// one per level of concurrency, of n calls each.
			rows := len(o.levels())
			// Every call is allowed: an attempt record, then its outcome.
			want := 2 * uint64(len(kinds)*(warmup(o.n)+rows*o.n))
			if rep.Broken || rep.Records != want {
				t.Errorf("ledger: %d records, broken=%v; want %d intact", rep.Records, rep.Broken, want)
			}
			for _, k := range kinds {
				if !strings.Contains(out.String(), "\n"+k+": ") {
					t.Errorf("no table for %s in\n%s", k, out.String())
				}
			}
			if got := strings.Count(out.String(), "CPU per call"); got != rows*len(kinds) {
				t.Errorf("%d rows with CPU and allocation figures, want %d:\n%s", got, rows*len(kinds), out.String())
			}
			// Each row's durable writes hold exactly its gateway calls'
			// records: an attempt and an outcome per call.
			if got := strings.Count(out.String(), fmt.Sprintf(" for %d records (", 2*o.n)); got != rows*len(kinds) {
				t.Errorf("%d rows whose durable writes hold %d records, want %d:\n%s", got, 2*o.n, rows*len(kinds), out.String())
			}
			if got := strings.Count(out.String(), "\npeak "); got != len(kinds) {
				t.Errorf("%d peak rows, want one per kind:\n%s", got, out.String())
			}
		})
	}
}

func TestParseLevels(t *testing.T) {
	got, err := parseLevels(" 32,8,8 ")
	if err != nil || !slices.Equal(got, []int{8, 32}) {
		t.Errorf("parseLevels(32,8,8) = %v, %v; want [8 32]", got, err)
	}
	for _, bad := range []string{"", "0", "-1", "8,x", "61"} {
		if _, err := parseLevels(bad); err == nil {
			t.Errorf("parseLevels(%q) accepted", bad)
		}
	}
	if l := (options{conc: []int{1, 4}}).levels(); !slices.Equal(l, []int{1, 4}) {
		t.Errorf("levels = %v, want one sequential row then 4", l)
	}
}

// TestProcessTOML: the process kind's configuration is one the gateway
// loads, with every gate on and its files where the run put them.
func TestProcessTOML(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse("bench.toml", []byte(processTOML(dir, "http://127.0.0.1:9/mcp")))
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	if cfg.Audit.Dir != filepath.Join(dir, "audit") || cfg.Pins.File != filepath.Join(dir, "pins.json") || cfg.Approvals.File != filepath.Join(dir, "approvals.json") {
		t.Errorf("files: audit %q, pins %q, approvals %q; want them under %s", cfg.Audit.Dir, cfg.Pins.File, cfg.Approvals.File, dir)
	}
	if s := cfg.Servers["echo"]; s == nil || s.URL != "http://127.0.0.1:9/mcp" {
		t.Errorf("server echo = %+v, want the upstream URL", s)
	}
	if cfg.Inspect.Mode != "enforce" || cfg.Pin.Mode != "strict" || len(cfg.Policy.Rules) != 1 {
		t.Errorf("gates: inspect %q, pin %q, %d rules; want enforce, strict, one rule", cfg.Inspect.Mode, cfg.Pin.Mode, len(cfg.Policy.Rules))
	}
}
