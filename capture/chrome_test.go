package capture_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// TestFindChromeVariable: the variable wins over PATH, its older name is
// still honoured, and a variable naming nothing is an error that says
// which variable and path, never a silent fall-back to another browser.
func TestFindChromeVariable(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "my-chromium")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(capture.ChromeEnvOld, "")
	t.Setenv(capture.ChromeEnv, exe)
	if p, err := capture.FindChrome(); p != exe || err != nil {
		t.Errorf("%s=%s: FindChrome() = %q, %v", capture.ChromeEnv, exe, p, err)
	}
	t.Setenv(capture.ChromeEnv, "")
	t.Setenv(capture.ChromeEnvOld, exe)
	if p, err := capture.FindChrome(); p != exe || err != nil {
		t.Errorf("%s=%s: FindChrome() = %q, %v", capture.ChromeEnvOld, exe, p, err)
	}
	t.Setenv(capture.ChromeEnv, "/nonexistent/chromium")
	p, err := capture.FindChrome()
	if !errors.Is(err, capture.ErrNoBrowser) || !errors.Is(err, os.ErrNotExist) || p != "" {
		t.Fatalf("FindChrome() = %q, %v; want ErrNoBrowser wrapping not-exist", p, err)
	}
	if msg := err.Error(); !strings.Contains(msg, capture.ChromeEnv+"=/nonexistent/chromium") {
		t.Errorf("error %q does not name the variable and its value", msg)
	}
}

// TestFindChromeWithoutPath: a client that starts bastion with a bare PATH
// (none of the browsers on it) still gets the browser from where its
// package installs it. Runs where such a browser is installed.
func TestFindChromeWithoutPath(t *testing.T) {
	home, _ := os.UserHomeDir()
	var installed string
	for _, p := range capture.ChromeLocations(runtime.GOOS, home) {
		if _, err := os.Stat(p); err == nil {
			installed = p
			break
		}
	}
	if installed == "" {
		testenv.Missing(t, fmt.Sprintf("a browser in one of %v", capture.ChromeLocations(runtime.GOOS, home)))
	}
	t.Setenv(capture.ChromeEnv, "")
	t.Setenv(capture.ChromeEnvOld, "")
	t.Setenv("PATH", t.TempDir())
	if p, err := capture.FindChrome(); p != installed || err != nil {
		t.Errorf("FindChrome() with an empty PATH = %q, %v; want %q", p, err, installed)
	}
}

// TestChromeLocations: macOS's app bundles (system-wide, then the user's)
// and the Linux packages' paths are where the finder looks.
func TestChromeLocations(t *testing.T) {
	mac := capture.ChromeLocations("darwin", "/Users/ann")
	for _, want := range []string{
		"/Applications/Chromium.app/Contents/MacOS/Chromium",
		"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
		"/Users/ann/Applications/Chromium.app/Contents/MacOS/Chromium",
	} {
		if !slices.Contains(mac, want) {
			t.Errorf("darwin locations %v lack %q", mac, want)
		}
	}
	if i, j := slices.Index(mac, "/Applications/Chromium.app/Contents/MacOS/Chromium"), slices.Index(mac, "/Users/ann/Applications/Chromium.app/Contents/MacOS/Chromium"); i > j {
		t.Errorf("darwin: the user's Chromium (%d) is tried before the system's (%d)", j, i)
	}
	if slices.ContainsFunc(capture.ChromeLocations("darwin", ""), func(p string) bool { return !strings.HasPrefix(p, "/Applications/") }) {
		t.Error("darwin without a home directory lists per-user locations")
	}
	linux := capture.ChromeLocations("linux", "/home/ann")
	for _, want := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/snap/bin/chromium", "/usr/bin/google-chrome-stable"} {
		if !slices.Contains(linux, want) {
			t.Errorf("linux locations %v lack %q", linux, want)
		}
	}
}
