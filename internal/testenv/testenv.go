// Package testenv gives tests the real parts they need (a Chromium, a
// Postgres) or skips them loudly. With BASTION_REQUIRE_DEPS=1 (set by CI) a
// missing part fails the test instead: CI never passes by skipping.
package testenv

import (
	"os"
	"testing"

	"github.com/bastion-mcp/bastion/capture"
)

// Required reports whether missing dependencies must fail tests (CI).
func Required() bool { return os.Getenv("BASTION_REQUIRE_DEPS") == "1" }

// Missing skips t because what is absent, or fails it when deps are required.
func Missing(t testing.TB, what string) {
	t.Helper()
	if Required() {
		t.Fatalf("BASTION_REQUIRE_DEPS=1 but %s is not available", what)
	}
	t.Skipf("SKIP (loud): %s is not available; install it (make deps) to run this test", what)
}

// Chromium returns the browser executable, or skips/fails t without one.
func Chromium(t testing.TB) string {
	t.Helper()
	p, err := capture.FindChrome()
	if err != nil {
		Missing(t, "Chromium ("+err.Error()+")")
	}
	return p
}
