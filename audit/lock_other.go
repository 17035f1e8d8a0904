//go:build !unix

package audit

import (
	"errors"
	"os"
)

// lockExclusive is unimplemented off Unix: without a lock two writers could
// fork the chain, so the ledger refuses to open.
func lockExclusive(*os.File) error {
	return errors.New("audit: ledger file locking is only implemented on Unix")
}
