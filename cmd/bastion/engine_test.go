package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/enginehttp"
)

// TestEngineSecretRotate: the command prints a secret the file then holds
// for that installation, a second rotation prints another, and bad flags
// are refused without touching the file.
func TestEngineSecretRotate(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "engine-secrets")
	out, errOut, code := runCLI(t, "engine", "secret", "rotate", "--installation", "acme", "--file", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first := strings.TrimSpace(out)
	sf, err := enginehttp.OpenSecretsFile(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := sf.Current().Lookup("acme"); string(k) != first {
		t.Fatalf("the file does not hold the printed secret")
	}
	out, _, code = runCLI(t, "engine", "secret", "rotate", "--installation", "acme", "--file", file)
	if code != 0 || strings.TrimSpace(out) == first {
		t.Fatalf("second rotation: exit %d, secret unchanged: %v", code, strings.TrimSpace(out) == first)
	}
	if k, _ := sf.Current().Lookup("acme"); string(k) != strings.TrimSpace(out) {
		t.Fatal("the file does not hold the rotated secret")
	}
	before, _ := os.ReadFile(file)
	if _, errOut, code := runCLI(t, "engine", "secret", "rotate", "--installation", "bad id", "--file", file); code == 0 || !strings.Contains(errOut, "installation id") {
		t.Fatalf("bad id: exit %d, %s", code, errOut)
	}
	if _, _, code := runCLI(t, "engine", "secret", "rotate", "--file", file); code == 0 {
		t.Fatal("missing --installation accepted")
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatal("a refused rotation changed the file")
	}
}

// TestEngineServeNeedsSecrets: serve refuses to start without a usable
// secrets file, before it opens a store or a browser.
func TestEngineServeNeedsSecrets(t *testing.T) {
	t.Parallel()
	if _, errOut, code := runCLI(t, "engine", "serve", "--data-dir", t.TempDir()); code == 0 || !strings.Contains(errOut, "--secrets is required") {
		t.Fatalf("no --secrets: exit %d, %s", code, errOut)
	}
	wide := filepath.Join(t.TempDir(), "secrets")
	os.WriteFile(wide, []byte("acme 0123456789abcdef0123456789abcdef\n"), 0o644)
	if _, errOut, code := runCLI(t, "engine", "serve", "--secrets", wide, "--data-dir", t.TempDir()); code == 0 || !strings.Contains(errOut, "chmod 600") {
		t.Fatalf("world-readable secrets: exit %d, %s", code, errOut)
	}
}
