package edge

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bastion-mcp/bastion/internal/httpstatus"
)

// Routes, the route label of bastion_edge_requests_total: a fixed set, never
// the request's path.
const (
	routeMCP      = "mcp"
	routeREST     = "rest"
	routeLive     = "livez"
	routeReady    = "readyz"
	routeMetadata = "metadata"
	routeOther    = "not_found"
)

// authReasons are the OAuth error codes an authenticator's refusal body
// carries (auth.Challenge), plus missing_token for a bare 401; anything else
// is counted as "other", so a custom authenticator cannot mint series.
var authReasons = []string{"missing_token", "invalid_request", "invalid_token", "insufficient_scope",
	"temporarily_unavailable", "server_error", "other"}

type metrics struct {
	rejections   *prometheus.CounterVec
	requests     *prometheus.CounterVec
	authFailures *prometheus.CounterVec

	// reqs caches requests' children by label set: a request after the
	// first of its kind costs a read-locked lookup, not a label hash.
	mu   sync.RWMutex
	reqs map[reqKey]prometheus.Counter
}

type reqKey struct {
	route  string
	status int
	reason rejection
}

func newMetrics(reg *prometheus.Registry, e *Edge) (*metrics, error) {
	m := &metrics{
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bastion_edge_rejections_total",
			Help: "Requests the MCP edge refused before the MCP SDK saw them, by reason.",
		}, []string{"reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bastion_edge_requests_total",
			Help: "HTTP requests the edge answered, by route (mcp, rest, livez, readyz, metadata, not_found), status code and rejection reason (none when the edge passed it on).",
		}, []string{"route", "status", "reason"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bastion_edge_auth_failures_total",
			Help: "Requests the authenticator refused, by OAuth error code (missing_token for a request with no credentials).",
		}, []string{"reason"}),
		reqs: map[reqKey]prometheus.Counter{},
	}
	for _, r := range allReasons {
		m.rejections.WithLabelValues(string(r))
	}
	for _, r := range authReasons {
		m.authFailures.WithLabelValues(r)
	}
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "bastion_edge_in_flight_requests",
		Help: "MCP requests in flight at the edge, streams included.",
	}, func() float64 { t, _, _ := e.inflight.snapshot(); return float64(t) })
	sess := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "bastion_edge_sessions",
		Help: "Stateful MCP sessions bound to an owner.",
	}, func() float64 { return float64(e.sessions.count()) })
	for _, c := range []prometheus.Collector{m.rejections, m.requests, m.authFailures, inFlight, sess} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Route is the route label of r as bastion_edge_requests_total counts it
// (mcp, livez, readyz, metadata, not_found): a fixed set, never the path,
// so a span or a series named by it stays bounded.
func (e *Edge) Route(r *http.Request) string {
	return routeOf(r.URL.Path, e.opts.Path, e.opts.Metadata != nil)
}

// request counts one answered request.
func (m *metrics) request(route string, sw *statusWriter) {
	status := sw.Status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200
	}
	k := reqKey{route: route, status: status, reason: sw.reason}
	m.mu.RLock()
	c, ok := m.reqs[k]
	m.mu.RUnlock()
	if !ok {
		reason := string(k.reason)
		if reason == "" {
			reason = "none"
		}
		c = m.requests.WithLabelValues(route, strconv.Itoa(status), reason)
		m.mu.Lock()
		m.reqs[k] = c
		m.mu.Unlock()
	}
	c.Inc()
}

// authFailed counts an authenticator's refusal by the error code its body
// names.
func (m *metrics) authFailed(held *heldResponse) {
	var body struct {
		Error string `json:"error"`
	}
	reason := "other"
	if json.Unmarshal(held.body, &body) == nil {
		switch {
		case body.Error == "" && held.status == http.StatusUnauthorized:
			reason = "missing_token"
		default:
			for _, r := range authReasons {
				if body.Error == r {
					reason = r
				}
			}
		}
	}
	m.authFailures.WithLabelValues(reason).Inc()
}

// statusWriter notes the status and the edge's rejection reason of a
// response, for bastion_edge_requests_total (and for the stateful wire,
// whether a DELETE ended its session).
type statusWriter struct {
	httpstatus.Writer
	reason rejection
}

// newStatusWriter wraps w for the edge's counting.
func newStatusWriter(w http.ResponseWriter) *statusWriter {
	return &statusWriter{Writer: httpstatus.Writer{ResponseWriter: w}}
}

// noteRejection records reason on w if the edge is counting its response.
func noteRejection(w http.ResponseWriter, reason rejection) {
	if sw, ok := w.(*statusWriter); ok && sw.reason == "" {
		sw.reason = reason
	}
}

// routeOf is the route label of a request for path.
func routeOf(path, mcpPath string, metadata bool) string {
	switch {
	case path == mcpPath:
		return routeMCP
	case path == "/livez":
		return routeLive
	case path == "/readyz":
		return routeReady
	case metadata && (path == MetadataPath || path == MetadataPath+mcpPath):
		return routeMetadata
	}
	return routeOther
}
