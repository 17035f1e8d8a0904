package loop

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bastion-mcp/bastion/audit"
)

// BenchmarkObserve is the metrics cost of one governed call after the first
// of its kind: the cached children, no label hashing.
func BenchmarkObserve(b *testing.B) {
	l := &Loop{servers: map[string]*serverState{"t": {name: "t"}}}
	m, err := newMetrics(prometheus.NewRegistry(), l)
	if err != nil {
		b.Fatal(err)
	}
	o := &outcome{server: "t", tool: "echo", decision: audit.Allowed, gate: "policy", rule: "allow-echo"}
	b.ReportAllocs()
	for b.Loop() {
		m.observe(o, time.Millisecond)
	}
}

// BenchmarkObserveUncached is the same observation through WithLabelValues,
// the cost the cache avoids.
func BenchmarkObserveUncached(b *testing.B) {
	l := &Loop{servers: map[string]*serverState{"t": {name: "t"}}}
	m, err := newMetrics(prometheus.NewRegistry(), l)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.calls.WithLabelValues("t", "echo", "allowed", "policy", "allow-echo").Inc()
		m.seconds.WithLabelValues("t", "allowed").Observe(0.001)
	}
}
