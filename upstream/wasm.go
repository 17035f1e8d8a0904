package upstream

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/bastion-mcp/bastion/fault"
)

// wasmModule is a module compiled once for its Conn. Each session is a fresh
// instance of it; instances share nothing but the compiled code.
type wasmModule struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
}

// compileWasm compiles spec.Module under a runtime that caps memory, closes
// an instance when its context ends (so a spinning guest is interrupted),
// and offers only WASI preview 1: no sockets, no extra host functions.
func compileWasm(ctx context.Context, spec Spec, cache wazero.CompilationCache) (*wasmModule, error) {
	if spec.Module == "" {
		return nil, fault.New(fault.InvalidArgument, "wasm upstream %s needs the path of its module", spec.Name)
	}
	for _, d := range spec.ReadOnly {
		if !filepath.IsAbs(d) {
			return nil, fault.New(fault.InvalidArgument, "wasm upstream %s: read-only directory %q is not absolute", spec.Name, d)
		}
	}
	bin, err := os.ReadFile(spec.Module)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: read module: %w", spec.Name, err)
	}
	if cache == nil {
		cache = wazero.NewCompilationCache()
	}
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(spec.MemoryMB) * 16) // 64 KiB pages
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("upstream %s: wasi: %w", spec.Name, err)
	}
	compiled, err := rt.CompileModule(ctx, bin)
	if err != nil {
		rt.Close(ctx)
		return nil, fault.Wrap(err, fault.InvalidArgument, "wasm upstream %s: the module does not compile", spec.Name)
	}
	for _, f := range compiled.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod != wasi_snapshot_preview1.ModuleName {
			rt.Close(ctx)
			return nil, fault.New(fault.InvalidArgument, "wasm upstream %s imports %s.%s; only WASI preview 1 is offered", spec.Name, mod, name)
		}
	}
	return &wasmModule{rt: rt, compiled: compiled}, nil
}

func (m *wasmModule) close(ctx context.Context) error { return m.rt.Close(ctx) }

// wasmDialer returns a transport that starts a fresh instance.
func (c *Conn) wasmDialer(context.Context) (mcp.Transport, error) {
	env, err := c.resolve("env", c.spec.Env)
	if err != nil {
		return nil, err
	}
	return &wasmTransport{c: c, env: env}, nil
}

type wasmTransport struct {
	c   *Conn
	env map[string]string
}

// Connect instantiates the module, running its _start (the server's main)
// on a goroutine with stdin and stdout wired to in-process pipes that carry
// the MCP stdio framing.
func (t *wasmTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c := t.c
	// stdin is an OS pipe: wazero polls and reads it without blocking when
	// the guest asks (see the package doc on Go guests); a plain io.Reader
	// would be reported as blocking and always ready.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW := io.Pipe()
	fsc := wazero.NewFSConfig()
	for _, d := range c.spec.ReadOnly {
		fsc = fsc.WithReadOnlyDirMount(d, d)
	}
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous, so instances never collide
		WithArgs(append([]string{c.spec.Name}, c.spec.Args...)...).
		WithStdin(stdinR).
		WithStdout(stdoutW).
		WithStderr(newLineLog(c.log)).
		WithFSConfig(fsc).
		// A server needs working timers; and a deterministic "random"
		// source (wazero's default) would make any guest crypto guessable.
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().
		WithRandSource(crand.Reader)
	for k, v := range t.env {
		mc = mc.WithEnv(k, v)
	}
	ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	inst := &wasmInstance{cancel: cancel, exited: make(chan struct{}), stdin: stdinW, stdout: stdoutR}
	go func() {
		defer close(inst.exited)
		mod, err := c.wasm.rt.InstantiateModule(ictx, c.wasm.compiled, mc)
		if mod != nil {
			_ = mod.Close(context.Background())
		}
		if err == nil {
			err = io.EOF
		}
		inst.err = err
		c.log.Warn("wasm instance ended", "err", err.Error())
		stdoutW.CloseWithError(err)
		stdinW.Close()
		stdinR.Close()
	}()
	inner, err := (&mcp.IOTransport{Reader: stdoutR, Writer: stdinW}).Connect(ctx)
	if err != nil {
		inst.close()
		return nil, err
	}
	return &wasmConn{Connection: inner, inst: inst}, nil
}

// wasmInstance is one running instance.
type wasmInstance struct {
	cancel func()
	exited chan struct{}
	err    error // why _start returned; set before exited closes
	stdin  *os.File
	stdout *io.PipeReader
}

// close interrupts the instance (WithCloseOnContextDone ends a running or
// spinning guest) and waits briefly for it. A guest blocked in a host sleep
// ends when that sleep returns; it is never handed out again either way.
func (i *wasmInstance) close() {
	i.cancel()
	i.stdin.Close()
	i.stdout.Close()
	select {
	case <-i.exited:
	case <-time.After(time.Second):
	}
}

type wasmConn struct {
	mcp.Connection
	inst *wasmInstance
	once sync.Once
	err  error
}

func (w *wasmConn) Close() error {
	w.once.Do(func() {
		w.err = w.Connection.Close()
		w.inst.close()
	})
	return w.err
}
