package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/gateway"
	"github.com/bastion-mcp/bastion/gateway/config"
	"github.com/bastion-mcp/bastion/principal"
)

const servers = `
[server.github]
kind = "stdio"
command = "gh-mcp"
[server.review]
kind = "review"
`

func mustPolicy(t testing.TB, src string) *Policy {
	t.Helper()
	f, err := config.Parse("test.toml", []byte(servers+src))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	p, err := New(f)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func mustPrincipal(t testing.TB, tenant, id string, scopes ...principal.Scope) principal.Principal {
	t.Helper()
	p, err := principal.New(tenant, id, scopes...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func check(t *testing.T, p *Policy, a gateway.CallArgs) gateway.Decision {
	t.Helper()
	d, err := p.Check(context.Background(), &a)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return d
}

func newCall(server, tool, args string) gateway.CallArgs {
	return gateway.CallArgs{Server: server, Tool: tool, Name: server + "__" + tool, Arguments: json.RawMessage(args)}
}

func TestFirstMatchWins(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, `
[[policy.rule]]
name = "no-delete-prod"
action = "deny"
reason = "production is off limits"
match = ["github__delete_*"]
args = [{ path = "name", glob = "prod-*" }]
[[policy.rule]]
name = "github-all"
action = "allow"
match = ["github__*"]
[[policy.rule]]
name = "never-reached"
action = "deny"
match = ["github__delete_repo"]
`)
	d := check(t, p, newCall("github", "delete_repo", `{"name":"prod-secrets"}`))
	if d.Allow || d.Rule != "no-delete-prod" || d.Gate != gateway.GatePolicy {
		t.Fatalf("prod delete = %+v, want deny by no-delete-prod", d)
	}
	if got, want := gateway.DenialText(d), "bastion denied: policy rule 'no-delete-prod' denies tool 'github__delete_repo': production is off limits"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	d = check(t, p, newCall("github", "delete_repo", `{"name":"dev-box"}`))
	if !d.Allow || d.Rule != "github-all" {
		t.Fatalf("dev delete = %+v, want allow by github-all", d)
	}
}

func TestDenyByDefault(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, `
[[policy.rule]]
name = "review-only"
action = "allow"
match = ["review__*"]
`)
	d := check(t, p, newCall("github", "list_issues", `{}`))
	if d.Allow || d.Rule != RuleDenyDefault {
		t.Fatalf("got %+v, want deny-default", d)
	}
	if !strings.Contains(d.Reason, "no policy rule allows tool 'github__list_issues'") {
		t.Errorf("reason = %q", d.Reason)
	}
	d = check(t, p, newCall("gitlab", "x", `{}`))
	if d.Allow || d.Rule != RuleUnknownServer {
		t.Fatalf("unknown server: got %+v", d)
	}
}

// TestGlobs covers the forms the peer's prefix/suffix-only matcher silently
// never matched, which made its deny rules fail open.
func TestGlobs(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, `
[[policy.rule]]
name = "no-delete-anywhere"
action = "deny"
match = ["*delete*"]
[[policy.rule]]
name = "single-char"
action = "deny"
match = ["github__get_?"]
[[policy.rule]]
name = "class"
action = "deny"
match = ["github__drop_[a-c]*"]
[[policy.rule]]
name = "rest"
action = "allow"
match = ["*"]
`)
	cases := map[string]string{
		"bulk_delete_repos": "no-delete-anywhere",
		"get_x":             "single-char",
		"get_xy":            "rest",
		"drop_alpha":        "class",
		"drop_delete_x":     "no-delete-anywhere",
		"drop_zeta":         "rest",
	}
	for tool, want := range cases {
		if d := check(t, p, newCall("github", tool, `{}`)); d.Rule != want {
			t.Errorf("%s decided by %q, want %q", tool, d.Rule, want)
		}
	}
}

func TestRBAC(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, `
[[policy.rule]]
name = "writers"
action = "allow"
match = ["review__submit"]
scopes = ["reviews:write", "reviews:read"]
[[policy.rule]]
name = "devs"
action = "allow"
match = ["github__*"]
roles = ["dev", "admin"]
[[policy.rule]]
name = "alice"
action = "allow"
match = ["github__*", "review__*"]
principals = ["acme/alice"]
`)
	reader := mustPrincipal(t, "acme", "bob", principal.ReviewsRead)
	writer := mustPrincipal(t, "acme", "carol", principal.ReviewsRead, principal.ReviewsWrite)
	alice := mustPrincipal(t, "acme", "alice")
	cases := map[string]struct {
		a    gateway.CallArgs
		rule string
		ok   bool
	}{
		"WriterSubmits":       {withCaller(newCall("review", "submit", `{}`), writer, nil), "writers", true},
		"ReaderCannotSubmit":  {withCaller(newCall("review", "submit", `{}`), reader, nil), RuleDenyDefault, false},
		"DevRole":             {withCaller(newCall("github", "x", `{}`), reader, []string{"dev"}), "devs", true},
		"OtherRole":           {withCaller(newCall("github", "x", `{}`), reader, []string{"viewer"}), RuleDenyDefault, false},
		"NamedPrincipal":      {withCaller(newCall("review", "submit", `{}`), alice, nil), "alice", true},
		"NoPrincipalNoRoles":  {withCaller(newCall("github", "x", `{}`), principal.Principal{}, nil), RuleDenyDefault, false},
		"OtherTenantSameName": {withCaller(newCall("github", "x", `{}`), mustPrincipal(t, "evil", "alice"), nil), RuleDenyDefault, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := check(t, p, tc.a)
			if d.Allow != tc.ok || d.Rule != tc.rule {
				t.Errorf("got allow=%v rule=%q, want allow=%v rule=%q", d.Allow, d.Rule, tc.ok, tc.rule)
			}
		})
	}
}

// withCaller returns a called by p holding roles (a principal's roles are
// the only ones the policy sees; the zero principal can hold none).
func withCaller(a gateway.CallArgs, p principal.Principal, roles []string) gateway.CallArgs {
	if roles != nil {
		var err error
		if p, err = p.WithRoles(roles...); err != nil {
			panic(err)
		}
	}
	a.Principal = p
	return a
}

func TestProfiles(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("t.toml", []byte(`
[gateway]
profile = "everyday"
[server.github]
kind = "stdio"
command = "x"
profile = "readonly"
[server.review]
kind = "review"
[profiles.everyday]
deny = ["*__drop_*"]
[profiles.readonly]
tools = ["*__get_*", "*__list_*"]
[profiles.unused]
[[policy.rule]]
name = "only-in-unused"
action = "deny"
match = ["*"]
profiles = ["unused"]
[[policy.rule]]
name = "all"
action = "allow"
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		server, tool string
		rule         string
	}{
		{"github", "list_issues", "all"},
		{"github", "create_issue", RuleNotInProfile},
		{"github", "get_drop_x", "all"},
		{"review", "drop_table", RuleNotInProfile},
		{"review", "submit", "all"},
	} {
		if d := check(t, p, newCall(tc.server, tc.tool, `{}`)); d.Rule != tc.rule {
			t.Errorf("%s__%s decided by %q (%s), want %q", tc.server, tc.tool, d.Rule, d.Reason, tc.rule)
		}
	}
	d := check(t, p, newCall("github", "create_issue", `{}`))
	if !strings.Contains(d.Reason, "not in the active profile 'readonly'") {
		t.Errorf("reason = %q", d.Reason)
	}
}

// TestArgs keys each argument condition by what it shows; hit reports
// whether the deny rule carrying the condition applies.
func TestArgs(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		cond string
		args string
		hit  bool
	}{
		"EqualsString":          {`{ path = "env", equals = "prod" }`, `{"env":"prod"}`, true},
		"EqualsStringOther":     {`{ path = "env", equals = "prod" }`, `{"env":"production"}`, false},
		"EqualsFold":            {`{ path = "env", equals = "prod", ignore_case = true }`, `{"env":"PROD"}`, true},
		"EqualsCaseSensitive":   {`{ path = "env", equals = "prod" }`, `{"env":"PROD"}`, false},
		"EqualsInt":             {`{ path = "n", equals = 3 }`, `{"n":3.0}`, true},
		"EqualsIntNotString":    {`{ path = "n", equals = 3 }`, `{"n":"3"}`, false},
		"EqualsFloat":           {`{ path = "n", equals = 0.5 }`, `{"n":5e-1}`, true},
		"EqualsBool":            {`{ path = "force", equals = true }`, `{"force":true}`, true},
		"EqualsBoolNotString":   {`{ path = "force", equals = true }`, `{"force":"true"}`, false},
		"GlobNested":            {`{ path = "repo.name", glob = "prod-*" }`, `{"repo":{"name":"prod-db"}}`, true},
		"GlobObjectNeverHits":   {`{ path = "repo", glob = "*" }`, `{"repo":{"name":"x"}}`, false},
		"GlobNumberAsText":      {`{ path = "port", glob = "22*" }`, `{"port":2222}`, true},
		"RegexRE2":              {`{ path = "sql", regex = '(?i)\bdrop\s+table\b' }`, `{"sql":"select 1; DROP  TABLE users"}`, true},
		"RegexNoMatch":          {`{ path = "sql", regex = '(?i)\bdrop\s+table\b' }`, `{"sql":"select droptable from t"}`, false},
		"Prefix":                {`{ path = "path", prefix = "/etc/" }`, `{"path":"/etc/passwd"}`, true},
		"PrefixFold":            {`{ path = "path", prefix = "/ETC/", ignore_case = true }`, `{"path":"/etc/passwd"}`, true},
		"CleanPathDotDot":       {`{ path = "path", prefix = "/etc/", clean_path = true }`, `{"path":"/tmp/../etc/passwd"}`, true},
		"DotDotWithoutClean":    {`{ path = "path", prefix = "/etc/" }`, `{"path":"/tmp/../etc/passwd"}`, false},
		"CleanPathEquals":       {`{ path = "path", equals = "a/b", clean_path = true }`, `{"path":"./a//b/"}`, true},
		"ExistsTrue":            {`{ path = "token", exists = true }`, `{"token":"x"}`, true},
		"ExistsTrueNull":        {`{ path = "token", exists = true }`, `{"token":null}`, false},
		"ExistsFalse":           {`{ path = "token", exists = false }`, `{"other":1}`, true},
		"ExistsFalsePresent":    {`{ path = "token", exists = false }`, `{"token":1}`, false},
		"ArrayIndex":            {`{ path = "files[1].path", prefix = "/secret" }`, `{"files":[{"path":"/ok"},{"path":"/secret/x"}]}`, true},
		"ArrayIndexOutOfRange":  {`{ path = "files[5].path", prefix = "/" }`, `{"files":[{"path":"/ok"}]}`, false},
		"ArrayAny":              {`{ path = "labels[*]", equals = "prod" }`, `{"labels":["dev","prod"]}`, true},
		"ArrayAnyNone":          {`{ path = "labels[*]", equals = "prod" }`, `{"labels":["dev","test"]}`, false},
		"MissingPathNeverHits":  {`{ path = "a.b.c", equals = "x" }`, `{"a":{"b":"x"}}`, false},
		"NullArguments":         {`{ path = "a", exists = false }`, `null`, true},
		"EmptyArgumentsMissing": {`{ path = "a", exists = false }`, ``, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := mustPolicy(t, `
[[policy.rule]]
name = "cond"
action = "deny"
args = [`+tc.cond+`]
[[policy.rule]]
name = "rest"
action = "allow"
`)
			d := check(t, p, newCall("github", "t", tc.args))
			if got := d.Rule == "cond"; got != tc.hit {
				t.Errorf("args %s: rule %q decided, want cond hit=%v", tc.args, d.Rule, tc.hit)
			}
		})
	}
}

func TestInvalidArgumentsFailClosed(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, `
[[policy.rule]]
name = "no-prod"
action = "deny"
args = [{ path = "name", glob = "prod-*" }]
[[policy.rule]]
name = "rest"
action = "allow"
`)
	for _, args := range []string{
		`{"name":"dev","name":"prod-x"}`, // parsers disagree on duplicates
		`{"name":`,
		`{"name":"a"} {"name":"b"}`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100),
	} {
		d := check(t, p, newCall("github", "t", args))
		if d.Allow || d.Rule != RuleInvalidArguments {
			t.Errorf("args %.40s: got %+v, want invalid-arguments", args, d)
		}
	}
	// A rule without argument conditions never decodes them.
	p = mustPolicy(t, "[[policy.rule]]\nname = \"rest\"\naction = \"allow\"\n")
	if d := check(t, p, newCall("github", "t", `{"x":1,"x":2}`)); !d.Allow {
		t.Errorf("no arg rules: got %+v", d)
	}
}

func TestApprove(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, `
[[policy.rule]]
name = "merge-needs-human"
action = "approve"
reason = "merges to main are reviewed"
match = ["github__merge_*"]
`)
	a := newCall("github", "merge_pr", `{"pr":1}`)
	d := check(t, p, a)
	if d.Allow || !d.ParkForApproval() || d.Approval.Rule != "merge-needs-human" || d.Approval.Reason != "merges to main are reviewed" {
		t.Fatalf("got %+v, want a park-for-approval decision", d)
	}
	if !strings.Contains(gateway.DenialText(d), "waiting for human approval") {
		t.Errorf("text = %q", gateway.DenialText(d))
	}
	a.Approved = true
	if d := check(t, p, a); !d.Allow || d.Rule != "merge-needs-human" {
		t.Fatalf("approved replay: got %+v", d)
	}
}

func TestVisible(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, `
[[policy.rule]]
name = "no-delete"
action = "deny"
match = ["*__delete_*"]
[[policy.rule]]
name = "no-prod-push"
action = "deny"
match = ["github__push"]
args = [{ path = "branch", equals = "main" }]
[[policy.rule]]
name = "devs"
action = "allow"
match = ["github__*"]
roles = ["dev"]
[[policy.rule]]
name = "approve-review"
action = "approve"
match = ["review__*"]
`)
	dev := mustPrincipal(t, "acme", "d")
	for _, tc := range []struct {
		roles        []string
		server, tool string
		want         bool
	}{
		{[]string{"dev"}, "github", "list", true},
		{[]string{"dev"}, "github", "delete_repo", false},
		{[]string{"dev"}, "github", "push", true}, // some arguments are allowed
		{nil, "github", "list", false},
		{nil, "review", "submit", true}, // approvable tools are listed
		{nil, "nope", "x", false},
	} {
		caller := dev
		if tc.roles != nil {
			caller = withCaller(gateway.CallArgs{}, dev, tc.roles).Principal
		}
		if got := p.Visible(caller, tc.server, tc.tool); got != tc.want {
			t.Errorf("Visible(%v, %s__%s) = %v, want %v", tc.roles, tc.server, tc.tool, got, tc.want)
		}
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, `
[[policy.rule]]
name = "no-delete-prod"
action = "deny"
match = ["github__delete_*"]
args = [{ path = "name", glob = "prod-*" }]
[[policy.rule]]
name = "devs"
action = "allow"
match = ["github__*"]
roles = ["dev"]
[[policy.rule]]
name = "ops"
action = "approve"
match = ["github__*"]
[[policy.rule]]
name = "unreachable"
action = "deny"
`)
	got := strings.Join(p.Explain("github", "delete_repo"), "\n")
	want := `deny (rule "no-delete-prod") when args name matches glob "prod-*"
allow (rule "devs") when caller has role dev
approve (rule "ops")`
	if got != want {
		t.Errorf("Explain =\n%s\nwant\n%s", got, want)
	}
	got = strings.Join(p.Explain("review", "submit"), "\n")
	if want := `deny (rule "unreachable")`; got != want {
		t.Errorf("Explain(review) = %q, want %q", got, want)
	}
}
