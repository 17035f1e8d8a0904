package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/fault"
)

// DefaultDrainTimeout is how long Serve lets in-flight requests and open
// streams finish after it is told to stop.
const DefaultDrainTimeout = 10 * time.Second

// Listeners are what one Serve lifecycle serves: the edge on Listener and,
// when AdminListener is set, the admin handler (probes, metrics) on it.
type Listeners struct {
	Edge          *edge.Edge
	Handler       http.Handler // what Listener serves; nil means Edge itself
	Listener      net.Listener
	Admin         http.Handler // nil means Edge.AdminHandler()
	AdminListener net.Listener // nil: no admin listener
	Timeouts      edge.Timeouts
	DrainTimeout  time.Duration // zero means DefaultDrainTimeout
}

// Serve is the one listen → serve → drain lifecycle of every bastion
// server (serve, gateway, the conformance fixture): it serves l until ctx
// ends or a listener fails, then drains the edge (new requests refused,
// open streams closed, in-flight requests finished) within the drain
// timeout and closes the admin listener. A listener's failure is returned
// as UNAVAILABLE; a clean stop returns the drain's error, if any.
func Serve(ctx context.Context, l Listeners) error {
	h := l.Handler
	if h == nil {
		h = l.Edge
	}
	srv := edge.NewServer(l.Listener.Addr().String(), h, l.Timeouts)
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(l.Listener) }()
	var admin *http.Server
	if l.AdminListener != nil {
		ah := l.Admin
		if ah == nil {
			ah = l.Edge.AdminHandler()
		}
		admin = edge.NewServer(l.AdminListener.Addr().String(), ah, l.Timeouts)
		go func() { errc <- admin.Serve(l.AdminListener) }()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
		serveErr = fault.Wrap(serveErr, fault.Unavailable, "the listener failed")
	}
	grace := l.DrainTimeout
	if grace <= 0 {
		grace = DefaultDrainTimeout
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	drainErr := edge.Drain(drainCtx, srv, l.Edge)
	if admin != nil {
		admin.Close()
	}
	return errors.Join(serveErr, drainErr)
}
