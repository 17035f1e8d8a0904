package app

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bastion-mcp/bastion/auth"
	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
)

// newRegistry is the process's one metrics registry, with the Go runtime's
// and the process's own collectors (go_*, process_*). The review service,
// the engine, the gateway and the edge all register on it, so one /metrics
// answers for the whole process.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// register registers cs on reg, reusing a collector already registered
// under the same description (a second gateway on the same registry).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return c, err
		}
		if prev, ok := are.ExistingCollector.(C); ok {
			return prev, nil
		}
		return c, err
	}
	return c, nil
}

// stageBuckets cover a review's stages: a queue wait of milliseconds to a
// capture of minutes.
var stageBuckets = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}

// reviewMetrics implements review.Metrics and local.Observer over the
// registry: review jobs, their stages, captures and findings.
type reviewMetrics struct {
	submitted *prometheus.CounterVec
	finished  *prometheus.CounterVec
	stage     *prometheus.HistogramVec
	queue     prometheus.Observer
	captures  *prometheus.CounterVec
	findings  *prometheus.CounterVec
}

func newReviewMetrics(reg prometheus.Registerer) (*reviewMetrics, error) {
	m := &reviewMetrics{}
	var err error
	if m.submitted, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bastion_review_jobs_submitted_total",
		Help: "Review and recheck jobs created (idempotent replays excluded), by kind.",
	}, []string{"kind"})); err != nil {
		return nil, err
	}
	if m.finished, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bastion_review_jobs_finished_total",
		Help: "Jobs settled, by kind, state (completed, failed, cancelled) and reason (the failure's code, or how a cancel landed).",
	}, []string{"kind", "state", "reason"})); err != nil {
		return nil, err
	}
	if m.stage, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "bastion_review_stage_seconds",
		Help:    "Time a review spent in each stage: queue (created to first start), capture (all its captures) and judge (checks and evidence).",
		Buckets: stageBuckets,
	}, []string{"stage"})); err != nil {
		return nil, err
	}
	m.queue = m.stage.WithLabelValues("queue")
	if m.captures, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bastion_review_captures_total",
		Help: "Capture attempts by outcome: ok, cancelled, or the failure's code.",
	}, []string{"outcome"})); err != nil {
		return nil, err
	}
	if m.findings, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bastion_review_findings_total",
		Help: "Findings of completed reviews, by check kind and severity.",
	}, []string{"kind", "severity"})); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *reviewMetrics) JobSubmitted(kind string) { m.submitted.WithLabelValues(kind).Inc() }
func (m *reviewMetrics) JobFinished(kind, state, reason string) {
	if reason == "" {
		reason = "none"
	}
	m.finished.WithLabelValues(kind, state, reason).Inc()
}
func (m *reviewMetrics) QueueWait(d time.Duration) { m.queue.Observe(d.Seconds()) }
func (m *reviewMetrics) Finding(kind string, sev design.Severity) {
	m.findings.WithLabelValues(kind, string(sev)).Inc()
}
func (m *reviewMetrics) Stage(stage string, d time.Duration) {
	m.stage.WithLabelValues(stage).Observe(d.Seconds())
}
func (m *reviewMetrics) Capture(outcome string) { m.captures.WithLabelValues(outcome).Inc() }

// registerPool reports the browser pool's size, use and restarts at scrape
// time.
func registerPool(reg prometheus.Registerer, pool *capture.Pool) error {
	gauge := func(name, help string, v func(capture.Stats) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(v(pool.Stats())) })
	}
	cs := []prometheus.Collector{
		gauge("bastion_browser_pool_slots", "Captures the browser pool runs at once (open tabs).", func(s capture.Stats) int { return s.Slots }),
		gauge("bastion_browser_pool_busy", "Captures running now.", func(s capture.Stats) int { return s.Busy }),
		gauge("bastion_browser_pool_queued", "Captures waiting for a tab.", func(s capture.Stats) int { return s.Queued }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "bastion_browser_restarts_total",
			Help: "Browser processes launched after the first (after a crash or an idle exit).",
		}, func() float64 { return float64(max(pool.Stats().Launches-1, 0)) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// ledgerCommits returns the audit ledger's OnCommit hook over reg: group
// commit sizes, write-and-fsync time and failed writes.
func ledgerCommits(reg prometheus.Registerer) (func(int, time.Duration, error), error) {
	size, err := register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "bastion_audit_group_commit_records",
		Help:    "Records written together by one group commit of the audit ledger.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 10),
	}))
	if err != nil {
		return nil, err
	}
	took, err := register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "bastion_audit_commit_seconds",
		Help:    "Time one group commit took to write and fsync.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
	}))
	if err != nil {
		return nil, err
	}
	failed, err := register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "bastion_audit_commit_failures_total",
		Help: "Group commits the audit ledger could not write.",
	}))
	if err != nil {
		return nil, err
	}
	return func(n int, d time.Duration, err error) {
		if err != nil {
			failed.Inc()
			return
		}
		size.Observe(float64(n))
		took.Observe(d.Seconds())
	}, nil
}

// egressBlocks returns the egress guards' Refused hook over reg:
// bastion_egress_blocks_total by the refusal's code, every code at zero
// from the start. Every guard of the process (the browser's, HTTP
// upstreams', JWKS, the collector's) counts here.
func egressBlocks(reg prometheus.Registerer) (func(fault.Code), error) {
	c, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bastion_egress_blocks_total",
		Help: "Connections and URLs the egress guard refused, by code (URL_NOT_ALLOWED, DNS_TARGET_PROHIBITED).",
	}, []string{"code"}))
	if err != nil {
		return nil, err
	}
	children := map[fault.Code]prometheus.Counter{}
	for _, code := range []fault.Code{fault.URLNotAllowed, fault.DNSTargetProhibited} {
		children[code] = c.WithLabelValues(string(code))
	}
	return func(code fault.Code) {
		if ch, ok := children[code]; ok {
			ch.Inc()
			return
		}
		c.WithLabelValues(string(code)).Inc()
	}, nil
}

// jwksFetches returns the JWT verifier's OnFetch hook over reg:
// bastion_auth_jwks_fetches_total by outcome, every outcome at zero from
// the start (so the family is there without an issuer configured).
func jwksFetches(reg prometheus.Registerer) (func(string), error) {
	c, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bastion_auth_jwks_fetches_total",
		Help: "JWKS fetches of the OAuth issuer's keys, by outcome (ok, unreachable, bad_status, invalid).",
	}, []string{"outcome"}))
	if err != nil {
		return nil, err
	}
	for _, o := range auth.FetchOutcomes {
		c.WithLabelValues(o)
	}
	return func(outcome string) { c.WithLabelValues(outcome).Inc() }, nil
}
