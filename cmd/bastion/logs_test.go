package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bastion-mcp/bastion/internal/testenv"
)

// stdioSession starts `bastion stdio args...` as a child, initializes and
// lists its tools as a client would, hangs up and returns its stderr.
func stdioSession(t *testing.T, args ...string) string {
	t.Helper()
	cmd := cliCommand(append([]string{"stdio", "--data-dir", t.TempDir()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "logs-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("stdio %v: %v\n%s", args, err, stderr.String())
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Close waits for the child to exit, so stderr is complete.
	cs.Close()
	return stderr.String()
}

// TestStdioLogs: `bastion stdio` is quiet by default (its own start and
// stop lines, none of River's migrations or the SDK's session chatter),
// writes JSON lines under --log-format json, and still has the library
// lines at --log-level debug.
func TestStdioLogs(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	text := stdioSession(t)
	if !strings.Contains(text, `msg="bastion stdio: serving"`) {
		t.Errorf("default log lacks the serving line:\n%s", text)
	}
	for _, noise := range []string{"rivermigrate", "River client", "session initialized", "server session"} {
		if strings.Contains(text, noise) {
			t.Errorf("default log has %q:\n%s", noise, text)
		}
	}

	var migrations int
	for line := range strings.Lines(stdioSession(t, "--log-format", "json", "--log-level", "debug")) {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("--log-format json wrote a line that is not JSON: %q", line)
			continue
		}
		if strings.HasPrefix(rec.Msg, "rivermigrate") {
			migrations++
			if rec.Level != "DEBUG" {
				t.Errorf("migration line at %s, want DEBUG: %q", rec.Level, line)
			}
		}
	}
	if migrations == 0 {
		t.Error("no River migration line at --log-level debug")
	}
}

// TestLogFormatFlag: every command takes --log-format, and a value other
// than text or json is refused before anything runs.
func TestLogFormatFlag(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Flag("log-format") == nil {
			t.Errorf("bastion %s has no --log-format", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	_, stderr, code := runCLI(t, "validate", "--log-format", "yaml", "--config", "/nonexistent")
	if code == 0 || !strings.Contains(stderr, "want text or json") {
		t.Errorf("--log-format yaml: exit %d, %q", code, stderr)
	}
}

// TestNoHiddenFlagInErrors: a user who passed only documented flags is
// never told about a hidden one, and even the hidden flags' own errors
// say what is wrong without naming them.
func TestNoHiddenFlagInErrors(t *testing.T) {
	t.Parallel()
	var hidden []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				hidden = append(hidden, "--"+f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	if len(hidden) == 0 {
		t.Fatal("no hidden flags found; the test checks nothing")
	}
	for _, args := range [][]string{
		{"serve", "--dev", "--addr", "0.0.0.0:0"},
		{"serve", "--unsafe-no-auth-loopback", "--addr", "0.0.0.0:0"},
		{"stdio", "--unsafe-demo-site", "nonsense"},
		{"serve", "--unsafe-demo-spki", "x"},
	} {
		_, stderr, code := runCLI(t, args...)
		if code == 0 {
			t.Errorf("%v: exit 0", args)
		}
		for _, h := range hidden {
			if strings.Contains(stderr, h) {
				t.Errorf("%v: the error names the hidden flag %s: %q", args, h, stderr)
			}
		}
	}
}
