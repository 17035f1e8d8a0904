package edge

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/bastion-mcp/bastion/fault"
)

// Timeouts bound one HTTP connection. A zero field means its default.
type Timeouts struct {
	// ReadHeader bounds reading request headers (default 10 s).
	ReadHeader time.Duration
	// Read bounds reading a whole request, headers and body (default 30 s).
	// The edge lifts it once the body is read, so it never cuts a stream.
	Read time.Duration
	// Write bounds one response, SSE streams included (default 10 min); a
	// client reopens a stream that ends.
	Write time.Duration
	// Idle bounds a keep-alive connection between requests (default 30 s).
	Idle time.Duration
	// MaxHeaderBytes bounds request headers (default 64 KiB).
	MaxHeaderBytes int
}

// DefaultTimeouts returns the defaults NewServer fills in.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 10 * time.Minute, Idle: 30 * time.Second, MaxHeaderBytes: 64 << 10}
}

// NewServer returns an http.Server for h with every timeout set.
func NewServer(addr string, h http.Handler, t Timeouts) *http.Server {
	d := DefaultTimeouts()
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	if t.MaxHeaderBytes <= 0 {
		t.MaxHeaderBytes = d.MaxHeaderBytes
	}
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: pick(t.ReadHeader, d.ReadHeader),
		ReadTimeout:       pick(t.Read, d.Read),
		WriteTimeout:      pick(t.Write, d.Write),
		IdleTimeout:       pick(t.Idle, d.Idle),
		MaxHeaderBytes:    t.MaxHeaderBytes,
	}
}

// CheckBind refuses to serve MCP on a non-loopback address without
// authentication. An empty host ("" or ":8080") binds every interface.
func CheckBind(addr string, authConfigured bool) error {
	if authConfigured {
		return nil
	}
	if !bindIsLoopback(addr) {
		return fault.New(fault.InvalidArgument, "edge: refusing to serve on non-loopback address %q without authentication", addr)
	}
	return nil
}

// CheckAdminBind refuses a non-loopback admin (metrics) listener unless
// allowPublic is set.
func CheckAdminBind(addr string, allowPublic bool) error {
	if allowPublic || bindIsLoopback(addr) {
		return nil
	}
	return fault.New(fault.InvalidArgument, "edge: admin listener %q must be loopback unless explicitly allowed", addr)
}

func bindIsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return host != "" && isLoopback(host)
}

// Drain shuts srv and e down together: srv stops accepting at once, e lets
// in-flight calls finish and closes sessions (which ends their streams, so
// srv's wait for idle connections can end).
func Drain(ctx context.Context, srv *http.Server, e *Edge) error {
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	errEdge := e.Shutdown(ctx)
	errSrv := <-done
	return errors.Join(errEdge, errSrv)
}
