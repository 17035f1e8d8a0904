// Package testdisk gives tests real disk faults: a small tmpfs they can
// fill to ENOSPC, and a directory that refuses new files. It needs root
// (mount, chattr) or, for ReadOnly, an unprivileged user (chmod); without
// them a test skips, loudly, unless BASTION_REQUIRE_DEPS=1 makes it fail.
package testdisk

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// unavailable skips t (or fails it under BASTION_REQUIRE_DEPS=1).
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("BASTION_REQUIRE_DEPS") == "1" {
		t.Fatalf("testdisk: %s (BASTION_REQUIRE_DEPS=1)", msg)
	}
	t.Skipf("SKIP (needs root): testdisk: %s", msg)
}

// Tmpfs mounts a tmpfs of size bytes on a fresh directory and returns it;
// it is unmounted when t ends.
func Tmpfs(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		unavailable(t, "cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("testdisk: unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file in dir until its file system has no room left
// (ENOSPC), down to the last byte of the last page, and returns the
// function that frees the room again.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "testdisk-filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("testdisk: %v", err)
	}
	defer f.Close()
	for _, chunk := range []int{64 << 10, 4 << 10, 1} {
		buf := make([]byte, chunk)
		for i := range buf {
			buf[i] = 'x'
		}
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("testdisk: fill: %v", err)
				}
				break
			}
		}
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("testdisk: free: %v", err)
		}
	}
}

// ReadOnly makes dir refuse new entries (as root: the immutable attribute,
// which binds root too; otherwise mode 0500) and returns the undo. Files
// already open in dir stay writable: what fails is creating one.
func ReadOnly(t testing.TB, dir string) (undo func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatalf("testdisk: %v", err)
		}
		return func() { os.Chmod(dir, 0o700) }
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		unavailable(t, "chattr +i %s: %v: %s", dir, err, out)
	}
	done := false
	undo = func() {
		if done {
			return
		}
		done = true
		if out, err := exec.Command("chattr", "-i", dir).CombinedOutput(); err != nil {
			t.Errorf("testdisk: chattr -i %s: %v: %s", dir, err, out)
		}
	}
	t.Cleanup(undo) // so t.TempDir can remove it
	return undo
}
