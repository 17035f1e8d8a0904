package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

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
			o := options{n: 24, c: 3, rounds: 2, kinds: strings.Join(kinds, ","), version: version, workDir: t.TempDir()}
			rep, err := run(context.Background(), &out, o)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			// Per kind: the gateway's warm-up, then a sequential and a
			// concurrent row of n calls each.
			want := uint64(len(kinds) * (warmup(o.n) + 2*o.n))
			if rep.Broken || rep.Records != want {
				t.Errorf("ledger: %d records, broken=%v; want %d intact", rep.Records, rep.Broken, want)
			}
			for _, k := range kinds {
				if !strings.Contains(out.String(), "\n"+k+": ") {
					t.Errorf("no table for %s in\n%s", k, out.String())
				}
			}
			if got := strings.Count(out.String(), "CPU per call"); got != 2*len(kinds) {
				t.Errorf("%d rows with CPU and allocation figures, want %d:\n%s", got, 2*len(kinds), out.String())
			}
		})
	}
}
