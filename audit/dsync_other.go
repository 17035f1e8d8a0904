//go:build !linux

package audit

// Elsewhere segments are flushed with (*os.File).Sync after each batch's
// write: on macOS that is F_FULLFSYNC, which O_DSYNC does not promise.
const (
	segmentSyncFlag = 0
	writeIsDurable  = false
)
