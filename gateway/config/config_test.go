package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadGood(t *testing.T) {
	t.Parallel()
	f, err := Load("testdata/good.toml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := len(f.Servers), 4; got != want {
		t.Errorf("servers = %d, want %d", got, want)
	}
	gh := f.Servers["github"]
	if got, want := gh.NamespaceOf("github"), "gh"; got != want {
		t.Errorf("namespace = %q, want %q", got, want)
	}
	if got, want := gh.Env["GITHUB_TOKEN"], Ref("env:GH_TOKEN"); got != want {
		t.Errorf("env ref = %q, want %q", got, want)
	}
	if got, want := f.TimeoutOr(f.Servers["docs"]), 5*time.Second; got != want {
		t.Errorf("docs timeout = %v, want %v", got, want)
	}
	if got, want := f.TimeoutOr(gh), 20*time.Second; got != want {
		t.Errorf("github timeout = %v, want %v", got, want)
	}
	if got, want := f.StartupWaitOr(), 3*time.Second; got != want {
		t.Errorf("startup wait = %v, want %v", got, want)
	}
	if !gh.Optional || f.Servers["review"].Optional {
		t.Errorf("optional: github %v, review %v; want true, false", gh.Optional, f.Servers["review"].Optional)
	}
	if got, want := (&File{}).StartupWaitOr(), DefaultStartupWait; got != want {
		t.Errorf("default startup wait = %v, want %v", got, want)
	}
	if got, want := f.RateLimit.Global.Rate, 200.0; got != want { // a TOML integer into a float field
		t.Errorf("global rate = %v, want %v", got, want)
	}
	if got, want := len(f.Policy.Rules), 4; got != want {
		t.Fatalf("rules = %d, want %d", got, want)
	}
	if g := f.Policy.Rules[0].Args[0].Glob; g == nil || *g != "prod-*" {
		t.Errorf("arg glob = %v", g)
	}
}

func TestUnknownKeyHasLine(t *testing.T) {
	t.Parallel()
	src := "[server.github]\nkind = \"stdio\"\ncomand = \"x\"\ncommand = \"y\"\n\n[[policy.rule]]\nname = \"a\"\naction = \"allow\"\nmatchh = [\"*\"]\n"
	_, err := Parse("bastion.toml", []byte(src))
	if err == nil {
		t.Fatal("Parse accepted unknown keys")
	}
	var es Errors
	if !errors.As(err, &es) || len(es) != 2 {
		t.Fatalf("err = %v (%T), want two positioned errors", err, err)
	}
	for i, want := range []struct {
		line int
		key  string
	}{{3, "server.github.comand"}, {9, "policy.rule.matchh"}} {
		if es[i].Line != want.line || es[i].Key != want.key {
			t.Errorf("error %d at line %d key %q, want line %d key %q", i, es[i].Line, es[i].Key, want.line, want.key)
		}
	}
	if !strings.Contains(err.Error(), "bastion.toml:3:1: server.github.comand: unknown key") {
		t.Errorf("text = %q", err.Error())
	}
}

func TestSyntaxErrorHasLine(t *testing.T) {
	t.Parallel()
	_, err := Parse("b.toml", []byte("[server.a]\nkind = \"review\"\nkind2 = \n"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 3 {
		t.Fatalf("err = %v, want an *Error on line 3", err)
	}
}

func TestMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
	if err == nil || !strings.Contains(err.Error(), "configuration file not found") {
		t.Fatalf("err = %v", err)
	}
}

func TestNoServers(t *testing.T) {
	t.Parallel()
	_, err := Parse("b.toml", []byte("[inspect]\nmode = \"warn\"\n"))
	if err == nil || !strings.Contains(err.Error(), "nothing to govern") {
		t.Fatalf("err = %v", err)
	}
}

// TestInvalid keys each bad configuration by what is wrong; each must fail
// with the named line and a message containing want.
func TestInvalid(t *testing.T) {
	t.Parallel()
	const srv = "[server.a]\nkind = \"review\"\n"
	cases := map[string]struct {
		src  string
		line int
		want string
	}{
		"UnknownKind":        {"[server.a]\nkind = \"ftp\"\n", 2, `unknown kind "ftp"`},
		"StdioNoCommand":     {"[server.a]\nkind = \"stdio\"\n", 1, "needs a command"},
		"HTTPBadURL":         {"[server.a]\nkind = \"http\"\nurl = \"ftp://x\"\n", 3, "absolute http or https"},
		"HTTPURLUserinfo":    {"[server.a]\nkind = \"http\"\nurl = \"https://u:p@x/mcp\"\n", 3, "must not carry credentials"},
		"URLOnStdio":         {"[server.a]\nkind = \"stdio\"\ncommand = \"x\"\nurl = \"https://x\"\n", 4, "does not apply"},
		"WasmNoPath":         {"[server.a]\nkind = \"wasm\"\n", 1, "path of its module"},
		"BadEnvRef":          {"[server.a]\nkind = \"stdio\"\ncommand = \"x\"\nenv = { T = \"env:1BAD\" }\n", 4, "valid environment variable"},
		"NamespaceCollision": {srv + "[server.b]\nkind = \"review\"\nnamespace = \"a\"\n", 5, "collide"},
		"DoubleUnderscore":   {"[server.a__b]\nkind = \"review\"\n", 1, "without"},
		"UnknownProfile":     {srv + "[gateway]\nprofile = \"nope\"\n", 4, "not defined"},
		"RuleNoName":         {srv + "[[policy.rule]]\naction = \"allow\"\n", 3, "needs a name"},
		"RuleBadAction":      {srv + "[[policy.rule]]\nname = \"r\"\naction = \"permit\"\n", 5, `unknown action "permit"`},
		"RuleDuplicate":      {srv + "[[policy.rule]]\nname = \"r\"\naction = \"allow\"\n[[policy.rule]]\nname = \"r\"\naction = \"deny\"\n", 7, "duplicate rule"},
		"RuleEmptyMatch":     {srv + "[[policy.rule]]\nname = \"r\"\naction = \"deny\"\nmatch = []\n", 6, "explicit empty list"},
		"RuleBadGlob":        {srv + "[[policy.rule]]\nname = \"r\"\naction = \"deny\"\nmatch = [\"a[\"]\n", 6, "unclosed"},
		"RuleUnknownScope":   {srv + "[[policy.rule]]\nname = \"r\"\naction = \"allow\"\nscopes = [\"root\"]\n", 6, `unknown scope "root"`},
		"ArgTwoOperators":    {srv + "[[policy.rule]]\nname = \"r\"\naction = \"deny\"\nargs = [{ path = \"a\", glob = \"x\", prefix = \"y\" }]\n", 6, "exactly one"},
		"ArgNoOperator":      {srv + "[[policy.rule]]\nname = \"r\"\naction = \"deny\"\nargs = [{ path = \"a\" }]\n", 6, "found 0"},
		"ArgBadPath":         {srv + "[[policy.rule]]\nname = \"r\"\naction = \"deny\"\nargs = [{ path = \"a..b\", exists = true }]\n", 6, "empty key"},
		"ArgBadRegex":        {srv + "[[policy.rule]]\nname = \"r\"\naction = \"deny\"\nargs = [{ path = \"a\", regex = \"(\" }]\n", 6, "missing closing"},
		"ArgHugeRegex":       {srv + "[[policy.rule]]\nname = \"r\"\naction = \"deny\"\nargs = [{ path = \"a\", regex = \"\\\\w{1000}\\\\w{1000}\\\\w{1000}\\\\w{1000}\\\\w{1000}\\\\w{1000}\\\\w{1000}\\\\w{1000}\\\\w{1000}\\\\w{1000}\\\\w{1000}\" }]\n", 6, "instructions"},
		"ArgEqualsArray":     {srv + "[[policy.rule]]\nname = \"r\"\naction = \"deny\"\nargs = [{ path = \"a\", equals = [1] }]\n", 6, "string, number or boolean"},
		"ZeroBurst":          {srv + "[ratelimit]\nglobal = { rate = 1.0, burst = 0 }\n", 4, "burst must be at least 1"},
		"NegativeRate":       {srv + "[ratelimit]\nper_tool = { rate = -1.0, burst = 2 }\n", 4, "rate must be a positive"},
		"InspectMode":        {srv + "[inspect]\nmode = \"block\"\n", 4, "off, warn or enforce"},
		"PatternEmptyMatch":  {srv + "[[inspect.pattern]]\nname = \"p\"\nkind = \"secret\"\nregex = \"a*\"\n", 6, "empty string"},
		"PatternKind":        {srv + "[[inspect.pattern]]\nname = \"p\"\nkind = \"pii\"\nregex = \"a+\"\n", 5, "secret or injection"},
		"PinMode":            {srv + "[pin]\nmode = \"tofu\"\n", 4, "strict"},
		"BadDuration":        {srv + "[gateway]\ntimeout = \"ten seconds\"\n", 4, "invalid duration"},
		"NegativeInFlight":   {srv + "[gateway]\nmax_in_flight_per_principal = -1\n", 4, "must not be negative"},
		"InFlightKey":        {srv + "[gateway]\nin_flight = { bot = 10 }\n", 4, "TENANT/ID"},
		"InFlightZero":       {srv + "[gateway]\nin_flight = { \"acme/bot\" = 0 }\n", 4, "at least 1"},
		"UnknownProtocol":    {srv + "protocol = \"2024-11-05\"\n", 3, "unknown MCP revision"},
		"SSEModernProtocol":  {"[server.a]\nkind = \"sse\"\nurl = \"https://x/sse\"\nprotocol = \"2026-07-28\"\n", 4, "2025-11-25 at most"},
		"PrivateOnStdio":     {"[server.a]\nkind = \"stdio\"\ncommand = \"x\"\nallow_private = true\n", 4, "does not apply"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("b.toml", []byte(tc.src))
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err %T is not an *Error", err)
			}
			if e.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q (line %d), want line %d and %q", err, e.Line, tc.line, tc.want)
			}
		})
	}
}

func TestRefResolve(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TOK": "s3cret"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	p := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(p, []byte("filesecret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[Ref]string{"env:TOK": "s3cret", Ref("file:" + p): "filesecret", "plain": "plain"} {
		got, err := ref.Resolve(getenv)
		if err != nil || got != want {
			t.Errorf("Resolve(%s) = %q, %v, want %q", ref, got, err, want)
		}
	}
	_, err := Ref("env:MISSING").Resolve(getenv)
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("missing env: err = %v", err)
	}
	if got := Ref("hunter2").String(); strings.Contains(got, "hunter2") {
		t.Errorf("String leaked a literal: %q", got)
	}
}

// FuzzParse: any input yields a *File or an error, never a panic, and an
// error always carries the file name.
func FuzzParse(f *testing.F) {
	seed, err := os.ReadFile("testdata/good.toml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	for _, s := range []string{
		"[server.a]\nkind = \"review\"\n",
		"[server.a]\nkind = \"stdio\"\ncomand = 1\n",
		"[[policy.rule]]\nname = \"r\"\naction = \"deny\"\nargs = [{ path = \"a[*].b\", regex = \"(?i)x+\" }]\n",
		"[ratelimit]\nglobal = { rate = 1e308, burst = -1 }\n",
		"[profiles.\"a b\"]\ntools = []\n",
		"a = \"\\ud800\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.toml", data)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Parse returned %v and %v", cfg, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz.toml") {
			t.Fatalf("error without the file name: %v", err)
		}
	})
}
