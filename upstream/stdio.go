package upstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/fault"
)

// stdioDialer checks the command once and returns the per-session dialer.
func (c *Conn) stdioDialer() (func(context.Context) (mcp.Transport, error), error) {
	if c.spec.Command == "" {
		return nil, fault.New(fault.InvalidArgument, "stdio upstream %s needs a command", c.spec.Name)
	}
	return func(context.Context) (mcp.Transport, error) {
		env, err := c.childEnv()
		if err != nil {
			return nil, err
		}
		return &childTransport{c: c, env: env}, nil
	}, nil
}

// childEnv is the child's whole environment: PATH and the configured
// variables, resolved now (so a rotated secret is picked up by a restart).
// Nothing else of bastion's environment is passed.
func (c *Conn) childEnv() ([]string, error) {
	vals, err := c.resolve("env", c.spec.Env)
	if err != nil {
		return nil, err
	}
	path := c.spec.Path
	if path == "" {
		path, _ = c.deps.Getenv("PATH")
	}
	if _, ok := vals["PATH"]; !ok && path != "" {
		vals["PATH"] = path
	}
	env := make([]string, 0, len(vals))
	for k, v := range vals {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env, nil
}

// childTransport starts one child per session.
type childTransport struct {
	c   *Conn
	env []string
}

func (t *childTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c := t.c
	// The command is looked up in the child's PATH, not bastion's.
	lp, err := lookPath(c.spec.Command, t.env)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", c.spec.Name, err)
	}
	cmd := &exec.Cmd{Path: lp, Args: append([]string{c.spec.Command}, c.spec.Args...), Env: t.env, Dir: c.spec.Dir}
	setProcessGroup(cmd)
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	cmd.Stderr = newLineLog(c.log)
	// A grandchild holding stderr open must not keep Wait from returning.
	cmd.WaitDelay = c.spec.StopGrace
	err = cmd.Start()
	stdinR.Close() // the child's ends
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		return nil, fmt.Errorf("upstream %s: start: %w", c.spec.Name, err)
	}
	p := &child{cmd: cmd, exited: make(chan struct{})}
	go p.reap()
	inner, err := (&mcp.IOTransport{Reader: stdoutR, Writer: stdinW}).Connect(ctx)
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		p.stop(c.spec.StopGrace)
		return nil, err
	}
	c.log.Info("upstream child started", "pid", cmd.Process.Pid)
	return &childConn{Connection: inner, p: p, grace: c.spec.StopGrace}, nil
}

// lookPath finds file in env's PATH (exec.LookPath would use bastion's).
func lookPath(file string, env []string) (string, error) {
	for _, kv := range env {
		if v, ok := cutPrefix(kv, "PATH="); ok {
			return lookPathIn(file, v)
		}
	}
	return lookPathIn(file, "")
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

// child is a started process. Exactly one goroutine (reap) waits for it, so
// it never lingers as a zombie.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's result, set before exited closes
}

// reap waits for the process to exit, kills whatever is left of its process
// group while the leader's pid still pins the group id, then reaps it.
func (p *child) reap() {
	waitExitNoReap(p.cmd.Process.Pid)
	killGroup(p.cmd.Process.Pid)
	p.err = p.cmd.Wait()
	close(p.exited)
}

// stop asks the child to exit: stdin is already closed by the caller; after
// grace, SIGTERM to the group; after grace again, SIGKILL.
func (p *child) stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	termGroup(p.cmd.Process.Pid)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	killGroup(p.cmd.Process.Pid)
	<-p.exited
}

// childConn closes its child with the connection.
type childConn struct {
	mcp.Connection
	p     *child
	grace time.Duration
	once  sync.Once
	err   error
}

func (cc *childConn) Close() error {
	cc.once.Do(func() {
		cc.err = cc.Connection.Close() // closes stdin: a well-behaved server exits
		cc.p.stop(cc.grace)
		var exit *exec.ExitError
		if cc.p.err != nil && !errors.As(cc.p.err, &exit) {
			cc.err = cmp.Or(cc.err, cc.p.err)
		}
	})
	return cc.err
}
