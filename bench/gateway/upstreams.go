package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/edge"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/gateway/loop"
	"github.com/bastion-mcp/bastion/internal/testmcp"
	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/upstream"
)

// target is one upstream kind, set up for every path: direct, relay and
// gateway.
type target struct {
	title     string         // what the upstream is, for the table's heading
	server    string         // the body of the [server.echo] block
	tool      string         // the upstream's tool to call; "" means echo
	args      map[string]any // its arguments; nil means {"text": ...}
	argRule   string         // the argument the policy requires; "" means text
	deps      upstream.Deps
	inProcess map[string]func(context.Context) (mcp.Transport, error)
	dialUp    func(context.Context) (mcp.Transport, error) // how the relay reaches the upstream
	// forPrincipal is loop.Deps.ForPrincipal, for an in-process server
	// that acts for its caller.
	forPrincipal map[string]loop.PrincipalServer
	direct       opener
	close        func() // ends the direct session and the upstream
}

func known(kind string) bool {
	switch kind {
	case "inproc", "review", "stdio", "http", "process":
		return true
	}
	return false
}

// newTarget sets up kind's upstream for every path, for as many callers at
// once as o.callers(). Unless the kind says otherwise, the tool is testmcp's echo.
func newTarget(ctx context.Context, kind string, o options, p principal.Principal) (target, error) {
	var t target
	var err error
	switch kind {
	case "review":
		t, err = reviewTarget(ctx, o.workDir, p, o.version)
	case "inproc":
		t = inprocTarget(ctx, o.version)
	case "stdio":
		t, err = stdioTarget(ctx, o.version)
	case "http":
		t, err = httpTarget(ctx, o.callers(), o.version)
	default:
		err = fmt.Errorf("unknown upstream kind %q", kind)
	}
	if err == nil && t.tool == "" {
		t.tool, t.args, t.argRule = "echo", map[string]any{"text": "hello, gateway"}, "text"
	}
	return t, err
}

func inprocTarget(ctx context.Context, version string) target {
	up := echoServer()
	// The gateway reaches an in-process server over upstream's Pipe, as
	// `bastion serve --gateway` reaches the review server; the agent's own
	// hop, direct or to the gateway, is the SDK's in-memory transport,
	// which encodes every message as a wire would.
	connectUp := func(ctx context.Context) (mcp.Transport, error) { return upstream.ServeInProcess(ctx, up) }
	return target{
		title:     "inproc: zero-work echo server in this process (agent hop: in-memory transport; gateway to upstream: upstream.Pipe)",
		server:    `kind = "review"`,
		inProcess: map[string]func(context.Context) (mcp.Transport, error){"echo": connectUp},
		dialUp:    connectUp,
		direct:    own(func() (*mcp.ClientSession, error) { return connect(ctx, up, version) }),
		close:     func() {},
	}
}

// stdioTarget builds testmcp once; each path then runs its own child of it.
func stdioTarget(ctx context.Context, version string) (target, error) {
	dir, err := os.MkdirTemp("", "bench-gateway-testmcp-")
	if err != nil {
		return target{}, err
	}
	bins, err := testmcp.Build(dir, false)
	if err != nil {
		os.RemoveAll(dir)
		return target{}, err
	}
	bin := bins.Native
	// The gateway gives its child PATH and nothing else of its environment;
	// the direct child gets the same.
	child := func(context.Context) (mcp.Transport, error) {
		cmd := exec.Command(bin)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		return &mcp.CommandTransport{Command: cmd}, nil
	}
	direct, _ := child(ctx)
	cs, err := newClient().Connect(ctx, direct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		os.RemoveAll(dir)
		return target{}, err
	}
	return target{
		title:  "stdio: testmcp child process (" + bin + "), one child per path",
		dialUp: child,
		server: "kind = \"stdio\"\ncommand = " + strconv.Quote(bin),
		direct: shared(cs),
		close: func() {
			cs.Close()
			os.RemoveAll(dir)
		},
	}, nil
}

// httpTarget serves testmcp behind bastion's edge on loopback, which
// answers both Streamable HTTP wires on one URL.
func httpTarget(ctx context.Context, c int, version string) (target, error) {
	url, stop, err := serveTestMCP(c)
	if err != nil {
		return target{}, err
	}
	// The connection pool the egress guard gives the gateway's upstream
	// client, so both paths reuse connections alike.
	hc := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, MaxIdleConns: 32, MaxIdleConnsPerHost: 16, IdleConnTimeout: 60 * time.Second}}
	dial := func(context.Context) (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil
	}
	direct, _ := dial(ctx)
	cs, err := newClient().Connect(ctx, direct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		stop()
		return target{}, err
	}
	return target{
		title:  "http: testmcp behind bastion's edge on loopback Streamable HTTP (" + url + ")",
		server: "kind = \"http\"\nurl = " + strconv.Quote(url) + "\nallow_private = true",
		dialUp: dial,
		deps:   upstream.Deps{Guard: egress.NewGuard(egress.Policy{}, nil)},
		direct: shared(cs),
		close: func() {
			cs.Close()
			stop()
		},
	}, nil
}

// serveTestMCP serves testmcp behind bastion's edge on a loopback port, for
// c callers at once, and returns its URL and how to stop it.
func serveTestMCP(c int) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	// Each session's standalone event stream is in flight too, so the
	// per-principal limit is lifted above the callers.
	e, err := edge.New(edge.Options{Enabled: true, BindAddr: addr, MaxInFlightPerPrincipal: 64, MaxInFlight: max(256, 2*c)},
		func(context.Context, principal.Principal) *mcp.Server { return testmcp.New(testmcp.Options{}) })
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	srv := edge.NewServer(addr, e, edge.Timeouts{})
	go srv.Serve(ln)
	stop = func() {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = edge.Drain(dctx, srv, e)
		srv.Close()
	}
	return "http://" + addr + "/mcp", stop, nil
}
