package upstream_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/upstream"
)

func TestWasmCall(t *testing.T) {
	t.Parallel()
	spec := wasmSpec("wasm")
	spec.Env = map[string]upstream.Value{"TOKEN": envRef(tokenVar)}
	c := open(t, spec, upstream.Deps{})
	if got := mustCall(t, c, "echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Errorf("echo = %q, want hi", got)
	}
	env := mustCall(t, c, "env", map[string]any{"names": []string{"TOKEN", secretVar, "PATH"}})
	for _, want := range []string{"count=1\n", "TOKEN=configured-token\n", secretVar + "=(unset)\n", "PATH=(unset)\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("env = %q, want it to contain %q", env, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "testmcp://hello"})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "hello from testmcp" {
		t.Errorf("ReadResource = %+v, %v", res, err)
	}
	// Sleeping goroutines in the guest must not starve its stdin reader.
	done := make(chan error, 1)
	go func() { _, err := call(ctx, t, c, "sleep", map[string]any{"ms": 300}); done <- err }()
	if got := mustCall(t, c, "echo", map[string]any{"text": "during"}); got != "during" {
		t.Errorf("echo during sleep = %q", got)
	}
	if err := <-done; err != nil {
		t.Errorf("sleep: %v", err)
	}
	t.Logf("instantiate+initialize: %v", c.Health().Connect)
}

func TestWasmMemoryCapReplacesInstance(t *testing.T) {
	t.Parallel()
	spec := wasmSpec("wasm-mem")
	spec.MemoryMB = 48
	c := open(t, spec, upstream.Deps{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if got, err := call(ctx, t, c, "alloc", map[string]any{"mb": 8}); err != nil {
		t.Fatalf("alloc 8 MiB under a 48 MiB cap: %q, %v", got, err)
	}
	_, err := call(ctx, t, c, "alloc", map[string]any{"mb": 200})
	if !errors.Is(err, upstream.ErrTrapped) {
		t.Fatalf("alloc 200 MiB under a 48 MiB cap: err = %v, want ErrTrapped", err)
	}
	if got := mustCall(t, c, "echo", map[string]any{"text": "after"}); got != "after" {
		t.Errorf("echo after trap = %q", got)
	}
	if h := c.Health(); h.Restarts < 1 {
		t.Errorf("Restarts = %d, want ≥ 1 (the trapped instance replaced)", h.Restarts)
	}
}

func TestWasmDeadlineReplacesInstance(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"spin", "sleep"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			spec := wasmSpec("wasm-" + tool)
			spec.Timeout = 500 * time.Millisecond
			c := open(t, spec, upstream.Deps{})
			start := time.Now()
			_, err := call(context.Background(), t, c, tool, map[string]any{"ms": 20000})
			if !errors.Is(err, upstream.ErrTimeout) {
				t.Fatalf("%s past the deadline: err = %v, want ErrTimeout", tool, err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the call returned after %v, not at its deadline", d)
			}
			if got := mustCall(t, c, "echo", map[string]any{"text": "fresh"}); got != "fresh" {
				t.Errorf("echo after deadline = %q", got)
			}
			if h := c.Health(); h.Restarts < 1 {
				t.Errorf("Restarts = %d, want ≥ 1 (the overrun instance replaced)", h.Restarts)
			}
		})
	}
}

func TestWasmFilesystem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "granted.txt"), []byte("granted content"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("None", func(t *testing.T) {
		t.Parallel()
		c := open(t, wasmSpec("wasm-nofs"), upstream.Deps{})
		ctx := context.Background()
		for _, p := range []string{"/etc/passwd", filepath.Join(dir, "granted.txt")} {
			if got, err := call(ctx, t, c, "readfile", map[string]any{"path": p}); err == nil {
				t.Errorf("readfile %s without a grant = %q, want an error", p, got)
			}
		}
	})
	t.Run("ReadOnly", func(t *testing.T) {
		t.Parallel()
		spec := wasmSpec("wasm-rofs")
		spec.ReadOnly = []string{dir}
		c := open(t, spec, upstream.Deps{})
		ctx := context.Background()
		if got := mustCall(t, c, "readfile", map[string]any{"path": filepath.Join(dir, "granted.txt")}); got != "granted content" {
			t.Errorf("readfile in a granted directory = %q", got)
		}
		if got, err := call(ctx, t, c, "writefile", map[string]any{"path": filepath.Join(dir, "new.txt"), "text": "x"}); err == nil {
			t.Errorf("writefile in a read-only directory = %q, want an error", got)
		}
		if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
			t.Error("the guest created a file in a read-only mount")
		}
		if got, err := call(ctx, t, c, "readfile", map[string]any{"path": "/etc/passwd"}); err == nil {
			t.Errorf("readfile outside the grant = %q, want an error", got)
		}
	})
}
