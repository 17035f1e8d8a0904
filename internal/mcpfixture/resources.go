package mcpfixture

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func addResources(s *mcp.Server) {
	static := func(name, desc, mime, uri string, contents func(uri string) *mcp.ResourceContents) {
		s.AddResource(&mcp.Resource{Name: name, Description: desc, MIMEType: mime, URI: uri},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{contents(req.Params.URI)}}, nil
			})
	}
	static("static-text", "A static text resource", "text/plain", "test://static-text", func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "This is the content of the static text resource."}
	})
	static("static-binary", "A static binary resource (PNG)", "image/png", "test://static-binary", func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "image/png", Blob: mustBase64(pngBase64)}
	})
	static("watched-resource", "A resource clients may subscribe to", "text/plain", "test://watched-resource", func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "Watched resource content"}
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "template", Description: "A resource template with one parameter",
		MIMEType: "application/json", URITemplate: "test://template/{id}/data",
	}, readTemplate)
}

// readTemplate serves test://template/{id}/data. The id is quoted with %q so
// the JSON stays valid whatever the client put in the URI.
func readTemplate(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, "test://template/")
	if ok {
		id, ok = strings.CutSuffix(id, "/data")
	}
	if !ok || id == "" || strings.Contains(id, "/") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	text := fmt.Sprintf(`{"id": %q, "templateTest": true, "data": %q}`, id, "Data for ID: "+id)
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: text}}}, nil
}

func (f *Fixture) addPrompts(s *mcp.Server) {
	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A simple test prompt",
				Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with two required arguments",
		Arguments: []*mcp.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := req.Params.Arguments
			return &mcp.GetPromptResult{Description: "A prompt with arguments",
				Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource", Description: "A prompt embedding a resource",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			res := &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}
			return &mcp.GetPromptResult{Description: "A prompt with an embedded resource", Messages: []*mcp.PromptMessage{
				user(res), user(&mcp.TextContent{Text: "Please process the embedded resource above."})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt including an image"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an image", Messages: []*mcp.PromptMessage{
				user(&mcp.ImageContent{Data: mustBase64(pngBase64), MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "Asks for context in-band before answering (SEP-2322)"},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if c := accepted(req.Params.InputResponses, "user_context"); c != nil {
				ctxText, _ := c["context"].(string)
				return &mcp.GetPromptResult{Description: "A prompt with elicited context",
					Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "Context: " + ctxText})}}, nil
			}
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"user_context": &mcp.ElicitParams{
				Message: "Please provide context for the prompt", RequestedSchema: objectSchema(map[string]string{"context": "string"}, "context")}}}, nil
		})
}
