//go:build !unix

package pin

import (
	"context"
	"errors"
)

// lockPath is unimplemented off Unix: without a lock two processes could
// lose each other's approvals, so a FileStore refuses to save.
func lockPath(context.Context, string) (func(), error) {
	return nil, errors.New("pins file locking is only implemented on Unix")
}

// syncDir is a no-op where directories cannot be opened for fsync.
func syncDir(string) error { return nil }
