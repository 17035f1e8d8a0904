package loop_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bastion-mcp/bastion/audit"
)

// TestOneBrokenUpstream: a gateway with one good stdio upstream and one
// whose command does not exist starts, lists only the good one's tools and
// refuses (and records) calls to the other; when the command appears, the
// supervisor's retry connects it, clients get list_changed and its tools are
// listed and callable; when it goes away again, clients get list_changed,
// its tools are gone and its calls are refused again.
func TestOneBrokenUpstream(t *testing.T) {
	t.Parallel()
	late := filepath.Join(t.TempDir(), "late-mcp")
	b := setup(t, `
[gateway]
startup_wait = "60s"

[server.good]
kind = "stdio"
command = "%BIN%"

[server.late]
kind = "stdio"
command = "`+late+`"
optional = true

[[policy.rule]]
name = "all"
action = "allow"
match = ["good__*", "late__*"]
`, setupOpts{})
	// setup returned, so New did not wait for the missing command: its
	// first attempt failed and start-up went on (the bound is far away).
	if err := b.loop.Available("good"); err != nil {
		t.Fatalf("good: %v", err)
	}
	if err := b.loop.Available("late"); err == nil || !strings.Contains(err.Error(), "late-mcp") {
		t.Fatalf("late: Available = %v, want unavailable naming its command", err)
	}
	changed := make(chan struct{}, 1)
	cs := b.connect(t, alice, clientOpts{changed: changed})
	names := toolNames(t, cs)
	if !slices.Contains(names, "good__echo") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "late__") }) {
		t.Fatalf("tools = %v, want good's and none of late's", names)
	}
	assertUnavailable(t, b, cs, "late__echo")

	// The command starts to exist: the supervisor's next retry connects it.
	install(t, nativeBin, late)
	waitTools(t, cs, changed, "late connected", func(names []string) bool {
		return slices.Contains(names, "late__echo") && slices.Contains(names, "good__echo")
	})
	if got, isErr := call(t, cs, "late__echo", map[string]any{"text": "hi"}); isErr || got != "hi" {
		t.Fatalf("late__echo = %q (isError %v)", got, isErr)
	}
	if err := b.loop.Available("late"); err != nil {
		t.Fatalf("late after connecting: %v", err)
	}

	// It goes: the command is removed and the process exits, so every
	// restart fails and the upstream stays down.
	if err := os.Remove(late); err != nil {
		t.Fatal(err)
	}
	call(t, cs, "late__crash", map[string]any{"code": 3})
	waitTools(t, cs, changed, "late went down", func(names []string) bool {
		return !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "late__") }) && slices.Contains(names, "good__echo")
	})
	assertUnavailable(t, b, cs, "late__echo")
	if got, isErr := call(t, cs, "good__echo", map[string]any{"text": "still"}); isErr || got != "still" {
		t.Fatalf("good__echo while late is down = %q (isError %v)", got, isErr)
	}
	b.verify(t)
}

// assertUnavailable calls tool, expects the unavailability denial, and
// finds it as the ledger's last record.
func assertUnavailable(t *testing.T, b *bundle, cs *mcp.ClientSession, tool string) {
	t.Helper()
	got, isErr := call(t, cs, tool, map[string]any{"text": "x"})
	if want := "bastion denied: upstream late is unavailable"; !isErr || got != want {
		t.Fatalf("%s = %q (isError %v), want %q", tool, got, isErr, want)
	}
	recs := b.records(t)
	r := recs[len(recs)-1]
	if r.Tool != tool || r.Server != "late" || r.Decision != audit.Denied || r.Rule != "routing:upstream-unavailable" ||
		r.Reason != "upstream late is unavailable" {
		t.Fatalf("last ledger record = %+v, want the unavailability denial of %s", r, tool)
	}
}

// waitTools waits for list_changed notifications until the client's tools
// satisfy ok (one notification may precede the change it is waiting for).
func waitTools(t *testing.T, cs *mcp.ClientSession, changed <-chan struct{}, what string, ok func([]string) bool) {
	t.Helper()
	for {
		waitFor(t, changed, "tools/list_changed: "+what)
		if names := toolNames(t, cs); ok(names) {
			return
		}
	}
}

// install puts the executable src at dst atomically (copy, then rename),
// so a restart never runs a half-written file.
func install(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// TestLateUpstreamKeepsNoName: an unprefixed upstream that connects after
// start-up never takes over a name another upstream already serves, even
// though its key sorts first (the order that decides collisions at start).
func TestLateUpstreamKeepsNoName(t *testing.T) {
	t.Parallel()
	late := filepath.Join(t.TempDir(), "late-mcp")
	b := setup(t, `
[server.a]
kind = "stdio"
command = "`+late+`"
unprefixed = true
env = { MARK = "late" }

[server.b]
kind = "stdio"
command = "%BIN%"
unprefixed = true
env = { MARK = "first" }

[[policy.rule]]
name = "all"
action = "allow"
match = ["a__*", "b__*"]
`, setupOpts{})
	changed := make(chan struct{}, 1)
	cs := b.connect(t, alice, clientOpts{changed: changed})
	if got, isErr := call(t, cs, "env", map[string]any{"names": []string{"MARK"}}); isErr || !strings.Contains(got, "MARK=first") {
		t.Fatalf("env before = %q", got)
	}
	install(t, nativeBin, late)
	for b.loop.Available("a") != nil {
		waitFor(t, changed, "tools/list_changed after a connected")
	}
	if got, isErr := call(t, cs, "env", map[string]any{"names": []string{"MARK"}}); isErr || !strings.Contains(got, "MARK=first") {
		t.Fatalf("env after the late upstream connected = %q; the first owner must keep the name", got)
	}
}
