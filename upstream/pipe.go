package upstream

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Pipe returns the two ends of an in-process MCP connection that hands
// JSON-RPC messages across as values. mcp.NewInMemoryTransports encodes
// every message to JSON on one side and decodes it on the other, as a wire
// would; between a gateway and a server in the same process that round trip
// is most of a call's cost, and nothing is gained by it. Params and results
// stay encoded (json.RawMessage), so each side still decodes exactly what
// it would from a wire, and neither can change what the other holds: a
// message and its encoded parts are copied when written (a memory copy,
// far cheaper than the JSON round trip).
//
// Each end may be connected once.
func Pipe() (server, client mcp.Transport) {
	a := &pipeEnd{in: make(chan jsonrpc.Message, 16), done: make(chan struct{})}
	b := &pipeEnd{in: make(chan jsonrpc.Message, 16), done: make(chan struct{})}
	a.peer, b.peer = b, a
	return &pipeTransport{end: a}, &pipeTransport{end: b}
}

type pipeTransport struct {
	mu   sync.Mutex
	end  *pipeEnd
	used bool
}

// errPipeReused refuses a second Connect of one end.
var errPipeReused = errors.New("upstream: an in-process pipe end connects once")

func (t *pipeTransport) Connect(context.Context) (mcp.Connection, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.used {
		return nil, errPipeReused
	}
	t.used = true
	return t.end, nil
}

// pipeEnd is one side: it reads what the peer writes.
type pipeEnd struct {
	in   chan jsonrpc.Message
	peer *pipeEnd
	once sync.Once
	done chan struct{} // closed by Close of either side
}

func (p *pipeEnd) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-p.in:
		return m, nil
	case <-p.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipeEnd) Write(ctx context.Context, m jsonrpc.Message) error {
	switch v := m.(type) {
	case *jsonrpc.Request:
		c := *v
		c.Params = slices.Clone(v.Params)
		c.Extra = nil // transport information of this side, never on a wire
		m = &c
	case *jsonrpc.Response:
		if v.Error != nil {
			// An error crosses as the wire would carry it (code, message,
			// data): the peer must see a *jsonrpc.Error, never this side's
			// Go error value. Errors are rare; their encoding is cheap.
			b, err := jsonrpc.EncodeMessage(v)
			if err != nil {
				return err
			}
			if m, err = jsonrpc.DecodeMessage(b); err != nil {
				return err
			}
			break
		}
		c := *v
		c.Result = slices.Clone(v.Result)
		c.Extra = nil
		m = &c
	default:
		return errors.New("upstream: pipe: unknown message type")
	}
	select {
	case p.peer.in <- m:
		return nil
	case <-p.done:
		return io.ErrClosedPipe
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends both directions, as closing a socket does: the peer's Read
// returns io.EOF.
func (p *pipeEnd) Close() error {
	p.once.Do(func() {
		close(p.done)
		p.peer.closeFromPeer()
	})
	return nil
}

func (p *pipeEnd) closeFromPeer() {
	p.once.Do(func() { close(p.done) })
}

func (p *pipeEnd) SessionID() string { return "" }

// ServeInProcess connects s to one end of a Pipe and returns the other,
// for an InProcess Spec's Connect. The server session outlives ctx: it
// ends when the client end is closed.
func ServeInProcess(ctx context.Context, s *mcp.Server) (mcp.Transport, error) {
	st, ct := Pipe()
	if _, err := s.Connect(context.WithoutCancel(ctx), st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}
