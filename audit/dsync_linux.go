//go:build linux

package audit

import (
	"errors"
	"os"
	"syscall"
)

// Segments are opened with O_DSYNC on Linux, so a batch's one write(2) is
// also its flush: open(2) defines it "as though each write(2) was followed
// by a call to fdatasync(2)", and fdatasync(2) flushes the metadata "needed
// in order to allow a subsequent data retrieval", naming the file size.
//
// Why one syscall instead of write+fsync: a blocking syscall makes the Go
// runtime hand the writer's P to other goroutines, and when the writer
// returns it queues behind them for a P again. Under CPU load (the gateway
// on a busy machine) that wait, not the disk, set the group-commit cycle;
// one durable write pays it once per batch instead of twice.
const (
	segmentSyncFlag = syscall.O_DSYNC
	writeIsDurable  = true
)

// preallocate reserves f's first size bytes (reading as zeros) with
// fallocate(2), growing the file to size. Appends then overwrite allocated
// blocks instead of extending the file: the size never changes, so an
// O_DSYNC write need not commit a journal transaction for it (on ext4 on a
// virtio disk a durable 300-byte append drops from ~75µs to ~52µs; see
// BenchmarkSyncAppend). It reports false when the file system cannot
// preallocate, or has not the room (a nearly full disk must keep taking
// records as long as they fit, not fail closed early); the ledger then grows
// the file as before. A partial allocation is harmless: zeros past the
// records are not records.
func preallocate(f *os.File, size int64) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Fallocate(int(fd), 0, 0, size)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return false, err
	}
	if errors.Is(ferr, syscall.EOPNOTSUPP) || errors.Is(ferr, syscall.ENOSYS) ||
		errors.Is(ferr, syscall.ENOSPC) || errors.Is(ferr, syscall.EDQUOT) {
		return false, nil
	}
	return ferr == nil, ferr
}
