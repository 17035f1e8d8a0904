// Package migration holds the schema-migration rules every store adapter
// shares: migrations are embedded *.sql files applied once each in name
// order, and each is pinned by its SHA-256 once applied.
//
// Invariants: a migration whose file changed after it was applied stops
// start-up (the schema is not what the code expects); an applied id this
// binary does not know came from a newer binary and is tolerated, so rolling
// back a deploy keeps working.
package migration

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// ErrChanged is matched (errors.Is) when an applied migration's file differs
// from the one this binary carries.
var ErrChanged = errors.New("migration changed after it was applied")

// File is one migration.
type File struct {
	ID  string // the file name without ".sql"
	Sum string // "sha256:" + hex of the file's bytes
	SQL string
}

// Load reads every *.sql file at the root of fsys, sorted by name.
func Load(fsys fs.FS) ([]File, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	slices.Sort(names)
	out := make([]File, 0, len(names))
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", n, err)
		}
		sum := sha256.Sum256(b)
		out = append(out, File{ID: strings.TrimSuffix(n, ".sql"), Sum: "sha256:" + hex.EncodeToString(sum[:]), SQL: string(b)})
	}
	return out, nil
}

// Pending checks the files against the applied ids and their sums and
// returns the files still to apply, in order. Every applied file this binary
// knows is verified before any is applied.
func Pending(files []File, applied map[string]string) ([]File, error) {
	for _, f := range files {
		if sum, ok := applied[f.ID]; ok && sum != f.Sum {
			return nil, fmt.Errorf("%w: %s: the database has %s, this binary has %s", ErrChanged, f.ID, sum, f.Sum)
		}
	}
	var out []File
	for _, f := range files {
		if _, ok := applied[f.ID]; !ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// Current reports whether every file is applied unchanged: an error names
// the first changed file (ErrChanged) or how many are not yet applied.
func Current(files []File, applied map[string]string) error {
	pending, err := Pending(files, applied)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return fmt.Errorf("%d migration(s) not applied, first %s", len(pending), pending[0].ID)
	}
	return nil
}
