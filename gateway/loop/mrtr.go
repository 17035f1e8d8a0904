//lint:file-ignore SA1019 sampling, elicitation, roots and logging are part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/upstream"
)

// A client on protocol 2026-07-28 or later cannot be sent sampling,
// elicitation or roots requests during a call: the server returns them as
// input requests in an input-required result, and the client calls again
// with the answers and the request state. An upstream on 2025-11-25 still
// asks during the call. The bridge joins the two: the upstream call runs on
// in the background, its questions go back to the client as input requests
// under a request state naming the bridge, and the client's next call with
// that state delivers the answers to the waiting upstream. The bridge is
// bound to the principal that started the call; the outcome is inspected
// and recorded once, when the upstream call ends, whether or not the client
// comes back for it.

const bridgePrefix = "bastion-mrtr:"

// gatherWindow is how long a bridge waits, after the upstream's first
// question, for the others it asks at the same time (an upstream fulfils a
// round's questions concurrently), so they go to the client as one round.
const gatherWindow = 25 * time.Millisecond

// multiRoundTrip reports whether ss's client expects input requests in
// results rather than requests during a call.
func multiRoundTrip(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= "2026-07-28"
}

type bridge struct {
	key         string // principal and server, for abandoning
	tenant, id2 string // the principal that owns it
	name        string // the tool the client called
	asks        chan *ask
	done        chan bridgeResult // buffered; the final answer
	fin         chan struct{}     // closed when the upstream call returned
	cancel      context.CancelFunc
	leg         atomic.Pointer[context.Context] // the client request now waiting, for progress
	mu          sync.Mutex                      // guards open and n
	open        map[string]*ask
	n           int
}

type ask struct {
	req  mcp.InputRequest
	resp chan mcp.InputResponse // buffered 1
}

type bridgeResult struct {
	res *mcp.CallToolResult
	err error
}

// bridgeDown is the Downstream of a bridged call: every question becomes
// an input request for the client's next round.
type bridgeDown struct {
	b  *bridge
	ss *mcp.ServerSession
}

// errUndeclared refuses a question the client's capabilities rule out.
var errUndeclared = errors.New("loop: the client did not declare the capability this request needs")

// declared reports whether the client declared the capability req needs.
func (d *bridgeDown) declared(req mcp.InputRequest) bool {
	ip := d.ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return false
	}
	c := ip.Capabilities
	switch req.(type) {
	case *mcp.ElicitParams:
		return c.Elicitation != nil
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return c.Sampling != nil
	case *mcp.ListRootsParams:
		return c.RootsV2 != nil || c.Roots.ListChanged
	}
	return false
}

func (d *bridgeDown) question(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	if !d.declared(req) {
		return nil, errUndeclared
	}
	a := &ask{req: req, resp: make(chan mcp.InputResponse, 1)}
	select {
	case d.b.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-a.resp:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *bridgeDown) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	r, err := d.question(ctx, p)
	if err != nil {
		return nil, err
	}
	switch v := r.(type) {
	case *mcp.CreateMessageResult:
		return v, nil
	case *mcp.CreateMessageWithToolsResult:
		out := &mcp.CreateMessageResult{Model: v.Model, Role: v.Role, StopReason: v.StopReason}
		if len(v.Content) > 0 {
			out.Content = v.Content[0]
		}
		return out, nil
	}
	return nil, fmt.Errorf("the client answered a sampling request with %T", r)
}

func (d *bridgeDown) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	r, err := d.question(ctx, p)
	if err != nil {
		return nil, err
	}
	if v, ok := r.(*mcp.ElicitResult); ok {
		return v, nil
	}
	return nil, fmt.Errorf("the client answered an elicitation with %T", r)
}

func (d *bridgeDown) ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	if p == nil {
		p = &mcp.ListRootsParams{}
	}
	r, err := d.question(ctx, p)
	if err != nil {
		return nil, err
	}
	if v, ok := r.(*mcp.ListRootsResult); ok {
		return v, nil
	}
	return nil, fmt.Errorf("the client answered a roots request with %T", r)
}

// NotifyProgress sends progress on the stream of the client request now
// waiting on the bridge (between rounds there is none, and progress drops).
func (d *bridgeDown) NotifyProgress(ctx context.Context, p *mcp.ProgressNotificationParams) error {
	if leg := d.b.leg.Load(); leg != nil {
		ctx = *leg
	}
	return d.ss.NotifyProgress(ctx, p)
}

// bridged starts the upstream call in the background and answers this
// request with its result or its first round of questions.
func (l *Loop) bridged(ctx context.Context, c *client, ss *mcp.ServerSession, conn *upstream.Conn, a *gateway.CallArgs, o *outcome, up *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	b := &bridge{
		key: c.p.Tenant() + "\x00" + c.p.ID() + "\x00" + a.Server, tenant: c.p.Tenant(), id2: c.p.ID(), name: a.Name,
		asks: make(chan *ask), done: make(chan bridgeResult, 1), fin: make(chan struct{}), open: map[string]*ask{},
	}
	// A principal that starts a new call on a server instead of answering
	// the questions of its previous one has abandoned that one: cancel it,
	// so its questions stop holding the upstream's shared session.
	if v, ok := l.awaiting.LoadAndDelete(b.key); ok {
		old := v.(*bridge)
		old.cancel()
		// Let the abandoned call leave the upstream session first, so
		// the new call's questions are attributed to it alone.
		select {
		case <-old.fin:
		case <-time.After(time.Second):
		}
	}
	// The call outlives this request: it ends with its own deadline.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.TimeoutOr(l.cfg.Servers[a.Server]))
	b.cancel = cancel
	d := &bridgeDown{b: b, ss: ss}
	uctx = upstream.WithDownstream(uctx, d)
	go func() {
		defer cancel()
		o.upStart = time.Now()
		res, err := conn.CallTool(uctx, up)
		close(b.fin)
		res, err = l.finish(uctx, c, a, o, res, err)
		b.done <- bridgeResult{res, err}
		// A client that never comes back leaves the bridge for a while.
		time.AfterFunc(time.Minute, func() { l.dropBridge(b) })
	}()
	return l.next(ctx, b)
}

// resume delivers a client's answers to the bridge its request state
// names and waits for the next round or the result.
func (l *Loop) resume(ctx context.Context, c *client, p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	v, ok := l.bridges.Load(p.RequestState)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown or expired requestState"}
	}
	b := v.(*bridge)
	if b.tenant != c.p.Tenant() || b.id2 != c.p.ID() || b.name != p.Name {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown or expired requestState"}
	}
	l.awaiting.CompareAndDelete(b.key, b)
	b.mu.Lock()
	for k, r := range p.InputResponses {
		if a, ok := b.open[k]; ok {
			delete(b.open, k)
			a.resp <- r
		}
	}
	b.mu.Unlock()
	// Each round's state is good for one answer.
	l.bridges.Delete(p.RequestState)
	return l.next(ctx, b)
}

// next waits for the bridge's result or its next round of questions.
func (l *Loop) next(ctx context.Context, b *bridge) (*mcp.CallToolResult, error) {
	b.leg.Store(&ctx)
	defer b.leg.Store(nil)
	select {
	case r := <-b.done:
		l.dropBridge(b)
		return r.res, r.err
	case first := <-b.asks:
		round := []*ask{first}
		t := time.NewTimer(gatherWindow)
		defer t.Stop()
	gather:
		for {
			select {
			case a := <-b.asks:
				round = append(round, a)
			case <-t.C:
				break gather
			}
		}
		reqs := mcp.InputRequestMap{}
		b.mu.Lock()
		for _, a := range round {
			b.n++
			k := "q" + strconv.Itoa(b.n)
			b.open[k] = a
			reqs[k] = a.req
		}
		b.mu.Unlock()
		state, err := newState()
		if err != nil {
			b.cancel()
			return nil, err
		}
		l.bridges.Store(state, b)
		l.awaiting.Store(b.key, b)
		return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}, nil
	case <-ctx.Done():
		// The client cancelled (or left) while the call ran: cancel it
		// upstream too. Between rounds no request is waiting here, so
		// this is never a client merely taking time to answer.
		b.cancel()
		return nil, errors.Join(errors.New("loop: the client left while the call was running"), ctx.Err())
	}
}

// newState returns a fresh request state naming a bridge round.
func newState() (string, error) {
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("loop: request state: %w", err)
	}
	return bridgePrefix + hex.EncodeToString(rnd[:]), nil
}

// dropBridge forgets every request state of b.
func (l *Loop) dropBridge(b *bridge) {
	l.awaiting.CompareAndDelete(b.key, b)
	l.bridges.Range(func(k, v any) bool {
		if v == b {
			l.bridges.Delete(k)
		}
		return true
	})
}
