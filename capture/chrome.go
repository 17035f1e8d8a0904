package capture

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// ErrNoBrowser means no Chromium or Chrome executable was found.
var ErrNoBrowser = errors.New("capture: no Chromium found (install Debian's chromium or set BASTION_CHROMIUM)")

// ChromeEnv names the variable that chooses the browser executable;
// ChromeEnvOld is its earlier name, still honoured when ChromeEnv is unset.
const (
	ChromeEnv    = "BASTION_CHROMIUM"
	ChromeEnvOld = "BASTION_CHROME"
)

// chromeNames are the executables looked up on PATH, in order.
var chromeNames = []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "chrome"}

// FindChrome returns the browser executable to launch: $BASTION_CHROMIUM
// (or $BASTION_CHROME) when set, which must exist; else the first Chromium
// or Chrome on PATH; else the first that exists of the places the usual
// packages install it (ChromeLocations), since a client that starts bastion
// often has a shorter PATH than the user's shell.
func FindChrome() (string, error) {
	for _, env := range []string{ChromeEnv, ChromeEnvOld} {
		p := os.Getenv(env)
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s=%s: %w", ErrNoBrowser, env, p, err)
		}
		return p, nil
	}
	for _, name := range chromeNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	home, _ := os.UserHomeDir()
	for _, p := range ChromeLocations(runtime.GOOS, home) {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// ChromeLocations lists where Chromium and Chrome packages install their
// executable on goos, in the order FindChrome tries them after PATH; home
// is the user's home directory ("" leaves out per-user locations).
func ChromeLocations(goos, home string) []string {
	switch goos {
	case "darwin":
		apps := []string{
			"Chromium.app/Contents/MacOS/Chromium",
			"Google Chrome.app/Contents/MacOS/Google Chrome",
			"Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
		}
		var out []string
		for _, a := range apps {
			out = append(out, filepath.Join("/Applications", a))
		}
		if home != "" {
			for _, a := range apps {
				out = append(out, filepath.Join(home, "Applications", a))
			}
		}
		return out
	case "linux", "freebsd", "openbsd", "netbsd":
		return []string{
			"/usr/bin/chromium",                            // Debian
			"/usr/bin/chromium-browser",                    // Ubuntu, Fedora, Alpine
			"/usr/lib/chromium/chromium",                   // Debian's binary behind its wrapper
			"/usr/lib64/chromium-browser/chromium-browser", // Fedora's binary
			"/snap/bin/chromium",                           // Ubuntu's snap
			"/usr/bin/google-chrome-stable",                // Google's .deb and .rpm
			"/opt/google/chrome/chrome",                    // Google's binary behind its wrapper
			"/usr/local/bin/chromium",                      // a BSD port, a hand install
		}
	}
	return nil
}
