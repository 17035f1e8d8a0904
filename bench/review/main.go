// Command review benchmarks the local review engine on two pages served on
// loopback: its own typical one-screen page, and a real documentation page
// nobody here wrote (from a Debian documentation package, by default the
// Python tutorial of python3-doc, when installed). For each page it reports
// a three-viewport review with a cold browser (a new pool) and with a warm
// one (the pool reused; median of -n runs), where a capture's time goes
// (navigate, settle, collect, screenshot, judge), and the peak memory of the
// browser's process tree.
//
// It uses the production wiring of `bastion review --allow-private`: the
// egress guard, the browser proxy with per-capture sessions, the capture
// pool and the checks.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
)

//go:embed page.html
var page []byte

// The real page's default: Python's tutorial chapter on control flow, from
// Debian's python3-doc (a Sphinx site of about 130 kB of HTML, with its own
// style sheets, fonts and scripts).
const (
	defaultSite  = "/usr/share/doc/python3/html"
	defaultRoute = "/tutorial/controlflow.html"
)

// Targets the issue sets for a three-viewport review.
const (
	warmTarget = 2000 * time.Millisecond
	coldTarget = 3000 * time.Millisecond
	pssTarget  = 400 << 20
)

func main() {
	n := flag.Int("n", 5, "warm reviews to run (the median is reported)")
	conc := flag.Int("concurrency", 0, "captures in flight (pool and engine); 0 means the production default")
	site := flag.String("site", defaultSite, `directory of the real site to serve ("" skips the real page)`)
	route := flag.String("route", defaultRoute, "the real page's path inside -site")
	asJSON := flag.Bool("json", false, "print the reports as JSON")
	findings := flag.String("findings", "", "write each page's cold-review findings as JSON lines to this file (to compare runs)")
	flag.Parse()
	if err := run(*n, *conc, *site, *route, *asJSON, *findings); err != nil {
		fmt.Fprintln(os.Stderr, "bench/review:", err)
		os.Exit(1)
	}
}

func run(n, conc int, site, route string, asJSON bool, findingsFile string) error {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	guard := egress.NewGuard(egress.Policy{AllowHTTP: true, AllowPrivate: true}, egress.StaticResolver{})
	proxy, err := browserproxy.New(guard, browserproxy.Options{AllowHTTP: true, RequireAuth: true, Logger: quiet})
	if err != nil {
		return err
	}
	defer proxy.Close()

	own, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	}))
	if err != nil {
		return err
	}
	targets := []benchTarget{{Name: "bench page", URL: own + "/"}}
	if site != "" {
		if _, err := os.Stat(filepath.Join(site, filepath.FromSlash(route))); err != nil {
			fmt.Fprintf(os.Stderr, "bench/review: no real page (%v); install python3-doc or pass -site/-route\n", err)
		} else {
			base, err := serve(http.FileServer(http.Dir(site)))
			if err != nil {
				return err
			}
			targets = append(targets, benchTarget{Name: "real page " + filepath.Base(site) + route, URL: base + route})
		}
	}
	if !asJSON {
		fmt.Printf("bench/review: 1 route × 3 viewports, %d CPU(s), warm runs %d\n", runtime.NumCPU(), n)
	}
	var reports []*report
	var found []findingLine
	for _, t := range targets {
		rep, err := measure(ctx, guard, proxy, t, n, conc, quiet)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		reports = append(reports, rep)
		found = append(found, rep.findings...)
		if !asJSON {
			rep.print()
		}
	}
	if findingsFile != "" {
		if err := writeFindings(findingsFile, found); err != nil {
			return err
		}
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(reports)
	}
	return nil
}

// findingLine is one finding of a page's cold review, as -findings writes
// it: what a speed change must leave unchanged.
type findingLine struct {
	Page      string            `json:"page"`
	ID        string            `json:"id"`
	Kind      string            `json:"kind"`
	Selector  string            `json:"selector"`
	Viewports []design.Viewport `json:"viewports"`
	Facts     design.Facts      `json:"facts"`
}

func writeFindings(path string, lines []findingLine) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// serve starts a loopback HTTP server for h and returns its origin. It runs
// until the process exits.
func serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: h}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
