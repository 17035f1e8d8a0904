//lint:file-ignore SA1019 sampling, roots and logging are part of MCP 2025-11-25, the revision bastion targets and must relay; deprecated only from 2026-07-28.

// Package testmcp is a tiny MCP server used by tests of the gateway and its
// upstream transports. It runs over stdio as a child process
// (cmd/testmcp), as a WASI preview 1 module (GOOS=wasip1 GOARCH=wasm), or
// in-process behind an HTTP handler.
//
// It is deliberately hostile where tests need it to be: it can crash, hang,
// spin without yielding, allocate without bound, read the filesystem and
// report its environment, so tests can prove the sandbox and the supervisor
// hold. It is never part of the bastion binary.
package testmcp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a server. The zero value is a plain server.
type Options struct {
	// Name is the implementation name; empty means "testmcp".
	Name string
	// Description is the echo tool's description; empty means the default.
	// A test changes it between connects to simulate a rug pull.
	Description string
}

// DefaultDescription is the echo tool's description unless Options or the
// environment change it.
const DefaultDescription = "Echo the text argument back."

// OptionsFromEnv reads Options from the environment: TESTMCP_DESCRIPTION, or
// the contents of the file named by TESTMCP_DESCRIPTION_FILE.
func OptionsFromEnv() Options {
	o := Options{Description: os.Getenv("TESTMCP_DESCRIPTION")}
	if p := os.Getenv("TESTMCP_DESCRIPTION_FILE"); p != "" {
		if b, err := os.ReadFile(p); err == nil {
			o.Description = strings.TrimSpace(string(b))
		}
	}
	return o
}

// Tool inputs.
type (
	// TextIn is the echo input.
	TextIn struct {
		Text string `json:"text"`
	}
	// MillisIn is a duration in milliseconds.
	MillisIn struct {
		Ms int `json:"ms"`
	}
	// CodeIn is an exit status.
	CodeIn struct {
		Code int `json:"code"`
	}
	// NamesIn lists environment variable names.
	NamesIn struct {
		Names []string `json:"names"`
	}
	// SizeIn is a size in MiB.
	SizeIn struct {
		MB int `json:"mb"`
	}
	// PathIn is a file path.
	PathIn struct {
		Path string `json:"path"`
	}
	// WriteIn is a file to write.
	WriteIn struct {
		Path string `json:"path"`
		Text string `json:"text"`
	}
	// StepsIn is a number of progress steps.
	StepsIn struct {
		Steps int `json:"steps"`
	}
)

// New returns a server with the tools echo, sleep, spin, crash, env, alloc,
// readfile, writefile, addtool, sample, elicit, roots and progress, the resource
// testmcp://hello and the prompt greet.
func New(o Options) *mcp.Server {
	name := o.Name
	if name == "" {
		name = "testmcp"
	}
	desc := o.Description
	if desc == "" {
		desc = DefaultDescription
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "0.1.0"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: desc},
		func(_ context.Context, _ *mcp.CallToolRequest, in TextIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleep for ms milliseconds, or until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in MillisIn) (*mcp.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
				return text("slept"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "spin", Description: "Busy-loop for ms milliseconds without yielding."},
		func(_ context.Context, _ *mcp.CallToolRequest, in MillisIn) (*mcp.CallToolResult, any, error) {
			end := time.Now().Add(time.Duration(in.Ms) * time.Millisecond)
			n := 0
			for time.Now().Before(end) {
				n++
			}
			return text(fmt.Sprintf("spun %d", n)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the process with code."},
		func(_ context.Context, _ *mcp.CallToolRequest, in CodeIn) (*mcp.CallToolResult, any, error) {
			os.Exit(in.Code)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Report the named environment variables and the count of all."},
		func(_ context.Context, _ *mcp.CallToolRequest, in NamesIn) (*mcp.CallToolResult, any, error) {
			var b strings.Builder
			fmt.Fprintf(&b, "count=%d\n", len(os.Environ()))
			for _, n := range in.Names {
				v, ok := os.LookupEnv(n)
				if !ok {
					v = "(unset)"
				}
				fmt.Fprintf(&b, "%s=%s\n", n, v)
			}
			return text(b.String()), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "alloc", Description: "Allocate and touch mb MiB."},
		func(_ context.Context, _ *mcp.CallToolRequest, in SizeIn) (*mcp.CallToolResult, any, error) {
			var keep [][]byte
			for range in.MB {
				b := make([]byte, 1<<20)
				for i := 0; i < len(b); i += 4096 {
					b[i] = 1
				}
				keep = append(keep, b)
			}
			return text(fmt.Sprintf("allocated %d MiB", len(keep))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "readfile", Description: "Read a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, in PathIn) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return nil, nil, err
			}
			return text(string(b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "Ask the client's model to complete text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in TextIn) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 16,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Text}}},
			})
			if err != nil {
				return nil, nil, err
			}
			t, _ := res.Content.(*mcp.TextContent)
			if t == nil {
				return nil, nil, fmt.Errorf("sampling returned no text")
			}
			return text("model said: " + t.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "elicit", Description: "Ask the user a question."},
		func(ctx context.Context, req *mcp.CallToolRequest, in TextIn) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message: in.Text,
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"answer": map[string]any{"type": "string"}},
				},
			})
			if err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("%s:%v", res.Action, res.Content["answer"])), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "List the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text(strings.Join(uris, ",")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Report steps progress notifications."},
		func(ctx context.Context, req *mcp.CallToolRequest, in StepsIn) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			if tok == nil {
				return text("no token"), nil, nil
			}
			for i := range in.Steps {
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: tok, Progress: float64(i + 1), Total: float64(in.Steps),
				})
				if err != nil {
					return nil, nil, err
				}
			}
			return text(fmt.Sprintf("%d steps", in.Steps)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "writefile", Description: "Write text to a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, in WriteIn) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile(in.Path, []byte(in.Text), 0o644); err != nil {
				return nil, nil, err
			}
			return text("written"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "addtool", Description: "Add a tool named text (the server announces tools/list_changed)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in TextIn) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: in.Text, Description: "added at run time"},
				func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return text("added"), nil, nil
				})
			return text("ok"), nil, nil
		})
	s.AddResource(&mcp.Resource{URI: "testmcp://hello", Name: "hello", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello from " + name},
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["who"]}},
			}}, nil
		})
	return s
}
