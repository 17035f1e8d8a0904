//lint:file-ignore SA1019 the conformance scenarios exercise deprecated features (sampling, elicitation over SSE, logging).

package mcpfixture

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type noInput = any

type toolFunc = mcp.ToolHandlerFor[noInput, any]

func (f *Fixture) addTools(s *mcp.Server) {
	plain := []struct {
		name, desc string
		fn         toolFunc
	}{
		{"test_simple_text", "Returns one text block", toolSimpleText},
		{"test_image_content", "Returns one PNG image block", toolImage},
		{"test_audio_content", "Returns one WAV audio block", toolAudio},
		{"test_embedded_resource", "Returns one embedded text resource", toolEmbedded},
		{"test_multiple_content_types", "Returns text, image and an embedded resource", toolMixed},
		{"test_tool_with_logging", "Emits three log messages while it runs", toolLogging},
		{"test_tool_with_progress", "Reports progress 0, 50 and 100 of 100", toolProgress},
		{"test_error_handling", "Always fails with a tool error", toolError},
		{"test_elicitation_sep1034_defaults", "Elicits primitives that carry default values (SEP-1034)", toolElicitDefaults},
		{"test_elicitation_sep1330_enums", "Elicits the enum schema variants of SEP-1330", toolElicitEnums},
		{"test_reconnection", "Closes its SSE stream mid-call and answers after the client reconnects (SEP-1699)", toolReconnect},
		{"test_missing_capability", "Needs the sampling client capability; fails with -32021 without it (SEP-2575)", toolMissingCapability},
		{"test_streaming_elicitation", "Answers with a plain result: response streams carry no server requests (SEP-2575)", toolStreamingElicitation},
		{"test_logging_tool", "Tries to log; dropped unless the request asked for a log level (SEP-2575)", toolLoggingGated},
		{"test_trigger_tool_change", "Changes the tool list so list_changed reaches subscription streams", f.toolTriggerToolChange},
		{"test_trigger_prompt_change", "Changes the prompt list so list_changed reaches subscription streams", f.toolTriggerPromptChange},
	}
	for _, t := range plain {
		mcp.AddTool(s, &mcp.Tool{Name: t.name, Description: t.desc}, t.fn)
	}
	mcp.AddTool(s, &mcp.Tool{Name: "test_sampling", Description: "Asks the client's LLM for a completion"}, toolSampling)
	mcp.AddTool(s, &mcp.Tool{Name: "test_elicitation", Description: "Asks the user for a username"}, toolElicit)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "json_schema_2020_12_tool",
		Description: "Input schema using JSON Schema 2020-12 keywords (SEP-1613, SEP-2106)",
		InputSchema: json.RawMessage(schema202012),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in json.RawMessage) (*mcp.CallToolResult, any, error) {
		return textResult("JSON Schema 2020-12 tool called with: " + string(in)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "test_x_mcp_header",
		Description: "One argument mirrored into the Mcp-Param-Region header (SEP-2243)",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"region":{"type":"string","description":"mirrored into Mcp-Param-Region","x-mcp-header":"Region"},` +
			`"level":{"type":"integer","description":"not mirrored"}}}`),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Region string `json:"region,omitempty"`
		Level  int    `json:"level,omitempty"`
	}) (*mcp.CallToolResult, any, error) {
		return textResult("region=" + in.Region), nil, nil
	})
}

// schema202012 keeps $schema, $defs, $anchor, allOf/anyOf, if/then/else and
// additionalProperties, which tools/list must return verbatim.
const schema202012 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {"address": {"$anchor": "addressDef", "type": "object",
    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"},
    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
    "phone": {"type": "string"},
    "email": {"type": "string"}
  },
  "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
  "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
  "then": {"required": ["phone"]},
  "else": {"required": ["email"]},
  "additionalProperties": false
}`

func toolSimpleText(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
	return textResult("This is a simple text response for testing."), nil, nil
}

func toolImage(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: mustBase64(pngBase64), MIMEType: "image/png"}}}, nil, nil
}

func toolAudio(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: mustBase64(wavBase64), MIMEType: "audio/wav"}}}, nil, nil
}

func embedded(uri string) *mcp.EmbeddedResource {
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "This is an embedded resource"}}
}

func toolEmbedded(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{embedded("test://embedded-resource")}}, nil, nil
}

func toolMixed(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "This is text content"},
		&mcp.ImageContent{Data: mustBase64(pngBase64), MIMEType: "image/png"},
		embedded("test://embedded-in-multiple"),
	}}, nil, nil
}

// pause spaces out notifications so a client sees them as a sequence; it
// gives up early when the call is cancelled.
func pause(ctx context.Context) {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func toolLogging(ctx context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			pause(ctx)
		}
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg})
	}
	return textResult("Tool with logging executed successfully"), nil, nil
}

func toolProgress(ctx context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	token := req.Params.GetProgressToken()
	for _, p := range []float64{0, 50, 100} {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: p, Total: 100,
			Message: fmt.Sprintf("Completed step %.0f of 100", p),
		})
		pause(ctx)
	}
	return textResult(fmt.Sprint(token)), nil, nil
}

func toolError(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
	return nil, nil, errIntentional
}

type samplingInput struct {
	Prompt string `json:"prompt" jsonschema:"the prompt sent to the client's LLM"`
}

func toolSampling(ctx context.Context, req *mcp.CallToolRequest, in samplingInput) (*mcp.CallToolResult, any, error) {
	res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}},
		MaxTokens: 100,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sampling failed: %w", err)
	}
	text := "(non-text response)"
	if t, ok := res.Content.(*mcp.TextContent); ok {
		text = t.Text
	}
	return textResult("LLM response: " + text), nil, nil
}

type elicitInput struct {
	Message string `json:"message" jsonschema:"the message shown to the user"`
}

func toolElicit(ctx context.Context, req *mcp.CallToolRequest, in elicitInput) (*mcp.CallToolResult, any, error) {
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
		Message: in.Message,
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"username":` +
			`{"type":"string","description":"Your preferred username"}},"required":["username"]}`),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("elicitation failed: %w", err)
	}
	return textResult(formatElicit(res)), nil, nil
}

func toolElicitDefaults(ctx context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
		Message: "Test defaults for primitives",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"User name","default":"John Doe"},` +
			`"age":{"type":"integer","description":"User age","default":30},` +
			`"score":{"type":"number","description":"User score","default":95.5},` +
			`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},` +
			`"verified":{"type":"boolean","description":"Verification status","default":true}}}`),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("elicitation failed: %w", err)
	}
	return textResult(formatElicit(res)), nil, nil
}

func toolElicitEnums(ctx context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	titled := `[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]`
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
		Message: "Test enum schemas",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},` +
			`"titledSingle":{"type":"string","oneOf":` + titled + `},` +
			`"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},` +
			`"untitledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},` +
			`"titledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","anyOf":` + titled + `}}}}`),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("elicitation failed: %w", err)
	}
	return textResult(formatElicit(res)), nil, nil
}

func toolReconnect(ctx context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	if req.Extra != nil && req.Extra.CloseSSEStream != nil {
		req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
	}
	pause(ctx)
	pause(ctx)
	return textResult("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."), nil, nil
}

func toolMissingCapability(_ context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
		return textResult("Client declared the sampling capability; tool executed."), nil, nil
	}
	data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{
		RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}},
	})
	if err != nil {
		return nil, nil, err
	}
	return nil, nil, &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: "sampling capability required but not declared by client",
		Data:    data,
	}
}

func toolStreamingElicitation(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
	return textResult("stream observed: result frames only, no top-level requests"), nil, nil
}

func toolLoggingGated(ctx context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	// The SDK drops this unless the request's _meta asked for a log level.
	_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "test_logging_tool executed"})
	return textResult("Log attempted; dropped unless the request set a log level."), nil, nil
}

func (f *Fixture) toolTriggerToolChange(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
	f.changed(func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "__transient_tool_for_list_changed", Description: "Added to announce tools/list_changed"},
			func(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
	})
	return textResult("tools_list_changed published"), nil, nil
}

func (f *Fixture) toolTriggerPromptChange(context.Context, *mcp.CallToolRequest, noInput) (*mcp.CallToolResult, any, error) {
	f.changed(func(s *mcp.Server) {
		s.AddPrompt(&mcp.Prompt{Name: "__transient_prompt_for_list_changed", Description: "Added to announce prompts/list_changed"},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
	})
	return textResult("prompts_list_changed published"), nil, nil
}
