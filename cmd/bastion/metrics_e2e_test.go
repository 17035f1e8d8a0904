package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// waitGatewayJob polls review__design_review_get through the gateway until
// the job is settled or the deadline passes.
func waitGatewayJob(t *testing.T, cs *mcp.ClientSession, jobID string, limit time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		_, raw, _ := callText(t, cs, "review__design_review_get", map[string]any{"job_id": jobID, "view": "status"})
		for _, st := range []string{"completed", "failed", "cancelled"} {
			if strings.Contains(raw, `"status":"`+st+`"`) {
				return st
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s not settled after %s: %s", jobID, limit, raw)
		case <-tick.C:
		}
	}
}

// scrapeFamilies fetches and parses the admin listener's /metrics.
func scrapeFamilies(t *testing.T, admin string) map[string]*dto.MetricFamily {
	t.Helper()
	code, _, body := httpDo(t, "GET", "http://"+admin+"/metrics", "", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return mfs
}

// sample sums the family's series whose labels include want: counter and
// gauge values, histogram sample counts.
func sample(mf *dto.MetricFamily, want map[string]string) (sum float64, series int) {
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		series++
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, series
}

// metricWant is one check of a scraped family: the series matching labels
// sum to at least min (exactly 0 when zero is set; histograms count their
// observations).
type metricWant struct {
	family string
	labels map[string]string
	min    float64
	zero   bool
}

// checkMetrics asserts the families an operator's dashboards use exist
// after a run that submitted and completed a review through the gateway,
// had a call denied by policy, and refused requests without or with bad
// credentials.
// scrapeIdle scrapes until the browser pool shows no busy slot: a capture's
// tab is closed, and its slot released, after the review has answered, so
// the first scrape after a completed job may still count it. The process
// offers no event for that, so this polls; only the test's own timeout bounds
// it, which a pool that never drains (a leak) runs into.
func scrapeIdle(t *testing.T, admin string) map[string]*dto.MetricFamily {
	t.Helper()
	for {
		mfs := scrapeFamilies(t, admin)
		if mf, ok := mfs["bastion_browser_pool_busy"]; !ok {
			return mfs
		} else if sum, _ := sample(mf, nil); sum == 0 {
			return mfs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func checkMetrics(t *testing.T, mfs map[string]*dto.MetricFamily, wants []metricWant) {
	t.Helper()
	for _, w := range wants {
		mf, ok := mfs[w.family]
		if !ok {
			t.Errorf("/metrics has no family %s", w.family)
			continue
		}
		sum, n := sample(mf, w.labels)
		switch {
		case n == 0:
			t.Errorf("%s has no series with %v", w.family, w.labels)
		case w.zero && sum != 0:
			t.Errorf("%s%v = %v, want 0", w.family, w.labels, sum)
		case !w.zero && sum < w.min:
			t.Errorf("%s%v = %v, want at least %v", w.family, w.labels, sum, w.min)
		}
	}
	// Label values come from bounded sets: never a URL.
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v := lp.GetValue(); strings.Contains(v, "://") {
					t.Errorf("%s has an unbounded label %s=%q", name, lp.GetName(), v)
				}
			}
		}
	}
}

// gatewayRunMetrics is what TestServeGateway's run must show on /metrics.
var gatewayRunMetrics = []metricWant{
	{family: "go_goroutines", min: 1},
	{family: "process_cpu_seconds_total", min: 0},
	// reviews
	{family: "bastion_review_jobs_submitted_total", labels: map[string]string{"kind": "review"}, min: 1},
	{family: "bastion_review_jobs_finished_total", labels: map[string]string{"kind": "review", "state": "completed", "reason": "none"}, min: 1},
	{family: "bastion_review_stage_seconds", labels: map[string]string{"stage": "queue"}, min: 1},
	{family: "bastion_review_stage_seconds", labels: map[string]string{"stage": "capture"}, min: 1},
	{family: "bastion_review_stage_seconds", labels: map[string]string{"stage": "judge"}, min: 1},
	{family: "bastion_review_captures_total", labels: map[string]string{"outcome": "ok"}, min: 1},
	{family: "bastion_review_findings_total", min: 1},
	{family: "bastion_browser_pool_slots", min: 1},
	{family: "bastion_browser_pool_busy", zero: true},
	{family: "bastion_browser_restarts_total", zero: true},
	// gateway
	{family: "bastion_gateway_calls_total", labels: map[string]string{"server": "review", "tool": "design_review", "decision": "allowed", "gate": "policy"}, min: 1},
	{family: "bastion_gateway_calls_total", labels: map[string]string{"decision": "denied", "gate": "policy", "rule": "no-rechecks"}, min: 1},
	{family: "bastion_gateway_call_seconds", labels: map[string]string{"server": "review", "decision": "allowed"}, min: 1},
	{family: "bastion_gateway_upstream_call_seconds", labels: map[string]string{"server": "review"}, min: 1},
	{family: "bastion_gateway_upstream_errors_total", labels: map[string]string{"server": "review", "kind": "upstream-timeout"}, zero: true},
	{family: "bastion_gateway_upstream_up", labels: map[string]string{"server": "review"}, min: 1},
	{family: "bastion_gateway_upstream_restarts_total", labels: map[string]string{"server": "review"}, zero: true},
	{family: "bastion_gateway_ledger_append_seconds", min: 2},
	{family: "bastion_gateway_ledger_failures_total", zero: true},
	{family: "bastion_audit_group_commit_records", min: 1},
	{family: "bastion_audit_commit_seconds", min: 1},
	{family: "bastion_audit_commit_failures_total", zero: true},
	{family: "bastion_gateway_pins_drifted", labels: map[string]string{"server": "review"}, zero: true},
	{family: "bastion_gateway_approvals_pending", zero: true},
	// edge
	{family: "bastion_edge_requests_total", labels: map[string]string{"route": "mcp", "status": "200", "reason": "none"}, min: 1},
	{family: "bastion_edge_requests_total", labels: map[string]string{"route": "mcp", "status": "401", "reason": "auth_refused"}, min: 2},
	{family: "bastion_edge_requests_total", labels: map[string]string{"route": "rest", "status": "200"}, min: 1},
	{family: "bastion_edge_requests_total", labels: map[string]string{"route": "rest", "status": "404"}, min: 1},
	{family: "bastion_edge_rejections_total", labels: map[string]string{"reason": "auth_refused"}, min: 2},
	{family: "bastion_edge_auth_failures_total", labels: map[string]string{"reason": "missing_token"}, min: 1},
	{family: "bastion_edge_auth_failures_total", labels: map[string]string{"reason": "invalid_token"}, min: 1},
	{family: "bastion_edge_in_flight_requests", min: 0},
	{family: "bastion_auth_jwks_fetches_total", labels: map[string]string{"outcome": "ok"}, min: 1},
	{family: "bastion_auth_jwks_fetches_total", labels: map[string]string{"outcome": "unreachable"}, zero: true},
	// egress: the run's pages ask for nothing the guard refuses, but every
	// code's series is there from the start.
	{family: "bastion_egress_blocks_total", labels: map[string]string{"code": "DNS_TARGET_PROHIBITED"}, min: 0},
	{family: "bastion_egress_blocks_total", labels: map[string]string{"code": "URL_NOT_ALLOWED"}, min: 0},
}
