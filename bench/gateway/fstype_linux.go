//go:build linux

package main

import (
	"fmt"
	"syscall"
	"time"
)

// fsType names the file system holding dir, so a run on tmpfs (where fsync
// costs nothing) cannot pass for a run on disk.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "file system unknown: " + err.Error()
	}
	switch st.Type {
	case 0x01021994:
		return "tmpfs: fsync is free, not a disk measurement"
	case 0xef53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683e:
		return "btrfs"
	case 0x794c7630:
		return "overlayfs"
	default:
		return fmt.Sprintf("file system magic %#x", st.Type)
	}
}

// cpuTime is the CPU time (user+system) this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
