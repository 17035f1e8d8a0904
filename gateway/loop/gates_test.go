package loop_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/audit"
)

const secretKey = "AKIAQ3ZJ7WK2LMBN5TXR" // made up: AWS's documented example key is not a secret

const gatesTOML = `
[server.t]
kind = "stdio"
command = "%BIN%"
env = { LEAK = "` + secretKey + `" }

[[policy.rule]]
name = "no-shouting"
action = "deny"
reason = "shouting is not allowed"
match = ["t__echo"]
args = [{ path = "text", prefix = "LOUD" }]

[[policy.rule]]
name = "readers"
action = "allow"
match = ["t__echo", "t__env"]
scopes = ["reviews:read"]

[inspect]
mode = "enforce"
`

// TestGates drives each gate's allow and deny path through a real client
// and a real stdio upstream, and checks the ledger recorded every outcome.
func TestGates(t *testing.T) {
	t.Parallel()
	b := setup(t, gatesTOML, setupOpts{})
	a := b.connect(t, alice, clientOpts{})
	nob := b.connect(t, bob, clientOpts{})

	if got, want := toolNames(t, a), []string{"t__echo", "t__env"}; !slices.Equal(sorted(got), want) {
		t.Errorf("alice sees %v, want %v", got, want)
	}
	if got := toolNames(t, nob); len(got) != 0 {
		t.Errorf("bob sees %v, want nothing", got)
	}

	cases := []struct {
		name     string
		cs       string
		tool     string
		args     map[string]any
		want     string // substring of the text
		isErr    bool
		decision audit.Decision
		rule     string
	}{
		{"Allowed", "alice", "t__echo", map[string]any{"text": "hello"}, "hello", false, audit.Allowed, "policy:readers"},
		{"RoutingUnknownTool", "alice", "nope__x", nil, "bastion denied: no governed server exposes tool 'nope__x'", true, audit.Denied, "routing:unknown-tool"},
		{"PolicyDenyDefault", "bob", "t__echo", map[string]any{"text": "hello"}, "bastion denied: ", true, audit.Denied, "policy:deny-default"},
		{"PolicyHiddenTool", "alice", "t__crash", map[string]any{"code": 3}, "bastion denied: ", true, audit.Denied, "policy:deny-default"},
		{"PolicyArgRule", "alice", "t__echo", map[string]any{"text": "LOUD noises"}, "bastion denied: ", true, audit.Denied, "policy:no-shouting"},
		{"InspectArguments", "alice", "t__echo", map[string]any{"text": "key " + secretKey}, "bastion denied: ", true, audit.Denied, "inspect:secret-exfil"},
		{"InspectResult", "alice", "t__env", map[string]any{"names": []string{"LEAK"}}, "bastion denied: ", true, audit.Denied, "inspect:secret-exfil"},
	}
	for i, c := range cases {
		cs := a
		if c.cs == "bob" {
			cs = nob
		}
		got, isErr := call(t, cs, c.tool, c.args)
		if !strings.Contains(got, c.want) || isErr != c.isErr {
			t.Errorf("%s: got %q (isError %v), want %q (isError %v)", c.name, got, isErr, c.want, c.isErr)
		}
		if strings.Contains(got, secretKey) {
			t.Errorf("%s: the secret was echoed: %q", c.name, got)
		}
		recs := b.records(t)
		if len(recs) != i+1 {
			t.Fatalf("%s: %d ledger records after %d calls", c.name, len(recs), i+1)
		}
		r := recs[i]
		if r.Decision != c.decision || r.Rule != c.rule || r.Tool != c.tool || r.Method != "tools/call" {
			t.Errorf("%s: record %+v, want decision %s rule %s", c.name, r, c.decision, c.rule)
		}
		if c.args != nil && r.ArgsSHA256 == "" {
			t.Errorf("%s: no argument digest", c.name)
		}
	}
	b.verify(t)

	if n := b.counter(t, "_unknown", "_unknown", "denied", "routing"); n != 1 {
		t.Errorf("unknown-tool denials counted %v, want 1", n)
	}
	if n := b.counter(t, "t", "echo", "allowed", "policy"); n != 1 {
		t.Errorf("allowed echo counted %v, want 1", n)
	}
}

// TestRateLimitAfterAuthorization: denied calls spend no token, allowed
// ones do, and the shed call is a readable denial.
func TestRateLimitAfterAuthorization(t *testing.T) {
	t.Parallel()
	b := setup(t, gatesTOML+`
[ratelimit]
per_principal = { rate = 0.001, burst = 2 }
`, setupOpts{})
	a := b.connect(t, alice, clientOpts{})
	for range 5 {
		if got, isErr := call(t, a, "t__crash", map[string]any{"code": 1}); !isErr || !strings.Contains(got, "bastion denied") {
			t.Fatalf("crash allowed: %q", got)
		}
	}
	for i := range 2 {
		if got, isErr := call(t, a, "t__echo", map[string]any{"text": "x"}); isErr {
			t.Fatalf("call %d shed after denied calls: %q", i, got)
		}
	}
	got, isErr := call(t, a, "t__echo", map[string]any{"text": "x"})
	if !isErr || !strings.HasPrefix(got, "bastion denied: ") {
		t.Fatalf("third call: %q, want a rate-limit denial", got)
	}
	recs := b.records(t)
	if r := recs[len(recs)-1]; r.Rule != "ratelimit:rate-limited" || r.Decision != audit.Denied {
		t.Errorf("last record %+v", r)
	}
	if len(recs) != 8 {
		t.Errorf("%d records for 8 calls", len(recs))
	}
}

// TestLedgerFailureDeniesCall: with the ledger closed, an otherwise allowed
// call is refused and the upstream's answer is not returned.
func TestLedgerFailureDeniesCall(t *testing.T) {
	t.Parallel()
	b := setup(t, gatesTOML, setupOpts{})
	a := b.connect(t, alice, clientOpts{})
	if _, isErr := call(t, a, "t__echo", map[string]any{"text": "before"}); isErr {
		t.Fatal("first call denied")
	}
	if err := b.ledger.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"t__echo", "nope__x"} {
		got, isErr := call(t, a, tool, map[string]any{"text": "after"})
		if !isErr || got != "bastion denied: audit ledger unavailable" {
			t.Errorf("%s with a closed ledger: %q (isError %v)", tool, got, isErr)
		}
	}
	if n := len(b.records(t)); n != 1 {
		t.Errorf("%d records, want 1", n)
	}
	b.verify(t)
}

func sorted(s []string) []string { slices.Sort(s); return s }
