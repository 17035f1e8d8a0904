package reviewmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/review/reviewtest"
	"github.com/bastion-mcp/bastion/reviewmcp"
	"github.com/bastion-mcp/bastion/store/sqlite"
)

var quiet = slog.New(slog.DiscardHandler)

// harness is a real review.Service on a real SQLite store, whose
// authorizer treats preview.example.com as the test tenants' one verified
// host and, given a site, sends the engine there.
type harness struct {
	*reviewtest.Harness
	auth *reviewtest.HostAuthorizer
}

// newHarness builds the harness over eng; a nil eng is for harnesses whose
// jobs never run (no workers are started), and fails any call: a test bug.
func newHarness(t testing.TB, eng review.Engine, siteBase string, start bool) *harness {
	t.Helper()
	if eng == nil {
		eng = &reviewtest.Engine{Err: errors.New("reviewmcp test: no engine in this harness")}
	}
	auth := &reviewtest.HostAuthorizer{Hosts: []string{reviewtest.PreviewHost}, Site: siteBase}
	h := reviewtest.New(t, reviewtest.Options{Start: start, Engine: eng,
		Authorizer: func(*sqlite.DB) review.Authorizer { return auth },
		Review:     review.Options{ReviewTimeout: time.Minute}})
	return &harness{Harness: h, auth: auth}
}

// clientOpts says how a test client presents itself.
type clientOpts struct {
	apps     bool // declare MCP Apps (io.modelcontextprotocol/ui with the mcp-app profile)
	noImages bool // the server's Options.NoImages
	anon     bool // no principal at all
	// progress, when set, receives the notifications/progress the server
	// sends this client.
	progress func(*mcp.ProgressNotificationClientRequest)
}

// client is an MCP client session on a fresh server over the harness's
// service, acting as p.
type client struct {
	t       testing.TB
	cs      *mcp.ClientSession
	outputs map[string]*jsonschema.Resolved
}

func (h *harness) connect(t testing.TB, p principal.Principal, o clientOpts) *client {
	t.Helper()
	ctx := context.Background()
	srv := reviewmcp.NewServer(h.Service, reviewmcp.Options{
		Logger:   quiet,
		NoImages: o.noImages,
		PrincipalFrom: func(context.Context) (principal.Principal, bool) {
			return p, !o.anon
		},
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	caps := &mcp.ClientCapabilities{}
	if o.apps {
		caps.AddExtension("io.modelcontextprotocol/ui", map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}})
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "reviewmcp-test", Version: "1"},
		&mcp.ClientOptions{Capabilities: caps, ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if o.progress != nil {
				o.progress(r)
			}
		}})
	cs, err := cl.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	c := &client{t: t, cs: cs, outputs: map[string]*jsonschema.Resolved{}}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		b, _ := json.Marshal(tl.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s outputSchema: %v", tl.Name, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s outputSchema: %v", tl.Name, err)
		}
		c.outputs[tl.Name] = r
	}
	return c
}

// call calls tool with args (anything that marshals to JSON; a string is
// sent as raw JSON) and checks the result against the tool's outputSchema
// and the envelope rules: structuredContent present, content[0] its JSON
// except in the evidence view.
func (c *client) call(tool string, args any) *mcp.CallToolResult {
	c.t.Helper()
	var raw json.RawMessage
	switch a := args.(type) {
	case string:
		raw = json.RawMessage(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			c.t.Fatal(err)
		}
		raw = b
	}
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: raw})
	if err != nil {
		c.t.Fatalf("%s: protocol error %v (every tool failure must be a tool result)", tool, err)
	}
	if res.StructuredContent == nil {
		c.t.Fatalf("%s: no structuredContent", tool)
	}
	sc := structured(c.t, res)
	if err := c.outputs[tool].Validate(sc); err != nil {
		c.t.Fatalf("%s: structuredContent violates its outputSchema: %v\n%s", tool, err, mustJSON(sc))
	}
	if len(res.Content) == 0 {
		c.t.Fatalf("%s: no content", tool)
	}
	return res
}

// structured returns a result's structuredContent as generic JSON.
func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// decodeInto decodes a result's structuredContent into v.
func decodeInto(t testing.TB, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// wireError is the error envelope.
type wireError struct {
	SchemaVersion string `json:"schema_version"`
	Code          string `json:"code"`
	Message       string `json:"message"`
	Retriable     bool   `json:"retriable"`
	CorrelationID string `json:"correlation_id"`
	NextAction    string `json:"next_action"`
	RetryAfterMS  *int64 `json:"retry_after_ms"`
}

// wantError checks res is the typed error envelope with code and returns it.
func wantError(t testing.TB, res *mcp.CallToolResult, code fault.Code) wireError {
	t.Helper()
	if !res.IsError {
		t.Fatalf("isError false, want %s; result %s", code, mustJSON(res.StructuredContent))
	}
	var env struct {
		Error wireError `json:"error"`
	}
	decodeInto(t, res, &env)
	if len(structured(t, res)) != 1 {
		t.Errorf("error structuredContent has other keys: %s", mustJSON(res.StructuredContent))
	}
	e := env.Error
	if e.Code != string(code) {
		t.Fatalf("code %s (%s), want %s", e.Code, e.Message, code)
	}
	if e.SchemaVersion != "1.0.0" || !strings.HasPrefix(e.CorrelationID, "cor_") || e.Message == "" || e.NextAction == "" {
		t.Errorf("envelope incomplete: %+v", e)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content[0] is %T, want text", res.Content[0])
	}
	var fromText wireError
	if err := json.Unmarshal([]byte(text.Text), &fromText); err != nil || mustJSON(fromText) != mustJSON(e) {
		t.Errorf("content[0].text %q is not the error's JSON (%v)", text.Text, err)
	}
	return e
}

func wantOK(t testing.TB, res *mcp.CallToolResult) {
	t.Helper()
	if res.IsError {
		t.Fatalf("unexpected tool error: %s", mustJSON(res.StructuredContent))
	}
}

func mustJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// jobOut is the part of a job the tests read.
type jobOut struct {
	JobID    string `json:"job_id"`
	Status   string `json:"status"`
	Kind     string `json:"kind"`
	ReviewID string `json:"review_id"`
	Reused   bool   `json:"reused"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type submitOut struct {
	Job    jobOut        `json:"job"`
	Budget review.Budget `json:"budget"`
}

// waitDone reads design_review_get's status view, each read held with
// wait_ms until the job changes state, until the job is terminal.
func (c *client) waitDone(jobID string) jobOut {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		res := c.call(reviewmcp.ToolGet, map[string]any{"job_id": jobID, "view": "status", "wait_ms": 25000})
		wantOK(c.t, res)
		var out struct {
			Job jobOut `json:"job"`
		}
		decodeInto(c.t, res, &out)
		switch out.Job.Status {
		case "completed", "failed", "cancelled":
			return out.Job
		}
	}
	c.t.Fatalf("job %s did not finish", jobID)
	return jobOut{}
}
