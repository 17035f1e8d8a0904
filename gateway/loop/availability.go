package loop

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/upstream"
)

// ReasonUnavailable is the rule of a call denied because its upstream has
// no live session; the denial reads "upstream NAME is unavailable".
const ReasonUnavailable = "upstream-unavailable"

// await waits, within [gateway] startup_wait, for each server's first start
// attempt and lists the servers that came up. A server whose first attempt
// failed is not waited for further: it is down now, not slow, and its
// supervisor goes on retrying it in the background.
func (l *Loop) await(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.StartupWaitOr())
	defer cancel()
	errs := make([]error, len(l.order))
	var wg sync.WaitGroup
	for i, name := range l.order {
		s := l.servers[name]
		wg.Go(func() {
			if errs[i] = s.conn.WaitFirst(ctx); errs[i] == nil {
				errs[i] = l.list(ctx, s)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		l.servers[l.order[i]].logTransition(l.log)
		if err != nil {
			s := l.servers[l.order[i]]
			s.markDown(err)
			l.log.LogAttrs(ctx, slog.LevelWarn, "upstream unavailable at start-up; serving without it, retrying with backoff",
				slog.String("server", s.name), slog.Bool("optional", l.cfg.Servers[s.name].Optional), slog.String("err", err.Error()))
		}
	}
}

// catchUp acts on the events New left alone: from now on every Change is
// acted on, and a server that came up after await gave up on it, or went
// down after it was listed, is resynchronized once.
func (l *Loop) catchUp() {
	l.started.Store(true)
	for _, name := range l.order {
		s := l.servers[name]
		if s.isUp() == (s.conn.Health().State == upstream.Ready) {
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), l.cfg.StartupWaitOr())
			defer cancel()
			l.resync(ctx, s, upstream.Reconnected)
		}()
	}
}

// resync brings s's place in the catalog in line with its Conn after the
// change c, and republishes: listed (and shown) while a session is live,
// hidden while none is. The Conn's state, read under s.refresh, decides,
// not the order in which events arrive.
func (l *Loop) resync(ctx context.Context, s *serverState, c upstream.Change) {
	s.refresh.Lock()
	h := s.conn.Health()
	switch {
	case h.State != upstream.Ready:
		s.markDown(errors.New(h.LastError))
	case c == upstream.Connected && s.isUp():
		s.refresh.Unlock()
		return // listed by await already
	default:
		if err := l.listLocked(ctx, s); err != nil {
			l.log.Warn("re-listing an upstream failed", "server", s.name, "change", c.String(), "err", err)
			if !s.isUp() {
				s.markDown(err)
			}
			s.refresh.Unlock()
			return
		}
	}
	s.refresh.Unlock()
	s.logTransition(l.log)
	l.publish()
}

// markDown takes s out of the catalog (at the next build); err says why.
func (s *serverState) markDown(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.up = false
	if err != nil && err.Error() != "" {
		s.lastErr = err.Error()
	}
}

func (s *serverState) isUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

// logTransition logs, once per change, that s came up or went down, and
// reports whether it did.
func (s *serverState) logTransition(log *slog.Logger) bool {
	s.mu.Lock()
	up, was, why := s.up, s.logged, s.lastErr
	s.logged = up
	s.mu.Unlock()
	if up == was {
		return false
	}
	if up {
		log.Info("upstream available; its tools are listed", "server", s.name)
	} else {
		log.Warn("upstream unavailable; its tools are hidden and its calls denied until it reconnects", "server", s.name, "err", why)
	}
	return true
}

// Available reports whether the server keyed name is in the catalog (a
// live session, listed); the error says why not. For readiness checks.
func (l *Loop) Available(name string) error {
	s, ok := l.servers[name]
	if !ok {
		return errors.New("loop: unknown server " + name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.up {
		return nil
	}
	why := s.lastErr
	if why == "" {
		why = "no session yet"
	}
	return errors.New("upstream " + name + " is unavailable: " + why)
}

// absentServers maps names to the servers that are not up: by namespace
// (a server never listed still owns NAMESPACE__*) and by each tool the
// server last listed (an unprefixed server's names).
type absentServers struct {
	byNS   map[string]string // namespace → server
	byName map[string]absentTool
}

type absentTool struct{ server, tool string }

func (a *absentServers) add(s *serverState, last []*mcp.Tool) {
	if a.byNS == nil {
		a.byNS, a.byName = map[string]string{}, map[string]absentTool{}
	}
	if !s.bare {
		a.byNS[s.ns] = s.name
	}
	for _, t := range last {
		a.byName[s.qualify(t.Name)] = absentTool{s.name, t.Name}
	}
}

// find returns the absent server that owns name and the tool's name there.
func (a *absentServers) find(name string) (string, string, bool) {
	if t, ok := a.byName[name]; ok {
		return t.server, t.tool, true
	}
	if ns, tool, ok := strings.Cut(name, gateway.Separator); ok && tool != "" {
		if srv, ok := a.byNS[ns]; ok {
			return srv, tool, true
		}
	}
	return "", "", false
}

// routingGate is the chain's first gate: gateway.RoutingGate over the live
// catalog, except that a name belonging to a server that is not up is
// denied as unavailable (not as unknown: the operator configured it, and
// the model should know to try later).
type routingGate struct{ l *Loop }

func (g routingGate) Check(ctx context.Context, a *gateway.CallArgs) (gateway.Decision, error) {
	d, err := gateway.RoutingGate{Router: router(g)}.Check(ctx, a)
	if d.Allow || err != nil {
		return d, err
	}
	if srv, tool, ok := g.l.cat.Load().absent.find(a.Name); ok {
		a.Server, a.Tool = srv, tool
		return gateway.Deny(gateway.GateRouting, ReasonUnavailable, "upstream "+srv+" is unavailable"), nil
	}
	return d, nil
}
