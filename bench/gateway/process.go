package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The process rows measure the gateway as people run it, from outside: a
// `bastion gateway` process in front of testmcp on loopback Streamable HTTP,
// its clients SDK sessions over HTTP, one per caller, and its CPU per call
// read from the kernel's account of that process alone (utime+stime over the
// window, divided by the calls). The upstream and the clients run in this
// process, so nothing of theirs is in the gateway's figure.
//
// With -ab REF a second gateway, built from git REF, runs beside the first
// under the same configuration and upstream; each round drives direct, this
// build and the base build in turn, so a regression shows as a ratio of one
// run rather than a difference between two.

// gatewayProc is one running `bastion gateway`.
type gatewayProc struct {
	name string // "this" or "base"
	url  string
	cmd  *exec.Cmd
	dir  string // its configuration, ledger, pins and approvals
}

// processTOML is the process gateway's configuration: every gate of
// gatewayTOML, and its files in its own directory.
func processTOML(dir, upstreamURL string) string {
	server := "kind = \"http\"\nurl = \"" + upstreamURL + "\"\nallow_private = true"
	toml := strings.NewReplacer("%SERVER%", server, "%TOOL%", "echo", "%ARG%", "text").Replace(gatewayTOML)
	return toml + fmt.Sprintf("\n[audit]\ndir = %q\n\n[pins]\nfile = %q\n\n[approvals]\nfile = %q\n",
		filepath.Join(dir, "audit"), filepath.Join(dir, "pins.json"), filepath.Join(dir, "approvals.json"))
}

// startGateway runs bin as a gateway in front of upstreamURL, its files in a
// fresh directory under workDir (the ledger on the same file system as the
// in-process rows'), and waits for the URL it prints.
func startGateway(ctx context.Context, name, bin, workDir, upstreamURL string) (*gatewayProc, error) {
	dir, err := os.MkdirTemp(workDir, "bench-gateway-"+name+"-")
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "bastion.toml")
	if err := os.WriteFile(cfg, []byte(processTOML(dir, upstreamURL)), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, "gateway", "--config", cfg, "--addr", "127.0.0.1:0", "--log-level", "error")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	g := &gatewayProc{name: name, cmd: cmd, dir: dir}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, out)
	}()
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, "http://") {
			g.stop()
			return nil, fmt.Errorf("%s gateway did not print its URL (got %q)", name, line)
		}
		g.url = strings.TrimSpace(line)
	case <-wait.Done():
		g.stop()
		return nil, fmt.Errorf("%s gateway: %w", name, wait.Err())
	}
	return g, nil
}

func (g *gatewayProc) stop() {
	_ = g.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(g.dir)
}

// procResult is one measurement against a gateway process: the calls that
// succeeded, the refusals, and the gateway process's own CPU.
type procResult struct {
	result
	errors  int
	gwCPU   time.Duration
	lastErr error
}

func (r *procResult) add(o procResult) {
	r.result.add(o.result)
	r.errors += o.errors
	r.gwCPU += o.gwCPU
	if o.lastErr != nil {
		r.lastErr = o.lastErr
	}
}

// gwCPUPerCall is the gateway process's CPU per successful call.
func (r procResult) gwCPUPerCall() time.Duration {
	return r.gwCPU / time.Duration(max(1, len(r.lat)))
}

// driveCounting is drive for paths that may refuse calls (a base build's
// in-flight limit): a failed call is counted and the caller goes on, so
// the refusals show in the table instead of ending the run. pid, when
// non-zero, is the process whose CPU the window is charged to.
func driveCounting(ctx context.Context, sessions []*mcp.ClientSession, pid int, n int) (procResult, error) {
	lat := make([]time.Duration, 0, n)
	var mu sync.Mutex
	var next, failed atomic.Int64
	var lastErr atomic.Value
	var wg sync.WaitGroup
	cpu0, err := processCPU(pid)
	if err != nil {
		return procResult{}, err
	}
	start := time.Now()
	for _, cs := range sessions {
		wg.Go(func() {
			p := &mcp.CallToolParams{Name: "echo__echo", Arguments: map[string]any{"text": "hello, gateway"}}
			if pid == 0 {
				p.Name = "echo"
			}
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				res, err := cs.CallTool(ctx, p)
				d := time.Since(t0)
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %v", res.Content)
				}
				if err != nil {
					failed.Add(1)
					lastErr.Store(err)
					continue
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	cpu1, err := processCPU(pid)
	if err != nil {
		return procResult{}, err
	}
	if len(lat) == 0 {
		err, _ := lastErr.Load().(error)
		return procResult{}, fmt.Errorf("every call failed: %w", err)
	}
	le, _ := lastErr.Load().(error)
	return procResult{result: result{elapsed: el, lat: lat}, errors: int(failed.Load()), gwCPU: cpu1 - cpu0, lastErr: le}, nil
}

// openSessions opens c client sessions to the Streamable HTTP endpoint url.
func openSessions(ctx context.Context, url string, c int, version string) ([]*mcp.ClientSession, func(), error) {
	var out []*mcp.ClientSession
	closeAll := func() {
		for _, cs := range out {
			cs.Close()
		}
	}
	for range c {
		cs, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		out = append(out, cs)
	}
	return out, closeAll, nil
}

// buildBastion builds cmd/bastion from the module at root into out.
func buildBastion(root, out string) error {
	cmd := exec.Command("go", "build", "-o", out, "./cmd/bastion")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building bastion in %s: %v: %s", root, err, b)
	}
	return nil
}

// buildBase checks ref out into a temporary worktree of the repository at
// root, builds bastion there into out, and removes the worktree.
func buildBase(root, ref, out string) error {
	tmp, err := os.MkdirTemp("", "bench-gateway-base-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	wt := filepath.Join(tmp, "src")
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	if err := git("worktree", "add", "--detach", wt, ref); err != nil {
		return err
	}
	defer func() { _ = git("worktree", "remove", "--force", wt) }()
	return buildBastion(wt, out)
}

// moduleRoot is the directory of the go.mod this command runs in.
func moduleRoot() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(b))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a Go module: run bench/gateway from the bastion checkout")
	}
	return filepath.Dir(mod), nil
}
