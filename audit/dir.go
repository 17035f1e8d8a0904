package audit

import (
	"errors"
	"path/filepath"
)

// DefaultDir returns where the ledger lives when no directory is configured:
// $XDG_DATA_HOME/bastion/audit, else $HOME/.local/share/bastion/audit.
// getenv is os.Getenv in production; tests pass their own.
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "bastion", "audit"), nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "bastion", "audit"), nil
	}
	return "", errors.New("audit: no ledger directory: set --dir, XDG_DATA_HOME or HOME")
}
