package upstream_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/upstream"
)

func TestStdioCall(t *testing.T) {
	t.Parallel()
	c := open(t, stdioSpec("stdio"), upstream.Deps{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tools, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(","+strings.Join(names, ",")+",", ",echo,") {
		t.Errorf("Tools = %v, want echo among them", names)
	}
	if got := mustCall(t, c, "echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Errorf("echo = %q", got)
	}
	res, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "testmcp://hello"})
	if err != nil || res.Contents[0].Text != "hello from testmcp" {
		t.Errorf("ReadResource = %+v, %v", res, err)
	}
	rs, err := c.Resources(ctx)
	if err != nil || len(rs) != 1 {
		t.Errorf("Resources = %v, %v", rs, err)
	}
	ps, err := c.Prompts(ctx)
	if err != nil || len(ps) != 1 || ps[0].Name != "greet" {
		t.Errorf("Prompts = %v, %v", ps, err)
	}
	gp, err := c.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada"}})
	if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "Say hello to Ada" {
		t.Errorf("GetPrompt = %+v, %v", gp, err)
	}
	// An upstream's own protocol error passes through unwrapped.
	if _, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "no-such-tool"}); err == nil {
		t.Error("calling an unknown tool succeeded")
	}
	if h := c.Health(); h.State != upstream.Ready || h.Restarts != 0 {
		t.Errorf("Health = %+v, want ready with no restarts", h)
	}
}

func TestStdioCleanEnvironment(t *testing.T) {
	t.Parallel()
	spec := stdioSpec("stdio-env")
	spec.Env = map[string]upstream.Value{
		"UPSTREAM_TOKEN": envRef(tokenVar),
		"MODE":           upstream.Literal("test"),
	}
	c := open(t, spec, upstream.Deps{})
	got := mustCall(t, c, "env", map[string]any{"names": []string{"UPSTREAM_TOKEN", "MODE", secretVar, tokenVar, "HOME"}})
	for _, want := range []string{
		"count=3\n", // PATH, UPSTREAM_TOKEN, MODE: nothing else
		"UPSTREAM_TOKEN=configured-token\n",
		"MODE=test\n",
		secretVar + "=(unset)\n",
		tokenVar + "=(unset)\n",
		"HOME=(unset)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("child env report %q lacks %q", got, want)
		}
	}
}

func TestStdioMissingReferenceFailsStart(t *testing.T) {
	t.Parallel()
	needBuild(t)
	spec := stdioSpec("stdio-missing")
	spec.Env = map[string]upstream.Value{"TOKEN": envRef("BASTION_UPSTREAM_TEST_NOT_SET")}
	c, err := upstream.New(context.Background(), spec, upstream.Deps{Backoff: upstream.Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c.Session(ctx)
	if !errors.Is(err, upstream.ErrUnavailable) {
		t.Fatalf("Session = %v, want ErrUnavailable", err)
	}
	if h := c.Health(); !strings.Contains(h.LastError, "BASTION_UPSTREAM_TEST_NOT_SET") {
		t.Errorf("LastError = %q, want it to name the missing reference", h.LastError)
	}
}

func TestStdioRestartAfterCrash(t *testing.T) {
	t.Parallel()
	ev := newEvents()
	spec := stdioSpec("stdio-crash")
	spec.Env = map[string]upstream.Value{"MARK": upstream.Literal("crash-test")}
	c := open(t, spec, upstream.Deps{Events: ev})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := children(t, "MARK=crash-test")
	if len(before) != 1 {
		t.Fatalf("children before = %v, want one", before)
	}
	if _, err := call(ctx, t, c, "crash", map[string]any{"code": 3}); !errors.Is(err, upstream.ErrLost) {
		t.Fatalf("crash: err = %v, want ErrLost", err)
	}
	// The next call waits for the replacement and succeeds: the restart and
	// re-initialization are transparent.
	if got := mustCall(t, c, "echo", map[string]any{"text": "again"}); got != "again" {
		t.Errorf("echo after crash = %q", got)
	}
	if h := c.Health(); h.Restarts != 1 || h.State != upstream.Ready {
		t.Errorf("Health = %+v, want ready after one restart", h)
	}
	ev.wait(t, upstream.Reconnected)
	after := children(t, "MARK=crash-test")
	if len(after) != 1 || after[0] == before[0] {
		t.Errorf("children after = %v, before %v: want one new child", after, before)
	}
	if z := zombies(t); len(z) > 0 {
		t.Errorf("zombie children: %v", z)
	}
	c.Close()
	if left := children(t, "MARK=crash-test"); len(left) != 0 {
		t.Errorf("children after Close = %v", left)
	}
	if z := zombies(t); len(z) > 0 {
		t.Errorf("zombie children after Close: %v", z)
	}
}

func TestStdioFailingStartBacksOff(t *testing.T) {
	t.Parallel()
	spec := upstream.Spec{Name: "stdio-false", Kind: upstream.Stdio, Command: "false", ConnectTimeout: 2 * time.Second}
	c, err := upstream.New(context.Background(), spec, upstream.Deps{Backoff: upstream.Backoff{Min: 40 * time.Millisecond, Max: 400 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(1500 * time.Millisecond)
	h := c.Health()
	// Without backoff a child that exits at once would be restarted
	// hundreds of times in 1.5 s. With 40 ms doubling to 400 ms and equal
	// jitter, the shortest waits are 20, 40, 80, 160, then 200 ms each, so
	// at most 10 starts fit in 1.5 s (about 8 on average).
	if h.State == upstream.Ready {
		t.Fatalf("Health = %+v, want not ready", h)
	}
	if n := h.Failures; n < 2 || n > 10 {
		t.Errorf("%d start attempts in 1.5 s, want 2..10 (backoff)", n)
	}
	if z := zombies(t); len(z) > 0 {
		t.Errorf("zombie children: %v", z)
	}
}

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	b := upstream.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	for n, base := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 5: 1600 * time.Millisecond, 6: 2 * time.Second, 50: 2 * time.Second} {
		for range 200 {
			d := b.Delay(n)
			if d < base/2 || d > base {
				t.Fatalf("Delay(%d) = %v, want within [%v, %v]", n, d, base/2, base)
			}
		}
	}
}

func TestStdioTimeoutAndNoGlobalLock(t *testing.T) {
	t.Parallel()
	slowSpec := stdioSpec("stdio-slow")
	slowSpec.Timeout = 2 * time.Second
	slow := open(t, slowSpec, upstream.Deps{})
	fast := open(t, stdioSpec("stdio-fast"), upstream.Deps{})

	// The slow call is an elicitation its client holds unanswered: it is
	// outstanding at the upstream from the moment the question reaches the
	// client, which is the event the test waits for.
	blocked := make(chan error, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "front", Version: "0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "relay"}, func(ctx context.Context, req *mcp.CallToolRequest, in RelayIn) (*mcp.CallToolResult, any, error) {
		_, err := slow.CallTool(upstream.WithDownstream(ctx, req.Session), &mcp.CallToolParams{Name: in.Tool, Arguments: in.Args})
		blocked <- err
		return &mcp.CallToolResult{}, nil, nil
	})
	client := connectDownstream(t, srv, "slow-client")
	release := client.holdElicitations()
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		client.relay(t, "elicit", map[string]any{"text": "wait"}, nil)
	}()
	defer func() { release(); <-relayed }()
	<-client.held
	// Another upstream, and another call to the same upstream, proceed while
	// the slow call is outstanding.
	if got := mustCall(t, fast, "echo", map[string]any{"text": "fast"}); got != "fast" {
		t.Errorf("fast echo = %q", got)
	}
	if got := mustCall(t, slow, "echo", map[string]any{"text": "same"}); got != "same" {
		t.Errorf("echo beside the slow call = %q", got)
	}
	select {
	case err := <-blocked:
		t.Fatalf("the slow call returned early: %v", err)
	default:
	}
	if err := <-blocked; !errors.Is(err, upstream.ErrTimeout) {
		t.Errorf("slow call: err = %v, want ErrTimeout", err)
	}
	// A timed-out stdio call does not cost the session.
	if got := mustCall(t, slow, "echo", map[string]any{"text": "still"}); got != "still" {
		t.Errorf("echo after timeout = %q", got)
	}
	if h := slow.Health(); h.Restarts != 0 {
		t.Errorf("Restarts = %d after a timeout, want 0", h.Restarts)
	}
}

// children lists this process's live testmcp children whose environment
// holds mark (tests run in parallel, each marks its own children).
func children(t testing.TB, mark string) []int {
	t.Helper()
	var out []int
	for _, p := range procs(t) {
		if p.ppid != os.Getpid() || p.comm != "testmcp" || p.state == "Z" {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/environ")
		if err == nil && strings.Contains("\x00"+string(env), "\x00"+mark+"\x00") {
			out = append(out, p.pid)
		}
	}
	return out
}

// zombies lists this process's defunct children.
func zombies(t testing.TB) []int {
	t.Helper()
	var out []int
	for _, p := range procs(t) {
		if p.ppid == os.Getpid() && p.state == "Z" {
			out = append(out, p.pid)
		}
	}
	return out
}

type proc struct {
	pid, ppid   int
	comm, state string
}

func procs(t testing.TB) []proc {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(s[j+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, proc{pid: pid, ppid: ppid, comm: s[i+1 : j], state: f[0]})
	}
	return out
}

// TestStdioCommandAppears: a Conn whose command does not exist reports its
// first attempt's failure through WaitFirst (at once, not at a deadline)
// and Preflight, keeps retrying with backoff, and announces Connected when
// the command starts to exist, then Down when its session ends.
func TestStdioCommandAppears(t *testing.T) {
	t.Parallel()
	needBuild(t)
	cmd := filepath.Join(t.TempDir(), "appears")
	spec := upstream.Spec{Name: "stdio-appears", Kind: upstream.Stdio, Command: cmd, StopGrace: 500 * time.Millisecond}
	if err := upstream.Preflight(spec, nil); err == nil || !strings.Contains(err.Error(), cmd) {
		t.Fatalf("Preflight = %v, want the missing command named", err)
	}
	ev := newEvents()
	c, err := upstream.New(context.Background(), spec, upstream.Deps{Events: ev, Backoff: upstream.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitFirst(ctx); !errors.Is(err, upstream.ErrUnavailable) || ctx.Err() != nil || !strings.Contains(err.Error(), cmd) {
		t.Fatalf("WaitFirst = %v (ctx %v), want the first attempt's failure naming the command", err, ctx.Err())
	}
	b, err := os.ReadFile(nativeBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cmd+".tmp", b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cmd+".tmp", cmd); err != nil {
		t.Fatal(err)
	}
	if err := upstream.Preflight(spec, nil); err != nil {
		t.Fatalf("Preflight once installed = %v", err)
	}
	ev.wait(t, upstream.Connected)
	if got := mustCall(t, c, "echo", map[string]any{"text": "here"}); got != "here" {
		t.Fatalf("echo = %q", got)
	}
	if _, err := call(ctx, t, c, "crash", map[string]any{"code": 3}); !errors.Is(err, upstream.ErrLost) {
		t.Fatalf("crash: err = %v, want ErrLost", err)
	}
	ev.wait(t, upstream.Down)
	ev.wait(t, upstream.Reconnected)
}
