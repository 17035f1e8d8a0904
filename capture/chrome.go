package capture

import (
	"errors"
	"os"
	"os/exec"
)

// ErrNoBrowser means no Chromium or Chrome executable was found.
var ErrNoBrowser = errors.New("capture: no Chromium found (install Debian's chromium or set BASTION_CHROME)")

// FindChrome returns the browser executable to launch: $BASTION_CHROME when
// set, else the first of Debian's chromium or a Chrome found on PATH.
func FindChrome() (string, error) {
	if p := os.Getenv("BASTION_CHROME"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", errors.Join(ErrNoBrowser, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}
