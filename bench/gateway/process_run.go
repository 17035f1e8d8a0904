package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// processBuilds are the bastion binaries the process rows run: this build,
// and the base build when -ab gave a ref.
type processBuilds struct {
	this, base string // paths; base "" without -ab
	baseRef    string
}

// prepareBuilds builds (or takes from -bastion) the binaries the process
// rows need, into dir.
func prepareBuilds(o options, dir string) (processBuilds, error) {
	b := processBuilds{this: o.bastionBin, baseRef: o.abRef}
	if b.this != "" && o.abRef == "" {
		return b, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return b, err
	}
	if b.this == "" {
		b.this = filepath.Join(dir, "bastion-this")
		if err := buildBastion(root, b.this); err != nil {
			return b, err
		}
	}
	if o.abRef != "" {
		b.base = filepath.Join(dir, "bastion-base")
		if err := buildBase(root, o.abRef, b.base); err != nil {
			return b, err
		}
	}
	return b, nil
}

// measureProcess prints the process rows: direct, this build's gateway
// process and (with -ab) the base build's, in alternating rounds at each
// level of callers.
func measureProcess(ctx context.Context, w io.Writer, o options) error {
	tmp, err := os.MkdirTemp("", "bench-gateway-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	builds, err := prepareBuilds(o, tmp)
	if err != nil {
		return err
	}
	url, stopUp, err := serveTestMCP(o.callers())
	if err != nil {
		return err
	}
	defer stopUp()
	type path struct {
		name string
		url  string
		pid  int
	}
	paths := []path{{name: "direct", url: url}}
	for _, b := range []struct{ name, bin string }{{"this", builds.this}, {"base", builds.base}} {
		if b.bin == "" {
			continue
		}
		g, err := startGateway(ctx, b.name, b.bin, o.workDir, url)
		if err != nil {
			return err
		}
		defer g.stop()
		paths = append(paths, path{name: b.name, url: g.url, pid: g.cmd.Process.Pid})
	}
	title := "process: `bastion gateway` as its own process (all gates, ledger fsynced under " + o.workDir + " (" + fsType(o.workDir) + ")), testmcp upstream on loopback Streamable HTTP, one client session per caller"
	if builds.base != "" {
		title += "; base = " + builds.baseRef
	}
	fmt.Fprintf(w, "\n%s\n", title)
	results := make([][]procResult, len(o.levels()))
	for li, conc := range o.levels() {
		results[li] = make([]procResult, len(paths))
		sessions := make([][]*mcp.ClientSession, len(paths))
		for i, p := range paths {
			ss, closeAll, err := openSessions(ctx, p.url, conc, o.version)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			defer closeAll()
			sessions[i] = ss
			if _, err := driveCounting(ctx, ss, p.pid, warmup(o.n)); err != nil {
				return fmt.Errorf("%s warm-up: %w", p.name, err)
			}
		}
		for i := range o.rounds {
			k := o.n/o.rounds + boolInt(i < o.n%o.rounds)
			for pi, p := range paths {
				r, err := driveCounting(ctx, sessions[pi], p.pid, k)
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				results[li][pi].add(r)
			}
		}
	}
	printProcess(w, o, func(i int) string { return paths[i].name }, len(paths), results)
	return nil
}

// printProcess prints the process rows' table.
func printProcess(w io.Writer, o options, name func(int) string, n int, results [][]procResult) {
	us := func(d time.Duration) string { return d.Round(time.Microsecond).String() }
	fmt.Fprintf(w, "%-12s", "calls/s")
	for i := range n {
		fmt.Fprintf(w, " %10s", name(i))
	}
	for i := 1; i < n; i++ {
		fmt.Fprintf(w, " %13s", name(i)+"/direct")
	}
	if n == 3 {
		fmt.Fprintf(w, " %12s", "this/base")
	}
	fmt.Fprintln(w)
	for li, conc := range o.levels() {
		rs := results[li]
		fmt.Fprintf(w, "%-12s", fmt.Sprintf("%d caller(s)", conc))
		for _, r := range rs {
			fmt.Fprintf(w, " %10.0f", r.rate())
		}
		for _, r := range rs[1:] {
			fmt.Fprintf(w, " %12.0f%%", 100*r.rate()/rs[0].rate())
		}
		if n == 3 {
			fmt.Fprintf(w, " %11.0f%%", 100*rs[1].rate()/rs[2].rate())
		}
		fmt.Fprintln(w)
	}
	for li, conc := range o.levels() {
		rs := results[li]
		fmt.Fprintf(w, "%-12s p50", fmt.Sprintf("%d caller(s)", conc))
		for i, r := range rs {
			fmt.Fprintf(w, " %s %s", name(i), us(r.quantile(0.5)))
			if i > 0 {
				fmt.Fprintf(w, " (+%s)", us(r.quantile(0.5)-rs[0].quantile(0.5)))
			}
			fmt.Fprint(w, ";")
		}
		fmt.Fprint(w, " gateway process CPU per call:")
		for i, r := range rs[1:] {
			fmt.Fprintf(w, " %s %s", name(i+1), us(r.gwCPUPerCall()))
		}
		fmt.Fprint(w, "; failed calls:")
		for i, r := range rs {
			fmt.Fprintf(w, " %s %d", name(i), r.errors)
		}
		fmt.Fprintln(w)
		for i, r := range rs {
			if r.lastErr != nil {
				fmt.Fprintf(w, "%-12s %s's last failure: %v\n", "", name(i), r.lastErr)
			}
		}
	}
}
