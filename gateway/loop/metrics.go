package loop

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bastion-mcp/bastion/gateway/approval"
	"github.com/bastion-mcp/bastion/upstream"
)

// unknownLabel stands for a tool or server name no upstream offers: label
// values come only from the catalog, so a client cannot mint series.
const unknownLabel = "_unknown"

// noneLabel is the gate or rule of a call no gate decided (allowed).
const noneLabel = "none"

// latencyBuckets suit a governed call and an upstream's answer: half a
// millisecond (an in-process upstream) to 30 s (the default timeout).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

type metrics struct {
	calls           *prometheus.CounterVec
	seconds         *prometheus.HistogramVec
	upstreamSeconds *prometheus.HistogramVec
	upstreamErrors  *prometheus.CounterVec
	ledgerAppend    prometheus.Observer
	ledgerFailures  prometheus.Counter
	warnings        *prometheus.CounterVec

	// series caches the children of calls and seconds per label set, so a
	// call after the first of its kind costs a read-locked map lookup and
	// two atomic adds (WithLabelValues hashes and validates every label).
	mu     sync.RWMutex
	series map[callKey]callSeries
	// upstream holds each configured server's latency child; read-only
	// after newMetrics.
	upstream map[string]prometheus.Observer
}

// upstreamErrorKinds are the rules upstreamFailed sets; each server's
// counters exist at zero from the start.
var upstreamErrorKinds = []string{"upstream-error", "upstream-timeout", "wasm-trap", "cancelled", "upstream-unavailable"}

type callKey struct{ server, tool, decision, gate, rule string }

type callSeries struct {
	calls   prometheus.Counter
	seconds prometheus.Observer
}

func newMetrics(reg prometheus.Registerer, l *Loop) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	ledgerAppend := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "bastion_gateway_ledger_append_seconds",
		Help:    "Time a governed request waited for its audit record to be durable (group commit and fsync included).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
	})
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bastion_gateway_calls_total",
			Help: "Governed tools/call outcomes by server, tool, decision, deciding gate and rule (rule ids come from the configuration and the gates).",
		}, []string{"server", "tool", "decision", "gate", "rule"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bastion_gateway_call_seconds",
			Help:    "Time from receipt to outcome of a governed tools/call.",
			Buckets: latencyBuckets,
		}, []string{"server", "decision"}),
		upstreamSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bastion_gateway_upstream_call_seconds",
			Help:    "Time an upstream took to answer a forwarded tools/call, errors included.",
			Buckets: latencyBuckets,
		}, []string{"server"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bastion_gateway_upstream_errors_total",
			Help: "Forwarded tools/call that failed at the upstream, by server and kind (upstream-error, upstream-timeout, wasm-trap, cancelled, upstream-unavailable).",
		}, []string{"server", "kind"}),
		ledgerAppend: ledgerAppend,
		ledgerFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bastion_gateway_ledger_failures_total",
			Help: "Requests refused because the audit ledger could not record them.",
		}),
		warnings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bastion_gateway_warnings_total",
			Help: "Findings that did not deny a governed request (pin and inspect in warn mode), by rule.",
		}, []string{"rule"}),
		series:   map[callKey]callSeries{},
		upstream: map[string]prometheus.Observer{},
	}
	for name := range l.servers {
		m.upstream[name] = m.upstreamSeconds.WithLabelValues(name)
		for _, kind := range upstreamErrorKinds {
			m.upstreamErrors.WithLabelValues(name, kind)
		}
	}
	ledgerUp := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "bastion_gateway_ledger_up",
		Help: "1 while the audit ledger takes records, 0 while it has failed (governed requests are then refused).",
	}, func() float64 {
		if l.ledgerHealthy() {
			return 1
		}
		return 0
	})
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "bastion_gateway_approvals_pending",
		Help: "Parked calls waiting for a human's approval.",
	}, l.pendingApprovals)
	up := &upCollector{l: l,
		desc: prometheus.NewDesc("bastion_gateway_upstream_up",
			"1 when the upstream's session is ready, 0 while it starts, restarts or is closed.", []string{"server"}, nil),
		restarts: prometheus.NewDesc("bastion_gateway_upstream_restarts_total",
			"Sessions of the upstream that ended and were replaced.", []string{"server"}, nil),
		drifted: prometheus.NewDesc("bastion_gateway_pins_drifted",
			"Tools of the upstream whose definition differs from its pin (held until `bastion pin approve`).", []string{"server"}, nil)}
	for _, c := range []prometheus.Collector{m.calls, m.seconds, m.upstreamSeconds, m.upstreamErrors, ledgerAppend,
		m.ledgerFailures, m.warnings, ledgerUp, pending, up} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(o *outcome, lat time.Duration) {
	k := callKey{server: o.server, tool: o.tool, decision: string(o.decision), gate: o.gate, rule: o.rule}
	if k.server == "" {
		k.server, k.tool = unknownLabel, unknownLabel
	}
	if k.gate == "" {
		k.gate = noneLabel
	}
	if k.rule == "" {
		k.rule = noneLabel
	}
	m.mu.RLock()
	s, ok := m.series[k]
	m.mu.RUnlock()
	if !ok {
		s = callSeries{calls: m.calls.WithLabelValues(k.server, k.tool, k.decision, k.gate, k.rule),
			seconds: m.seconds.WithLabelValues(k.server, k.decision)}
		m.mu.Lock()
		m.series[k] = s
		m.mu.Unlock()
	}
	s.calls.Inc()
	s.seconds.Observe(lat.Seconds())
}

// observeUpstream records one forwarded call's upstream time and, when it
// failed, its kind (the outcome's rule, set by upstreamFailed). A call that
// failed before it was sent (no session) has no upstream time.
func (m *metrics) observeUpstream(o *outcome, took time.Duration, failed bool) {
	if obs, ok := m.upstream[o.server]; ok && !o.upStart.IsZero() {
		obs.Observe(took.Seconds())
	}
	if failed {
		m.upstreamErrors.WithLabelValues(o.server, o.rule).Inc()
	}
}

// pendingApprovals counts the queue's pending approvals at scrape time; a
// queue that cannot be read reports -1 rather than a reassuring 0.
func (l *Loop) pendingApprovals() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all, err := l.approvals.List(ctx)
	if err != nil {
		return -1
	}
	n := 0
	for _, a := range all {
		if a.Status == approval.Pending {
			n++
		}
	}
	return float64(n)
}

// upCollector reports upstream health and pin drift at scrape time.
type upCollector struct {
	l                       *Loop
	desc, restarts, drifted *prometheus.Desc
}

func (u *upCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- u.desc
	ch <- u.restarts
	ch <- u.drifted
}

func (u *upCollector) Collect(ch chan<- prometheus.Metric) {
	for name, s := range u.l.servers {
		ch <- prometheus.MustNewConstMetric(u.drifted, prometheus.GaugeValue, float64(s.drifted.Load()), name)
		if s.conn == nil {
			continue
		}
		h := s.conn.Health()
		v := 0.0
		if h.State == upstream.Ready {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(u.desc, prometheus.GaugeValue, v, name)
		ch <- prometheus.MustNewConstMetric(u.restarts, prometheus.CounterValue, float64(h.Restarts), name)
	}
}
