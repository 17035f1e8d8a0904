//go:build !unix

package atomicfile

import (
	"context"
	"errors"
)

// Lock is unimplemented off Unix: without a lock two processes could lose
// each other's writes, so a caller that needs one refuses to save.
func Lock(context.Context, string) (func(), error) {
	return nil, errors.New("file locking is only implemented on Unix")
}

// syncDir is a no-op where directories cannot be opened for fsync.
func syncDir(string) error { return nil }
