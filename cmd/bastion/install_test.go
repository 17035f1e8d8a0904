package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pelletier/go-toml/v2"

	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/reviewmcp"
)

// repoRoot is the module's root, where the Makefile and README are.
const repoRoot = "../.."

// freshEnv is the environment of a user's shell on a fresh machine: this
// one's, without the variables a CI or sandbox sets for its own builds.
func freshEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GOFLAGS" && k != "GOBIN" && k != cliEnv {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// TestMakeInstall runs `make install` as a new user would, with GOBIN
// naming an empty directory, then: the binary is there, --version names
// the checkout's commit and whether it is modified, and every client
// configuration in the README, run as written ("command": "bastion") with
// that directory first on PATH, starts the installed binary and serves the
// design-review tools.
func TestMakeInstall(t *testing.T) {
	testenv.Chromium(t) // bastion stdio needs a browser to start
	gobin := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "install")
	cmd.Dir = repoRoot
	cmd.Env = freshEnv("GOBIN=" + gobin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	bin := filepath.Join(gobin, "bastion")
	if !strings.Contains(string(out), "installed "+bin) {
		t.Errorf("make install printed %q; want it to name %s", out, bin)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("make install with GOBIN=%s: %v", gobin, err)
	}
	t.Run("Version", func(t *testing.T) { checkVersion(t, bin) })
	t.Run("ClientConfigs", func(t *testing.T) { checkClientConfigs(t, gobin, bin) })
}

// checkVersion compares bin's --version with git's own view of the tree.
// Go stamps the revision only from a .git directory (cmd/go's git root is
// a directory): in a git worktree, whose .git is a file, the build has no
// VCS information and --version must say so rather than invent one.
func checkVersion(t *testing.T, bin string) {
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", repoRoot}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	rev, dirty := git("rev-parse", "HEAD"), git("status", "--porcelain") != ""
	fi, err := os.Stat(filepath.Join(repoRoot, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("bastion --version: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] != "bastion "+reviewmcp.Version {
		t.Errorf("first line %q, want %q", lines[0], "bastion "+reviewmcp.Version)
	}
	want := "revision: " + rev
	if dirty {
		want += " (modified)"
	}
	if !fi.IsDir() {
		t.Logf("%s/.git is a file (a worktree): go records no revision", repoRoot)
		want = "revision: unknown (built without VCS information)"
	}
	if !slices.Contains(lines, want) {
		t.Errorf("--version printed %q; want the line %q (git status: modified %t)", out, want, dirty)
	}
}

// clientConfig is one README configuration's command line.
type clientConfig struct {
	client, command string
	args            []string
}

// readmeClientConfigs returns the configurations of the README's "Connect a
// coding agent" section: each JSON file's bastion entry (mcpServers or
// VS Code's servers) and Codex's TOML table.
func readmeClientConfigs(t *testing.T) []clientConfig {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## Connect a coding agent")
	end := strings.Index(text[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("README.md has no \"Connect a coding agent\" section")
	}
	type entry struct {
		Command string   `json:"command" toml:"command"`
		Args    []string `json:"args" toml:"args"`
	}
	var out []clientConfig
	client, fence, block := "", "", ""
	sc := bufio.NewScanner(strings.NewReader(text[start : start+1+end]))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case fence == "" && strings.HasPrefix(line, "### "):
			client = strings.TrimPrefix(line, "### ")
		case fence == "" && (line == "```json" || line == "```toml"):
			fence, block = strings.TrimPrefix(line, "```"), ""
		case fence != "" && line == "```":
			var e entry
			if fence == "json" {
				var doc struct{ MCPServers, Servers map[string]entry }
				if err := json.Unmarshal([]byte(block), &doc); err != nil {
					t.Fatalf("%s: %v", client, err)
				}
				e = doc.MCPServers["bastion"]
				if e.Command == "" {
					e = doc.Servers["bastion"]
				}
			} else {
				var doc struct {
					MCPServers map[string]entry `toml:"mcp_servers"`
				}
				if err := toml.Unmarshal([]byte(block), &doc); err != nil {
					t.Fatalf("%s: %v", client, err)
				}
				e = doc.MCPServers["bastion"]
			}
			out = append(out, clientConfig{client, e.Command, e.Args})
			fence = ""
		case fence != "":
			block += line + "\n"
		}
	}
	return out
}

// checkClientConfigs starts each README configuration with gobin first on
// PATH and lists its tools over MCP, as the client would.
func checkClientConfigs(t *testing.T, gobin, bin string) {
	configs := readmeClientConfigs(t)
	if len(configs) < 4 {
		t.Fatalf("README client configurations: %v; want Claude Code, Cursor, VS Code and Codex", configs)
	}
	t.Setenv("PATH", gobin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, c := range configs {
		path, err := exec.LookPath(c.command)
		if err != nil || path != bin {
			t.Errorf("%s: command %q resolves to %q, %v; want the installed %s", c.client, c.command, path, err, bin)
			continue
		}
		home := t.TempDir()
		cmd := exec.Command(path, c.args...)
		cmd.Env = freshEnv("HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"), "PATH="+os.Getenv("PATH"))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: c.client, Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			t.Errorf("%s: %s %v: %v", c.client, c.command, c.args, err)
			continue
		}
		res, err := cs.ListTools(ctx, nil)
		var names []string
		if err == nil {
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
		}
		if !slices.Contains(names, reviewmcp.ToolReview) || len(names) != 5 {
			t.Errorf("%s: tools/list = %v, %v; want the five design-review tools", c.client, names, err)
		}
		cs.Close()
		cancel()
	}
}
