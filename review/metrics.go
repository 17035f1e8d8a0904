package review

import (
	"time"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/store"
)

// Metrics observes the Service's jobs for the operator's dashboards. The
// app implements it over its Prometheus registry; review itself knows no
// metrics library. Every label it passes is from a bounded set: job kinds,
// job states, fault codes, check kinds and severities — never a URL, a
// tenant or free text.
type Metrics interface {
	// JobSubmitted counts a job newly created (not an idempotent replay).
	JobSubmitted(kind string)
	// JobFinished counts a job settled by this process: state is
	// completed, failed or cancelled; reason is the failure's code,
	// "requested" for a cancel of a running job, "cancelled_before_start"
	// for one that never ran, "" when completed.
	JobFinished(kind, state, reason string)
	// QueueWait is how long a job waited between creation and its first
	// start.
	QueueWait(d time.Duration)
	// Finding counts one finding of a completed review.
	Finding(kind string, severity design.Severity)
}

// noMetrics is the Metrics of a Service given none.
type noMetrics struct{}

func (noMetrics) JobSubmitted(string)                {}
func (noMetrics) JobFinished(string, string, string) {}
func (noMetrics) QueueWait(time.Duration)            {}
func (noMetrics) Finding(string, design.Severity)    {}

// finishReason is the bounded reason label JobFinished gets for p.
func finishReason(p *store.JobFinishParams) string {
	switch p.State {
	case store.Cancelled:
		return "requested"
	case store.Failed:
		return p.ErrorCode
	}
	return ""
}

// countFindings reports a completed review's findings by kind and severity.
// It decodes the stored result rather than threading the engine's through
// the settle path: one small decode per review, which takes seconds anyway.
func (s *Service) countFindings(result []byte) {
	if _, none := s.met.(noMetrics); none {
		return
	}
	res, err := decodeResult(&store.Job{Result: result})
	if err != nil {
		return
	}
	for _, f := range res.Findings {
		s.met.Finding(f.Kind, f.Severity)
	}
}
