//go:build !linux

package testenv

import "testing"

// ReadOnlyDir skips: the read-only tmpfs it needs is Linux's.
func ReadOnlyDir(t testing.TB) string {
	t.Helper()
	t.Skip("SKIP: a read-only data directory is made with a Linux tmpfs mount")
	return ""
}

// FullDir skips: the small tmpfs it needs is Linux's.
func FullDir(t testing.TB) string {
	t.Helper()
	t.Skip("SKIP: a full data directory is made with a Linux tmpfs mount")
	return ""
}
