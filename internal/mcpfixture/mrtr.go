//lint:file-ignore SA1019 the conformance scenarios exercise deprecated features (sampling, roots).

package mcpfixture

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addInputRequiredTools registers the multi-round-trip tools (SEP-2322): a
// call answers with input requests and, where it must remember something
// between rounds, a requestState signed with the fixture's key.
func (f *Fixture) addInputRequiredTools(s *mcp.Server) {
	add := func(name, desc string, fn toolFunc) {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: desc}, fn)
	}
	add("test_input_required_result_elicitation", "Asks for the caller's name in-band", mrtrElicit)
	add("test_input_required_result_sampling", "Asks for an LLM completion in-band", mrtrSampling)
	add("test_input_required_result_list_roots", "Asks for the client's roots in-band", mrtrRoots)
	add("test_input_required_result_request_state", "Round-trips a signed requestState beside an elicitation", f.mrtrRequestState)
	add("test_input_required_result_multiple_inputs", "Asks for elicitation, sampling and roots in one round", f.mrtrMultiple)
	add("test_input_required_result_multi_round", "Two elicitation rounds carried by an evolving signed requestState", f.mrtrMultiRound)
	add("test_input_required_result_tampered_state", "Refuses a retry whose requestState fails verification", f.mrtrTampered)
	add("test_input_required_result_capabilities", "Requests only the input kinds the client declared", mrtrCapabilities)
}

func inputRequired(reqs mcp.InputRequestMap, state string) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}
}

func mrtrElicit(_ context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	if name, _ := accepted(req.Params.InputResponses, "user_name")["name"].(string); name != "" {
		return textResult(fmt.Sprintf("Hello, %s!", name)), nil, nil
	}
	return inputRequired(mcp.InputRequestMap{"user_name": elicitName("What is your name?")}, ""), nil, nil
}

func samplingRequest(prompt string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
		MaxTokens: maxTokens,
	}
}

func mrtrSampling(_ context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	if text, ok := sampled(req.Params.InputResponses, "capital_question"); ok {
		return textResult("Sampling response: " + text), nil, nil
	}
	return inputRequired(mcp.InputRequestMap{"capital_question": samplingRequest("What is the capital of France?", 100)}, ""), nil, nil
}

func mrtrRoots(_ context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	if res, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok && res != nil {
		uris := make([]string, 0, len(res.Roots))
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return textResult(fmt.Sprintf("Client exposed %d root(s): %s", len(res.Roots), strings.Join(uris, ", "))), nil, nil
	}
	return inputRequired(mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}, ""), nil, nil
}

func (f *Fixture) mrtrRequestState(_ context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	if accepted(req.Params.InputResponses, "confirm") != nil {
		if payload, ok := f.openState(req.Params.RequestState); !ok || payload != "confirm" {
			return nil, nil, errInvalidState()
		}
		return textResult("state-ok: requestState received and confirmation accepted"), nil, nil
	}
	return inputRequired(mcp.InputRequestMap{"confirm": elicitConfirm()}, f.signState("confirm")), nil, nil
}

func (f *Fixture) mrtrMultiple(_ context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	in := req.Params.InputResponses
	name, _ := accepted(in, "user_name")["name"].(string)
	greeting, haveGreeting := sampled(in, "greeting")
	roots, haveRoots := in["client_roots"].(*mcp.ListRootsResult)
	if name != "" && haveGreeting && haveRoots {
		n := 0
		if roots != nil {
			n = len(roots.Roots)
		}
		return textResult(fmt.Sprintf("%s %s — %d root(s) visible", greeting, name, n)), nil, nil
	}
	return inputRequired(mcp.InputRequestMap{
		"user_name":    elicitName("What is your name?"),
		"greeting":     samplingRequest("Generate a greeting", 50),
		"client_roots": &mcp.ListRootsParams{},
	}, f.signState("multiple-inputs")), nil, nil
}

// multiRoundState is what the multi-round tool remembers between rounds.
type multiRoundState struct {
	Round int    `json:"round"`
	Name  string `json:"name,omitempty"`
}

func (f *Fixture) mrtrMultiRound(_ context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	var st multiRoundState
	if req.Params.RequestState != "" {
		payload, ok := f.openState(req.Params.RequestState)
		if !ok || json.Unmarshal([]byte(payload), &st) != nil {
			return nil, nil, errInvalidState()
		}
	}
	seal := func(st multiRoundState) string {
		b, _ := json.Marshal(st) // a struct of a string and an int always marshals
		return f.signState(string(b))
	}
	switch st.Round {
	case 0:
		return inputRequired(mcp.InputRequestMap{"step1": elicitName("Step 1: What is your name?")}, seal(multiRoundState{Round: 1})), nil, nil
	case 1:
		name, _ := accepted(req.Params.InputResponses, "step1")["name"].(string)
		if name == "" {
			name = "unknown"
		}
		step2 := &mcp.ElicitParams{Message: "Step 2: What is your favorite color?", RequestedSchema: objectSchema(map[string]string{"color": "string"}, "color")}
		return inputRequired(mcp.InputRequestMap{"step2": step2}, seal(multiRoundState{Round: 2, Name: name})), nil, nil
	default:
		color, _ := accepted(req.Params.InputResponses, "step2")["color"].(string)
		if color == "" {
			color = "unknown"
		}
		return textResult(fmt.Sprintf("Multi-round complete: %s likes %s", st.Name, color)), nil, nil
	}
}

func (f *Fixture) mrtrTampered(_ context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	if req.Params.RequestState != "" {
		if payload, ok := f.openState(req.Params.RequestState); !ok || payload != "tamper-check" {
			return nil, nil, errInvalidState()
		}
		if accepted(req.Params.InputResponses, "confirm") != nil {
			return textResult("state-ok: requestState received and confirmation accepted"), nil, nil
		}
	}
	return inputRequired(mcp.InputRequestMap{"confirm": elicitConfirm()}, f.signState("tamper-check")), nil, nil
}

func mrtrCapabilities(_ context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
	if len(req.Params.InputResponses) > 0 {
		return textResult("Capability-aware input requests fulfilled"), nil, nil
	}
	caps := req.ClientCapabilities()
	reqs := mcp.InputRequestMap{}
	if caps != nil && caps.Elicitation != nil {
		reqs["user_name"] = elicitName("What is your name?")
	}
	if caps != nil && caps.Sampling != nil {
		reqs["greeting"] = samplingRequest("Generate a short greeting", 50)
	}
	if caps != nil && (caps.RootsV2 != nil || caps.Roots.ListChanged) {
		reqs["client_roots"] = &mcp.ListRootsParams{}
	}
	if len(reqs) == 0 {
		return textResult("No declared client capability supports an in-band input request"), nil, nil
	}
	return inputRequired(reqs, ""), nil, nil
}
