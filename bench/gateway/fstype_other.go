//go:build !linux

package main

import "time"

// fsType is Linux-only; elsewhere the file system is not named.
func fsType(string) string { return "file system not checked" }

// cpuTime is not measured here; the CPU column then reads 0.
func cpuTime() time.Duration { return 0 }

// processCPU is not measured here; the gateway process's CPU then reads 0.
func processCPU(int) (time.Duration, error) { return 0, nil }
