//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// cpuTime is the CPU time (user+system) this process and its live
// children (the stdio upstreams) have used so far; children count at the
// kernel's 10 ms tick, which is fine over a round.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) + childrenCPU()
}

// userHZ is the unit of /proc/PID/stat times, fixed at 100 on Linux.
const userHZ = 100

func childrenCPU() time.Duration {
	lists, _ := filepath.Glob("/proc/self/task/*/children")
	var sum time.Duration
	for _, l := range lists {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(b)) {
			if d, err := statCPU(pid); err == nil {
				sum += d
			}
		}
	}
	return sum
}

// processCPU is the CPU time (user+system) process pid has used so far,
// at the kernel's 10 ms tick; pid 0 is no process and reads 0.
func processCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	return statCPU(strconv.Itoa(pid))
}

// statCPU reads utime+stime from /proc/PID/stat.
func statCPU(pid string) (time.Duration, error) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command: utime and stime are the 12th
	// and 13th.
	_, rest, ok := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%s/stat: unexpected format", pid)
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / userHZ, nil
}
