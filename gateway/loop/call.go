package loop

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/audit"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/approval"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/tracing"
	"github.com/bastion-mcp/bastion/upstream"
)

// ReasonLedger is the denial reason when the ledger cannot record a call.
const ReasonLedger = "audit ledger unavailable"

func denial(reason string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: gateway.DenialPrefix + reason}}}
}

func ledgerDenial() *mcp.CallToolResult { return denial(ReasonLedger) }

// callStack is about the stack a governed call reaches: the gates, the
// ledger's append and the SDK client's encoding of the upstream request.
const callStack = 16 << 10

// growStack grows the calling goroutine's stack to hold a governed call, in
// one step while the stack is still shallow. The SDK runs every request on
// a fresh goroutine with the runtime's smallest stack, which would otherwise
// double four times on the way down, the last copies deep in the SDK's
// encoder where each one walks and adjusts dozens of frames (runtime.newstack
// was 7% of the gateway process's CPU, 11% of BenchmarkGovernedCall's). Its
// frame is the padding: the prologue's stack check sees it and grows the
// stack before the body runs. i only keeps the compiler from dropping the
// array.
//
//go:noinline
func growStack(i int) byte {
	var pad [callStack]byte
	return pad[i&(callStack-1)]
}

// callTool is the governed tools/call.
func (l *Loop) callTool(ctx context.Context, c *client, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	growStack(0)
	o := newOutcome("tools/call")
	ctx, span := l.startSpan(ctx, spanCall)
	defer endCall(span, o)
	var p *mcp.CallToolParamsRaw
	if req != nil {
		p = req.Params
	}
	if p == nil {
		p = &mcp.CallToolParamsRaw{}
	}
	o.name, o.args = p.Name, p.Arguments
	if p.RequestState != "" && strings.HasPrefix(p.RequestState, bridgePrefix) {
		// The client answers input requests of a call already governed.
		return l.resume(ctx, c, p)
	}
	// A later round of an upstream's multi-round-trip call carries the
	// state the gateway sealed; it is governed like a first call.
	inner, err := c.openRound(ctx, o, "tools/call", p.Name, p.RequestState)
	if err != nil {
		return nil, err
	}
	a := &gateway.CallArgs{Principal: c.p, Name: p.Name, Arguments: p.Arguments}

	d, err := l.chain.Check(ctx, a)
	if err != nil {
		l.log.LogAttrs(ctx, slog.LevelWarn, "gate failed; call denied", slog.String("err", err.Error()))
	}
	o.server, o.tool = a.Server, a.Tool
	if d.ParkForApproval() {
		if res := l.approval(ctx, c, a, d, o); res != nil {
			return res, nil
		}
		// A human approved exactly this call: run the chain again with the
		// approval, so every later gate still decides.
		a.Approved = true
		if d, err = l.chain.Check(ctx, a); err != nil {
			l.log.LogAttrs(ctx, slog.LevelWarn, "gate failed; call denied", slog.String("err", err.Error()))
		}
	}
	o.warnings = d.Warnings
	if !d.Allow {
		o.decision, o.gate, o.rule, o.reason = audit.Denied, d.Gate, d.Rule, d.Reason
		return l.answer(ctx, c, o, denial(o.reason)), nil
	}
	o.rule, o.gate = d.Rule, gateway.GatePolicy
	if !l.admit(ctx, c, o) {
		return ledgerRefusal(o), nil
	}

	s := l.servers[a.Server]
	up := &mcp.CallToolParams{Meta: hopMeta(p.Meta), Name: a.Tool, Arguments: json.RawMessage(p.Arguments)}
	if len(p.Arguments) == 0 {
		up.Arguments = nil
	}
	conn, err := l.connFor(ctx, s, c.p)
	if err != nil {
		return l.upstreamFailed(ctx, c, o, err)
	}
	if req != nil && req.Session != nil && multiRoundTrip(req.Session) {
		m, err := conn.MultiRoundTrip(ctx)
		switch {
		case err == nil:
			up.Meta, up.InputResponses, up.RequestState = clientMeta(p.Meta), p.InputResponses, inner
			return l.round(ctx, c, req.Session, m, a, o, up)
		case !errors.Is(err, upstream.ErrNoMultiRoundTrip):
			return l.upstreamFailed(ctx, c, o, err)
		case p.RequestState != "":
			// A sealed state names an upstream round, and this upstream
			// has none: it was issued before the upstream changed.
			return nil, errBadState()
		}
		return l.bridged(ctx, c, req.Session, conn, a, o, up)
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.TimeoutOr(l.cfg.Servers[a.Server]))
	defer cancel()
	if req != nil && req.Session != nil {
		d := &callDown{ss: req.Session, ctx: ctx}
		ctx = upstream.WithDownstream(ctx, d)
		defer s.flight.add(d)()
	}
	o.upStart = time.Now()
	uctx, uspan := l.startSpan(ctx, spanUpstream)
	if uspan != nil {
		up.Meta = tracing.WithMeta(uctx, up.Meta)
	}
	res, err := conn.CallTool(uctx, up)
	endSpan(uspan, err)
	return l.finish(ctx, c, a, o, res, err)
}

// round makes one round of a multi-round-trip call on the upstream's
// multi-round-trip session m, sealing the request state of an
// input-required answer for the client's next round.
func (l *Loop) round(ctx context.Context, c *client, ss *mcp.ServerSession, m *upstream.Conn, a *gateway.CallArgs, o *outcome, up *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.TimeoutOr(l.cfg.Servers[a.Server]))
	defer cancel()
	d := &callDown{ss: ss, ctx: ctx}
	ctx = upstream.WithDownstream(ctx, d)
	defer l.servers[a.Server].flight.add(d)()
	o.upStart = time.Now()
	uctx, uspan := l.startSpan(ctx, spanUpstream)
	if uspan != nil {
		up.Meta = tracing.WithMeta(uctx, up.Meta)
	}
	res, err := m.CallTool(uctx, up)
	endSpan(uspan, err)
	if err == nil && res != nil && res.InputRequests != nil {
		res = &mcp.CallToolResult{Meta: res.Meta, InputRequests: res.InputRequests,
			RequestState: l.rounds.seal(c.p, "tools/call", a.Name, res.RequestState)}
	}
	return l.finish(ctx, c, a, o, res, err)
}

// finish inspects and records what the upstream answered and returns what
// the client gets.
func (l *Loop) finish(ctx context.Context, c *client, a *gateway.CallArgs, o *outcome, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return l.upstreamFailed(ctx, c, o, err)
	}
	l.met.observeUpstream(o, time.Since(o.upStart), false)
	// The upstream's protocol keys (its serverInfo) describe its hop; the
	// client's server sets its own.
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	res.Meta = hopMeta(res.Meta)
	raw, err := json.Marshal(res)
	if err != nil {
		o.decision, o.rule, o.reason = audit.UpstreamError, "bad-result", "the upstream's result could not be encoded"
		return l.answer(ctx, c, o, denial(o.reason)), nil
	}
	o.result = raw
	rd, err := l.chain.CheckResult(ctx, a, raw)
	if err != nil {
		l.log.LogAttrs(ctx, slog.LevelWarn, "result gate failed; result withheld", slog.String("err", err.Error()))
	}
	o.warnings = append(o.warnings, rd.Warnings...)
	if !rd.Allow {
		// The model never sees a blocked result; the ledger keeps its digest.
		o.decision, o.gate, o.rule, o.reason = audit.Denied, rd.Gate, rd.Rule, rd.Reason
		return l.answer(ctx, c, o, denial(o.reason)), nil
	}
	o.decision = audit.Allowed
	return l.answer(ctx, c, o, res), nil
}

// upstreamFailed classifies a failed upstream call. An upstream's own
// JSON-RPC error passes through unchanged (the gateway is transparent to
// the protocol); a timeout, trap or lost session becomes a tool error the
// model can read.
func (l *Loop) upstreamFailed(ctx context.Context, c *client, o *outcome, err error) (*mcp.CallToolResult, error) {
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		o.decision, o.rule, o.reason = audit.UpstreamError, "upstream-error", fmt.Sprintf("upstream error %d", rpc.Code)
	case errors.Is(err, upstream.ErrTimeout) || errors.Is(err, context.DeadlineExceeded):
		o.decision, o.rule, o.reason = audit.Timeout, "upstream-timeout",
			fmt.Sprintf("server %s did not answer within %s", o.server, l.cfg.TimeoutOr(l.cfg.Servers[o.server]))
	case errors.Is(err, upstream.ErrTrapped):
		o.decision, o.rule, o.reason = audit.Trap, "wasm-trap", fmt.Sprintf("server %s failed during the call and was restarted", o.server)
	case errors.Is(err, context.Canceled):
		o.decision, o.rule, o.reason = audit.UpstreamError, "cancelled", "the call was cancelled"
	default:
		msg := "the upstream failed"
		if f, ok := fault.As(err); ok {
			msg = f.Message
		}
		o.decision, o.rule, o.reason = audit.UpstreamError, "upstream-unavailable", msg
	}
	l.met.observeUpstream(o, time.Since(o.upStart), true)
	if rpc == nil {
		return l.answer(ctx, c, o, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bastion error: " + o.reason}}}), nil
	}
	// The upstream's own error passes through, unless the ledger refused.
	if refusal := l.answer(ctx, c, o, nil); refusal != nil {
		return refusal, nil
	}
	return nil, rpc
}

// approval handles a call the policy parks. It returns the result to send,
// or nil when a human approved exactly this call and it should be
// replayed.
func (l *Loop) approval(ctx context.Context, c *client, a *gateway.CallArgs, d gateway.Decision, o *outcome) *mcp.CallToolResult {
	want := approval.Approval{
		Tenant: c.p.Tenant(), Principal: c.p.ID(), Server: a.Server, Tool: a.Tool, Name: a.Name,
		ArgsHash: audit.Digest(a.Arguments), Rule: d.Approval.Rule, Reason: d.Approval.Reason,
	}
	ap, err := l.approvals.Request(context.WithoutCancel(ctx), want)
	if err != nil {
		l.log.LogAttrs(ctx, slog.LevelError, "approval queue failed; call denied", slog.String("err", err.Error()))
		o.decision, o.gate, o.rule, o.reason = audit.Denied, gateway.GatePolicy, "approval-unavailable", "the approval queue is unavailable"
		return l.answer(ctx, c, o, denial(o.reason))
	}
	switch ap.Status {
	case approval.Approved:
		if err := l.approvals.Consume(context.WithoutCancel(ctx), ap.ID); err != nil {
			o.decision, o.gate, o.rule, o.reason = audit.Denied, gateway.GatePolicy, "approval-unavailable", "the approval queue is unavailable"
			return l.answer(ctx, c, o, denial(o.reason))
		}
		return nil
	case approval.Denied:
		_ = l.approvals.Consume(context.WithoutCancel(ctx), ap.ID)
		o.decision, o.gate, o.rule = audit.Denied, gateway.GatePolicy, d.Approval.Rule
		o.reason = fmt.Sprintf("approval %s was denied by %s", ap.ID, cmp.Or(ap.DecidedBy, "an approver"))
		return l.answer(ctx, c, o, denial(o.reason))
	}
	o.decision, o.gate, o.rule = audit.ApprovalPending, gateway.GatePolicy, d.Approval.Rule
	o.reason = fmt.Sprintf("approval %s pending: %s", ap.ID, d.Approval.Reason)
	text := fmt.Sprintf("bastion: this call needs a human's approval (approval id %s): %s. "+
		"It was not run. Once an approver runs `bastion approvals approve %s`, call %s again with the same arguments; "+
		"calling it earlier returns this message again.", ap.ID, d.Approval.Reason, ap.ID, a.Name)
	return l.answer(ctx, c, o, &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: map[string]any{"approval_id": ap.ID, "status": string(approval.Pending)},
	})
}

// getPrompt forwards prompts/get to the owning upstream, governed by the
// policy on SERVER__PROMPT and audited like a call.
func (c *client) getPrompt(e *promptEntry) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		o := newOutcome("prompts/get")
		o.name, o.server, o.tool = req.Params.Name, e.server, e.prompt
		if args, err := json.Marshal(req.Params.Arguments); err == nil {
			o.args = args
		}
		a := &gateway.CallArgs{Principal: c.p, Name: req.Params.Name, Server: e.server, Tool: e.prompt, Arguments: o.args}
		ctx, h, err := c.forward(ctx, req.Session, o, a, req.Params.Meta, req.Params.RequestState)
		if err != nil {
			return nil, err
		}
		defer h.done()
		p := *req.Params
		p.Name, p.Meta, p.RequestState = e.prompt, h.meta, h.state
		res, err := h.conn.GetPrompt(ctx, &p)
		if err != nil {
			return nil, c.l.forwardFailed(ctx, c, o, err)
		}
		res.Meta = hopMeta(res.Meta)
		if res.InputRequests != nil {
			res = &mcp.GetPromptResult{Meta: res.Meta, InputRequests: res.InputRequests, RequestState: h.seal(res.RequestState)}
		}
		if err := c.settle(ctx, o, a, res); err != nil {
			return nil, err
		}
		return res, nil
	}
}

// readResource forwards resources/read to server, governed by the policy on
// SERVER__NAME (the resource's or template's name) and audited.
func (c *client) readResource(server, name string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		o := newOutcome("resources/read")
		o.name, o.server, o.tool = req.Params.URI, server, name
		a := &gateway.CallArgs{Principal: c.p, Name: req.Params.URI, Server: server, Tool: name}
		ctx, h, err := c.forward(ctx, req.Session, o, a, req.Params.Meta, req.Params.RequestState)
		if err != nil {
			return nil, err
		}
		defer h.done()
		rp := *req.Params
		rp.Meta, rp.RequestState = h.meta, h.state
		res, err := h.conn.ReadResource(ctx, &rp)
		if err != nil {
			return nil, c.l.forwardFailed(ctx, c, o, err)
		}
		res.Meta = hopMeta(res.Meta)
		if res.InputRequests != nil {
			res = &mcp.ReadResourceResult{Meta: res.Meta, InputRequests: res.InputRequests, RequestState: h.seal(res.RequestState)}
		}
		if err := c.settle(ctx, o, a, res); err != nil {
			return nil, err
		}
		return res, nil
	}
}

// hop is how a governed prompts/get or resources/read goes upstream.
type hop struct {
	conn  *upstream.Conn
	meta  mcp.Meta // the _meta to send
	state string   // the upstream's request state to send ("" for none)
	seal  func(inner string) string
	done  context.CancelFunc
}

// forward runs the policy on a prompts/get or resources/read (a denial is
// recorded and answered as invalid params) and picks its upstream session:
// the multi-round-trip one for a client on that revision, with the
// client's own _meta and the upstream state inside its sealed one. The
// returned context carries the per-call deadline and the client's session
// as Downstream; call h.done when the request ends.
func (c *client) forward(ctx context.Context, ss *mcp.ServerSession, o *outcome, a *gateway.CallArgs, meta mcp.Meta, state string) (context.Context, *hop, error) {
	l := c.l
	d, _ := l.policy.Check(ctx, a)
	o.warnings = d.Warnings
	if !d.Allow {
		o.decision, o.gate, o.rule, o.reason = audit.Denied, gateway.GatePolicy, d.Rule, d.Reason
		l.record(ctx, c, o)
		return ctx, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: gateway.DenialText(d)}
	}
	o.gate, o.rule = gateway.GatePolicy, d.Rule
	if !l.admit(ctx, c, o) {
		return ctx, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: gateway.DenialPrefix + ReasonLedger}
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.TimeoutOr(l.cfg.Servers[a.Server]))
	ctx = upstream.WithDownstream(ctx, &callDown{ss: ss, ctx: ctx})
	conn, multi, err := l.roundConn(ctx, ss, a.Server, c.p)
	if err != nil {
		cancel()
		return ctx, nil, l.forwardFailed(ctx, c, o, err)
	}
	h := &hop{conn: conn, meta: hopMeta(meta), done: cancel,
		seal: func(inner string) string { return l.rounds.seal(c.p, o.method, a.Name, inner) }}
	switch {
	case multi:
		if h.state, err = c.openRound(ctx, o, o.method, a.Name, state); err != nil {
			cancel()
			return ctx, nil, err
		}
		h.meta = clientMeta(meta)
	case state != "":
		cancel()
		return ctx, nil, c.refuseRound(ctx, o)
	}
	return ctx, h, nil
}

// settle inspects a prompts/get or resources/read result and records the
// outcome; an error means the result must not be sent.
func (c *client) settle(ctx context.Context, o *outcome, a *gateway.CallArgs, res any) error {
	l := c.l
	if raw, err := json.Marshal(res); err == nil {
		o.result = raw
		d, _ := l.chain.CheckResult(ctx, a, raw)
		o.warnings = append(o.warnings, d.Warnings...)
		if !d.Allow {
			o.decision, o.gate, o.rule, o.reason = audit.Denied, d.Gate, d.Rule, d.Reason
			l.record(ctx, c, o)
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: gateway.DenialText(d)}
		}
	}
	o.decision = audit.Allowed
	if !l.record(ctx, c, o) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bastion error: " + ReasonUnrecorded + " (request " + o.id + ")"}
	}
	return nil
}

// roundConn returns the upstream session a prompts/get or resources/read
// from ss goes over: server's multi-round-trip one when both ss's client
// and the upstream speak that revision (multi is then true), else the
// upstream's usual one.
func (l *Loop) roundConn(ctx context.Context, ss *mcp.ServerSession, server string, p principal.Principal) (conn *upstream.Conn, multi bool, err error) {
	if conn, err = l.connFor(ctx, l.servers[server], p); err != nil {
		return nil, false, err
	}
	if ss == nil || !multiRoundTrip(ss) {
		return conn, false, nil
	}
	m, err := conn.MultiRoundTrip(ctx)
	switch {
	case err == nil:
		return m, true, nil
	case errors.Is(err, upstream.ErrNoMultiRoundTrip):
		return conn, false, nil
	}
	return nil, false, err
}

// openRound returns the upstream's request state inside a client's state
// ("" when the client sent none), or refuses the round.
func (c *client) openRound(ctx context.Context, o *outcome, method, name, state string) (string, error) {
	if state == "" {
		return "", nil
	}
	inner, ok := c.l.rounds.open(c.p, method, name, state)
	if !ok {
		return "", c.refuseRound(ctx, o)
	}
	return inner, nil
}

// refuseRound records and answers a round whose request state the gateway
// did not issue for it.
func (c *client) refuseRound(ctx context.Context, o *outcome) error {
	o.decision, o.gate, o.rule, o.reason = audit.Denied, gateway.GateRouting, "bad-request-state", "the request state was not issued for this request"
	if !c.l.record(ctx, c, o) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: gateway.DenialPrefix + ReasonLedger}
	}
	return errBadState()
}

// forwardFailed records a failed prompts/get or resources/read and returns
// the protocol error to answer with: the upstream's own, or a client-safe one.
func (l *Loop) forwardFailed(ctx context.Context, c *client, o *outcome, err error) error {
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		o.decision, o.rule = audit.UpstreamError, "upstream-error"
	case errors.Is(err, upstream.ErrTimeout) || errors.Is(err, context.DeadlineExceeded):
		o.decision, o.rule = audit.Timeout, "upstream-timeout"
	case errors.Is(err, upstream.ErrTrapped):
		o.decision, o.rule = audit.Trap, "wasm-trap"
	default:
		o.decision, o.rule = audit.UpstreamError, "upstream-unavailable"
	}
	l.record(ctx, c, o)
	if rpc != nil {
		return rpc
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bastion error: server " + o.server + " did not answer"}
}

// complete routes completion/complete to the server owning the referenced
// prompt or resource, under that server's own name for it.
func (c *client) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	l := c.l
	cat := l.cat.Load()
	if req.Params == nil || req.Params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion needs a ref"}
	}
	p := *req.Params
	ref := *p.Ref
	var server, name string
	switch ref.Type {
	case "ref/prompt":
		e, ok := cat.prompts[ref.Name]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt"}
		}
		server, name, ref.Name = e.server, e.prompt, e.prompt
	case "ref/resource":
		if e, ok := cat.templates[ref.URI]; ok {
			server, name = e.server, e.def.Name
		} else if e, ok := cat.resources[ref.URI]; ok {
			server, name = e.server, e.def.Name
		} else {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown resource"}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown reference type"}
	}
	if !l.nameVisible(c.p, server, name) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown reference"}
	}
	p.Ref, p.Meta = &ref, hopMeta(p.Meta)
	ctx, cancel := context.WithTimeout(ctx, l.cfg.TimeoutOr(l.cfg.Servers[server]))
	defer cancel()
	conn, err := l.connFor(ctx, l.servers[server], c.p)
	if err != nil {
		return nil, err
	}
	return conn.Complete(upstream.WithDownstream(ctx, &callDown{ss: req.Session, ctx: ctx}), &p)
}

// subscribe forwards resources/subscribe to the server that owns the URI.
// The gateway holds one upstream subscription per session and URI however
// many clients ask for it (the session may be shared), and relays the
// upstream's updates to the clients that subscribed (events.Updated).
func (c *client) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	conn, err := c.resourceConn(ctx, req.Params.URI)
	if err != nil {
		return err
	}
	return c.l.subs.change(ctx, conn, req.Params.URI, +1)
}

// unsubscribe forwards resources/unsubscribe once no client of that
// upstream session still wants the URI.
func (c *client) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	conn, err := c.resourceConn(ctx, req.Params.URI)
	if err != nil {
		return err
	}
	return c.l.subs.change(ctx, conn, req.Params.URI, -1)
}

// subscriptions counts the clients subscribed to each URI on each upstream
// session. Each count has its own lock, held across the upstream request
// so the count and the upstream agree; no lock spans two URIs or two
// upstreams.
type subscriptions struct {
	mu sync.Mutex // guards n (not the counts)
	n  map[subKey]*subCount
}

type subKey struct {
	conn *upstream.Conn
	uri  string
}

type subCount struct {
	mu sync.Mutex
	n  int
}

func (s *subscriptions) change(ctx context.Context, conn *upstream.Conn, uri string, d int) error {
	k := subKey{conn, uri}
	s.mu.Lock()
	if s.n == nil {
		s.n = map[subKey]*subCount{}
	}
	sc := s.n[k]
	if sc == nil {
		// Kept at zero afterwards: bounded by the catalog's resources
		// times the upstream sessions.
		sc = &subCount{}
		s.n[k] = sc
	}
	s.mu.Unlock()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if d < 0 && sc.n == 0 {
		return nil // nothing to undo
	}
	if (d > 0 && sc.n == 0) || (d < 0 && sc.n == 1) {
		var err error
		if d > 0 {
			err = conn.Subscribe(ctx, uri)
		} else {
			err = conn.Unsubscribe(ctx, uri)
		}
		if err != nil {
			return err
		}
	}
	sc.n += d
	return nil
}

// resourceConn returns the upstream session that serves uri to c, if c
// may see it.
func (c *client) resourceConn(ctx context.Context, uri string) (*upstream.Conn, error) {
	e, ok := c.l.cat.Load().resources[uri]
	if !ok || !c.l.nameVisible(c.p, e.server, e.def.Name) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return c.l.connFor(ctx, c.l.servers[e.server], c.p)
}

// hopMeta returns the _meta to forward upstream: the client's own keys and
// progress token, without the io.modelcontextprotocol/ keys, which describe
// the client's session with the gateway (its protocol version, client info,
// log level) and not the gateway's session with the upstream.
func hopMeta(m mcp.Meta) mcp.Meta {
	if len(m) == 0 {
		return nil
	}
	out := make(mcp.Meta, len(m))
	for k, v := range m {
		if !strings.HasPrefix(k, "io.modelcontextprotocol/") {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
