package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// AxeCore returns the path of axe-core's axe.min.js, the accessibility
// engine the design checks are compared with, or skips/fails t without it.
// scripts/deps.sh installs it from npm at a pinned version into a cache
// outside the repository: $BASTION_AXE_CACHE, by default
// ~/.cache/bastion-axe. The file is read there, never vendored.
func AxeCore(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("BASTION_AXE_CACHE")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			Missing(t, "axe-core (no home directory for its cache: "+err.Error()+"; set BASTION_AXE_CACHE)")
		}
		dir = filepath.Join(home, ".cache", "bastion-axe")
	}
	p := filepath.Join(dir, "node_modules", "axe-core", "axe.min.js")
	if _, err := os.Stat(p); err != nil {
		Missing(t, "axe-core ("+p+"; scripts/deps.sh installs it with npm)")
	}
	return p
}
