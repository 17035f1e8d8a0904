package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// ReadOnlyDir returns an empty directory that this process cannot write.
// Root ignores permission bits, so as root it is a tmpfs mounted read-only
// (skipped, with the reason, where mounting is not permitted); otherwise a
// directory with mode 0500.
func ReadOnlyDir(t testing.TB) string {
	t.Helper()
	dir := emptyDir(t, "ro")
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		return dir
	}
	mount(t, dir, syscall.MS_RDONLY, "size=64k")
	return dir
}

// FullDir returns a directory on a small tmpfs that is already full, so
// any write in it fails with ENOSPC. It needs root (mount); without it the
// test is skipped with the reason.
func FullDir(t testing.TB) string {
	t.Helper()
	dir := emptyDir(t, "full")
	if os.Geteuid() != 0 {
		t.Skip("SKIP: filling a file system needs a tmpfs mount, which needs root")
	}
	mount(t, dir, 0, "size=256k")
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break // ENOSPC: full
		}
	}
	return dir
}

// emptyDir makes an empty directory name in a fresh temporary directory
// (not the temporary directory itself: a mount over it would hide nothing).
func emptyDir(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mount mounts a tmpfs at dir for the rest of t.
func mount(t testing.TB, dir string, flags uintptr, data string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags|syscall.MS_NOSUID|syscall.MS_NODEV, data); err != nil {
		t.Skipf("SKIP: cannot mount a tmpfs at %s to stand for a read-only or full disk (%v); run as root with CAP_SYS_ADMIN", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}
