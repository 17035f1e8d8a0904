package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/internal/atomicfile"
)

// File keeps approvals in one JSON file, so `bastion approvals`
// in another process can decide what a running gateway parked. Every
// operation re-reads the file and replaces it atomically
// (atomicfile.WriteFile); within one process a mutex serializes them. Two processes that
// write in the same instant can lose one update (the file has no lock);
// the loser's effect is a call that stays parked, never one admitted.
type File struct {
	path string
	mu   sync.Mutex // serializes read-modify-write cycles in this process
	now  func() time.Time
}

// NewFile returns a File over path (created on first write).
func NewFile(path string) *File {
	return &File{path: path, now: time.Now}
}

// maxFile bounds the file read; a larger one is refused.
const maxFile = 16 << 20

func (f *File) load() ([]Approval, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("approval: approvals: %w", err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("approval: approvals file %s is too large", f.path)
	}
	var list []Approval
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("approval: approvals file %s: %w", f.path, err)
	}
	return list, nil
}

func (f *File) save(list []Approval) error {
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("approval: approvals: %w", err)
	}
	if err := atomicfile.WriteFile(f.path, append(b, '\n')); err != nil {
		return fmt.Errorf("approval: approvals: %w", err)
	}
	return nil
}

// update runs fn on the current list and saves it if fn changed it.
func (f *File) update(fn func(list *[]Approval) (changed bool, err error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	list, err := f.load()
	if err != nil {
		return err
	}
	changed, err := fn(&list)
	if err != nil || !changed {
		return err
	}
	return f.save(list)
}

// Request implements Queue.
func (f *File) Request(_ context.Context, want Approval) (Approval, error) {
	var out Approval
	err := f.update(func(list *[]Approval) (bool, error) {
		n := len(*list)
		a, err := request(list, want, f.now())
		out = a
		return len(*list) != n, err
	})
	return out, err
}

// Consume implements Queue.
func (f *File) Consume(_ context.Context, id string) error {
	return f.update(func(list *[]Approval) (bool, error) {
		consume(*list, id)
		return true, nil
	})
}

// List implements Queue.
func (f *File) List(context.Context) ([]Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.load()
}

// Decide implements Queue.
func (f *File) Decide(_ context.Context, id string, approve bool, by string) (Approval, error) {
	var out Approval
	err := f.update(func(list *[]Approval) (bool, error) {
		a, err := decide(*list, id, approve, by, f.now())
		out = a
		return err == nil, err
	})
	return out, err
}
