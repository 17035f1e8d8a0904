package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pinTestMCP builds internal/testmcp/cmd/testmcp, the project's own test
// upstream, into dir.
func pinTestMCP(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "testmcp")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/bastion-mcp/bastion/internal/testmcp/cmd/testmcp").CombinedOutput()
	if err != nil {
		t.Fatalf("building testmcp: %v\n%s", err, out)
	}
	return bin
}

// pinGateway is one run of `bastion gateway --stdio` with an SDK client.
type pinGateway struct {
	cs *mcp.ClientSession
}

func startPinGateway(t *testing.T, cfg string) *pinGateway {
	t.Helper()
	cmd := cliCommand("gateway", "--stdio", "--config", cfg, "--log-level", "warn")
	cmd.Stderr = testWriter{t}
	client := mcp.NewClient(&mcp.Implementation{Name: "pin-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to bastion gateway --stdio: %v", err)
	}
	return &pinGateway{cs: cs}
}

// stop ends the gateway process (a restart is a stop and a new start).
func (g *pinGateway) stop(t *testing.T) {
	t.Helper()
	if err := g.cs.Close(); err != nil {
		t.Logf("closing the gateway: %v", err)
	}
}

func (g *pinGateway) tools(t *testing.T) []string {
	t.Helper()
	var names []string
	for tool, err := range g.cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func (g *pinGateway) echo(t *testing.T, text string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("tools/call fx__echo: protocol error %v", err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// pinRow returns the STATUS column of `bastion pin list` for server and
// tool, or "" without such a row.
func pinRow(list, server, tool string) string {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(server) + `\s+` + regexp.QuoteMeta(tool) + `\s+\S+\s+\S+\s+(.*)$`)
	if m := re.FindStringSubmatch(list); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

// TestPinApproveCLI: a stdio upstream is approved with `bastion pin
// approve`; its echo description changes; `bastion pin list` reports the
// drift and a restarted `bastion gateway` hides echo and denies calls to it;
// after `bastion pin approve fx echo` the next gateway lists and runs it
// again, from the pins file the earlier runs left on disk.
func TestPinApproveCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := pinTestMCP(t, dir)
	desc := filepath.Join(dir, "desc")
	if err := os.WriteFile(desc, []byte("Echo the text."), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "bastion.toml")
	// No [pins] table: the pins file defaults to pins.json beside the
	// audit directory.
	// startup_wait is generous: the test lists fx's tools right after
	// start, however loaded the machine.
	if err := os.WriteFile(cfg, []byte(`
[gateway]
startup_wait = "60s"

[server.fx]
kind = "stdio"
command = "`+bin+`"
env = { TESTMCP_DESCRIPTION_FILE = "`+desc+`" }

[pin]
tofu = false

[[policy.rule]]
name = "all"
action = "allow"
match = ["fx__*"]

[audit]
dir = "`+filepath.Join(dir, "audit")+`"
checkpoint_interval = "1h"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	pinsPath := filepath.Join(dir, "pins.json")

	out, errOut, code := runCLI(t, "pin", "list", "--config", cfg, "--offline")
	if code != 0 || !strings.Contains(out, "never approved") {
		t.Fatalf("pin list before approval: exit %d\n%s%s", code, out, errOut)
	}

	// Without TOFU nothing is trusted until the first approval.
	g := startPinGateway(t, cfg)
	if names := g.tools(t); slices.Contains(names, "fx__echo") {
		t.Errorf("unapproved tool listed: %v", names)
	}
	if got, isErr := g.echo(t, "hi"); !isErr || !strings.HasPrefix(got, "bastion denied: ") {
		t.Errorf("unapproved call: %q (isError %v)", got, isErr)
	}
	g.stop(t)

	out, errOut, code = runCLI(t, "pin", "approve", "--config", cfg, "fx")
	if code != 0 || !strings.Contains(out, "approved fx:") || !strings.Contains(out, `new echo: "Echo the text."`) {
		t.Fatalf("first pin approve: exit %d\n%s%s", code, out, errOut)
	}
	fi, err := os.Stat(pinsPath)
	if err != nil {
		t.Fatalf("no pins file at the default path: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("pins file mode %v", fi.Mode().Perm())
	}

	g = startPinGateway(t, cfg)
	if names := g.tools(t); !slices.Contains(names, "fx__echo") {
		t.Errorf("approved tool not listed: %v", names)
	}
	if got, isErr := g.echo(t, "hi"); isErr || got != "hi" {
		t.Errorf("approved call: %q (isError %v)", got, isErr)
	}
	g.stop(t)

	// The rug pull: the upstream now describes echo differently. The new
	// text is harmless so that only the pin gate, not inspection, objects.
	poisoned := "Echo the text, then forget it."
	if err := os.WriteFile(desc, []byte(poisoned), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCLI(t, "pin", "list", "--config", cfg)
	if code != 0 || !strings.HasPrefix(pinRow(out, "fx", "echo"), "CHANGED") || pinRow(out, "fx", "sleep") != "ok" {
		t.Fatalf("pin list after the rug pull: exit %d\n%s%s", code, out, errOut)
	}

	g = startPinGateway(t, cfg)
	if names := g.tools(t); slices.Contains(names, "fx__echo") || !slices.Contains(names, "fx__sleep") {
		t.Errorf("after the rug pull the gateway lists %v; want sleep without echo", names)
	}
	if got, isErr := g.echo(t, "hi"); !isErr || !strings.HasPrefix(got, "bastion denied: tool definition changed") {
		t.Errorf("drifted call: %q (isError %v)", got, isErr)
	}
	g.stop(t)

	before, _ := os.ReadFile(pinsPath)
	out, errOut, code = runCLI(t, "pin", "approve", "--config", cfg, "--dry-run", "fx", "echo")
	if code != 0 || !strings.Contains(out, `changed echo: "`+poisoned+`"`) {
		t.Fatalf("pin approve --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(pinsPath); string(after) != string(before) {
		t.Error("--dry-run changed the pins file")
	}
	_, errOut, code = runCLI(t, "pin", "approve", "--config", cfg, "fx", "no_such_tool")
	if code == 0 || !strings.Contains(errOut, "does not offer tool") {
		t.Errorf("approving an unknown tool: exit %d %s", code, errOut)
	}
	out, errOut, code = runCLI(t, "pin", "approve", "--config", cfg, "fx", "echo")
	if code != 0 || !strings.Contains(out, "approved fx:") {
		t.Fatalf("pin approve fx echo: exit %d\n%s%s", code, out, errOut)
	}

	// A restarted gateway reads the re-approved pin from the file.
	g = startPinGateway(t, cfg)
	if names := g.tools(t); !slices.Contains(names, "fx__echo") {
		t.Errorf("re-approved tool not listed: %v", names)
	}
	if got, isErr := g.echo(t, "again"); isErr || got != "again" {
		t.Errorf("re-approved call: %q (isError %v)", got, isErr)
	}
	g.stop(t)
	out, _, _ = runCLI(t, "pin", "list", "--config", cfg)
	t.Logf("bastion pin list:\n%s", out)
	if s := pinRow(out, "fx", "echo"); s != "ok" {
		t.Errorf("pin list after re-approval: echo is %q\n%s", s, out)
	}
}
