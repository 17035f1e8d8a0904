package upstream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A fence keeps a call's result from overtaking the log messages and
// progress the upstream sent before it. The SDK's client hands a response to
// its caller as soon as it is read, while the notifications read before it
// still wait in the session's handler queue; relayed after the result, a
// downstream client would see them late, or not at all once the call is no
// longer in flight to route them by. So a Conn counts those notifications as
// its transport reads them and as its handlers finish relaying them, and a
// request, once answered, waits until every one read before its answer has
// been relayed.
//
// The wait is bounded (fenceWait, and the call's own deadline): a
// notification the SDK refuses before any handler (malformed params) is
// never relayed, and after one bounded wait it is written off rather than
// delaying every later call.
type fence struct {
	read    atomic.Uint64 // notifications a fenced transport has read
	handled atomic.Uint64 // of those, relayed (or written off)

	mu   sync.Mutex
	wake chan struct{} // closed and replaced whenever handled advances
}

// fenceWait bounds how long an answered request waits for the notifications
// read before its answer.
const fenceWait = 500 * time.Millisecond

func newFence() *fence { return &fence{wake: make(chan struct{})} }

// fenced reports whether a notification is one a result must not overtake.
func fenced(method string) bool {
	return method == "notifications/message" || method == "notifications/progress"
}

// done records one fenced notification relayed.
func (f *fence) done() {
	f.handled.Add(1)
	f.mu.Lock()
	close(f.wake)
	f.wake = make(chan struct{})
	f.mu.Unlock()
}

// wait returns once every fenced notification read so far is relayed, ctx
// ends, or fenceWait passes; then it writes off the ones still pending.
func (f *fence) wait(ctx context.Context) {
	target := f.read.Load()
	if f.handled.Load() >= target {
		return
	}
	timer := time.NewTimer(fenceWait)
	defer timer.Stop()
	for {
		f.mu.Lock()
		wake := f.wake
		f.mu.Unlock()
		if f.handled.Load() >= target {
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		case <-timer.C:
			for h := f.handled.Load(); h < target && !f.handled.CompareAndSwap(h, target); h = f.handled.Load() {
			}
			return
		}
	}
}

// fencedTransport counts the fenced notifications its connection reads.
type fencedTransport struct {
	mcp.Transport
	f *fence
}

func (t fencedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return fencedConn{conn, t.f}, nil
}

type fencedConn struct {
	mcp.Connection
	f *fence
}

func (c fencedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && !r.IsCall() && fenced(r.Method) {
		c.f.read.Add(1)
	}
	return m, err
}
