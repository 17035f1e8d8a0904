// Package upstream holds the gateway's live MCP client sessions to the
// servers it governs: stdio children, Streamable HTTP and legacy HTTP+SSE
// servers, Wasm modules run in-process under wazero, and in-process servers.
// Each is a *Conn with one uniform surface (Session, Tools, CallTool,
// resources, prompts, Health, Close).
//
// Invariants:
//   - A stdio child's environment is exactly PATH plus the configured
//     variables, resolved (env:NAME, file:PATH) at every start; bastion's own
//     environment never leaks into it. The child has its own process group,
//     is always reaped, is restarted with capped, jittered exponential
//     backoff after a crash, and is stopped gracefully then by force.
//   - HTTP and SSE upstreams dial only through the egress guard, carry only
//     their configured headers, and never see a downstream client's token or
//     headers: every request is built by this package from configuration.
//   - A Wasm module is compiled once per Conn (or once per process with a
//     shared compilation cache), runs with a memory cap, no filesystem except
//     read-only mounts that are granted, and no network (wasip1 has no
//     sockets and no host functions are added). An instance that traps, exits
//     or overruns a call deadline is closed and replaced, never reused.
//   - An in-process server may offer its tools as a handler (Spec.Call):
//     tools/call then skips the session (no encoding, no session goroutines)
//     and everything else still uses it. The handler gets its own copy of
//     the arguments and none of the caller's context values.
//   - Every call has a deadline (Spec.Timeout, DefaultTimeout when unset).
//     There is no lock on the call path: each Conn multiplexes concurrent
//     calls over its session, and Conns share nothing, so a slow upstream
//     never delays another.
//   - A session that ends (a crash, a trap, a dropped stream) is replaced by
//     the supervisor; Session waits for the replacement within the caller's
//     deadline, so callers see a transparent re-initialization. Events
//     reports the first session (Connected), each session that ends (Down)
//     and each reconnection, so the gateway hides an upstream that is down,
//     re-lists its tools and re-checks pins. WaitFirst reports the first
//     start attempt's outcome, so start-up need not wait for an upstream
//     that is down rather than slow; Preflight says, without starting it,
//     why an upstream could not start on this machine.
//
// # Routing server-to-client requests
//
// An upstream may ask its client for sampling, elicitation or roots while a
// call is in flight. The gateway is that client, and the question belongs to
// the downstream client whose call triggered it. The caller attaches its
// Downstream to the context of each call (WithDownstream). Two routes exist:
//
//   - Multi-round-trip servers (protocol 2026-07-28) return their input
//     requests in the call's result. The Conn's SDK client does not answer
//     them (its automatic rounds are off): the result goes back to the
//     caller as the upstream wrote it, for the downstream client to answer
//     on its next round.
//   - Older servers send a separate request on the session. MCP gives such a
//     request no link to the call that caused it (stdio has no per-request
//     channel), so the Conn attributes it to the downstream of the calls in
//     flight on that session. When calls from several downstreams are in
//     flight the request is refused rather than guessed: answering another
//     principal's sampling prompt would leak data across tenants. An
//     elicitation goes to the downstream unjudged: what its schema may say
//     is for the client that renders it to decide.
//
// Upstreams are offered Spec.ProtocolVersion (default 2025-11-25).
// MultiRoundTrip returns a sibling Conn on 2026-07-28 for callers whose
// clients speak it: an HTTP or in-process upstream gets a second session,
// while a stdio or Wasm upstream, whose session is a whole process with its
// own state, is never started twice. Every request carries the caller's
// deadline and cancellation but none of its other context values, so state
// of the downstream hop (the SDK's per-request protocol version) never
// leaks into the upstream's.
//
// Progress is routed exactly: each call's progress token is replaced by one
// unique to the Conn and mapped back to the caller's token and Downstream.
// A call's log messages and progress reach its client before its result:
// the SDK hands a response over while the notifications read before it
// still wait for their handlers, so an answered request waits (boundedly)
// until those are relayed (fence.go).
// # Go guests under wazero
//
// wazero reports a guest's stdin as blocking, and Go's wasip1 port runs all
// goroutines on one thread, so a Go stdio server whose read loop blocks in
// fd_read never gets to write its answer. The instance's stdin is an OS
// pipe, which wazero can poll and read without blocking once the guest asks:
// a Go guest calls syscall.SetNonblock(0, true) and reads os.NewFile(0, ...)
// instead of os.Stdin (internal/testmcp/cmd/testmcp shows the three lines).
// Wasm has no fuel metering under wazero: a runaway guest is bounded by the
// call deadline and the memory cap.
package upstream
