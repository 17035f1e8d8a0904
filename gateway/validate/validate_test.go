package validate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/gateway/config"
)

func TestFilePrintsEffectivePolicy(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := File("../config/testdata/good.toml", &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"ok: ../config/testdata/good.toml — 4 server(s), 4 rule(s), inspect enforce, pin strict",
		"server github (stdio, namespace gh, timeout 20s)",
		"  gh__delete_repo\n    deny (rule \"no-delete-prod\") when args name matches glob \"prod-*\"\n    approve (rule \"delete-needs-approval\")\n",
		"  gh__create_issue\n    allow (rule \"github-devs\") when caller has role dev or admin\n    deny (deny-default)\n",
		"(no tools named in the file; list them in [server.calc] tools = [...]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestFileReportsLine(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "bastion.toml")
	src := "[server.a]\nkind = \"review\"\n\n[inspect]\nmode = \"enforce\"\ndisable = [\"no_such_detector\"]\n[[policy.rule]]\nname = \"r\"\nactoin = \"allow\"\n"
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	err := File(p, &bytes.Buffer{})
	var e *config.Error
	if !errors.As(err, &e) || e.Line != 9 || !strings.Contains(err.Error(), "policy.rule.actoin") {
		t.Fatalf("err = %v, want the unknown key on line 9", err)
	}
	// Once the typo is fixed, the unknown detector is reported.
	if err := os.WriteFile(p, []byte(strings.Replace(src, "actoin", "action", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := File(p, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `unknown detector "no_such_detector"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestFileNamesUnavailableUpstreams: an upstream that cannot start on this
// machine is named; it fails validation when required and is a warning when
// optional, while one whose command exists is not mentioned.
func TestFileNamesUnavailableUpstreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-mcp-server")
	src := "[server.good]\nkind = \"stdio\"\ncommand = \"sh\"\n\n[server.gone]\nkind = \"stdio\"\ncommand = \"" + missing + "\"\n%OPT%\n"
	p := filepath.Join(dir, "bastion.toml")
	write := func(opt string) {
		if err := os.WriteFile(p, []byte(strings.Replace(src, "%OPT%", opt, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	write("")
	var out bytes.Buffer
	err := File(p, &out)
	var e *config.Error
	if !errors.As(err, &e) || e.Key != "server.gone" || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "optional = true") {
		t.Fatalf("required and missing: err = %v, want server.gone named with its command and the fix", err)
	}
	if got := out.String(); !strings.Contains(got, "server gone (stdio") || !strings.Contains(got, "unavailable on this machine") ||
		strings.Count(got, "unavailable on this machine") != 1 {
		t.Errorf("report should name gone, and only gone:\n%s", got)
	}

	write("optional = true")
	out.Reset()
	if err := File(p, &out); err != nil {
		t.Fatalf("optional and missing: err = %v, want a warning only", err)
	}
	if got := out.String(); !strings.Contains(got, "server gone (stdio, namespace gone, timeout 30s) optional\n  unavailable on this machine: ") ||
		!strings.Contains(got, "warning: optional") {
		t.Errorf("report should warn about gone:\n%s", got)
	}
}
