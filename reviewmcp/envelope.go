package reviewmcp

import (
	"encoding/json"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/internal/clip"
	"github.com/bastion-mcp/bastion/review"
)

// errorEnvelope is the one shape of every tool error.
type errorEnvelope struct {
	SchemaVersion string           `json:"schema_version"`
	Code          fault.Code       `json:"code"`
	Message       string           `json:"message"`
	Retriable     bool             `json:"retriable"`
	CorrelationID string           `json:"correlation_id"`
	NextAction    fault.NextAction `json:"next_action"`
	RetryAfterMS  *int64           `json:"retry_after_ms,omitempty"`
}

// envelopeOf renders e with a fresh correlation id. The message is e's
// client-safe Message; the cause is never rendered.
func envelopeOf(e *fault.Error) errorEnvelope {
	env := errorEnvelope{
		SchemaVersion: review.SchemaVersion, Code: e.Code, Message: clip.String(e.Message, 4000), Retriable: e.Retriable,
		CorrelationID: "cor_" + uuid.NewString(), NextAction: e.NextAction,
	}
	if env.Message == "" {
		env.Message = string(e.Code)
	}
	if env.NextAction == "" {
		env.NextAction = fault.None
	}
	if e.RetryAfter > 0 {
		ms := max(1, e.RetryAfter.Milliseconds())
		env.RetryAfterMS = &ms
	}
	return env
}

// envelopeResult is the tool result for an error: isError, the envelope as
// structuredContent {"error": …}, and the same error as JSON text.
func envelopeResult(env errorEnvelope) *mcp.CallToolResult {
	sc, _ := json.Marshal(struct {
		Error errorEnvelope `json:"error"`
	}{env}) // cannot fail: strings, bools and an int
	text, _ := json.MarshalIndent(env, "", "  ")
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: string(text)}},
		StructuredContent: json.RawMessage(sc),
	}
}
