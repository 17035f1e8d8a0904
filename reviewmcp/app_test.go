package reviewmcp_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/reviewmcp"
)

// appUI is the _meta.ui of the app resource.
type appUI struct {
	CSP *struct {
		ConnectDomains  []string `json:"connectDomains"`
		ResourceDomains []string `json:"resourceDomains"`
	} `json:"csp"`
}

func uiMeta(t *testing.T, m mcp.Meta) appUI {
	t.Helper()
	b, err := json.Marshal(m["ui"])
	if err != nil {
		t.Fatal(err)
	}
	var u appUI
	if err := json.Unmarshal(b, &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestAppIsDiscoverable holds the MCP App to SEP-1865 as a host meets it
// before any call: the extension is declared, resources/list has the app
// with the mcp-app MIME type and a CSP that admits no domain, exactly the
// tools that show a review name it in _meta.ui.resourceUri, and
// resources/read returns the page, which reaches nothing outside itself.
func TestAppIsDiscoverable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := connectBare(t, reviewmcp.NewServer(nil, reviewmcp.Options{Logger: quiet}))

	ext, _ := json.Marshal(cs.InitializeResult().Capabilities.Extensions["io.modelcontextprotocol/ui"])
	if string(ext) != `{"mimeTypes":["text/html;profile=mcp-app"]}` {
		t.Errorf("extensions[io.modelcontextprotocol/ui] = %s", ext)
	}

	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rl.Resources) != 1 || rl.Resources[0].URI != reviewmcp.AppURI || rl.Resources[0].MIMEType != "text/html;profile=mcp-app" {
		t.Fatalf("resources/list = %s, want the app only", mustJSON(rl.Resources))
	}
	if u := uiMeta(t, rl.Resources[0].Meta); u.CSP == nil || u.CSP.ConnectDomains == nil || len(u.CSP.ConnectDomains)+len(u.CSP.ResourceDomains) != 0 {
		t.Errorf("listed _meta.ui = %s, want a csp with empty connectDomains and resourceDomains", mustJSON(rl.Resources[0].Meta))
	}

	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, tool := range tl.Tools {
		ui, ok := tool.Meta["ui"].(map[string]any)
		if !ok {
			continue
		}
		if ui["resourceUri"] != reviewmcp.AppURI {
			t.Errorf("%s: _meta.ui.resourceUri %v, want a listed resource", tool.Name, ui["resourceUri"])
		}
		linked = append(linked, tool.Name)
	}
	if want := []string{reviewmcp.ToolGet, reviewmcp.ToolRecheck}; !slices.Equal(slices.Sorted(slices.Values(linked)), slices.Sorted(slices.Values(want))) {
		t.Errorf("tools linked to the app: %v, want %v", linked, want)
	}

	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: reviewmcp.AppURI})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 {
		t.Fatalf("resources/read: %d contents", len(rr.Contents))
	}
	c := rr.Contents[0]
	if c.URI != reviewmcp.AppURI || c.MIMEType != "text/html;profile=mcp-app" || !strings.HasPrefix(c.Text, "<!doctype html>") {
		t.Errorf("resources/read: uri %q mimeType %q text %.40q", c.URI, c.MIMEType, c.Text)
	}
	if u := uiMeta(t, c.Meta); u.CSP == nil || len(u.CSP.ConnectDomains)+len(u.CSP.ResourceDomains) != 0 {
		t.Errorf("read _meta.ui = %s, want the listed csp", mustJSON(c.Meta))
	}
	// Nothing outside the page: no URL, no loader, and no way to turn a
	// string into markup or code.
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`https?://`), regexp.MustCompile(`\b(fetch|XMLHttpRequest|WebSocket|importScripts|eval)\s*\(`),
		regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|new Function`),
		regexp.MustCompile(`<(link|iframe|object|embed)\b|\ssrc=`),
	} {
		if m := bad.FindString(c.Text); m != "" {
			t.Errorf("the app page contains %q", m)
		}
	}

	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: reviewmcp.AppURI + "x"}); err == nil {
		t.Error("a near-miss of the app's URI was read")
	}
}
