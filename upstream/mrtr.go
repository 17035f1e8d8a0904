package upstream

import (
	"context"
	"log/slog"
)

// MultiRoundTripVersion is the first MCP revision in which a server returns
// its questions as input requests in a result instead of asking during a
// call (SEP-2322), and in which each request carries the client's
// capabilities (SEP-2575).
const MultiRoundTripVersion = "2026-07-28"

// MultiRoundTrip returns a Conn to the same upstream whose session speaks
// MultiRoundTripVersion or later: its server returns sampling, elicitation
// and roots questions as input requests in results (which come back to the
// caller unanswered, for its own client to answer) and reads the client's
// capabilities from each request's _meta. A client on that revision needs
// such a session to see the upstream as it is: the question keys, the
// request state and its own capabilities. c itself serves older clients,
// to which a server may still send questions during a call.
//
// The sibling is a second session to an HTTP or in-process upstream,
// started on first use and closed with c. A stdio or Wasm upstream is one
// process (or instance) with its own state and is never started twice; it,
// and the legacy SSE transport, get ErrNoMultiRoundTrip, as does an
// upstream that negotiated an older revision (that answer is kept). An
// upstream that cannot be reached now is an error that is not kept.
func (c *Conn) MultiRoundTrip(ctx context.Context) (*Conn, error) {
	if c.spec.ProtocolVersion >= MultiRoundTripVersion {
		return c, nil
	}
	switch c.spec.Kind {
	case Stdio, Wasm:
		// A session is a whole process or instance with its own state: a
		// second one would diverge from the first behind the operator's
		// back.
		return nil, ErrNoMultiRoundTrip
	case SSE:
		return nil, ErrNoMultiRoundTrip // the legacy transport predates it
	}
	c.mrtrMu.Lock()
	defer c.mrtrMu.Unlock()
	switch {
	case c.mrtr != nil:
		return c.mrtr, nil
	case c.noMRTR:
		return nil, ErrNoMultiRoundTrip
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, c.closedErr()
	}
	spec := c.spec
	spec.ProtocolVersion = MultiRoundTripVersion
	sib, err := New(ctx, spec, c.deps)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, spec.ConnectTimeout)
	sess, err := sib.Session(sctx)
	cancel()
	if err != nil {
		sib.Close()
		return nil, err
	}
	if v := sess.InitializeResult().ProtocolVersion; v < MultiRoundTripVersion {
		sib.Close()
		c.noMRTR = true
		c.log.LogAttrs(ctx, slog.LevelInfo, "upstream speaks no multi-round-trip revision; its questions are bridged", slog.String("negotiated", v))
		return nil, ErrNoMultiRoundTrip
	}
	c.mrtr = sib
	return sib, nil
}
