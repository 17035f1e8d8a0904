package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/fault"
)

// callDirect answers a tools/call with Spec.Call: no session, no encoding,
// no goroutine of the SDK's on either side. What a session would give the
// call still holds: the per-call deadline (the call returns at it even if
// the handler does not), no context value of the caller's hop, arguments
// the handler cannot change under the caller, and no progress token, since
// there is no session to send progress on.
func (c *Conn) callDirect(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, c.closedErr()
	}
	args, err := rawArguments(p.Arguments)
	if err != nil {
		return nil, fault.Wrap(err, fault.InvalidArgument, "the arguments of %s could not be encoded", p.Name)
	}
	meta := maps.Clone(p.Meta)
	delete(meta, "progressToken")
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
		Meta: meta, Name: p.Name, Arguments: args, InputResponses: p.InputResponses, RequestState: p.RequestState,
	}}
	ctx, cancel := context.WithTimeout(hopContext{ctx}, c.spec.Timeout)
	defer cancel()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := c.spec.Call(ctx, req)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			return nil, c.timedOut("tools/call "+p.Name, ctx.Err())
		}
		return nil, ctx.Err()
	}
}

// rawArguments is a call's arguments as JSON the handler owns.
func rawArguments(v any) (json.RawMessage, error) {
	switch a := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return bytes.Clone(a), nil
	}
	return json.Marshal(v)
}
