package app

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves srv on t until the client closes its input or ctx
// ends, answering every request read before the input closed (answerAll).
func ServeStdio(ctx context.Context, srv *mcp.Server, t mcp.Transport) error {
	return srv.Run(ctx, answerAll{Transport: t, drain: StopGrace})
}

// answerAll is a stdio transport whose end of input waits for the answers:
// a client that writes its requests and closes stdin (a script, a pipe)
// still gets a response to each, where the SDK alone would close the
// connection at EOF and drop the answers of requests in flight. The wait is
// bounded by drain, so a request that is never answered cannot hold the
// process open.
type answerAll struct {
	mcp.Transport
	drain time.Duration
}

func (t answerAll) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainingConn{Connection: c, drain: t.drain, idle: make(chan struct{}, 1)}, nil
}

// drainingConn counts the calls read and not yet answered.
type drainingConn struct {
	mcp.Connection
	drain time.Duration

	mu      sync.Mutex
	pending int
	idle    chan struct{} // signalled when pending falls to zero
}

func (c *drainingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if errors.Is(err, io.EOF) {
		c.wait(ctx)
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		c.mu.Lock()
		c.pending++
		c.mu.Unlock()
	}
	return msg, err
}

func (c *drainingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		if c.pending > 0 {
			c.pending--
			if c.pending == 0 {
				select {
				case c.idle <- struct{}{}:
				default:
				}
			}
		}
		c.mu.Unlock()
	}
	return err
}

// wait returns once every call read has been answered, ctx ends or drain
// passes.
func (c *drainingConn) wait(ctx context.Context) {
	timer := time.NewTimer(c.drain)
	defer timer.Stop()
	for {
		c.mu.Lock()
		n := c.pending
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.idle:
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}
