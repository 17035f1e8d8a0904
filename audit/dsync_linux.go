//go:build linux

package audit

import "syscall"

// Segments are opened with O_DSYNC on Linux, so a batch's one write(2) is
// also its flush: open(2) defines it "as though each write(2) was followed
// by a call to fdatasync(2)", and fdatasync(2) flushes the metadata "needed
// in order to allow a subsequent data retrieval", naming the file size. An
// append grows the size, so the records and the new length are durable when
// write returns; only the timestamps are left to the next full fsync.
//
// Why one syscall instead of write+fsync: a blocking syscall makes the Go
// runtime hand the flusher's P to other goroutines, and when the flusher
// returns it queues behind them for a P again. Under CPU load (the gateway
// on a busy machine) that wait, not the disk, set the group-commit cycle;
// one durable write pays it once per batch instead of twice.
const (
	segmentSyncFlag = syscall.O_DSYNC
	writeIsDurable  = true
)
