//go:build !linux

package audit

import "os"

// Elsewhere segments are flushed with (*os.File).Sync after each batch's
// write: on macOS that is F_FULLFSYNC, which O_DSYNC does not promise.
const (
	segmentSyncFlag = 0
	writeIsDurable  = false
)

// preallocate is Linux-only (fallocate(2)); elsewhere segments grow.
func preallocate(*os.File, int64) (bool, error) { return false, nil }
