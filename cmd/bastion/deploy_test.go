package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// composeService is the part of a compose.yaml service the checks read.
type composeService struct {
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Build   struct {
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
}

// TestComposeFlags parses deploy/compose.yaml and runs each bastion
// service's command through this binary's own flag parsing, so a flag
// that does not exist (or a value it refuses) fails here rather than at
// `docker compose up`. It also checks the shape issue 17 asks for: a
// one-shot migration as the owning role, two serving replicas as another
// role behind a trusted proxy, and no hidden or unsafe flag.
func TestComposeFlags(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var serving, migrating []map[string]string
	for name, s := range doc.Services {
		if s.Build.Dockerfile != "deploy/Dockerfile" {
			continue
		}
		flags := parseBastionCommand(t, name, s.Command)
		switch s.Command[0] {
		case "serve":
			serving = append(serving, flags)
		case "migrate":
			migrating = append(migrating, flags)
		}
	}
	if len(serving) != 2 || len(migrating) != 1 {
		t.Fatalf("%d serve and %d migrate services, want 2 and 1", len(serving), len(migrating))
	}
	user := func(url string) string {
		m := regexp.MustCompile(`^postgres://([^:@]+)`).FindStringSubmatch(url)
		if m == nil {
			return ""
		}
		return m[1]
	}
	owner := user(migrating[0]["migrate-url"])
	for _, f := range serving {
		if f["trusted-proxy"] != "true" || f["allowed-hosts"] == "" {
			t.Errorf("a replica without --trusted-proxy and --allowed-hosts: %v", f)
		}
		if app := user(f["database-url"]); app == "" || app == owner || f["migrate-url"] != "" {
			t.Errorf("a replica serves as %q with migrate-url %q; want a role other than the owner %q, and no migration", app, f["migrate-url"], owner)
		}
	}
	if owner == "" || user(migrating[0]["database-url"]) != user(serving[0]["database-url"]) {
		t.Errorf("migrate: %v; want the owner's --migrate-url and the serving role's --database-url", migrating[0])
	}
	for _, name := range []string{"postgres", "proxy"} {
		if _, ok := doc.Services[name]; !ok {
			t.Errorf("no %s service", name)
		}
	}
}

// parseBastionCommand parses args as `bastion args...` would and returns
// the flags set, by name.
func parseBastionCommand(t *testing.T, service string, args []string) map[string]string {
	t.Helper()
	if len(args) == 0 {
		t.Fatalf("%s: no command", service)
	}
	cmd, rest, err := newRootCmd().Find(args)
	if err != nil || cmd.Name() != args[0] {
		t.Fatalf("%s: %v is not a bastion command: %v", service, args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("%s: bastion %s: %v", service, args[0], err)
	}
	if extra := cmd.Flags().Args(); len(extra) > 0 {
		t.Errorf("%s: arguments %v that no flag takes", service, extra)
	}
	set := map[string]string{}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Hidden || strings.HasPrefix(f.Name, "unsafe") {
			t.Errorf("%s: the deployment uses --%s, which is for development only", service, f.Name)
		}
		set[f.Name] = f.Value.String()
	})
	return set
}

// aptPackages returns the packages named by the Dockerfile's
// `apt-get install` lines (continuations joined).
func aptPackages(dockerfile string) []string {
	joined := strings.ReplaceAll(dockerfile, "\\\n", " ")
	var out []string
	for line := range strings.Lines(joined) {
		_, after, ok := strings.Cut(line, "apt-get install")
		if !ok {
			continue
		}
		after, _, _ = strings.Cut(after, "&&")
		for _, w := range strings.Fields(after) {
			if !strings.HasPrefix(w, "-") {
				out = append(out, w)
			}
		}
	}
	return out
}

// TestDockerfileRuntimePackages: the image installs every runtime package
// scripts/deps.sh installs for the tests and the demo (the browser and the
// fonts), so reviews in the image render as they do in CI; it is a
// multi-stage build, runs as a non-root user, checks /livez and carries the
// registry's name label (reviewmcp's catalog test checks its value).
func TestDockerfileRuntimePackages(t *testing.T) {
	t.Parallel()
	deps, err := os.ReadFile(filepath.Join(repoRoot, "scripts", "deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	df, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var runtime []string
	for _, m := range regexp.MustCompile(`need\+=\(([a-z0-9.-]+)\)`).FindAllStringSubmatch(string(deps), -1) {
		if p := m[1]; p == "chromium" || strings.HasPrefix(p, "fonts-") {
			runtime = append(runtime, p)
		}
	}
	if !slices.Contains(runtime, "chromium") || len(runtime) < 2 {
		t.Fatalf("scripts/deps.sh runtime packages %v: want chromium and fonts", runtime)
	}
	installed := aptPackages(string(df))
	for _, p := range runtime {
		if !slices.Contains(installed, p) {
			t.Errorf("deploy/Dockerfile installs %v, not %s (scripts/deps.sh installs it)", installed, p)
		}
	}
	text := string(df)
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(text, -1)); n < 2 {
		t.Errorf("%d FROM lines, want a multi-stage build", n)
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllStringSubmatch(text, -1)
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1][1], "root") || strings.HasPrefix(users[len(users)-1][1], "0") {
		t.Errorf("USER lines %v: the image must run as a non-root user", users)
	}
	if !regexp.MustCompile(`(?m)^HEALTHCHECK .*(\\\n.*)*/livez`).MatchString(text) {
		t.Error("no HEALTHCHECK on /livez")
	}
	if !strings.Contains(text, "io.modelcontextprotocol.server.name=") {
		t.Error("no io.modelcontextprotocol.server.name label")
	}
}
