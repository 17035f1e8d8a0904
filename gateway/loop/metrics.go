package loop

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bastion-mcp/bastion/upstream"
)

// unknownLabel stands for a tool or server name no upstream offers: label
// values come only from the catalog, so a client cannot mint series.
const unknownLabel = "_unknown"

type metrics struct {
	calls          *prometheus.CounterVec
	seconds        *prometheus.HistogramVec
	ledgerFailures prometheus.Counter
	warnings       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, l *Loop) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bastion_gateway_calls_total",
			Help: "Governed tools/call outcomes by server, tool, decision and deciding gate.",
		}, []string{"server", "tool", "decision", "gate"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bastion_gateway_call_seconds",
			Help:    "Time from receipt to outcome of a governed tools/call.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"server", "decision"}),
		ledgerFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bastion_gateway_ledger_failures_total",
			Help: "Requests refused because the audit ledger could not record them.",
		}),
		warnings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bastion_gateway_warnings_total",
			Help: "Findings that did not deny a governed request (pin and inspect in warn mode), by rule.",
		}, []string{"rule"}),
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
	up := &upCollector{l: l, desc: prometheus.NewDesc("bastion_gateway_upstream_up",
		"1 when the upstream's session is ready, 0 while it starts, restarts or is closed.", []string{"server"}, nil),
		restarts: prometheus.NewDesc("bastion_gateway_upstream_restarts",
			"Sessions of the upstream that ended and were replaced.", []string{"server"}, nil)}
	for _, c := range []prometheus.Collector{m.calls, m.seconds, m.ledgerFailures, m.warnings, ledgerUp, up} {
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
	server, tool := o.server, o.tool
	if server == "" {
		server, tool = unknownLabel, unknownLabel
	}
	gate := o.gate
	if gate == "" {
		gate = "none"
	}
	m.calls.WithLabelValues(server, tool, string(o.decision), gate).Inc()
	m.seconds.WithLabelValues(server, string(o.decision)).Observe(lat.Seconds())
}

// upCollector reports upstream health at scrape time.
type upCollector struct {
	l              *Loop
	desc, restarts *prometheus.Desc
}

func (u *upCollector) Describe(ch chan<- *prometheus.Desc) { ch <- u.desc; ch <- u.restarts }

func (u *upCollector) Collect(ch chan<- prometheus.Metric) {
	for name, s := range u.l.servers {
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
