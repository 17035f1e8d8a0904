package edge

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	rejections *prometheus.CounterVec
}

func newMetrics(reg *prometheus.Registry, e *Edge) (*metrics, error) {
	m := &metrics{
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bastion_edge_rejections_total",
			Help: "Requests the MCP edge refused before the MCP SDK saw them, by reason.",
		}, []string{"reason"}),
	}
	for _, r := range allReasons {
		m.rejections.WithLabelValues(string(r))
	}
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "bastion_edge_in_flight_requests",
		Help: "MCP requests in flight at the edge, streams included.",
	}, func() float64 { t, _, _ := e.inflight.snapshot(); return float64(t) })
	sess := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "bastion_edge_sessions",
		Help: "Stateful MCP sessions bound to an owner.",
	}, func() float64 { return float64(e.sessions.count()) })
	for _, c := range []prometheus.Collector{m.rejections, inFlight, sess} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
