package pin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/bastion-mcp/bastion/internal/atomicfile"
)

// FileStore is a durable Store: every server's approved hashes in one JSON
// file, so pins survive a restart and `bastion pin approve` in another
// process can change what the gateway trusts. The layout is
//
//	{"version": 1, "servers": {"SERVER": {"TOOL": "<64 hex digits>"}}}
//
// where a server present with an empty object was approved with no tools
// (Load returns an empty, non-nil map) and an absent one was never approved
// (Load returns nil).
//
// Invariants: a reader sees either the old or the new file, never a torn one
// (write to a temporary file, fsync, rename, fsync the directory); the file
// and its lock are 0600 in a 0700 directory; a Save re-reads the file under
// an exclusive flock on PATH.lock, so two processes saving different servers
// both keep their update; a file that does not decode is never overwritten,
// since replacing it would silently drop every pin it held.
type FileStore struct {
	path string
	mu   sync.Mutex // serializes this process's read-modify-write cycles; the flock serializes processes
}

// NewFileStore returns a FileStore over path; the file is created by the
// first Save.
func NewFileStore(path string) *FileStore { return &FileStore{path: path} }

// Path returns the pins file's path.
func (f *FileStore) Path() string { return f.path }

// fileVersion is the only layout this code reads and writes.
const fileVersion = 1

// maxFile bounds the file read; a larger one is refused rather than
// loaded whole.
const maxFile = 16 << 20

type fileDoc struct {
	Version int                          `json:"version"`
	Servers map[string]map[string]string `json:"servers"`
}

// Load implements Store.
func (f *FileStore) Load(_ context.Context, server string) (map[string]Hash, error) {
	all, err := f.read()
	if err != nil {
		return nil, err
	}
	return all[server], nil
}

// All returns the pins of every approved server.
func (f *FileStore) All(context.Context) (map[string]map[string]Hash, error) {
	all, err := f.read()
	if err != nil {
		return nil, err
	}
	if all == nil {
		all = map[string]map[string]Hash{}
	}
	return all, nil
}

// Save implements Store: it replaces server's pins and keeps every other
// server's as the file holds them now.
func (f *FileStore) Save(ctx context.Context, server string, pins map[string]Hash) error {
	for tool, h := range pins {
		if !h.IsValid() {
			return fmt.Errorf("pin: refusing to save the zero hash for tool %q of %s", tool, server)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pin: pins file: %w", err)
	}
	unlock, err := atomicfile.Lock(ctx, f.path+".lock")
	if err != nil {
		return fmt.Errorf("pin: pins file %s: %w", f.path, err)
	}
	defer unlock()
	all, err := f.read()
	if err != nil {
		return err
	}
	if all == nil {
		all = map[string]map[string]Hash{}
	}
	c := maps.Clone(pins)
	if c == nil {
		c = map[string]Hash{}
	}
	all[server] = c
	b, err := encodeFile(all)
	if err != nil {
		return fmt.Errorf("pin: pins file: %w", err)
	}
	if err := atomicfile.WriteFile(f.path, b); err != nil {
		return fmt.Errorf("pin: pins file %s: %w", f.path, err)
	}
	return nil
}

// read returns the file's pins, nil when it does not exist.
func (f *FileStore) read() (map[string]map[string]Hash, error) {
	fh, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pin: pins file: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("pin: pins file %s: %w", f.path, err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("pin: pins file %s is larger than %d bytes", f.path, maxFile)
	}
	all, err := decodeFile(b)
	if err != nil {
		return nil, fmt.Errorf("pin: pins file %s: %w", f.path, err)
	}
	return all, nil
}

// decodeFile parses the file's layout strictly: an unknown member, another
// version, an empty server or tool name or a malformed hash is an error.
func decodeFile(b []byte) (map[string]map[string]Hash, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var doc fileDoc
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a pins file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a pins file: data after the document")
	}
	if doc.Version != fileVersion {
		return nil, fmt.Errorf("version %d, want %d", doc.Version, fileVersion)
	}
	all := make(map[string]map[string]Hash, len(doc.Servers))
	for srv, tools := range doc.Servers {
		if srv == "" {
			return nil, errors.New("a server has an empty name")
		}
		m := make(map[string]Hash, len(tools))
		for tool, s := range tools {
			if tool == "" {
				return nil, fmt.Errorf("server %q: a tool has an empty name", srv)
			}
			h, err := ParseHash(s)
			if err != nil {
				return nil, fmt.Errorf("server %q tool %q: %w", srv, tool, err)
			}
			if !h.IsValid() {
				return nil, fmt.Errorf("server %q tool %q: the zero hash pins nothing", srv, tool)
			}
			m[tool] = h
		}
		all[srv] = m
	}
	return all, nil
}

// encodeFile writes the layout; encoding/json sorts map keys, so the same
// pins always give the same bytes.
func encodeFile(all map[string]map[string]Hash) ([]byte, error) {
	doc := fileDoc{Version: fileVersion, Servers: make(map[string]map[string]string, len(all))}
	for srv, tools := range all {
		m := make(map[string]string, len(tools))
		for tool, h := range tools {
			m[tool] = h.String()
		}
		doc.Servers[srv] = m
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
