// Package atomicfile replaces small files whole and serializes the
// read-modify-write cycles of several processes over one file: the pins
// file, the approvals queue and the engine's installation secrets are
// written through it.
//
// Invariants: a reader sees the old bytes or the new bytes, never a mix;
// once WriteFile returns nil the new bytes and the rename survive a crash.
package atomicfile

import (
	"os"
	"path/filepath"
	"time"
)

// lockPoll is how often Lock retries a lock another process holds.
const lockPoll = 5 * time.Millisecond

// WriteFile replaces path with b: a temporary file in the same directory
// (0600, as os.CreateTemp makes it), fsync, rename, then fsync of the
// directory so the rename itself survives a crash.
func WriteFile(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}
