// Command review benchmarks the local review engine on a typical
// one-screen page served on loopback: the wall time of each route ×
// viewport capture, of a three-viewport review with a cold browser (a new
// pool) and with a warm one (the pool reused; median of -n runs), and the
// peak resident memory of the browser's process tree.
//
// It uses the production wiring of `bastion review --allow-private`: the
// egress guard, the browser proxy with per-capture sessions, the capture
// pool and the checks.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/engine/local"
)

//go:embed page.html
var page []byte

// report is the benchmark's result; -json prints it.
type report struct {
	Runs          int                `json:"warm_runs"`
	Concurrency   int                `json:"concurrency"`
	ColdReviewMS  float64            `json:"cold_review_ms"`
	ColdCaptureMS map[string]float64 `json:"cold_capture_ms"`
	WarmReviewMS  stats              `json:"warm_review_ms"`
	WarmCaptureMS map[string]stats   `json:"warm_capture_ms"`
	PeakRSSBytes  int64              `json:"peak_rss_bytes"`   // sampled sum of VmRSS over the tree
	PeakPSSBytes  int64              `json:"peak_pss_bytes"`   // sampled sum of Pss: shared pages counted once
	PeakHWMBytes  int64              `json:"peak_hwm_bytes"`   // sum of each process's VmHWM: an upper bound
	PeakProcesses int                `json:"peak_processes"`   // browser processes at the sampled peak
	Findings      int                `json:"findings"`         // on the benchmark page
	Grade         engine.Grade       `json:"grade"`            //
	TargetMet     bool               `json:"warm_under_3s"`    // the bar for the warm review
	CPUs          int                `json:"cpus"`             //
	StepsMS       map[string]float64 `json:"capture_steps_ms"` // median per stage of direct warm captures
}

type stats struct {
	Median, Min, Max float64
}

func summarize(ms []float64) stats {
	s := slices.Clone(ms)
	slices.Sort(s)
	if len(s) == 0 {
		return stats{}
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stats{Median: med, Min: s[0], Max: s[len(s)-1]}
}

func main() {
	n := flag.Int("n", 5, "warm reviews to run (the median is reported)")
	conc := flag.Int("concurrency", 3, "captures in flight (pool and engine)")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	flag.Parse()
	if err := run(*n, *conc, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "bench/review:", err)
		os.Exit(1)
	}
}

func run(n, conc int, asJSON bool) error {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/"

	guard := egress.NewGuard(egress.Policy{AllowHTTP: true, AllowPrivate: true}, egress.StaticResolver{})
	proxy, err := browserproxy.New(guard, browserproxy.Options{AllowHTTP: true, RequireAuth: true, Logger: quiet})
	if err != nil {
		return err
	}
	defer proxy.Close()
	pool, err := capture.NewPool(ctx, capture.Options{ProxyAddr: proxy.Addr(), MaxConcurrent: conc, Logger: quiet})
	if err != nil {
		return err
	}
	defer pool.Close()
	eng := local.New(pool, proxy, guard, local.Options{Concurrency: conc, Logger: quiet})

	// Sample the browser tree's memory while reviews run.
	var (
		mu   sync.Mutex
		peak capture.Memory
		hwm  int64
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				m := pool.Memory()
				mu.Lock()
				if m.RSS > peak.RSS {
					peak.RSS, peak.Processes = m.RSS, m.Processes
				}
				peak.PSS = max(peak.PSS, m.PSS)
				hwm = max(hwm, m.HWM)
				mu.Unlock()
			}
		}
	}()

	req := engine.Request{URL: url, Routes: []string{"/"}, Viewports: engine.Viewports()}
	rep := report{Runs: n, Concurrency: conc, CPUs: runtime.NumCPU(), ColdCaptureMS: map[string]float64{}, WarmCaptureMS: map[string]stats{}, StepsMS: map[string]float64{}}

	start := time.Now()
	res, err := eng.Review(ctx, req) // the first review launches the browser
	if err != nil {
		return fmt.Errorf("cold review: %w", err)
	}
	rep.ColdReviewMS = ms(time.Since(start))
	if len(res.Coverage.Skipped) > 0 {
		return fmt.Errorf("cold review skipped %+v", res.Coverage.Skipped)
	}
	for _, h := range res.Health {
		rep.ColdCaptureMS[string(h.Viewport)] = ms(h.CaptureDuration)
	}
	rep.Findings, rep.Grade = len(res.Findings), res.Grade

	var warm []float64
	perVP := map[string][]float64{}
	for i := 0; i < n; i++ {
		start := time.Now()
		res, err := eng.Review(ctx, req)
		if err != nil {
			return fmt.Errorf("warm review %d: %w", i+1, err)
		}
		warm = append(warm, ms(time.Since(start)))
		for _, h := range res.Health {
			perVP[string(h.Viewport)] = append(perVP[string(h.Viewport)], ms(h.CaptureDuration))
		}
	}
	// Where a capture's time goes: direct warm captures, stage by stage.
	steps := map[string][]float64{}
	var order []string
	for i := 0; i < n; i++ {
		for _, vp := range engine.Viewports() {
			sess := proxy.NewSession()
			c, err := pool.Capture(ctx, capture.Target{URL: url, Viewport: vp, Session: sess}, func(tab context.Context) error {
				_, err := checks.Collect(tab, vp)
				return err
			})
			sess.Close()
			if err != nil {
				return fmt.Errorf("direct capture: %w", err)
			}
			for _, st := range c.Steps {
				if !slices.Contains(order, st.Name) {
					order = append(order, st.Name)
				}
				steps[st.Name] = append(steps[st.Name], ms(st.Took))
			}
		}
	}
	for k, v := range steps {
		rep.StepsMS[k] = summarize(v).Median
	}
	close(stop)
	<-sampled
	rep.WarmReviewMS = summarize(warm)
	for vp, v := range perVP {
		rep.WarmCaptureMS[vp] = summarize(v)
	}
	rep.PeakRSSBytes, rep.PeakProcesses, rep.PeakPSSBytes, rep.PeakHWMBytes = peak.RSS, peak.Processes, peak.PSS, hwm
	rep.TargetMet = rep.WarmReviewMS.Median < 3000

	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Printf("bench/review: 1 route × 3 viewports, concurrency %d, %d CPU(s), warm runs %d\n", conc, rep.CPUs, n)
	fmt.Printf("  cold review (new browser)    %7.0f ms\n", rep.ColdReviewMS)
	for _, vp := range engine.Viewports() {
		fmt.Printf("    cold capture %-8s        %7.0f ms\n", vp, rep.ColdCaptureMS[string(vp)])
	}
	fmt.Printf("  warm review (median)         %7.0f ms   (min %.0f, max %.0f)   target < 3000 ms: %v\n",
		rep.WarmReviewMS.Median, rep.WarmReviewMS.Min, rep.WarmReviewMS.Max, rep.TargetMet)
	for _, vp := range engine.Viewports() {
		s := rep.WarmCaptureMS[string(vp)]
		fmt.Printf("    warm capture %-8s        %7.0f ms   (min %.0f, max %.0f)\n", vp, s.Median, s.Min, s.Max)
	}
	fmt.Printf("  capture stages (median of %d direct warm captures, ms):", 3*n)
	for _, k := range order {
		fmt.Printf(" %s %.0f", k, rep.StepsMS[k])
	}
	fmt.Println()
	fmt.Printf("  peak browser memory (sampled every 50 ms): PSS %.1f MiB, RSS sum %.1f MiB over %d processes (shared pages counted per process); sum of per-process VmHWM %.1f MiB\n",
		float64(rep.PeakPSSBytes)/(1<<20), float64(rep.PeakRSSBytes)/(1<<20), rep.PeakProcesses, float64(rep.PeakHWMBytes)/(1<<20))
	fmt.Printf("  page: grade %s, %d finding(s)\n", rep.Grade, rep.Findings)
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
