package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/internal/testenv"
)

// TestGatewayExampleFreshMachine runs the README's example,
// `bastion gateway --config examples/bastion.toml`, as on a fresh machine:
// empty data directories and a PATH without the example's stdio server
// (only Chromium, which the review server needs, is there). It
// must listen and serve the in-process review server, leave the missing
// upstream out of tools/list, deny its calls by name, and name it on
// /readyz (ready, degraded: it is optional).
func TestGatewayExampleFreshMachine(t *testing.T) {
	t.Parallel()
	chrome := testenv.Chromium(t) // the review server's browser, part of any install
	home := t.TempDir()
	cmd := cliCommand("gateway", "--config", "../../examples/bastion.toml", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-level", "warn")
	cmd.Env = append(cmd.Env, "XDG_DATA_HOME="+home, "HOME="+home, "PATH="+t.TempDir(), "BASTION_CHROME="+chrome)
	cmd.Stderr = testWriter{t}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "http://") {
				url <- line
				return
			}
		}
	}()
	var mcpURL string
	select {
	case mcpURL = <-url:
	case <-exited:
		t.Fatal("bastion gateway exited before listening")
	case <-time.After(90 * time.Second):
		t.Fatal("bastion gateway --config examples/bastion.toml never listened")
	}

	cs := connectHTTP(t, mcpURL, "", "2025-11-25")
	names := toolNames(t, cs)
	if !slices.Contains(names, "review__design_review") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "files__") }) {
		t.Fatalf("tools = %v, want the review server's and none of files'", names)
	}
	text, _, isErr := callText(t, cs, "files__read_file", map[string]any{"path": "/srv/project/README"})
	if want := "bastion denied: upstream files is unavailable"; !isErr || text != want {
		t.Fatalf("files__read_file = %q (isError %v), want %q", text, isErr, want)
	}

	res, err := http.Get(strings.TrimSuffix(mcpURL, "/mcp") + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(res.Body).Decode(&ready); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || ready.Status != "degraded" || ready.Checks["upstream:files"] != "fail" || ready.Checks["upstream:review"] != "ok" {
		t.Fatalf("/readyz = %d %+v, want 200 degraded naming upstream:files", res.StatusCode, ready)
	}
}
