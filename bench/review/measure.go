package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/checks"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/engine"
	"github.com/bastion-mcp/bastion/engine/local"
)

// benchTarget is one page to review.
type benchTarget struct {
	Name string
	URL  string
}

// report is one page's result; -json prints it.
type report struct {
	Page          string             `json:"page"`
	URL           string             `json:"url"`
	Runs          int                `json:"warm_runs"`
	ColdReviewMS  float64            `json:"cold_review_ms"`
	ColdCaptureMS map[string]float64 `json:"cold_capture_ms"`
	WarmReviewMS  stats              `json:"warm_review_ms"`
	WarmCaptureMS map[string]stats   `json:"warm_capture_ms"`
	PeakRSSBytes  int64              `json:"peak_rss_bytes"` // sampled sum of VmRSS over the tree
	PeakPSSBytes  int64              `json:"peak_pss_bytes"` // sampled sum of Pss: shared pages counted once
	PeakHWMBytes  int64              `json:"peak_hwm_bytes"` // sum of each process's VmHWM: an upper bound
	PeakProcesses int                `json:"peak_processes"` // browser processes at the sampled peak
	Findings      int                `json:"findings"`
	Grade         design.Grade       `json:"grade"`
	// Phases: the median per phase of direct warm captures (one viewport
	// at a time), in the order below.
	PhasesMS map[string]float64 `json:"phases_ms"`
	// StepsMS: the median per capture stage, as capture names them.
	StepsMS   map[string]float64 `json:"capture_steps_ms"`
	stepOrder []string
	WarmMet   bool `json:"warm_target_met"`
	ColdMet   bool `json:"cold_target_met"`
	PSSMet    bool `json:"pss_target_met"`
	Stable    int  `json:"stable_captures"` // direct captures whose layout settled
	Directs   int  `json:"direct_captures"`
	// Skips lists what a review or direct capture did not capture: a
	// benchmark of a review that dropped viewports would flatter it.
	Skips      []string `json:"skips,omitempty"`
	peakSample capture.Memory
	findings   []findingLine
}

// phases groups the capture's stages as the issue reports them; a stage
// not named here counts as settle (capture's stage names are its own).
// The engine takes no full-page screenshot (it shoots each finding's region
// while measuring), so a direct capture takes none either; "screenshot" is
// kept for a capture that still takes one.
var phases = []string{"navigate", "settle", "collect", "screenshot", "judge"}

func phaseOf(step string) string {
	switch step {
	case "open", "prepare", "load", "navigate":
		return "navigate"
	case "measure", "collect":
		return "collect"
	case "screenshot":
		return "screenshot"
	}
	return "settle"
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

// measure reviews t with a new pool (cold), then n times warm, then
// captures each viewport directly n times for the phase timings.
func measure(ctx context.Context, guard *egress.Guard, proxy *browserproxy.Proxy, t benchTarget, n, conc int, quiet *slog.Logger) (*report, error) {
	pool, err := capture.NewPool(ctx, capture.Options{ProxyAddr: proxy.Addr(), Sessions: proxy, MaxConcurrent: conc, Logger: quiet})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	eng := local.New(pool, guard, local.Options{Concurrency: conc, Logger: quiet})
	rep := &report{Page: t.Name, URL: t.URL, Runs: n, ColdCaptureMS: map[string]float64{}, WarmCaptureMS: map[string]stats{},
		PhasesMS: map[string]float64{}, StepsMS: map[string]float64{}}
	stop := rep.sampleMemory(pool)
	defer stop()

	req := engine.Request{URL: t.URL, Routes: []string{"/"}, Viewports: design.Viewports()}
	if i := strings.Index(t.URL[len("http://"):], "/"); i >= 0 {
		req.URL, req.Routes = t.URL[:len("http://")+i], []string{t.URL[len("http://")+i:]}
	}
	start := time.Now()
	res, err := eng.Review(ctx, req) // the first review launches the browser
	if err != nil {
		return nil, fmt.Errorf("cold review: %w", err)
	}
	rep.ColdReviewMS = ms(time.Since(start))
	rep.skipped("cold", res)
	for _, h := range res.Health {
		rep.ColdCaptureMS[string(h.Viewport)] = ms(h.CaptureDuration)
	}
	rep.Findings, rep.Grade = len(res.Findings), res.Grade
	for _, f := range res.Findings {
		rep.findings = append(rep.findings, findingLine{Page: t.Name, ID: f.ID, Kind: f.Kind, Selector: f.Selector, Viewports: f.Viewports, Facts: f.Facts})
	}

	var warm []float64
	perVP := map[string][]float64{}
	for i := 0; i < n; i++ {
		// Warm is a pool idle since its last review, as between an agent's
		// rechecks: its browser runs and its spare tabs are open.
		if err := pool.Warm(ctx); err != nil {
			return nil, err
		}
		start := time.Now()
		res, err := eng.Review(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("warm review %d: %w", i+1, err)
		}
		rep.skipped(fmt.Sprintf("warm %d", i+1), res)
		warm = append(warm, ms(time.Since(start)))
		for _, h := range res.Health {
			perVP[string(h.Viewport)] = append(perVP[string(h.Viewport)], ms(h.CaptureDuration))
		}
	}
	if err := rep.directCaptures(ctx, pool, t.URL, n); err != nil {
		return nil, err
	}
	stop()
	rep.WarmReviewMS = summarize(warm)
	for vp, v := range perVP {
		rep.WarmCaptureMS[vp] = summarize(v)
	}
	rep.WarmMet = rep.WarmReviewMS.Median <= ms(warmTarget)
	rep.ColdMet = rep.ColdReviewMS <= ms(coldTarget)
	rep.PSSMet = rep.PeakPSSBytes > 0 && rep.PeakPSSBytes <= pssTarget
	return rep, nil
}

// directCaptures captures each viewport of u n times, one at a time, and
// records the median of each stage and phase; judge is the checks' run on
// the snapshot against its own tokens. The engine's evidence crops are shot
// inside its measure step, so they count in the reviews' times, not here.
func (rep *report) directCaptures(ctx context.Context, pool *capture.Pool, u string, n int) error {
	steps := map[string][]float64{}
	phase := map[string][]float64{}
	for i := 0; i < n; i++ {
		for _, vp := range design.Viewports() {
			if err := pool.Warm(ctx); err != nil {
				return err
			}
			var snap *checks.Snapshot
			c, err := pool.Capture(ctx, capture.Target{URL: u, Viewport: vp, NoScreenshot: true}, func(tab context.Context) error {
				s, err := checks.Collect(tab, vp)
				snap = s
				return err
			})
			if err != nil {
				rep.Skips = append(rep.Skips, fmt.Sprintf("direct %s: %v", vp, err))
				continue
			}
			rep.Directs++
			if c.Stable {
				rep.Stable++
			}
			per := map[string]float64{}
			for _, st := range c.Steps {
				if !slices.Contains(rep.stepOrder, st.Name) {
					rep.stepOrder = append(rep.stepOrder, st.Name)
				}
				steps[st.Name] = append(steps[st.Name], ms(st.Took))
				per[phaseOf(st.Name)] += ms(st.Took)
			}
			start := time.Now()
			checks.Run(snap, checks.Config{Tokens: snap.PageTokens()})
			per["judge"] = ms(time.Since(start))
			for k, v := range per {
				phase[k] = append(phase[k], v)
			}
		}
	}
	for k, v := range steps {
		rep.StepsMS[k] = summarize(v).Median
	}
	for k, v := range phase {
		rep.PhasesMS[k] = summarize(v).Median
	}
	return nil
}

// sampleMemory samples the browser tree's memory every 50 ms until the
// returned stop is called (stop may be called more than once).
func (rep *report) sampleMemory(pool *capture.Pool) (stop func()) {
	var (
		mu   sync.Mutex
		once sync.Once
	)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				m := pool.Memory()
				mu.Lock()
				if m.RSS > rep.peakSample.RSS {
					rep.peakSample.RSS, rep.peakSample.Processes = m.RSS, m.Processes
				}
				rep.peakSample.PSS = max(rep.peakSample.PSS, m.PSS)
				rep.peakSample.HWM = max(rep.peakSample.HWM, m.HWM)
				mu.Unlock()
			}
		}
	}()
	return func() {
		once.Do(func() {
			close(done)
			<-sampled
			rep.PeakRSSBytes, rep.PeakProcesses = rep.peakSample.RSS, rep.peakSample.Processes
			rep.PeakPSSBytes, rep.PeakHWMBytes = rep.peakSample.PSS, rep.peakSample.HWM
		})
	}
}

// skipped records what review run which left out.
func (rep *report) skipped(which string, res *design.Result) {
	for _, s := range res.Coverage.Skipped {
		rep.Skips = append(rep.Skips, which+": "+s.What+": "+s.Reason)
	}
}

func (rep *report) print() {
	fmt.Printf("\n%s (%s)\n", rep.Page, rep.URL)
	fmt.Printf("  cold review (new browser)    %7.0f ms   target <= %d ms: %v\n", rep.ColdReviewMS, coldTarget.Milliseconds(), rep.ColdMet)
	for _, vp := range design.Viewports() {
		fmt.Printf("    cold capture %-8s        %7.0f ms\n", vp, rep.ColdCaptureMS[string(vp)])
	}
	fmt.Printf("  warm review (median)         %7.0f ms   (min %.0f, max %.0f)   target <= %d ms: %v\n",
		rep.WarmReviewMS.Median, rep.WarmReviewMS.Min, rep.WarmReviewMS.Max, warmTarget.Milliseconds(), rep.WarmMet)
	for _, vp := range design.Viewports() {
		s := rep.WarmCaptureMS[string(vp)]
		fmt.Printf("    warm capture %-8s        %7.0f ms   (min %.0f, max %.0f)\n", vp, s.Median, s.Min, s.Max)
	}
	fmt.Printf("  phases (median of %d direct warm captures, one at a time, ms):", rep.Directs)
	for _, k := range phases {
		fmt.Printf(" %s %.0f", k, rep.PhasesMS[k])
	}
	fmt.Printf("\n  capture stages (ms):")
	for _, k := range rep.stepOrder {
		fmt.Printf(" %s %.0f", k, rep.StepsMS[k])
	}
	fmt.Printf("\n  layout settled in %d of %d direct captures\n", rep.Stable, rep.Directs)
	fmt.Printf("  peak browser memory (sampled every 50 ms): PSS %.1f MiB (target <= %d MiB: %v), RSS sum %.1f MiB over %d processes; sum of per-process VmHWM %.1f MiB\n",
		float64(rep.PeakPSSBytes)/(1<<20), pssTarget>>20, rep.PSSMet, float64(rep.PeakRSSBytes)/(1<<20), rep.PeakProcesses, float64(rep.PeakHWMBytes)/(1<<20))
	fmt.Printf("  page: grade %s, %d finding(s)\n", rep.Grade, rep.Findings)
	if len(rep.Skips) > 0 {
		fmt.Printf("  NOT CAPTURED (%d; the timings above leave these out):\n", len(rep.Skips))
		for _, s := range rep.Skips {
			fmt.Printf("    %s\n", s)
		}
	}
}
